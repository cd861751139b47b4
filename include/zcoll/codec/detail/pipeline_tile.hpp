#pragma once
/// The CUDA driver's algorithm for one chunk ("tile") of a batch of pipeline streams, written for a team
/// of threads that holds one thread per 32-value block of the chunk.
///
/// One launch compresses every chunk of every stream of a batch (the per-destination blocks of an
/// all-to-all, or one stream): each thread quantizes, predicts and encodes its block with the per-block
/// math the host driver uses (codec/detail/pipeline_block.hpp, the stages' *_block functions), team scans
/// place the blocks in the chunk, and a scan over the tiles in launch order (CUB's decoupled look-back on
/// the GPU) places the chunk in the output and the streams one after another — so the bytes are the host
/// driver's, stream by stream, and each stream's size is produced where it is computed.
///
/// A Team provides: rank() and size(); sync(); exclusive_scan(value, op, initial, aggregate) over the
/// team in rank order, which starts with a barrier; tile_prefix(value, scan), the exclusive scan of the tiles' values in tile order
/// (scan 0 or 1: two independent scans, which zcoll::add needs, codec/detail/pipeline_add_tile.hpp);
/// flags() and words(), size() bytes and 2 size() + 4 words the team shares; and report(fault) for the
/// first decoding fault. The CUDA team is in codec/pipeline.cuh; tests run the same code on a host team of
/// std::threads (tests/support/host_team.hpp), which is how this algorithm is tested without a GPU.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>

#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/detail/block_decoding.hpp"
#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/codec/detail/exception_section.hpp"
#include "zcoll/codec/detail/huffman_tile.hpp"
#include "zcoll/codec/detail/vector_lz_tile.hpp"
#include "zcoll/codec/detail/stream_batch.hpp"
#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/core/bits.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/predict/lorenzo.hpp"
#include "zcoll/predict/none.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/encode/huffman.hpp"
#include "zcoll/encode/vector_lz.hpp"

