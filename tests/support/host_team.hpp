#pragma once
/// The team of codec/detail/pipeline_tile.hpp on the host: runs the CUDA driver's tile algorithm thread for
/// thread and barrier for barrier, so it is tested on machines without a GPU. The team's threads are fibers
/// taking turns on the calling thread (team_fibers); tiles run one after another, which makes the scan over
/// tiles a running sum.

#include <sys/mman.h>
#include <ucontext.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "zcoll/codec/detail/pipeline_tile.hpp"

namespace zcoll_test {

/// A CUDA block's threads as fibers (ucontext) on the calling thread: each runs until it reaches the
/// barrier or returns, then the next one runs, so a barrier phase ends when every fiber has reached it.
/// The tests start thousands of teams of 128 or 1024 threads; as std::threads meeting at a std::barrier on
/// a machine of two cores they spent most of their time creating threads and yielding to each other in the
/// kernel, where a fiber switch stays in user space. Within a phase the fibers run in rank order, or in
/// reverse rank order where `reverse_order` says so, and one after another: a read of another thread's
/// write without a barrier between them gives a stale value whenever the reader runs first (host_team::run
/// alternates the order, so either rank may be the lower one). Ranks that disagree on the number of
/// barriers, undefined on a GPU, are a std::logic_error here. Under ASan, which says once that it does not
/// fully support swapcontext: it clears the shadow of the stack it switches to, so the redzones of a
/// fiber's frames that span a barrier go unchecked after it; every access is checked otherwise.
class team_fibers {
 public:
  team_fibers(unsigned threads, bool reverse_order) : fibers_(threads), reverse_order_(reverse_order) {}
  team_fibers(const team_fibers&) = delete;
  team_fibers& operator=(const team_fibers&) = delete;
  ~team_fibers() {
    for (fiber& f : fibers_) {
      if (f.mapping != nullptr) munmap(f.mapping, mapping_bytes);
    }
  }

  /// Runs work(rank) for every rank until each has returned; work calls barrier(rank) to wait for the rest.
  /// An exception leaving work ends the program (noexcept), as it would leave a std::thread.
  void run(std::function<void(unsigned)> work) {
    work_ = std::move(work);
    starting_ = this;
    for (unsigned r = 0; r < fibers_.size(); ++r) start(r);
    for (;;) {
      unsigned at_barrier = 0, returned = 0;
      for (unsigned i = 0; i < fibers_.size(); ++i) {
        const unsigned r = reverse_order_ ? static_cast<unsigned>(fibers_.size()) - 1 - i : i;
        if (!fibers_[r].returned) {
          running_ = r;
          swapcontext(&scheduler_, &fibers_[r].context);
        }
        (fibers_[r].returned ? returned : at_barrier) += 1;
      }
      if (at_barrier == 0) return;
      if (returned != 0) {
        throw std::logic_error("team_fibers: " + std::to_string(returned) + " of " + std::to_string(fibers_.size()) +
                               " ranks returned while the others wait at a barrier (the ranks' barriers differ)");
      }
    }
  }

  /// Waits until every rank has reached the barrier: back to the scheduler, which runs the others.
  void barrier(unsigned rank) { swapcontext(&fibers_[rank].context, &scheduler_); }

 private:
  // Each fiber's stack with a page below it that faults on an overflow; the pages are only committed when
  // touched. The tile functions of the unoptimised ASan build reach 20 KiB.
  static constexpr std::size_t guard_bytes = 4096;
  static constexpr std::size_t stack_bytes = 64 * 1024;
  static constexpr std::size_t mapping_bytes = guard_bytes + stack_bytes;

  struct fiber {
    ucontext_t context{};
    void* mapping = nullptr;
    bool returned = false;
  };

  void start(unsigned rank) {
    fiber& f = fibers_[rank];
    f.mapping = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f.mapping == MAP_FAILED) {
      f.mapping = nullptr;
      throw std::bad_alloc();
    }
    if (mprotect(f.mapping, guard_bytes, PROT_NONE) != 0) throw std::runtime_error("team_fibers: mprotect of a guard page failed");
    if (getcontext(&f.context) != 0) throw std::runtime_error("team_fibers: getcontext failed");
    f.context.uc_stack.ss_sp = static_cast<std::byte*>(f.mapping) + guard_bytes;
    f.context.uc_stack.ss_size = stack_bytes;
    f.context.uc_link = &scheduler_;  // where a fiber goes when its function returns
    makecontext(&f.context, &team_fibers::entry, 0);
  }

