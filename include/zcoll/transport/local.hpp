#pragma once
/// transport::Local: N ranks as threads of one process, exchanging byte messages through mailboxes.
///
///     zcoll::transport::run_local(7, [](zcoll::transport::Local& t) {
///       zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}}};
///       coll.allreduce(std::span<float>(grad), zcoll::op::sum);
///     });
///
/// The numerically faithful single-process emulation of the quantized-collectives paper: every rank runs
/// the real code on its own data, only the bytes travel through memory instead of a network. Matching
/// follows MPI: a message goes to the oldest posted receive with the same source and tag, otherwise it
/// waits as unexpected for the next such receive; sends are buffered (they complete at once). When a rank
/// throws, the group is aborted: every wait of the other ranks raises transport_error instead of hanging,
/// and run_local rethrows the first rank's exception.

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "zcoll/core/error.hpp"

namespace zcoll::transport {

namespace detail {

/// State shared by all groups split from one run_local: the abort flag and the first failure.
struct local_universe {
  std::mutex mutex;
  std::condition_variable changed;  // notified on abort; every group's waits watch it
  bool aborted = false;
  std::string abort_reason;
};

/// One posted receive.
struct local_receive {
  std::span<std::byte> buffer;
  bool done = false;
  bool cancelled = false;  // its request was destroyed first: no message may be copied into the buffer
  std::string failure;  // set instead of done-with-data when the message had another size
};

/// A group of ranks (a communicator): per-destination mailboxes under the universe's mutex.
struct local_group {
  struct mailbox {
    std::map<std::pair<int, int>, std::deque<std::vector<std::byte>>> unexpected;  // (source, tag)
    std::map<std::pair<int, int>, std::deque<std::shared_ptr<local_receive>>> posted;
  };

  local_group(std::shared_ptr<local_universe> u, int ranks)
      : universe(std::move(u)), boxes(static_cast<std::size_t>(ranks)) {}

  std::shared_ptr<local_universe> universe;
  std::vector<mailbox> boxes;

  // split(): ranks deposit (color, key) for the current generation; the last one builds the sub-groups.
  struct split_entry {
    int color;
    int key;
  };
  std::vector<split_entry> split_entries;
  int split_arrived = 0;
  std::uint64_t split_generation = 0;
  std::vector<std::pair<std::shared_ptr<local_group>, int>> split_result;  // per rank: group and new rank
};

inline void deliver(local_receive& receive, std::span<const std::byte> bytes, int source, int tag) {
  if (bytes.size() != receive.buffer.size()) {
    receive.failure = "Local: message from rank " + std::to_string(source) + " with tag " + std::to_string(tag) +
                      " has " + std::to_string(bytes.size()) + " bytes, the receive expected " +
                      std::to_string(receive.buffer.size());
  } else if (!bytes.empty()) {
    std::memcpy(receive.buffer.data(), bytes.data(), bytes.size());
  }
  receive.done = true;
}

}  // namespace detail

/// One rank's handle on its group. Models zcoll::transport::byte_transport.
class Local {
 public:
  /// A pending or completed operation; sends complete when posted. Move-only: destroying a receive that
  /// has not completed cancels it (as MPI_Cancel would), so a rank that leaves a collective by an
  /// exception never has a late message copied into a buffer it has freed.
  class request {
   public:
    request() = default;
    request(request&& other) noexcept = default;
    request& operator=(request&& other) noexcept {
      if (this != &other) {
        cancel();
        receive_ = std::move(other.receive_);
        universe_ = std::move(other.universe_);
      }
      return *this;
    }
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request() { cancel(); }

   private:
    friend class Local;
    request(std::shared_ptr<detail::local_receive> receive, std::shared_ptr<detail::local_universe> universe)
        : receive_(std::move(receive)), universe_(std::move(universe)) {}
    void cancel() noexcept {
      if (!receive_) return;
      const std::lock_guard lock(universe_->mutex);
      if (!receive_->done) receive_->cancelled = true;
      receive_.reset();
    }
    std::shared_ptr<detail::local_receive> receive_;  // empty for sends
    std::shared_ptr<detail::local_universe> universe_;
  };

  Local(std::shared_ptr<detail::local_group> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(group_->boxes.size()); }

  /// Copies `bytes` into the peer's mailbox (or straight into its posted receive): complete at once.
  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    check_peer(peer, "isend_async");
    std::unique_lock lock(universe().mutex);
    throw_if_aborted();
    auto& box = group_->boxes[static_cast<std::size_t>(peer)];
    const std::pair key{rank_, tag};
    auto posted = box.posted.find(key);
    while (posted != box.posted.end() && !posted->second.empty() && posted->second.front()->cancelled) {
      posted->second.pop_front();  // abandoned by its receiver
    }
    if (posted != box.posted.end() && !posted->second.empty()) {
      const auto receive = posted->second.front();
      posted->second.pop_front();
      detail::deliver(*receive, bytes, rank_, tag);
    } else {
      box.unexpected[key].emplace_back(bytes.begin(), bytes.end());
    }
    universe().changed.notify_all();
    return request{};
  }