namespace zcoll::detail {

/// The longest chunk a team covers: one thread per block, at most 1024 threads in a CUDA block.
inline constexpr std::uint32_t max_team_chunk_values = 1024 * block_values;
/// Tiles in one launch: CUB sizes its tile states as int × bytes per state (24 for a placement), so
/// more would overflow its int arithmetic.
inline constexpr std::uint64_t max_batch_tiles = 0x7FFFFFFF / 24 - 64;

/// Threads in the team for chunks of `chunk_values`: one per block, 128 for chunks up to 4096 values (the
/// default) and 1024 beyond. Two team sizes, not every power of two: each is a kernel instantiation per
/// pipeline, type and direction, and nvcc's time is what CI pays; chunks of 4097 to 16384 values leave
/// threads of their team idle (4096 or 32768 use every thread).
ZCOLL_HOST_DEVICE constexpr unsigned team_threads_for(std::uint32_t chunk_values) {
  return chunk_values <= 128 * block_values ? 128 : 1024;
}

/// Predictors whose state at a block is the last code (or value) before it, so a team scan gives it.
template <class P>
inline constexpr bool scan_predictor = std::is_same_v<P, predict::Lorenzo1D> || std::is_same_v<P, predict::None>;

template <class P>
ZCOLL_HOST_DEVICE typename P::state predictor_state_after(std::uint32_t previous) {
  if constexpr (std::is_same_v<P, predict::Lorenzo1D>) {
    return {previous};
  } else {
    (void)previous;
    return {};
  }
}

/// The last coded (not exception) code of a block, if it has one: an exception repeats the code before it,
/// which may be in any earlier block of the chunk, so the codes exceptions repeat are a scan.
struct kept_code {
  std::uint32_t present = 0;
  std::int32_t code = 0;
};
struct keep_later_code {
  ZCOLL_HOST_DEVICE kept_code operator()(const kept_code& a, const kept_code& b) const { return b.present ? b : a; }
};
ZCOLL_HOST_DEVICE inline kept_code last_kept_code(const std::int32_t* codes, block_mask exceptions) {
  const block_mask kept = ~exceptions;
  if (kept == 0) return {};
  return {1, codes[31 - zcoll::countl_zero(kept)]};
}

/// What a block adds to its chunk: encoded bytes, exception-section bytes and entries.
struct chunk_sizes {
  std::uint32_t block_bytes = 0;
  std::uint32_t exception_bytes = 0;
  std::uint32_t entries = 0;
};
struct add_chunk_sizes {
  ZCOLL_HOST_DEVICE chunk_sizes operator()(const chunk_sizes& a, const chunk_sizes& b) const {
    return {a.block_bytes + b.block_bytes, a.exception_bytes + b.exception_bytes, a.entries + b.entries};
  }
};

/// A tile's bytes in the batch's output and in its stream: the segmented sum whose exclusive prefix
/// gives a tile both its offset in the output and its stream's start (a stream's first tile starts a
/// segment, and carries the stream's header and index).
/// (No default member initializers: the CUDA team keeps one in __shared__ memory, which cannot have a
/// dynamic initializer; placement{} is zero.)
struct placement {
  std::uint64_t offset;
  std::uint64_t in_stream;
  std::uint32_t starts_stream;
};
struct place_after {
  ZCOLL_HOST_DEVICE placement operator()(const placement& a, const placement& b) const {
    return {a.offset + b.offset, b.starts_stream ? b.in_stream : a.in_stream + b.in_stream,
            a.starts_stream | b.starts_stream};
  }
};

/// Smallest and largest order key (core/value_range.hpp) of a stream's finite, non-fill values, as the
/// relative bound's range pass leaves them.
struct extent_keys {
  long long lowest = std::numeric_limits<long long>::max();
  long long highest = std::numeric_limits<long long>::min();
};

/// The values whose order keys `keys` holds (empty when it holds none).
template <floating_value T>
ZCOLL_HOST_DEVICE value_extent<T> extent_of_keys(const extent_keys& keys) {
  using key = std::make_signed_t<bits_of<T>>;
  if (keys.lowest > keys.highest) return {};
  return {from_order_key<T>(static_cast<key>(keys.lowest)), from_order_key<T>(static_cast<key>(keys.highest))};
}

template <floating_value T>
ZCOLL_HOST_DEVICE double range_of(const extent_keys& keys) {
  return extent_of_keys<T>(keys).range();
}

/// Whether the order key of `v` counts for the value range: finite and not the fill value.
template <floating_value T>
ZCOLL_HOST_DEVICE bool in_value_range(T v, bool has_fill, bits_of<T> fill) {
  const auto b = std::bit_cast<bits_of<T>>(v);
  constexpr bits_of<T> magnitude = std::numeric_limits<std::make_signed_t<bits_of<T>>>::max();
  return (b & magnitude) <= std::bit_cast<bits_of<T>>(std::numeric_limits<T>::max()) && !(has_fill && b == fill);
}

/// Where a tile is: its stream, its chunk in the stream, and the chunk's values and blocks.
struct tile_place {
  std::uint32_t stream = 0;
  std::uint32_t chunk = 0;
  std::uint32_t chunks = 0;        ///< the stream's chunk count (0: an empty stream's one tile)
  std::uint64_t first_value = 0;   ///< the chunk's first value within its stream
  std::size_t values = 0;
  std::size_t blocks = 0;

  /// Values of block b of the chunk (0 past its end).
  ZCOLL_HOST_DEVICE std::size_t lanes_of_block(std::size_t b) const {
    if (b >= blocks) return 0;
    return values - b * block_values < block_values ? values - b * block_values : block_values;
  }
};

/// The streams of a batch: stream s compresses values [first_value[s], first_value[s + 1]) and takes
/// tiles [first_tile[s], first_tile[s + 1]) (one per chunk, one for an empty stream).
struct batch_layout {
  std::uint32_t streams = 0;
  std::uint32_t chunk_values = 0;
  std::uint64_t first_value[max_batch_streams + 1] = {};
  std::uint32_t first_tile[max_batch_streams + 1] = {};

