#pragma once
/// Throttled<T>: a transport whose sends take as long as they would on a slower link — a model.
///
///     zcoll::transport::Throttled link{local, {.latency_s = 20e-6, .bandwidth_bytes_per_s = 1.25e9}};  // 10 Gbit/s
///
/// Each send holds this rank's outgoing link for latency_s + bytes / bandwidth_bytes_per_s, one message after
/// another, and its request completes only when that time has passed. The message carries that time (a
/// small message of 8 bytes before it, on the same tag), and the receive completes no earlier: a receiver
/// cannot use bytes before the modelled link has delivered them, so overlap of computation with
/// communication (pipelined collectives) is measured as it would happen. The times are steady_clock
/// readings, so sender and receiver must share one clock: transport::Local, or MPI ranks on one machine.
/// It models bandwidth and latency per sender, not switch contention or incast; reports that use it
/// must say so. For real links, use the rate-limited test bed (../shared/tools/netbed).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
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
    request(typename T::request inner, typename T::request stamp, std::unique_ptr<std::int64_t> when)
        : inner_(std::move(inner)), stamp_(std::move(stamp)), when_(std::move(when)) {}
    clock::time_point done() const { return clock::time_point(clock::duration(*when_)); }
    typename T::request inner_;
    typename T::request stamp_;           // the 8-byte message with the delivery time
    std::unique_ptr<std::int64_t> when_;  // the delivery time (steady_clock ticks); stable while in flight
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
  /// The inner transport's (the delivery stamps are host memory, which it takes too).
  bool takes_device_memory() const { return transport::takes_device_memory(inner_); }

  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    const auto start = std::max(clock::now(), link_free_);
    const auto busy = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(
        link_.latency_s + static_cast<double>(bytes.size()) / link_.bandwidth_bytes_per_s));
    link_free_ = start + busy;
    auto when = std::make_unique<std::int64_t>(link_free_.time_since_epoch().count());
    auto stamp = inner_.isend_async(peer, tag, std::as_bytes(std::span(when.get(), 1)));
    return request(inner_.isend_async(peer, tag, bytes), std::move(stamp), std::move(when));
  }

  /// Completes when the message has arrived and the sender's modelled link has delivered it.
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    auto when = std::make_unique<std::int64_t>(0);
    auto stamp = inner_.irecv_async(peer, tag, std::as_writable_bytes(std::span(when.get(), 1)));
    return request(inner_.irecv_async(peer, tag, bytes), std::move(stamp), std::move(when));
  }

  void wait(request& r) {
    if (!r.when_) return;  // a default request: nothing in flight
    inner_.wait(r.stamp_);
    inner_.wait(r.inner_);
    std::this_thread::sleep_until(r.done());
  }

  bool test(request& r) {
    if (!r.when_) return true;
    return inner_.test(r.stamp_) && inner_.test(r.inner_) && clock::now() >= r.done();
  }

  Throttled split(int color, int key) { return Throttled(inner_.split(color, key), link_); }

 private:
  T inner_;
  link_model link_;
  clock::time_point link_free_{};
};

}  // namespace zcoll::transport