  // makecontext passes int arguments only: the team is the one whose run() started last on this thread, and
  // the rank the one the scheduler switched to.
  static void entry() noexcept {
    team_fibers& team = *starting_;
    const unsigned rank = team.running_;
    team.work_(rank);
    team.fibers_[rank].returned = true;
  }

  static inline thread_local team_fibers* starting_ = nullptr;
  std::vector<fiber> fibers_;
  bool reverse_order_;
  ucontext_t scheduler_{};
  unsigned running_ = 0;
  std::function<void(unsigned)> work_;
};

class host_team {
 public:
  /// What the threads of one team share (a CUDA block's shared memory).
  struct shared {
    shared(unsigned threads, bool reverse_order)
        : threads(threads), fibers(threads, reverse_order), slots(threads), flags(threads), words(2 * threads + 4) {}
    unsigned threads;
    team_fibers fibers;
    std::vector<std::array<std::byte, 32>> slots;
    std::array<std::byte, 32> scan_aggregate{};
    std::vector<std::uint8_t> flags;
    std::vector<std::uint32_t> words;
    zcoll::detail::placement tile_before[2]{};  // each scan's exclusive prefix of the current tile
    zcoll::detail::placement tile_value[2]{};   // the current tile's values, set by rank 0
    zcoll::detail::decode_fault fault{};
  };

  host_team(shared& s, unsigned rank) : s_(s), rank_(rank) {}

  unsigned rank() const { return rank_; }
  unsigned size() const { return s_.threads; }
  void sync() { s_.fibers.barrier(rank_); }
  std::uint8_t* flags() { return s_.flags.data(); }
  std::uint32_t* words() { return s_.words.data(); }

  /// CUB's BlockScan::ExclusiveScan with the block aggregate: rank 0 scans the ranks' values in one pass
  /// (a scan read by every rank from all the values cost the square of the team's size).
  template <class V, class Op>
  V exclusive_scan(V mine, Op op, V initial, V& aggregate) {
    static_assert(sizeof(V) <= 32);
    sync();
    std::memcpy(s_.slots[rank_].data(), &mine, sizeof(V));
    sync();
    if (rank_ == 0) {
      V prefix = initial, all{};
      for (unsigned r = 0; r < size(); ++r) {
        V v;
        std::memcpy(&v, s_.slots[r].data(), sizeof(V));
        std::memcpy(s_.slots[r].data(), &prefix, sizeof(V));  // each rank's slot now holds its prefix
        prefix = op(prefix, v);
        all = r == 0 ? v : op(all, v);
      }
      std::memcpy(s_.scan_aggregate.data(), &all, sizeof(V));
    }
    sync();
    V prefix;
    std::memcpy(&prefix, s_.slots[rank_].data(), sizeof(V));
    std::memcpy(&aggregate, s_.scan_aggregate.data(), sizeof(V));
    sync();
    return prefix;
  }

  zcoll::detail::placement tile_prefix(zcoll::detail::placement mine, unsigned scan) {
    sync();
    if (rank_ == 0) s_.tile_value[scan] = mine;
    sync();
    return s_.tile_before[scan];
  }

  void report(const zcoll::detail::decode_fault& f) {
    if (s_.fault.code == 0) s_.fault = f;
  }

  /// Runs body(team, tile) for every tile of `layout` on a team of team_threads_for(chunk_values)
  /// threads, tile after tile; returns the first fault reported.
  template <class Body>
  static zcoll::detail::decode_fault run(const zcoll::detail::batch_layout& layout, Body body) {
    return run(layout.tiles(), layout.chunk_values, body);
  }

  /// Runs body(team, tile) for tiles 0 to tiles - 1 on a team for chunks of `chunk_values`; each call runs
  /// the team's barrier phases in the other rank order of the call before it (team_fibers).
  template <class Body>
  static zcoll::detail::decode_fault run(std::uint32_t tiles, std::uint32_t chunk_values, Body body) {
    static thread_local bool reverse_order = false;
    reverse_order = !reverse_order;
    shared s(zcoll::detail::team_threads_for(chunk_values), reverse_order);
    s.fibers.run([&](unsigned r) {
      host_team team(s, r);
      for (std::uint32_t t = 0; t < tiles; ++t) {
        body(team, t);
        team.sync();
        if (r == 0) {
          for (unsigned scan = 0; scan < 2; ++scan) {
            s.tile_before[scan] = zcoll::detail::place_after{}(s.tile_before[scan], s.tile_value[scan]);
            s.tile_value[scan] = {};
          }
        }
        team.sync();
      }
    });
    return s.fault;
  }

 private:
  shared& s_;
  unsigned rank_;
};

}  // namespace zcoll_test