  ZCOLL_HOST_DEVICE std::uint32_t tiles() const { return first_tile[streams]; }
  ZCOLL_HOST_DEVICE std::uint64_t count(std::uint32_t s) const { return first_value[s + 1] - first_value[s]; }
  ZCOLL_HOST_DEVICE std::uint32_t chunks(std::uint32_t s) const {
    return static_cast<std::uint32_t>(chunk_count_for(count(s), chunk_values));
  }
  /// The stream that tile `t` belongs to (binary search; a handful of steps).
  ZCOLL_HOST_DEVICE std::uint32_t stream_of(std::uint32_t t) const {
    std::uint32_t low = 0, high = streams;  // first_tile[low] <= t < first_tile[high]
    while (high - low > 1) {
      const std::uint32_t mid = (low + high) / 2;
      (first_tile[mid] <= t ? low : high) = mid;
    }
    return low;
  }
  ZCOLL_HOST_DEVICE tile_place tile(std::uint32_t t) const {
    tile_place p;
    p.stream = stream_of(t);
    p.chunk = t - first_tile[p.stream];
    p.chunks = chunks(p.stream);
    p.first_value = std::uint64_t{p.chunk} * chunk_values;
    p.values = p.chunks == 0 ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(chunk_values, count(p.stream) - p.first_value));
    p.blocks = (p.values + block_values - 1) / block_values;
    return p;
  }
};

/// The batch layout for streams of `counts` values, checked at the API boundary.
inline batch_layout make_layout(const char* caller, std::span<const std::size_t> counts,
                                               std::uint32_t chunk_values) {
  if (counts.size() == 0 || counts.size() > max_batch_streams) {
    throw argument_error(std::string(caller) + ": counts holds " + std::to_string(counts.size()) +
                         " streams; a batch takes 1 to " + std::to_string(max_batch_streams));
  }
  if (chunk_values > max_team_chunk_values) {
    throw argument_error(std::string(caller) + ": codec_config chunk_values " + std::to_string(chunk_values) +
                         " is more than the CUDA driver's " + std::to_string(max_team_chunk_values) +
                         " (one thread per 32 values in a CUDA block of at most 1024)");
  }
  batch_layout layout;
  layout.streams = static_cast<std::uint32_t>(counts.size());
  layout.chunk_values = chunk_values;
  std::uint64_t tiles = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    layout.first_value[s + 1] = checked_add(layout.first_value[s], counts[s], caller, "the sum of counts");
    tiles += std::max<std::uint64_t>(1, chunk_count_for(counts[s], chunk_values));
    if (tiles > max_batch_tiles) {
      throw argument_error(std::string(caller) + ": counts make more than " + std::to_string(max_batch_tiles) +
                           " chunks of " + std::to_string(chunk_values) + " in one launch; raise chunk_values or split the batch");
    }
    layout.first_tile[s + 1] = static_cast<std::uint32_t>(tiles);
  }
  return layout;
}

/// A compression launch: the values, the configuration, and where the results go (device memory on a GPU).
template <floating_value T>
struct compress_job {
  batch_layout layout;
  const T* values = nullptr;
  std::byte* out = nullptr;
  bound error_bound{};
  bool has_fill = false;
  bits_of<T> fill = 0;
  const extent_keys* extents = nullptr;   ///< per stream, for a relative bound
  std::uint64_t* stream_offset = nullptr; ///< per stream: where it starts in `out`
  std::uint64_t* stream_bytes = nullptr;  ///< per stream: its size
  std::uint64_t* total_bytes = nullptr;   ///< the batch's size
};

