#pragma once
/// The team of codec/detail/pipeline_tile.hpp on the host: runs the CUDA driver's tile algorithm thread for
/// thread and barrier for barrier, so it is tested on machines without a GPU. The team's threads are fibers
/// taking turns on the calling thread (team_fibers); tiles run one after another, which makes the scan over
/// tiles a running sum.

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/context/detail/fcontext.hpp>

#include "zcoll/codec/detail/pipeline_tile.hpp"

namespace zcoll_test {

/// ASan's fiber API where the build is instrumented (GCC's -fsanitize=address defines the first macro,
/// clang's __has_feature the second): a stack switch it is not told about leaves it checking the frames of
/// one stack against the bounds of another.
#if defined(__SANITIZE_ADDRESS__)
#define ZCOLL_TEST_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZCOLL_TEST_ASAN_FIBERS 1
#endif
#endif

/// A fiber's stack: where it starts and how long it is (ASan's fiber API asks for both).
struct fiber_stack_bounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
};

/// Before a switch to the stack `to`: `fake_stack` keeps the leaving fiber's ASan fake stack until it is
/// resumed; null when the leaving fiber has ended, which frees it.
[[gnu::always_inline]] inline void announce_stack_switch([[maybe_unused]] void** fake_stack,
                                                         [[maybe_unused]] fiber_stack_bounds to) {
#ifdef ZCOLL_TEST_ASAN_FIBERS
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
#endif
}

/// After a switch, on the new stack: `fake_stack` is what announce_stack_switch kept when this fiber left
/// (null on its first start); returns the bounds of the stack the switch came from.
[[gnu::always_inline]] inline fiber_stack_bounds finish_stack_switch([[maybe_unused]] void* fake_stack) {
  fiber_stack_bounds from;
#ifdef ZCOLL_TEST_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake_stack, &from.bottom, &from.size);
#endif
  return from;
}

/// Fiber stacks, reused by the teams of one thread: mapping a stack with its guard page and unmapping it
/// again took three system calls a fiber, and the tests start thousands of teams of up to 1024 threads.
/// Each stack has a page below it that faults on an overflow; pages are only committed when touched. The
/// tile functions of the unoptimised ASan build reach 20 KiB.
class fiber_stack_pool {
 public:
  static constexpr std::size_t guard_bytes = 4096;
  static constexpr std::size_t stack_bytes = 64 * 1024;
  static constexpr std::size_t mapping_bytes = guard_bytes + stack_bytes;

  fiber_stack_pool() = default;
  fiber_stack_pool(const fiber_stack_pool&) = delete;
  fiber_stack_pool& operator=(const fiber_stack_pool&) = delete;
  ~fiber_stack_pool() {
    for (void* mapping : free_) munmap(mapping, mapping_bytes);
  }

  /// The stack of a mapping: the bytes above its guard page.
  static fiber_stack_bounds stack_of(void* mapping) { return {static_cast<std::byte*>(mapping) + guard_bytes, stack_bytes}; }

  /// The calling thread's pool.
  static fiber_stack_pool& of_this_thread() {
    static thread_local fiber_stack_pool pool;
    return pool;
  }

  void* take() {
    if (!free_.empty()) {
      void* mapping = free_.back();
      free_.pop_back();
      return mapping;
    }
    void* mapping = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    if (mprotect(mapping, guard_bytes, PROT_NONE) != 0) {
      munmap(mapping, mapping_bytes);
      throw std::runtime_error("team_fibers: mprotect of a guard page failed");
    }
    return mapping;
  }

  /// Takes a stack back. The frames of a fiber that never returned (a team ended by an error) left their
  /// ASan redzones poisoned; they are cleared so the next fiber on this stack does not trip over them.
  void give_back(void* mapping) {
    const fiber_stack_bounds stack = stack_of(mapping);
    ASAN_UNPOISON_MEMORY_REGION(stack.bottom, stack.size);
    free_.push_back(mapping);
  }

 private:
  std::vector<void*> free_;
};

