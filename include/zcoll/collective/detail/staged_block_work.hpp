#pragma once
/// staged_block_work: move_blocks' work on blocks that live in a staging space (collective/staging.hpp),
/// for allgather, bcast, scatter and gather on device buffers. The held blocks are compressed in the
/// space, consecutive ones whose values follow each other in one batch, and their streams copied into
/// the collective's arena, from where move_blocks forwards them as it forwards any block; at the end
/// the blocks this rank keeps are checked on the host, copied into the space and decompressed in
/// batches (consecutive ones whose destinations follow each other). Raw blocks (Identity, or a call
/// below min_compressed_bytes) are copied to the arena and back. The space is waited on twice at the
/// start (sizes, bytes) and once at the end.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/concepts.hpp"
#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/movement.hpp"
#include "zcoll/collective/detail/staged_batches.hpp"
#include "zcoll/collective/staging.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::detail {

template <codec Codec, staging_space Space>
struct staged_block_work {
  const block_codec<Codec>& coder;
  const Codec& codec;  // the collective's, or a reduction's hop codec
  Space& space;

  static constexpr bool lands_in_place = false;  // destinations are the space's memory, not the transport's

  template <floating_value T>
  void copy_values(std::span<T> to, std::span<const T> from) {
    space.copy(std::as_writable_bytes(to), std::as_bytes(from));
  }

  template <floating_value T>
  std::uint64_t peer_size(call_context& call, std::uint64_t bytes, std::size_t values, int peer) const {
    return coder.template peer_size<T>(call, bytes, values, peer);
  }

  template <floating_value T, class Plan>
  held_blocks encode_held(call_context& call, const Plan& plan, int blocks) {
    const auto start = clock::now();
    held_blocks held = call.compress_now ? compress_held<T>(call, plan, blocks) : copy_held<T>(call, plan, blocks);
    call.report.compress_s += seconds_since(start);
    return held;
  }

  template <floating_value T, class Plan>
  void decode_kept(call_context& call, const Plan& plan, int blocks) {
    const auto start = clock::now();
    if (call.compress_now) {
      decompress_kept<T>(call, plan, blocks);
    } else {
      copy_kept<T>(call, plan, blocks);
    }
    space.wait();  // the values are written, and so is any copy_values enqueued before the call moved
    call.report.decompress_s += seconds_since(start);
  }

 private:
  /// The held blocks' values, copied raw into the arena.
  template <floating_value T, class Plan>
  held_blocks copy_held(call_context& call, const Plan& plan, int blocks) {
    call_scratch& s = call.scratch();
    held_blocks held{.in_arena = true};
    for (int b = 0; b < blocks; ++b) held.end += plan.held(b) ? plan.source(b).size_bytes() : 0;
    s.arena.resize(std::max(s.arena.size(), held.end));
    std::size_t at = 0;
    for (int b = 0; b < blocks; ++b) {
      if (!plan.held(b)) continue;
      const auto index = static_cast<std::size_t>(b);
      const std::span<const T> source = plan.source(b);
      s.held_offsets[index] = at;
      s.blocks[index].size = source.size_bytes();
      space.copy(std::span<std::byte>(s.arena).subspan(at, source.size_bytes()), std::as_bytes(source));
      at += source.size_bytes();
    }
    space.wait();
    return held;
  }