/// A thread's block on its way into its chunk: the encoded bytes, the exception lanes, and its values,
/// from which the exception section stores the outliers and a verbatim chunk every lane.
template <class E, floating_value T>
struct tile_block {
  std::byte encoded[E::max_block_bytes];
  std::uint32_t encoded_bytes = 0;
  exception_masks e{};
  const T* values = nullptr;  ///< the block's first value
  std::size_t lanes = 0;      ///< its values in the chunk (0 for a thread past the chunk's blocks)
};

/// A chunk's layout as the team agreed it: every member the same, but `before`, `fill_block` and
/// `entry`, which are the thread's own block's.
struct chunk_plan {
  chunk_sizes before;        ///< the blocks' and the section's bytes before this thread's block
  chunk_sizes total;
  bool fill_block = false;   ///< this block is all fill (it joins a fill run)
  bool entry = false;        ///< this block writes an entry of the exception section
  bool verbatim = false;
  std::uint64_t bytes = 0;   ///< the chunk's size
};

/// The exception section's entries and the chunk's size, for a chunk of n values whose blocks the team
/// holds: a block of nothing but fill joins the fill run of the block before it; the coded form is kept
/// only when `coded` and not larger than the values (as on the host).
template <class E, floating_value T, class Team>
ZCOLL_HOST_DEVICE chunk_plan plan_chunk(Team& team, const tile_block<E, T>& block, std::size_t n, bool coded) {
  chunk_plan plan;
  const unsigned b = team.rank();
  const bool mine = coded && block.lanes > 0;
  plan.fill_block = mine && block.e.any() != 0 && all_fill(block.e, block.lanes);
  team.flags()[b] = plan.fill_block ? 1 : 0;
  team.sync();
  const bool starts_run = plan.fill_block && !(b > 0 && team.flags()[b - 1] != 0);
  plan.entry = mine && block.e.any() != 0 && (!plan.fill_block || starts_run);
  chunk_sizes own{mine ? block.encoded_bytes : 0u, 0, 0};
  if (plan.entry) {
    own.exception_bytes = static_cast<std::uint32_t>(plan.fill_block ? exception_entry_header_bytes
                                                                     : masked_block_entry_bytes<T>(block.e.outliers));
    own.entries = 1;
  }
  plan.before = team.exclusive_scan(own, add_chunk_sizes{}, chunk_sizes{}, plan.total);
  const std::size_t value_bytes = n * sizeof(T);
  const std::size_t section_bytes =
      plan.total.entries > 0 ? exception_count_bytes + std::size_t{plan.total.exception_bytes} : 0;
  plan.verbatim = n > 0 && (!coded || 1 + std::size_t{plan.total.block_bytes} + section_bytes > value_bytes);
  plan.bytes = n == 0 ? 0 : plan.verbatim ? 1 + value_bytes : 1 + plan.total.block_bytes + section_bytes;
  return plan;
}

/// Writes the planned chunk of n values (`blocks` blocks) at `chunk`: rank 0 its kind and the section's
/// entry count, every thread its block's bytes and entry, or its values for a verbatim chunk. The flags
/// plan_chunk set must still be there.
template <class E, floating_value T, class Team>
ZCOLL_HOST_DEVICE void write_chunk(Team& team, const chunk_plan& plan, const tile_block<E, T>& block, std::size_t n,
                                   std::size_t blocks, std::byte* chunk) {
  const unsigned b = team.rank();
  if (b == 0 && n > 0) {
    const chunk_kind kind = plan.verbatim          ? chunk_kind::verbatim
                            : plan.total.entries > 0 ? chunk_kind::coded_with_exceptions
                                                     : chunk_kind::coded;
    chunk[0] = static_cast<std::byte>(kind);
    if (kind == chunk_kind::coded_with_exceptions) {
      write_exception_count(chunk + 1 + plan.total.block_bytes, static_cast<std::uint16_t>(plan.total.entries));
    }
  }
  if (plan.verbatim) {
    if (block.lanes > 0) std::memcpy(chunk + 1 + b * block_values * sizeof(T), block.values, block.lanes * sizeof(T));
    return;
  }
  if (n == 0 || block.lanes == 0) return;
  std::memcpy(chunk + 1 + plan.before.block_bytes, block.encoded, block.encoded_bytes);
  if (!plan.entry) return;
  std::byte* const entry = chunk + 1 + plan.total.block_bytes + exception_count_bytes + plan.before.exception_bytes;
  if (plan.fill_block) {
    std::uint16_t run = 1;
    while (b + run < blocks && team.flags()[b + run] != 0) ++run;
    write_fill_run(entry, static_cast<std::uint16_t>(b), run);
  } else {
    write_masked_block(entry, static_cast<std::uint16_t>(b), block.e.fill, block.e.outliers, block.values);
  }
}