  /// Receives exactly bytes.size() bytes from `peer` with `tag` into `bytes` (alive until completion).
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    check_peer(peer, "irecv_async");
    auto receive = std::make_shared<detail::local_receive>();
    receive->buffer = bytes;
    std::unique_lock lock(universe().mutex);
    throw_if_aborted();
    auto& box = group_->boxes[static_cast<std::size_t>(rank_)];
    const std::pair key{peer, tag};
    if (auto queued = box.unexpected.find(key); queued != box.unexpected.end() && !queued->second.empty()) {
      detail::deliver(*receive, queued->second.front(), peer, tag);
      queued->second.pop_front();
    } else {
      box.posted[key].push_back(receive);
    }
    return request{std::move(receive), group_->universe};
  }

  /// Blocks until `r` completes; transport_error if its message had another size or the group aborted.
  void wait(request& r) {
    if (!r.receive_) return;
    std::unique_lock lock(universe().mutex);
    universe().changed.wait(lock, [&] { return r.receive_->done || universe().aborted; });
    finish(r);
  }

  bool test(request& r) {
    if (!r.receive_) return true;
    std::unique_lock lock(universe().mutex);
    if (!r.receive_->done && !universe().aborted) return false;
    finish(r);
    return true;
  }

  /// The sub-group of the ranks that pass the same color, ordered by (key, rank); collective.
  Local split(int color, int key) {
    auto& g = *group_;
    std::unique_lock lock(universe().mutex);
    throw_if_aborted();
    if (g.split_arrived == 0) g.split_entries.assign(g.boxes.size(), {});
    g.split_entries[static_cast<std::size_t>(rank_)] = {color, key};
    const std::uint64_t generation = g.split_generation;
    if (++g.split_arrived == size()) {
      build_split(g);
      g.split_arrived = 0;
      ++g.split_generation;
      universe().changed.notify_all();
    } else {
      universe().changed.wait(lock, [&] { return g.split_generation != generation || universe().aborted; });
      throw_if_aborted();
    }
    auto [group, new_rank] = g.split_result[static_cast<std::size_t>(rank_)];
    return Local(std::move(group), new_rank);
  }

  /// Marks the whole run as failed: every wait of every rank raises transport_error from now on.
  void abort(const std::string& reason) {
    std::unique_lock lock(universe().mutex);
    if (!universe().aborted) {
      universe().aborted = true;
      universe().abort_reason = reason;
    }
    universe().changed.notify_all();
  }

 private:
  detail::local_universe& universe() const { return *group_->universe; }

  void check_peer(int peer, const char* call) const {
    if (peer < 0 || peer >= size()) {
      throw argument_error(std::string("Local::") + call + ": peer " + std::to_string(peer) + " is not in [0, " +
                           std::to_string(size()) + ")");
    }
  }

  void throw_if_aborted() const {
    if (universe().aborted) throw transport_error("Local: the group was aborted: " + universe().abort_reason);
  }

  // Called with the mutex held, once the receive is done or the group aborted.
  void finish(request& r) const {
    if (!r.receive_->done) throw_if_aborted();
    if (!r.receive_->failure.empty()) throw transport_error(r.receive_->failure);
  }

  static void build_split(detail::local_group& g) {
    const int n = static_cast<int>(g.boxes.size());
    std::map<int, std::vector<std::pair<int, int>>> members;  // color -> (key, old rank)
    for (int r = 0; r < n; ++r) members[g.split_entries[static_cast<std::size_t>(r)].color].push_back(
        {g.split_entries[static_cast<std::size_t>(r)].key, r});
    g.split_result.assign(static_cast<std::size_t>(n), {});
    for (auto& [color, list] : members) {
      std::sort(list.begin(), list.end());
      auto sub = std::make_shared<detail::local_group>(g.universe, static_cast<int>(list.size()));
      for (std::size_t i = 0; i < list.size(); ++i) {
        g.split_result[static_cast<std::size_t>(list[i].second)] = {sub, static_cast<int>(i)};
      }
    }
  }

  std::shared_ptr<detail::local_group> group_;
  int rank_;
};

/// Runs fn(Local&) for ranks 0..ranks-1, each on its own thread, and waits for all. If any rank throws,
/// the group is aborted (the others' waits fail instead of hanging) and the first exception thrown is
/// rethrown here, after every thread has ended.
template <class Fn>
void run_local(int ranks, Fn&& fn) {
  if (ranks < 1) throw argument_error("run_local: ranks " + std::to_string(ranks) + " must be at least 1");
  auto universe = std::make_shared<detail::local_universe>();
  auto group = std::make_shared<detail::local_group>(universe, ranks);
  std::mutex failure_mutex;
  std::exception_ptr first_failure;
  auto body = [&](int rank) {
    Local transport(group, rank);
    try {
      fn(transport);
    } catch (const std::exception& e) {
      {
        std::lock_guard guard(failure_mutex);
        if (!first_failure) first_failure = std::current_exception();
      }
      transport.abort("rank " + std::to_string(rank) + " failed: " + e.what());
    } catch (...) {
      {
        std::lock_guard guard(failure_mutex);
        if (!first_failure) first_failure = std::current_exception();
      }
      transport.abort("rank " + std::to_string(rank) + " failed");
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks - 1));
  for (int r = 1; r < ranks; ++r) threads.emplace_back(body, r);
  body(0);
  for (auto& t : threads) t.join();
  if (first_failure) std::rethrow_exception(first_failure);
}

}  // namespace zcoll::transport
