#pragma once
/// The pieces the staged calls share (detail/staged_alltoall.hpp, detail/staged_block_work.hpp): blocks
/// grouped into codec batches, the batches' slices of the space's areas, and the host's check of a
/// received stream before it is copied into the space.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/staging.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::detail {

/// Consecutive blocks [first, first + count) that go through one codec batch, and where the batch's
/// output and workspace start in their areas.
struct batch_run {
  int first = 0;
  int count = 0;
  std::size_t out_at = 0;
  std::size_t work_at = 0;
};

/// The runs of consecutive blocks b in [0, blocks) for which batched(b) holds, at most `most` each; a
/// block joins the run of block b - 1 only where joins(b) (its values follow b - 1's in memory).
template <class Batched, class Joins>
std::vector<batch_run> batch_runs(int blocks, std::size_t most, Batched batched, Joins joins) {
  std::vector<batch_run> runs;
  for (int b = 0; b < blocks; ++b) {
    if (!batched(b)) continue;
    const bool extends = !runs.empty() && runs.back().first + runs.back().count == b &&
                         static_cast<std::size_t>(runs.back().count) < most && joins(b);
    if (!extends) runs.push_back({.first = b});
    ++runs.back().count;
  }
  return runs;
}

/// The values of a batch whose streams hold `counts` values each.
inline std::size_t run_values(const std::vector<std::size_t>& counts) {
  std::size_t values = 0;
  for (const std::size_t c : counts) values += c;
  return values;
}

/// Slices of the device areas start on 256 bytes, as CUDA's workspaces must (and cudaMalloc's do).
inline std::size_t device_slice(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Gives each run (its streams' counts: counts_of(run)) its output and workspace slice; returns the
/// areas' sizes {out, work}.
template <floating_value T, codec Codec, class Space, class CountsOf>
std::pair<std::size_t, std::size_t> lay_out_runs(std::vector<batch_run>& runs, CountsOf counts_of, const Codec& codec,
                                                 Space& space) {
  std::size_t out = 0, work = 0;
  for (batch_run& run : runs) {
    const std::vector<std::size_t> counts = counts_of(run);
    run.out_at = out;
    run.work_at = work;
    out += device_slice(batch_max_compressed_size<T>(codec, counts));
    work += device_slice(space.workspace_bytes(codec, counts));
  }
  return {out, work};
}

/// The outgoing streams of compress_batches: where they are in the space, and each one's size, run by
/// run (a batch's streams are packed from its out_at).
struct compressed_batches {
  std::span<std::byte> device_out;
  std::vector<std::uint64_t> sizes;
};

/// Compresses each run's streams (values_of(run): its values, counts_of(run): each stream's count) in
/// the space into its slice of device_out, and waits for the sizes. The streams of a batch the codec
/// refuses (argument_error, held in verify mode) get size 0: they go out as empty blocks, which the
/// receivers find damaged.
template <floating_value T, codec Codec, staging_space Space, class ValuesOf, class CountsOf>
compressed_batches compress_batches(call_context& call, const Codec& codec, Space& space, std::vector<batch_run>& runs,
                                    ValuesOf values_of, CountsOf counts_of) {
  const auto [out_bytes, work_bytes] = lay_out_runs<T>(runs, counts_of, codec, space);
  compressed_batches batches{.device_out = space.area(staging_area::device_out, out_bytes), .sizes = {}};
  const std::span<std::byte> work = space.area(staging_area::device_work, work_bytes);
  std::size_t streams = 0;
  for (const batch_run& run : runs) streams += static_cast<std::size_t>(run.count);
  const std::span<std::byte> word_bytes = space.area(staging_area::host_words, streams * sizeof(std::uint64_t));
  const std::span<std::uint64_t> words(reinterpret_cast<std::uint64_t*>(word_bytes.data()), streams);
  std::vector<char> written(runs.size(), 0);
  std::size_t word = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const std::vector<std::size_t> counts = counts_of(runs[k]);
    const std::span<const T> values = values_of(runs[k]);
    written[k] = call.guarded(-1, [&] {
      space.compress(codec, values, std::span<const std::size_t>(counts), batches.device_out.subspan(runs[k].out_at),
                     work.subspan(runs[k].work_at, device_slice(space.workspace_bytes(codec, counts))),
                     words.subspan(word, counts.size()));
    });
    word += counts.size();
  }
  space.wait();
  word = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto count = static_cast<std::size_t>(runs[k].count);
    if (written[k]) {
      written[k] = call.guarded(-1, [&] { space.check_compressed(codec, work.subspan(runs[k].work_at), count); });
    }
    for (std::size_t s = 0; s < count; ++s, ++word) batches.sizes.push_back(written[k] ? words[word] : 0);
  }
  return batches;
}