/// Compresses tile `t` of the job with the team; every thread of the team calls it.
template <class Q, class P, class E, floating_value T, class Team>
ZCOLL_HOST_DEVICE void compress_tile(Team& team, const compress_job<T>& job, std::uint32_t t) {
  static_assert(scan_predictor<P>, "the CUDA driver predicts with Lorenzo1D or None");
  const batch_layout& layout = job.layout;
  const tile_place tile_at = layout.tile(t);
  const std::uint32_t s = tile_at.stream, c = tile_at.chunk, chunks = tile_at.chunks;
  const std::uint64_t first = tile_at.first_value;
  const std::size_t n = tile_at.values, blocks = tile_at.blocks;
  const T* const values = job.values + layout.first_value[s] + first;

  double eb = 0.0;
  if constexpr (Q::uses_error_bound) {
    const bool relative = job.error_bound.mode == bound_mode::relative;
    eb = absolute_bound(job.error_bound, relative ? range_of<T>(job.extents[s]) : 0.0);
  }
  const typename Q::template block_quantizer<T> quantizer(eb);
  const bool coded = n > 0 && quantizer.usable();
  const unsigned b = team.rank();
  const std::size_t lanes = tile_at.lanes_of_block(b);
  const bool mine = coded && lanes > 0;

  // 1. Codes and exceptions of the thread's block; the code before the block is a scan.
  std::int32_t codes[block_values] = {};
  tile_block<E, T> block;
  block.values = lanes > 0 ? values + b * block_values : nullptr;  // (values is null for an empty stream)
  block.lanes = lanes;
  kept_code last{};
  if (mine) {
    block.e = quantize_block<T>(quantizer, job.has_fill, job.fill, block.values, lanes, codes);
    last = last_kept_code(codes, block.e.any());
  }
  kept_code unused;
  const kept_code incoming = team.exclusive_scan(last, keep_later_code{}, kept_code{1, 0}, unused);

  // 2. Residuals and the encoded block, kept by the thread until its place is known.
  if (mine) {
    repeat_previous_code(codes, block.e.any(), incoming.code);
    std::int32_t residuals[block_values];
    auto state = predictor_state_after<P>(static_cast<std::uint32_t>(incoming.code));
    P::forward(state, codes, residuals);
    for (std::size_t j = lanes; j < block_values; ++j) residuals[j] = 0;
    block.encoded_bytes = static_cast<std::uint32_t>(E::encode_block(residuals, block.encoded));
  }

  // 3. The exception section and the chunk's size.
  const chunk_plan plan = plan_chunk(team, block, n, coded);

  // 4. The chunk's place: the scan over the batch's tiles.
  const std::uint64_t prefix_bytes = c == 0 ? stream_prefix_size_bytes(chunks) : 0;
  const placement tile{prefix_bytes + plan.bytes, prefix_bytes + plan.bytes, c == 0 ? 1u : 0u};
  const placement earlier = team.tile_prefix(tile, 0);
  const std::uint64_t stream_start = c == 0 ? earlier.offset : earlier.offset - earlier.in_stream;
  std::byte* const stream = job.out + stream_start;

  if (team.rank() == 0) {
    if (c == 0) {
      stream_header header;
      header.codec = pipeline_codec_id<Q, P, E>();
      header.type = value_type_of<T>;
      header.has_fill_value = job.has_fill;
      header.count = layout.count(s);
      header.error_bound = quantizer.usable() ? quantizer.guaranteed_bound() : 0.0;
      header.fill_bits = job.has_fill ? job.fill : 0;
      header.chunk_values = layout.chunk_values;
      header.chunk_count = chunks;
      store_stream_header(header, stream);
      job.stream_offset[s] = stream_start;
    }
    if (n > 0) {
      const auto size32 = static_cast<std::uint32_t>(plan.bytes);
      std::memcpy(stream + stream_header_size_bytes + 4 * std::size_t{c}, &size32, 4);
    }
    if (c + 1 >= chunks) job.stream_bytes[s] = (c == 0 ? 0 : earlier.in_stream) + tile.in_stream;
    if (t + 1 == layout.tiles()) *job.total_bytes = earlier.offset + tile.offset;
  }

  // 5. The bytes into place.
  write_chunk(team, plan, block, n, blocks, job.out + earlier.offset + prefix_bytes);
}

