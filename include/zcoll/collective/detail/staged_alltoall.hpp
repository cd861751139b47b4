#pragma once
/// The staged all-to-all: alltoall and alltoallv on values in a staging space's memory (device buffers,
/// collective/staging.hpp). The codec runs in the space, in batches; only compressed bytes meet the
/// transport, in the space's wire areas — host_out / host_in, or device_wire_out / device_wire_in for a
/// transport that takes device memory (staged_wire):
///
///   1. the outgoing blocks are compressed where they are, consecutive blocks in one batch (one launch
///      on a GPU, the DLRM paper's packed send buffer), their sizes and then their bytes copied to the
///      outgoing wire area in rank order; blocks that travel raw are copied there as they are;
///   2. this rank's own block is copied from `in` to `out` inside the space;
///   3. each pair of ranks exchanges {values, bytes} words, then the bytes (alltoallv's wire, wire.hpp);
///   4. every received stream's header is checked on the host (a block of another length never reaches
///      a decoder; from device memory the headers are copied out first), the streams are copied to
///      device_in (on the device wire they are decoded where they arrived) and decompressed in batches
///      into `out`.
///
/// The space is waited on three times: for the sizes, for the bytes in the wire area, and after
/// decompression (a device fault is read then); on the device wire once more, for the headers. Whether a block is compressed follows from its length, as in the host
/// alltoallv (detail/movement.hpp), so every element keeps the codec's bound after one compression.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/movement.hpp"
#include "zcoll/collective/detail/staged_batches.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/collective/staging.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"

namespace zcoll::detail {

/// The blocks of one direction of a staged call, in rank order: block b's values are first[b] ..
/// first[b + 1], its bytes at[b] .. at[b] + bytes[b] of the host area.
struct staged_side {
  std::vector<std::size_t> first;
  std::vector<std::uint64_t> at, bytes;

  std::size_t values(int b) const { return first[static_cast<std::size_t>(b) + 1] - first[static_cast<std::size_t>(b)]; }
  std::size_t run_values(const batch_run& run) const {
    return first[static_cast<std::size_t>(run.first + run.count)] - first[static_cast<std::size_t>(run.first)];
  }
  std::vector<std::size_t> run_counts(const batch_run& run) const {
    std::vector<std::size_t> counts;
    for (int b = run.first; b < run.first + run.count; ++b) counts.push_back(values(b));
    return counts;
  }
  /// The host bytes of a run: its blocks are adjacent there.
  std::uint64_t run_bytes(const batch_run& run) const {
    const auto last = static_cast<std::size_t>(run.first + run.count - 1);
    return at[last] + bytes[last] - at[static_cast<std::size_t>(run.first)];
  }
  /// at[] from bytes[]: the blocks back to back in rank order; returns the total.
  std::uint64_t place() {
    at.assign(bytes.size(), 0);
    std::uint64_t total = 0;
    for (std::size_t b = 0; b < bytes.size(); ++b) {
      at[b] = total;
      total += bytes[b];
    }
    return total;
  }
};

/// Step 1: the outgoing blocks (`side.first` set) compressed in the space where `compressed(b)` holds,
/// else raw, into the outgoing wire area (`side.at`, `side.bytes` set; this rank's own block is empty).
template <codec Codec, floating_value T, staging_space Space, class Compressed>
std::span<std::byte> stage_outgoing(call_context& call, const Codec& codec, Space& space, staged_wire path, std::span<const T> in,
                                    staged_side& side, Compressed compressed) {
  const int p = call.size();
  side.bytes.assign(static_cast<std::size_t>(p), 0);
  std::vector<batch_run> runs = batch_runs(p, space.max_batch_streams(), compressed, [](int) { return true; });
  const compressed_batches batches = compress_batches<T>(
      call, codec, space, runs,
      [&](const batch_run& run) { return in.subspan(side.first[static_cast<std::size_t>(run.first)], side.run_values(run)); },
      [&](const batch_run& run) { return side.run_counts(run); });
  std::size_t stream = 0;
  for (const batch_run& run : runs) {
    for (int b = run.first; b < run.first + run.count; ++b) side.bytes[static_cast<std::size_t>(b)] = batches.sizes[stream++];
  }
  for (int b = 0; b < p; ++b) {
    if (b != call.rank() && !compressed(b)) side.bytes[static_cast<std::size_t>(b)] = side.values(b) * sizeof(T);
  }
  const std::span<std::byte> host = space.area(path.out(), side.place());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const batch_run& run = runs[k];
    space.copy(host.subspan(side.at[static_cast<std::size_t>(run.first)], side.run_bytes(run)),
               batches.device_out.subspan(run.out_at, side.run_bytes(run)));
  }
  for (int b = 0; b < p; ++b) {
    if (b == call.rank() || compressed(b)) continue;
    const auto block = static_cast<std::size_t>(b);
    space.copy(host.subspan(side.at[block], side.bytes[block]), std::as_bytes(in.subspan(side.first[block], side.values(b))));
  }
  space.wait();
  return host;
}

