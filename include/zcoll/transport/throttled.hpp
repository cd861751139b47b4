#pragma once
/// Throttled<T>: a transport whose sends take as long as they would on a slower link — a model.
///
///     zcoll::transport::Throttled link{local, {.latency_s = 20e-6, .bandwidth_bytes_per_s = 1.25e9}};  // 10 Gbit/s
///
/// Each send holds this rank's outgoing link for latency_s + bytes / bandwidth_bytes_per_s, one message after
/// another, and its request completes only when that time has passed. Receives are not charged: the
/// collectives wait for their sends every round, so a round lasts as long as its slowest sender's link is
/// busy. It models bandwidth and latency per sender, not switch contention or incast; reports that use it
/// must say so. For real links, use the rate-limited test bed (../shared/tools/netbed).

#include <algorithm>
#include <chrono>
#include <span>
#include <string>
#include <thread>
#include <utility>

#include "zcoll/core/error.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll::transport {

struct link_model {
  double latency_s = 0.0;                 ///< alpha: per message
  double bandwidth_bytes_per_s = 1.25e9;  ///< beta: 10 Gbit/s by default
};

template <byte_transport T>
class Throttled {
  using clock = std::chrono::steady_clock;

 public:
  class request {
   public:
    request() = default;

   private:
    friend class Throttled;
    request(typename T::request inner, clock::time_point done) : inner_(std::move(inner)), done_(done) {}
    typename T::request inner_;
    clock::time_point done_{};
  };

  Throttled(T inner, link_model link) : inner_(std::move(inner)), link_(link) {
    if (!(link.bandwidth_bytes_per_s > 0.0) || !(link.latency_s >= 0.0)) {
      throw argument_error("Throttled: bandwidth_bytes_per_s " + std::to_string(link.bandwidth_bytes_per_s) +
                           " must be > 0 and latency_s " + std::to_string(link.latency_s) + " >= 0");
    }
  }

  int rank() const { return inner_.rank(); }
  int size() const { return inner_.size(); }
  const link_model& link() const { return link_; }

  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    const auto start = std::max(clock::now(), link_free_);
    const auto busy = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(
        link_.latency_s + static_cast<double>(bytes.size()) / link_.bandwidth_bytes_per_s));
    link_free_ = start + busy;
    return request(inner_.isend_async(peer, tag, bytes), link_free_);
  }

  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    return request(inner_.irecv_async(peer, tag, bytes), clock::time_point{});
  }

  void wait(request& r) {
    inner_.wait(r.inner_);
    std::this_thread::sleep_until(r.done_);
  }

  bool test(request& r) { return inner_.test(r.inner_) && clock::now() >= r.done_; }

  Throttled split(int color, int key) { return Throttled(inner_.split(color, key), link_); }

 private:
  T inner_;
  link_model link_;
  clock::time_point link_free_{};
};

}  // namespace zcoll::transport