/// A bad_exceptions fault's detail: the section's byte in the chunk and the exception_fault.
ZCOLL_HOST_DEVICE constexpr std::uint64_t exception_fault_detail(std::size_t at, exception_fault fault) {
  return std::uint64_t{at} << 8 | static_cast<std::uint8_t>(fault);
}

/// A decompression launch: the streams at their offsets in `in`, the values out.
template <floating_value T>
struct decompress_job {
  batch_layout layout;
  const std::byte* in = nullptr;
  T* values = nullptr;
  std::uint64_t stream_offset[max_batch_streams] = {};
  std::uint64_t stream_bytes[max_batch_streams] = {};
  /// Per stream, its model read by read_huffman_device_model: Huffman pipelines only.
  const huffman_device_model* models = nullptr;
};

/// The header fields a device decoder checks against what it was asked to decode; a header that does
/// not parse is `bad_header`, its header_fault in `detail`.
template <class Q, class P, class E, floating_value T>
ZCOLL_HOST_DEVICE decode_fault_code check_header(const std::byte* stream, std::uint64_t length, std::uint64_t count,
                                                 std::uint32_t chunk_values, stream_header& h, header_fault& detail) {
  const std::uint32_t chunks = static_cast<std::uint32_t>(chunk_count_for(count, chunk_values));
  if (length < stream_prefix_size_bytes(chunks)) return decode_fault_code::short_stream;
  detail = parse_stream_header(stream, length, h);
  if (detail != header_fault::none) return decode_fault_code::bad_header;
  if (!(h.codec == pipeline_codec_id<Q, P, E>()) || h.type != value_type_of<T>) return decode_fault_code::wrong_codec;
  if (h.count != count) return decode_fault_code::wrong_count;
  if (h.chunk_values != chunk_values || h.chunk_count != chunks) return decode_fault_code::wrong_chunking;
  if (!(h.error_bound <= std::numeric_limits<double>::max())) return decode_fault_code::bad_error_bound;
  return decode_fault_code::none;
}