/// Step 4: the received blocks (`side` placed in `wired`, the incoming wire area) into `out`: compressed
/// ones (compressed(b)) decompressed in batches in the space — copied into device_in first from the host
/// wire — raw ones copied. A block that did not decode is a format_error naming its sender.
template <codec Codec, floating_value T, staging_space Space, class Compressed>
void unstage_incoming(call_context& call, const Codec& codec, Space& space, staged_wire path, std::span<const std::byte> wired,
                      const staged_side& side, std::span<T> out, Compressed compressed) {
  const int p = call.size();
  const auto bytes_of = [&](std::size_t block) { return wired.subspan(side.at[block], side.bytes[block]); };
  const std::vector<char> decodable = check_received_streams(
      call, space, path.on_device, static_cast<std::size_t>(p), bytes_of, [&](std::size_t b) { return side.values(static_cast<int>(b)); },
      [](std::size_t b) { return static_cast<int>(b); },
      [&](std::size_t b) { return static_cast<int>(b) != call.rank() && compressed(static_cast<int>(b)); });
  for (int b = 0; b < p; ++b) {
    const auto block = static_cast<std::size_t>(b);
    const std::span<const std::byte> bytes = bytes_of(block);
    if (b != call.rank() && !compressed(b) && bytes.size() == side.values(b) * sizeof(T)) {  // else refused by alltoallv_block_size
      space.copy(std::as_writable_bytes(out.subspan(side.first[block], side.values(b))), bytes);
    }
  }
  std::vector<batch_run> runs = batch_runs(
      p, space.max_batch_streams(), [&](int b) { return decodable[static_cast<std::size_t>(b)] != 0; }, [](int) { return true; });
  // device_in mirrors the host wire: a run's blocks are adjacent there, one copy a run. The device wire
  // is decoded where it is.
  std::span<const std::byte> device_in = wired;
  if (!path.on_device) {
    const std::span<std::byte> copied = space.area(staging_area::device_in, wired.size());
    for (const batch_run& run : runs) {
      const std::uint64_t at = side.at[static_cast<std::size_t>(run.first)];
      space.copy(copied.subspan(at, side.run_bytes(run)), wired.subspan(at, side.run_bytes(run)));
    }
    device_in = copied;
  }
  decompress_batches<T>(
      call, codec, space, runs, device_in, side.at, side.bytes,
      [&](const batch_run& run) { return out.subspan(side.first[static_cast<std::size_t>(run.first)], side.run_values(run)); },
      [&](const batch_run& run) { return side.run_counts(run); }, [](int b) { return b; });
}

/// alltoallv on values in `space` (send_first / recv_first: the blocks' first values, p + 1 each).
template <class S, codec Codec, floating_value T, staging_space Space>
task<> staged_alltoallv(call_context& call, const block_codec<Codec>& coder, Space& space, std::span<const T> in,
                        std::vector<std::size_t> send_first, std::span<T> out, std::vector<std::size_t> recv_first,
                        bool identity_codec) {
  const int p = call.size(), me = call.rank();
  const auto compresses = [&](std::size_t values) {
    return !identity_codec && values > 0 && values * sizeof(T) >= call.config().min_compressed_bytes;
  };
  staged_side sent{.first = std::move(send_first), .at = {}, .bytes = {}};
  staged_side received{.first = std::move(recv_first), .at = {}, .bytes = {}};
  const staged_wire path = wire_of(call, space);
  const auto start = clock::now();
  const std::span<std::byte> wire_out = stage_outgoing(call, coder.codec(), space, path, in, sent,
                                                       [&](int b) { return b != me && compresses(sent.values(b)); });
  call.report.compress_s += seconds_since(start);
  space.copy(std::as_writable_bytes(out.subspan(received.first[static_cast<std::size_t>(me)], received.values(me))),
             std::as_bytes(in.subspan(sent.first[static_cast<std::size_t>(me)], sent.values(me))));
  // The words, then the bytes, over S's rounds.
  const int rounds = S::rounds(schedule::collective_op::alltoall, p);
  received.bytes.assign(static_cast<std::size_t>(p), 0);
  std::vector<char> arrives_compressed(static_cast<std::size_t>(p), 0);
  bool any_compressed = false;
  for (int r = 0; r < rounds; ++r) {
    const schedule::step st = S::at(schedule::collective_op::alltoall, p, me, r, 0);
    wire::block_words out_words{}, in_words{};
    if (st.send.active()) {
      out_words = {sent.values(st.send.peer), sent.bytes[static_cast<std::size_t>(st.send.peer)]};
      any_compressed = any_compressed || compresses(sent.values(st.send.peer));
    }
    co_await call.exchange(st.send, std::as_bytes(std::span(&out_words, 1)), st.recv, std::as_writable_bytes(std::span(&in_words, 1)),
                           wire::size_tag, 0);
    if (!st.recv.active()) continue;
    const auto from = static_cast<std::size_t>(st.recv.peer);
    arrives_compressed[from] = compresses(static_cast<std::size_t>(in_words.values));
    any_compressed = any_compressed || arrives_compressed[from];
    received.bytes[from] =
        alltoallv_block_size<Codec, T>(call, coder, in_words, received.values(st.recv.peer), arrives_compressed[from], st.recv.peer);
  }
  const std::span<std::byte> wire_in = space.area(path.in(), received.place());
  for (int r = 0; r < rounds; ++r) {
    const schedule::step st = S::at(schedule::collective_op::alltoall, p, me, r, 0);
    std::span<const std::byte> outgoing;
    std::span<std::byte> incoming;
    std::size_t raw = 0;
    if (st.send.active()) {
      const auto to = static_cast<std::size_t>(st.send.peer);
      outgoing = std::span<const std::byte>(wire_out).subspan(sent.at[to], sent.bytes[to]);
      raw = sent.values(st.send.peer) * sizeof(T);
    }
    if (st.recv.active()) {
      const auto from = static_cast<std::size_t>(st.recv.peer);
      incoming = wire_in.subspan(received.at[from], received.bytes[from]);
    }
    co_await call.exchange(st.send, outgoing, st.recv, incoming, wire::data_tag, raw);
  }
  const auto decoding = clock::now();
  unstage_incoming(call, coder.codec(), space, path, wire_in, received, out,
                   [&](int b) { return arrives_compressed[static_cast<std::size_t>(b)] != 0; });
  call.report.decompress_s += seconds_since(decoding);
  call.compress_now = any_compressed;
  call.report.compressed = any_compressed;
}

}  // namespace zcoll::detail
