#pragma once
/// The team of codec/detail/pipeline_tile.hpp as std::threads: runs the CUDA driver's tile algorithm on
/// the host, thread for thread and barrier for barrier, so it is tested on machines without a GPU. Tiles
/// run one after another, which makes the scan over tiles a running sum.

#include <barrier>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "zcoll/codec/detail/pipeline_tile.hpp"

namespace zcoll_test {

class host_team {
 public:
  /// What the threads of one team share (a CUDA block's shared memory).
  struct shared {
    explicit shared(unsigned threads)
        : threads(threads), barrier(threads), slots(threads), flags(threads), words(2 * threads + 4) {}
    unsigned threads;
    std::barrier<> barrier;
    std::vector<std::array<std::byte, 32>> slots;
    std::vector<std::uint8_t> flags;
    std::vector<std::uint32_t> words;
    zcoll::detail::placement tile_before[2]{};  // each scan's exclusive prefix of the current tile
    zcoll::detail::placement tile_value[2]{};   // the current tile's values, set by rank 0
    std::mutex fault_mutex;
    zcoll::detail::decode_fault fault{};
  };

  host_team(shared& s, unsigned rank) : s_(s), rank_(rank) {}

  unsigned rank() const { return rank_; }
  unsigned size() const { return s_.threads; }
  void sync() { s_.barrier.arrive_and_wait(); }
  std::uint8_t* flags() { return s_.flags.data(); }
  std::uint32_t* words() { return s_.words.data(); }

  template <class V, class Op>
  V exclusive_scan(V mine, Op op, V initial, V& aggregate) {
    static_assert(sizeof(V) <= 32);
    sync();
    std::memcpy(s_.slots[rank_].data(), &mine, sizeof(V));
    sync();
    V prefix = initial;
    for (unsigned r = 0; r < size(); ++r) {
      V v;
      std::memcpy(&v, s_.slots[r].data(), sizeof(V));
      if (r < rank_) prefix = op(prefix, v);
      aggregate = r == 0 ? v : op(aggregate, v);
    }
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
    std::lock_guard lock(s_.fault_mutex);
    if (s_.fault.code == 0) s_.fault = f;
  }

  /// Runs body(team, tile) for every tile of `layout` on a team of team_threads_for(chunk_values)
  /// threads, tile after tile; returns the first fault reported.
  template <class Body>
  static zcoll::detail::decode_fault run(const zcoll::detail::batch_layout& layout, Body body) {
    return run(layout.tiles(), layout.chunk_values, body);
  }

  /// Runs body(team, tile) for tiles 0 to tiles - 1 on a team for chunks of `chunk_values`.
  template <class Body>
  static zcoll::detail::decode_fault run(std::uint32_t tiles, std::uint32_t chunk_values, Body body) {
    shared s(zcoll::detail::team_threads_for(chunk_values));
    std::vector<std::thread> threads;
    for (unsigned r = 0; r < s.threads; ++r) {
      threads.emplace_back([&, r] {
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
    }
    for (auto& t : threads) t.join();
    return s.fault;
  }

 private:
  shared& s_;
  unsigned rank_;
};

}  // namespace zcoll_test