/// Decompresses tile `t` of the job with the team; every thread of the team calls it. A fault is
/// reported and leaves the tile's values unspecified; it never reads or writes outside the job's buffers.
/// With `staging` (room for a chunk's values the team shares: a CUDA block's shared memory), each thread
/// decodes its block there and the team then writes the chunk out value by value in rank order, so that
/// consecutive threads write consecutive values (on a GPU, one transaction a warp instead of 32); without
/// it each thread writes its block's values where they go.
template <class Q, class P, class E, floating_value T, class Team>
ZCOLL_HOST_DEVICE void decompress_tile(Team& team, const decompress_job<T>& job, std::uint32_t t, T* staging = nullptr) {
  static_assert(scan_predictor<P>, "the CUDA driver predicts with Lorenzo1D or None");
  const batch_layout& layout = job.layout;
  const tile_place tile_at = layout.tile(t);
  const std::uint32_t s = tile_at.stream, c = tile_at.chunk, chunks = tile_at.chunks;
  const std::uint64_t first = tile_at.first_value;
  const std::size_t n = tile_at.values, blocks = tile_at.blocks;
  T* const values = job.values + layout.first_value[s] + first;
  const std::byte* const stream = job.in + job.stream_offset[s];
  const std::uint64_t length = job.stream_bytes[s];
  const auto fail = [&](decode_fault_code code, std::uint64_t detail) {
    team.report(decode_fault{static_cast<std::uint32_t>(code), s, c, detail});
  };

  // 1. Header, and the chunk's size from the index; every tile takes part in the scan, failed or not,
  // so that no later tile waits for ever.
  stream_header h;
  header_fault parse_fault = header_fault::none;
  const decode_fault_code header_check =
      check_header<Q, P, E, T>(stream, length, layout.count(s), layout.chunk_values, h, parse_fault);
  std::uint32_t size = 0;
  if (header_check == decode_fault_code::none && n > 0) {
    std::memcpy(&size, stream + stream_header_size_bytes + 4 * std::size_t{c}, 4);
  }
  std::uint64_t prefix_bytes = stream_prefix_size_bytes(chunks);
  bool model_ready = true;  // the model kernel reports a model that did not read
  if constexpr (encode::chunk_encoder<E>) {
    model_ready = job.models[s].ready != 0;
    prefix_bytes += model_ready ? job.models[s].section_bytes : 0;
  }
  const placement earlier = team.tile_prefix(placement{size, size, c == 0 ? 1u : 0u}, 0);
  const std::uint64_t offset = prefix_bytes + (c == 0 ? 0 : earlier.in_stream);
  if (header_check != decode_fault_code::none) {
    if (team.rank() == 0 && c == 0) fail(header_check, static_cast<std::uint64_t>(parse_fault));
    return;
  }
  if (!model_ready) return;
  if (c + 1 >= chunks && offset + size != length) {
    if (team.rank() == 0) fail(decode_fault_code::wrong_length, offset + size);
    return;
  }
  if (n == 0 || offset + size > length) return;  // the stream's last tile reports a length that does not add up
  const std::byte* const chunk = stream + offset;
  if (size == 0) {
    if (team.rank() == 0) fail(decode_fault_code::bad_chunk_kind, 0);
    return;
  }
  const auto kind = static_cast<chunk_kind>(std::to_integer<std::uint8_t>(chunk[0]));
  const unsigned b = team.rank();
  const std::size_t lanes = tile_at.lanes_of_block(b);
  if (kind == chunk_kind::verbatim) {
    if (size != 1 + n * sizeof(T)) {
      if (b == 0) fail(decode_fault_code::bad_verbatim_chunk, size);
      return;
    }
    if (staging == nullptr) {
      if (lanes > 0) std::memcpy(values + b * block_values, chunk + 1 + b * block_values * sizeof(T), lanes * sizeof(T));
      return;
    }
    for (std::size_t i = b; i < n; i += team.size()) std::memcpy(values + i, chunk + 1 + i * sizeof(T), sizeof(T));
    return;
  }
  if (kind != chunk_kind::coded && kind != chunk_kind::coded_with_exceptions) {
    if (b == 0) fail(decode_fault_code::bad_chunk_kind, static_cast<std::uint64_t>(kind));
    return;
  }
  const typename Q::template block_quantizer<T> quantizer(h.error_bound);
  if (!quantizer.usable()) {
    if (b == 0) fail(decode_fault_code::bad_error_bound, 0);
    return;
  }

  // 2. The blocks' residuals: a block encoder's blocks, found by a walk (their first bytes give their
  // sizes); a Huffman chunk's streams, one thread each; or its bit-plane fallback's blocks; or a
  // VectorLZ chunk's literals placed by its tokens.
  std::uint32_t residuals[block_values] = {};
  std::size_t coded_end = 0;  // where the exception section starts
  bool decoded = false;
  if constexpr (std::is_same_v<E, encode::VectorLZ>) {
    auto* const buffer = reinterpret_cast<std::uint32_t*>(staging != nullptr ? staging : values);
    decoded = decode_vector_lz_chunk(team, job.models[s], chunk, size, n, staging, layout.chunk_values, buffer, residuals,
                                     lanes, coded_end, fail);
  } else if constexpr (encode::chunk_encoder<E>) {
    static_assert(std::is_same_v<E, encode::Huffman>, "the CUDA driver's chunk encoders are Huffman and VectorLZ");
    const huffman_device_model& model = job.models[s];
    if (model.bitplane) {
      decoded = decode_blocks<encode::BitShuffle>(team, chunk, size, n, blocks, staging, layout.chunk_values, residuals,
                                                  coded_end, fail, true);
    } else {
      auto* const buffer = reinterpret_cast<std::uint32_t*>(staging != nullptr ? staging : values);
      std::uint64_t detail = 0;
      const huffman_share mine = decode_huffman_share(model, chunk, size, n, b, buffer, detail);
      if (mine.failed != 0) fail(decode_fault_code::bad_block, detail);
      huffman_share all{};
      (void)team.exclusive_scan(mine, combine_huffman_shares{}, huffman_share{0, 0}, all);  // also the barrier
      decoded = all.failed == 0;
      coded_end = all.end;
      // (The block sums' scan below starts with a barrier: every thread has its residuals before any
      // writes values over the buffer.)
      for (std::size_t j = 0; decoded && j < lanes; ++j) residuals[j] = buffer[b * block_values + j];
    }
  } else {
    decoded = decode_blocks<E>(team, chunk, size, n, blocks, staging, layout.chunk_values, residuals, coded_end, fail, false);
  }
  if (!decoded) return;

  // 3. Residuals back to codes (the Lorenzo prefix sum runs on across blocks: a scan of block sums), and
  // codes to values.
  std::uint32_t block_sum = 0;
  for (std::size_t j = 0; j < block_values; ++j) block_sum += residuals[j];
  std::uint32_t unused;
  // (The scan starts with a barrier: every block is decoded before any thread writes values over the
  // staged bytes below.)
  const std::uint32_t incoming = team.exclusive_scan(block_sum, add_words{}, 0u, unused);
  if (lanes > 0) {
    auto state = predictor_state_after<P>(incoming);
    P::inverse(state, residuals);
    T decoded_values[block_values];
    quantizer.dequantize(residuals, decoded_values, lanes);
    T* const out = (staging != nullptr ? staging : values) + b * block_values;
    for (std::size_t j = 0; j < lanes; ++j) out[j] = decoded_values[j];
  }
  team.sync();  // the exception section overwrites values the blocks wrote

  // 4. The exception section, and nothing after it.
  std::uint32_t* const status = team.words();
  if (b == 0) {
    std::size_t at = coded_end;
    bool fine = true;
    if (kind == chunk_kind::coded_with_exceptions) {
      const auto section = apply_exception_section(chunk + at, size - at, h.has_fill_value,
                                                   std::bit_cast<T>(static_cast<bits_of<T>>(h.fill_bits)),
                                                   staging != nullptr ? staging : values, n);
      if (section.fault != exception_fault::none) fail(decode_fault_code::bad_exceptions, exception_fault_detail(at, section.fault));
      fine = section.fault == exception_fault::none;
      at += section.bytes;
    }
    if (fine && at != size) fail(decode_fault_code::bytes_left, size - at);
    status[0] = fine && at == size ? 1 : 0;
  }
  if (staging == nullptr) return;

  // 5. The staged chunk out, consecutive threads on consecutive values.
  team.sync();
  if (status[0] == 0) return;
  for (std::size_t i = b; i < n; i += team.size()) values[i] = staging[i];
}

}  // namespace zcoll::detail