  /// The held blocks compressed in the space in batches, their streams copied into the arena back to back.
  template <floating_value T, class Plan>
  held_blocks compress_held(call_context& call, const Plan& plan, int blocks) {
    call_scratch& s = call.scratch();
    const auto follows = [&](int b) { return plan.source(b).data() == plan.source(b - 1).data() + plan.source(b - 1).size(); };
    std::vector<batch_run> runs = batch_runs(blocks, space.max_batch_streams(), [&](int b) { return plan.held(b); }, follows);
    const auto counts_of = [&](const batch_run& run) {
      std::vector<std::size_t> counts;
      for (int b = run.first; b < run.first + run.count; ++b) counts.push_back(plan.source(b).size());
      return counts;
    };
    const compressed_batches batches = compress_batches<T>(
        call, codec, space, runs,
        [&](const batch_run& run) { return std::span<const T>(plan.source(run.first).data(), run_values(counts_of(run))); },
        counts_of);
    // The streams into the arena back to back, one copy a batch (its streams are packed).
    held_blocks held{.in_arena = true};
    std::vector<std::size_t> run_bytes(runs.size(), 0);
    std::size_t stream = 0;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      for (int b = runs[k].first; b < runs[k].first + runs[k].count; ++b) {
        const auto index = static_cast<std::size_t>(b);
        const std::uint64_t size = batches.sizes[stream++];
        s.held_offsets[index] = held.end;
        s.blocks[index].size = size;
        s.sizes[index] = size;
        held.end += size;
        run_bytes[k] += size;
      }
    }
    s.arena.resize(std::max(s.arena.size(), held.end));
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const std::size_t at = s.held_offsets[static_cast<std::size_t>(runs[k].first)];
      space.copy(std::span<std::byte>(s.arena).subspan(at, run_bytes[k]), batches.device_out.subspan(runs[k].out_at, run_bytes[k]));
    }
    space.wait();
    for (int b = 0; b < blocks; ++b) {
      const auto index = static_cast<std::size_t>(b);
      if (!plan.held(b) || s.sizes[index] == 0) continue;
      held.bound = std::max(held.bound, read_stream_header(std::span<const std::byte>(s.arena).subspan(s.held_offsets[index], s.sizes[index])).error_bound);
    }
    return held;
  }

  /// Whether block b is one this rank keeps and received (the others are its own or forwarded only).
  template <class Plan>
  static bool kept(const Plan& plan, int b) {
    return !plan.held(b) && !plan.destination(b).empty();
  }

  template <floating_value T, class Plan>
  void copy_kept(call_context& call, const Plan& plan, int blocks) {
    const call_scratch& s = call.scratch();
    for (int b = 0; b < blocks; ++b) {
      if (!kept(plan, b)) continue;
      const block_location located = s.blocks[static_cast<std::size_t>(b)];
      const std::span<T> dest = plan.destination(b);
      if (located.size != dest.size_bytes()) {
        call.fail(format_error("block from rank " + std::to_string(located.from) + ": collective block of " +
                               std::to_string(located.size) + " bytes, " + std::to_string(dest.size_bytes()) + " expected"),
                  located.from);
        continue;
      }
      space.copy(std::as_writable_bytes(dest), std::span<const std::byte>(located.data, located.size));
    }
  }

  /// The kept blocks' streams checked on the host, copied into device_in back to back and decoded in
  /// batches of blocks whose destinations follow each other.
  template <floating_value T, class Plan>
  void decompress_kept(call_context& call, const Plan& plan, int blocks) {
    const call_scratch& s = call.scratch();
    std::vector<char> decodable(static_cast<std::size_t>(blocks), 0);
    std::vector<std::uint64_t> offset(static_cast<std::size_t>(blocks), 0), size(static_cast<std::size_t>(blocks), 0);
    std::size_t in_bytes = 0;
    for (int b = 0; b < blocks; ++b) {
      if (!kept(plan, b)) continue;
      const auto index = static_cast<std::size_t>(b);
      const block_location located = s.blocks[index];
      const std::span<const std::byte> stream(located.data, located.size);
      decodable[index] = check_received_stream(call, stream, plan.destination(b).size(), located.from);
      offset[index] = in_bytes;
      size[index] = located.size;
      in_bytes += decodable[index] ? located.size : 0;
    }
    const auto follows = [&](int b) {
      return plan.destination(b).data() == plan.destination(b - 1).data() + plan.destination(b - 1).size();
    };
    std::vector<batch_run> runs =
        batch_runs(blocks, space.max_batch_streams(), [&](int b) { return decodable[static_cast<std::size_t>(b)] != 0; }, follows);
    const auto counts_of = [&](const batch_run& run) {
      std::vector<std::size_t> counts;
      for (int b = run.first; b < run.first + run.count; ++b) counts.push_back(plan.destination(b).size());
      return counts;
    };
    const std::span<std::byte> device_in = space.area(staging_area::device_in, in_bytes);
    for (int b = 0; b < blocks; ++b) {
      const auto index = static_cast<std::size_t>(b);
      if (!decodable[index]) continue;
      space.copy(device_in.subspan(offset[index], size[index]), std::span<const std::byte>(s.blocks[index].data, size[index]));
    }
    decompress_batches<T>(
        call, codec, space, runs, device_in, offset, size,
        [&](const batch_run& run) { return std::span<T>(plan.destination(run.first).data(), run_values(counts_of(run))); }, counts_of,
        [&](int b) { return s.blocks[static_cast<std::size_t>(b)].from; });
  }
};

}  // namespace zcoll::detail
