#pragma once
/// staged_block_work: move_blocks' work on blocks that live in a staging space (collective/staging.hpp),
/// for allgather, bcast, scatter and gather on device buffers. The held blocks are compressed in the
/// space, consecutive ones whose values follow each other in one batch, and their streams copied into
/// the collective's arena, from where move_blocks forwards them as it forwards any block; at the end
/// the blocks this rank keeps are checked on the host, copied into the space and decompressed in
/// batches (consecutive ones whose destinations follow each other). Raw blocks (Identity, or a call
/// below min_compressed_bytes) are copied to the arena and back. The space is waited on twice at the
/// start (sizes, bytes) and once at the end.
///
/// On the device wire (a transport that takes device memory, staged_wire) nothing goes through the host:
/// the held streams are sent from where the batches wrote them (their headers copied out for the bound)
/// and raw held blocks from where they are, the received ranges land in the space's device_wire_in area
/// (the arena), a send of blocks not adjacent there is packed into device_wire_out by the space's
/// copies, and the kept streams are decoded where they arrived.

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
  std::span<const std::byte> received_area{};  // on the device wire: the arena this call's ranges land in

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
    const staged_wire path = wire_of(call, space);
    held_blocks held = call.compress_now ? compress_held<T>(call, path, plan, blocks)
                       : path.on_device  ? held_where_they_are<T>(call, plan, blocks)
                                         : copy_held<T>(call, plan, blocks);
    call.report.compress_s += seconds_since(start);
    return held;
  }

  /// Room for `bytes` received: the call's arena (host memory), or the device_wire_in area.
  std::span<std::byte> arena(call_context& call, std::size_t bytes) {
    if (!wire_of(call, space).on_device) return host_block_work<Codec>::arena(call, bytes);
    const std::span<std::byte> area = space.area(staging_area::device_wire_in, bytes);
    received_area = area;
    return area;
  }

  /// The bytes of blocks [first, first + count) as one message: where they lie when adjacent, else
  /// packed (on the host, or on the device wire into device_wire_out by the space's copies).
  std::span<const std::byte> send_bytes(call_context& call, int first, int count) {
    if (!wire_of(call, space).on_device) return contiguous_or_staged(call.scratch(), first, count);
    const call_scratch& s = call.scratch();
    const auto [total, adjacent] = range_of_blocks(s, first, count);
    if (adjacent) return {s.blocks[static_cast<std::size_t>(first)].data, total};
    const std::span<std::byte> packed = space.area(staging_area::device_wire_out, total);
    std::size_t offset = 0;
    for (int b = first; b < first + count; ++b) {
      const block_location at = s.blocks[static_cast<std::size_t>(b)];
      space.copy(packed.subspan(offset, at.size), std::span<const std::byte>(at.data, at.size));
      offset += at.size;
    }
    space.wait();
    return packed;
  }

  template <floating_value T, class Plan>
  void decode_kept(call_context& call, const Plan& plan, int blocks) {
    const auto start = clock::now();
    if (call.compress_now) {
      decompress_kept<T>(call, wire_of(call, space), plan, blocks);
    } else {
      copy_kept<T>(call, plan, blocks);
    }
    space.wait();  // the values are written, and so is any copy_values enqueued before the call moved
    call.report.decompress_s += seconds_since(start);
  }

 private:
  /// On the device wire: the held blocks' values sent raw from where they are.
  template <floating_value T, class Plan>
  held_blocks held_where_they_are(call_context& call, const Plan& plan, int blocks) {
    call_scratch& s = call.scratch();
    for (int b = 0; b < blocks; ++b) {
      if (!plan.held(b)) continue;
      const std::span<const T> source = plan.source(b);
      s.blocks[static_cast<std::size_t>(b)] = {reinterpret_cast<const std::byte*>(source.data()), source.size_bytes()};
    }
    return {};
  }

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

  /// The held blocks compressed in the space in batches, their streams copied into the arena back to back
  /// (on the device wire: left where the batches wrote them).
  template <floating_value T, class Plan>
  held_blocks compress_held(call_context& call, staged_wire path, const Plan& plan, int blocks) {
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
    if (path.on_device) return held_in_batches(call, plan, runs, batches);
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

  /// On the device wire: the held blocks' streams where compress_batches wrote them (a batch's streams
  /// are packed from its out_at), their bound read from headers copied out of the space.
  template <class Plan>
  held_blocks held_in_batches(call_context& call, const Plan& plan, const std::vector<batch_run>& runs,
                              const compressed_batches& batches) {
    call_scratch& s = call.scratch();
    std::size_t stream = 0;
    for (const batch_run& run : runs) {
      std::size_t at = run.out_at;
      for (int b = run.first; b < run.first + run.count; ++b) {
        const auto index = static_cast<std::size_t>(b);
        const std::uint64_t size = batches.sizes[stream++];
        s.blocks[index] = {batches.device_out.data() + at, static_cast<std::size_t>(size)};
        s.sizes[index] = size;
        at += static_cast<std::size_t>(size);
      }
    }
    const auto block_of = [&](std::size_t b) { return std::span<const std::byte>(s.blocks[b].data, s.blocks[b].size); };
    const auto headers = headers_on_host(space, true, s.blocks.size(), block_of,
                                         [&](std::size_t b) { return plan.held(static_cast<int>(b)) && s.sizes[b] > 0; });
    held_blocks held;
    for (const std::span<const std::byte> header : headers) {
      if (!header.empty()) held.bound = std::max(held.bound, read_stream_header(header).error_bound);
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

  /// The kept blocks' streams checked on the host, copied into device_in back to back (on the device
  /// wire: decoded where they arrived, in received_area) and decoded in batches of blocks whose
  /// destinations follow each other.
  template <floating_value T, class Plan>
  void decompress_kept(call_context& call, staged_wire path, const Plan& plan, int blocks) {
    const call_scratch& s = call.scratch();
    const auto n = static_cast<std::size_t>(blocks);
    const std::vector<char> decodable = check_received_streams(
        call, space, path.on_device, n, [&](std::size_t b) { return std::span<const std::byte>(s.blocks[b].data, s.blocks[b].size); },
        [&](std::size_t b) { return plan.destination(static_cast<int>(b)).size(); }, [&](std::size_t b) { return s.blocks[b].from; },
        [&](std::size_t b) { return kept(plan, static_cast<int>(b)); });
    std::vector<std::uint64_t> offset(n, 0), size(n, 0);
    std::size_t in_bytes = 0;
    for (std::size_t b = 0; b < n; ++b) {
      if (!kept(plan, static_cast<int>(b))) continue;
      size[b] = s.blocks[b].size;
      offset[b] = path.on_device ? static_cast<std::uint64_t>(s.blocks[b].data - received_area.data()) : in_bytes;
      in_bytes += decodable[b] ? s.blocks[b].size : 0;
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
    std::span<const std::byte> device_in = received_area;
    if (!path.on_device) {
      const std::span<std::byte> copied = space.area(staging_area::device_in, in_bytes);
      for (std::size_t b = 0; b < n; ++b) {
        if (decodable[b]) space.copy(copied.subspan(offset[b], size[b]), std::span<const std::byte>(s.blocks[b].data, size[b]));
      }
      device_in = copied;
    }
    decompress_batches<T>(
        call, codec, space, runs, device_in, offset, size,
        [&](const batch_run& run) { return std::span<T>(plan.destination(run.first).data(), run_values(counts_of(run))); }, counts_of,
        [&](int b) { return s.blocks[static_cast<std::size_t>(b)].from; });
  }
};

}  // namespace zcoll::detail