/// Decodes each run's streams — stream of block b: sizes[b] bytes at offsets[b] of device_in, already in
/// the space — into values_of(run) (counts_of(run): each stream's count), and waits. A stream that does
/// not decode is a format_error naming from_of(b), the rank that sent block b (held in verify mode).
/// Returns, run by run, whether one of its streams did not decode (its values are then not to be used).
template <floating_value T, codec Codec, staging_space Space, class ValuesOf, class CountsOf, class FromOf>
std::vector<char> decompress_batches(call_context& call, const Codec& codec, Space& space, std::vector<batch_run>& runs,
                                     std::span<const std::byte> device_in, std::span<const std::uint64_t> offsets,
                                     std::span<const std::uint64_t> sizes, ValuesOf values_of, CountsOf counts_of, FromOf from_of) {
  const std::span<std::byte> work = space.area(staging_area::device_work, lay_out_runs<T>(runs, counts_of, codec, space).second);
  std::vector<char> faulted(runs.size(), 0);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const batch_run& run = runs[k];
    const auto first = static_cast<std::size_t>(run.first), count = static_cast<std::size_t>(run.count);
    const std::vector<std::size_t> counts = counts_of(run);
    const auto fault = space.decompress(codec, device_in, offsets.subspan(first, count), sizes.subspan(first, count), values_of(run),
                                        std::span<const std::size_t>(counts),
                                        work.subspan(run.work_at, device_slice(space.workspace_bytes(codec, counts))));
    if (fault) {
      const int from = from_of(run.first + static_cast<int>(fault->stream));
      call.fail(format_error("block from rank " + std::to_string(from) + ": " + call_context::without_prefix(fault->message)), from);
      faulted[k] = 1;
    }
  }
  space.wait();
  return faulted;
}

/// Whether a received compressed stream holds the `values` values this rank expects, read on the host
/// before the stream is copied into the space; one that does not is a format_error naming its sender
/// (held in verify mode) and is not decoded. Notes the stream's bound as a decoded block's.
inline bool check_received_stream(call_context& call, std::span<const std::byte> stream, std::size_t values, int from) {
  return call.guarded(from, [&] {
    try {
      const stream_header header = read_stream_header(stream);
      if (header.count != values) {
        throw format_error("collective block holds " + std::to_string(header.count) + " values, " + std::to_string(values) +
                           " expected");
      }
      call.max_block_bound = std::max(call.max_block_bound, header.error_bound);
    } catch (const error& e) {
      throw format_error("block from rank " + std::to_string(from) + ": " + call_context::without_prefix(e.what()));
    }
  });
}

/// Where a staged call's bytes meet the transport: the space's host areas, or its device areas for a
/// transport that takes device memory (device_transfer, collective/staging.hpp; Compressed refused a
/// direct transfer the transport cannot take before the call started).
struct staged_wire {
  bool on_device = false;

  staging_area out() const { return on_device ? staging_area::device_wire_out : staging_area::host_out; }
  staging_area in() const { return on_device ? staging_area::device_wire_in : staging_area::host_in; }
};

template <staging_space Space>
staged_wire wire_of(call_context& call, const Space& space) {
  return {transfers_device_memory(space, call.transport().takes_device_memory(), "staged call")};
}

/// The first stream_header_size_bytes of stream_of(k) (the whole of a shorter stream) in host memory, for
/// the k in [0, streams) where wanted(k) holds (the others empty): streams in host memory are read where
/// they are; streams in the space's device memory (`in_space`) have their headers copied into its
/// host_words area (one wait).
template <staging_space Space, class StreamOf, class Wanted>
std::vector<std::span<const std::byte>> headers_on_host(Space& space, bool in_space, std::size_t streams, StreamOf stream_of,
                                                        Wanted wanted) {
  std::vector<std::span<const std::byte>> headers(streams);
  if (streams == 0) return headers;
  if (!in_space) {
    for (std::size_t k = 0; k < streams; ++k) headers[k] = wanted(k) ? stream_of(k) : std::span<const std::byte>{};
    return headers;
  }
  const std::span<std::byte> host = space.area(staging_area::host_words, streams * stream_header_size_bytes);
  for (std::size_t k = 0; k < streams; ++k) {
    if (!wanted(k)) continue;
    const std::span<const std::byte> stream = stream_of(k);
    const std::span<std::byte> header = host.subspan(k * stream_header_size_bytes, std::min(stream.size(), stream_header_size_bytes));
    space.copy(header, stream.first(header.size()));
    headers[k] = header;
  }
  space.wait();
  return headers;
}
template <staging_space Space, class StreamOf>
std::vector<std::span<const std::byte>> headers_on_host(Space& space, bool in_space, std::size_t streams, StreamOf stream_of) {
  return headers_on_host(space, in_space, streams, stream_of, [](std::size_t) { return true; });
}

/// check_received_stream on the streams k in [0, streams) for which checked(k) holds: stream_of(k), of
/// count_of(k) values, from rank from_of(k), its header read by headers_on_host (`in_space`: the stream
/// is in the space's device memory). Returns, stream by stream, whether it is to be decoded.
template <staging_space Space, class StreamOf, class CountOf, class FromOf, class Checked>
std::vector<char> check_received_streams(call_context& call, Space& space, bool in_space, std::size_t streams, StreamOf stream_of,
                                         CountOf count_of, FromOf from_of, Checked checked) {
  const std::vector<std::span<const std::byte>> headers = headers_on_host(space, in_space, streams, stream_of, checked);
  std::vector<char> decodable(streams, 0);
  for (std::size_t k = 0; k < streams; ++k) {
    if (checked(k)) decodable[k] = check_received_stream(call, headers[k], count_of(k), from_of(k));
  }
  return decodable;
}

}  // namespace zcoll::detail