/// A CUDA block's threads as fibers on the calling thread: each runs until it reaches the barrier or
/// returns, then the next one runs, so a barrier phase ends when every fiber has reached it. The tests start
/// thousands of teams of 128 or 1024 threads; as std::threads meeting at a std::barrier on a machine of two
/// cores they spent most of their time creating threads and yielding to each other in the kernel. A switch
/// is Boost.Context's jump_fcontext, which saves and restores registers only: glibc's swapcontext, used
/// before, also sets the signal mask, a system call at every switch that made the two slowest tests spend
/// half their time in the kernel (more on a VM, where a system call traps to the hypervisor). Within a
/// phase the fibers run in rank order, or in reverse rank order where `reverse_order` says so, and one after
/// another: a read of another thread's write without a barrier between them gives a stale value whenever
/// the reader runs first (host_team::run alternates the order, so either rank may be the lower one). Ranks
/// that disagree on the number of barriers, undefined on a GPU, are a std::logic_error here. Under ASan
/// every switch goes through its fiber API, so every access is checked, across barriers too.
class team_fibers {
 public:
  team_fibers(unsigned threads, bool reverse_order) : fibers_(threads), reverse_order_(reverse_order) {
    for (fiber& f : fibers_) f.mapping = fiber_stack_pool::of_this_thread().take();
  }
  team_fibers(const team_fibers&) = delete;
  team_fibers& operator=(const team_fibers&) = delete;
  ~team_fibers() {
    for (fiber& f : fibers_) {
      if (f.mapping != nullptr) fiber_stack_pool::of_this_thread().give_back(f.mapping);
    }
  }

  /// Runs work(rank) for every rank until each has returned; work calls barrier(rank) to wait for the rest.
  /// An exception leaving work ends the program (noexcept), as it would leave a std::thread.
  void run(std::function<void(unsigned)> work) {
    work_ = std::move(work);
    for (fiber& f : fibers_) {
      // The stack grows down from the mapping's end.
      f.context = boost::context::detail::make_fcontext(static_cast<std::byte*>(f.mapping) + fiber_stack_pool::mapping_bytes,
                                                        fiber_stack_pool::stack_bytes, &team_fibers::entry);
    }
    for (;;) {
      unsigned at_barrier = 0, returned = 0;
      for (unsigned i = 0; i < fibers_.size(); ++i) {
        const unsigned r = reverse_order_ ? static_cast<unsigned>(fibers_.size()) - 1 - i : i;
        if (!fibers_[r].returned) resume(r);
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
  void barrier(unsigned /*rank*/) {
    void* fake_stack = nullptr;
    announce_stack_switch(&fake_stack, scheduler_stack_);
    const boost::context::detail::transfer_t back = boost::context::detail::jump_fcontext(scheduler_, nullptr);
    finish_stack_switch(fake_stack);
    scheduler_ = back.fctx;
  }

 private:
  struct fiber {
    boost::context::detail::fcontext_t context = nullptr;  // where the fiber resumes
    void* mapping = nullptr;
    bool returned = false;
  };

  // Runs fiber r until it reaches a barrier or returns.
  void resume(unsigned r) {
    running_ = r;
    void* fake_stack = nullptr;
    announce_stack_switch(&fake_stack, fiber_stack_pool::stack_of(fibers_[r].mapping));
    const boost::context::detail::transfer_t back = boost::context::detail::jump_fcontext(fibers_[r].context, this);
    finish_stack_switch(fake_stack);
    fibers_[r].context = back.fctx;
  }

  // A fiber's first frame: `from` is the scheduler and the team. It must not return (Boost.Context ends the
  // process then): it switches back for good. Not instrumented by ASan, so that its frame is on the
  // fiber's stack: with detect_stack_use_after_return its frames are on the fiber's fake stack, which the
  // last switch frees, and a frame there would be used after it.
  [[gnu::no_sanitize_address]] static void entry(boost::context::detail::transfer_t from) noexcept {
    team_fibers& team = *static_cast<team_fibers*>(from.data);
    team.scheduler_stack_ = finish_stack_switch(nullptr);
    team.scheduler_ = from.fctx;
    const unsigned rank = team.running_;
    team.work_(rank);
    team.fibers_[rank].returned = true;
    announce_stack_switch(nullptr, team.scheduler_stack_);
    boost::context::detail::jump_fcontext(team.scheduler_, nullptr);
  }

  std::vector<fiber> fibers_;
  bool reverse_order_;
  boost::context::detail::fcontext_t scheduler_ = nullptr;  // where the running fiber's barrier switches to
  fiber_stack_bounds scheduler_stack_;
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
