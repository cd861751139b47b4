#pragma once
/// The CUDA driver's zcoll::add for one chunk ("tile") of two streams, written for the team of
/// codec/detail/pipeline_tile.hpp (one thread per 32-value block): the sum's chunk is the bytes the host's
/// zcoll::add writes (codec/detail/pipeline_add.hpp says what they hold and why), so a sum made on the
/// device decodes on the host, and a chain of sums can mix the two.
///
/// Per tile: both chunk sizes come from the streams' indices, and a first scan over the tiles gives
/// where both chunks start; one thread walks the blocks of each chunk. Block by block (both chunks coded
/// without exceptions): each thread decodes its two blocks, adds the residuals and encodes the sum (an
/// all-zero block is a copy of the other, as on the host); the codes of the sum are a team scan of block
/// sums, and the chunk keeps this form when none leaves the code range and it is smaller than its values.
/// Otherwise lane by lane: each thread decodes its block of both chunks to values (one thread per chunk
/// reads the exception section into a per-block index first), adds them, marks the exact lanes and the
/// sum's exception entries as the compressor does (codec/detail/pipeline_tile.hpp's plan_chunk and
/// write_chunk), or stores the sums verbatim. A second scan over the tiles places the sum's chunks.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "zcoll/codec/detail/exception_section.hpp"
#include "zcoll/codec/detail/pipeline_tile.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::detail {

/// a + b as a sum's exception lane holds it: a NaN is the canonical quiet NaN (x86 keeps the first
/// operand's payload, so a + b and b + a could differ in their bits).
template <floating_value T>
ZCOLL_HOST_DEVICE T lane_sum(T a, T b) {
  const T sum = a + b;
  return sum != sum ? std::numeric_limits<T>::quiet_NaN() : sum;
}

/// The fill values of an addition: each stream's, from its header, and the sum's. A lane that holds the
/// fill value in both streams sums to lane_sum(a, b), and the sum declares that as its fill value, so
/// such a lane stays a fill lane of the sum (a mask bit, no value) and decodes to what decompress-then-
/// add gives; a sum declares none where either stream does (a fill lane of one is then a value of the
/// sum like any other). So a sum of sums (the reduction hops) declares the sum of every stream's fill.
template <floating_value T>
struct addition_fills {
  bool in_a = false, in_b = false;
  T a = T(0), b = T(0);

  ZCOLL_HOST_DEVICE static addition_fills of(const stream_header& x, const stream_header& y) {
    return {x.has_fill_value, y.has_fill_value, std::bit_cast<T>(static_cast<bits_of<T>>(x.fill_bits)),
            std::bit_cast<T>(static_cast<bits_of<T>>(y.fill_bits))};
  }
  ZCOLL_HOST_DEVICE bool in_sum() const { return in_a && in_b; }
  /// The sum's fill value (meaningful where in_sum()).
  ZCOLL_HOST_DEVICE T sum() const { return lane_sum(a, b); }
  ZCOLL_HOST_DEVICE bits_of<T> sum_bits() const { return in_sum() ? std::bit_cast<bits_of<T>>(sum()) : bits_of<T>{0}; }
  /// The header of the sum: the streams' (`x`), declaring the sum's fill value.
  ZCOLL_HOST_DEVICE stream_header header_of_sum(stream_header x) const {
    x.has_fill_value = in_sum();
    x.fill_bits = sum_bits();
    return x;
  }
};

/// The lanes among the first `lanes` whose code is beyond the quantizer's range.
template <class BlockQuantizer>
ZCOLL_HOST_DEVICE block_mask codes_out_of_range(const std::uint32_t* codes, std::size_t lanes) {
  block_mask outside = 0;
  for (std::size_t j = 0; j < lanes; ++j) {
    const auto q = static_cast<std::int32_t>(codes[j]);
    const bool beyond = q > BlockQuantizer::max_code || q < -BlockQuantizer::max_code;
    outside |= static_cast<block_mask>(beyond) << j;
  }
  return outside;
}

/// An addition launch: streams a and b of `count` values in chunks of `chunk_values`, their sum to `out`
/// (room for max_compressed_size), its size to `total_bytes`.
struct add_job {
  std::uint64_t count = 0;
  std::uint32_t chunk_values = 0;
  const std::byte* a = nullptr;
  std::uint64_t a_bytes = 0;
  const std::byte* b = nullptr;
  std::uint64_t b_bytes = 0;
  std::byte* out = nullptr;
  std::uint64_t* total_bytes = nullptr;

  ZCOLL_HOST_DEVICE std::uint32_t chunks() const { return static_cast<std::uint32_t>(chunk_count_for(count, chunk_values)); }
  /// One tile per chunk; one for an empty stream, which writes the header.
  ZCOLL_HOST_DEVICE std::uint32_t tiles() const { return chunks() == 0 ? 1 : chunks(); }
};

/// One input chunk of a tile: where it is, its size and kind.
struct added_chunk {
  const std::byte* data = nullptr;
  std::uint32_t size = 0;
  chunk_kind kind = chunk_kind::verbatim;

  ZCOLL_HOST_DEVICE bool coded() const { return kind != chunk_kind::verbatim; }
};

/// The fault of an input chunk of n values that is not a chunk at all (else none).
template <floating_value T, class BlockQuantizer>
ZCOLL_HOST_DEVICE decode_fault_code check_added_chunk(const added_chunk& chunk, std::size_t n,
                                                      const BlockQuantizer& quantizer, std::uint64_t& detail) {
  if (chunk.size == 0) return decode_fault_code::bad_chunk_kind;
  detail = static_cast<std::uint64_t>(chunk.kind);
  if (chunk.kind == chunk_kind::verbatim) {
    detail = chunk.size;
    return chunk.size == 1 + n * sizeof(T) ? decode_fault_code::none : decode_fault_code::bad_verbatim_chunk;
  }
  if (chunk.kind != chunk_kind::coded && chunk.kind != chunk_kind::coded_with_exceptions) return decode_fault_code::bad_chunk_kind;
  return quantizer.usable() ? decode_fault_code::none : decode_fault_code::bad_error_bound;
}

/// A thread's block of one input chunk: residuals (coded chunks), values and exception lanes.
template <floating_value T>
struct added_block {
  std::uint32_t start = 0;  ///< where the block starts in its chunk (coded chunks)
  /// The decoded residuals; lane by lane, the codes after the inverse prediction, in place (one array
  /// instead of two: the kernel keeps two blocks a thread, and registers decide its occupancy).
  std::uint32_t residuals[block_values] = {};
  T values[block_values] = {};
  block_mask exact = 0;  ///< lanes the chunk stores exactly (fill or outlier)
};

/// Whether the encoded block at `block` holds 32 zero residuals in a form of its own (BitShuffle's single
/// byte), so that adding it is a copy of the other block.
template <class E>
ZCOLL_HOST_DEVICE bool encodes_zero_block(const std::byte* block) {
  if constexpr (requires { E::zero_block(std::byte{}); }) {
    return E::zero_block(block[0]);
  } else {
    return false;
  }
}

/// Adds tile `t` of the job with the team; every thread of the team calls it. A fault is reported and
/// leaves the sum unspecified; it never reads or writes outside the job's buffers. With `staging`
/// (`staging_bytes` the team shares: a CUDA block's shared memory), each coded input chunk that fits in
/// half of it is copied there first, so that the walk over its block headers (a chain of dependent
/// loads) and the block decoders read shared memory, as decompress_tile does.
template <class Q, class P, class E, floating_value T, class Team>
ZCOLL_HOST_DEVICE void add_tile(Team& team, const add_job& job, std::uint32_t t, std::byte* staging = nullptr,
                                std::size_t staging_bytes = 0) {
  static_assert(scan_predictor<P>, "the CUDA driver predicts with Lorenzo1D or None");
  using quantizer_type = typename Q::template block_quantizer<T>;
  const std::uint32_t c = t, chunks = job.chunks();
  const std::uint64_t first = std::uint64_t{c} * job.chunk_values;
  const std::size_t n = chunks == 0 ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(job.chunk_values, job.count - first));
  const std::size_t blocks = (n + block_values - 1) / block_values;
  const unsigned b = team.rank(), threads = team.size();
  const std::size_t lanes = b < blocks ? lanes_in_block(b, n) : 0;
  const auto fail = [&](decode_fault_code code, std::uint32_t stream, std::uint64_t detail) {
    team.report(decode_fault{static_cast<std::uint32_t>(code), stream, c, detail});
  };

  // 1. Both headers, and where both chunks are: the first scan over the tiles. Every tile takes part in
  // both scans, failed or not, so that no later tile waits for ever.
  stream_header ha, hb;
  header_fault parse_a = header_fault::none, parse_b = header_fault::none;
  const decode_fault_code check_a = check_header<Q, P, E, T>(job.a, job.a_bytes, job.count, job.chunk_values, ha, parse_a);
  const decode_fault_code check_b = check_header<Q, P, E, T>(job.b, job.b_bytes, job.count, job.chunk_values, hb, parse_b);
  const bool header_ok = check_a == decode_fault_code::none;
  bool ok = header_ok && check_b == decode_fault_code::none;
  const bool reporter = b == 0 && c == 0;  // faults of the whole streams are reported once
  if (reporter && check_a != decode_fault_code::none) fail(check_a, 0, static_cast<std::uint64_t>(parse_a));
  if (reporter && header_ok && check_b != decode_fault_code::none) fail(check_b, 1, static_cast<std::uint64_t>(parse_b));
  if (ok && std::bit_cast<std::uint64_t>(ha.error_bound) != std::bit_cast<std::uint64_t>(hb.error_bound)) {
    if (reporter) fail(decode_fault_code::streams_differ, 1, static_cast<std::uint64_t>(streams_differ_in::error_bound));
    ok = false;
  }
  const auto fills = addition_fills<T>::of(ha, hb);
  added_chunk in[2];
  if (ok && n > 0) {
    std::memcpy(&in[0].size, job.a + stream_header_size_bytes + 4 * std::size_t{c}, 4);
    std::memcpy(&in[1].size, job.b + stream_header_size_bytes + 4 * std::size_t{c}, 4);
  }
  const placement inputs = team.tile_prefix(placement{in[0].size, in[1].size, c == 0 ? 1u : 0u}, 0);
  const std::uint64_t prefix = stream_prefix_size_bytes(chunks);
  const std::uint64_t at[2] = {prefix + inputs.offset, prefix + inputs.in_stream};
  const std::uint64_t length[2] = {job.a_bytes, job.b_bytes};
  const std::byte* const stream[2] = {job.a, job.b};
  for (std::uint32_t s = 0; s < 2 && ok; ++s) {
    if (c + 1 >= chunks && at[s] + in[s].size != length[s]) {
      if (b == 0) fail(decode_fault_code::wrong_length, s, at[s] + in[s].size);
      ok = false;
    }
    if (n > 0 && at[s] + in[s].size > length[s]) ok = false;  // the stream's last tile reports it
  }
  const quantizer_type quantizer(ha.error_bound);
  for (std::uint32_t s = 0; s < 2 && ok && n > 0; ++s) {
    in[s].data = stream[s] + at[s];
    if (in[s].size > 0) in[s].kind = static_cast<chunk_kind>(std::to_integer<std::uint8_t>(in[s].data[0]));
    std::uint64_t detail = 0;
    const decode_fault_code fault = check_added_chunk<T>(in[s], n, quantizer, detail);
    if (fault != decode_fault_code::none) {
      if (b == 0) fail(fault, s, detail);
      ok = false;
    }
  }

  // 2. Where the blocks of each coded chunk are (thread s walks chunk s), and each thread's residuals.
  if (staging != nullptr) {
    const std::size_t half = staging_bytes / 2;
    for (unsigned s = 0; s < 2; ++s) {
      if (!ok || n == 0 || !in[s].coded() || in[s].size > half) continue;
      std::byte* const staged = staging + s * half;
      for (std::size_t i = b; i < in[s].size; i += threads) staged[i] = in[s].data[i];
      in[s].data = staged;
    }
    team.sync();
  }
  std::uint32_t* const words = team.words();
  const unsigned status = 2 * threads, end_of_blocks = 2 * threads + 2;
  if (ok && n > 0 && b < 2) {
    bool walked = true;
    if (in[b].coded()) {
      const block_walk walk = walk_blocks<E>(in[b].data, in[b].size, blocks, words + b * threads);
      const bool all_used = in[b].kind != chunk_kind::coded || walk.end == in[b].size;
      if (!walk.ok) fail(decode_fault_code::bad_block, b, walk.end);
      if (walk.ok && !all_used) fail(decode_fault_code::bytes_left, b, in[b].size - walk.end);
      walked = walk.ok && all_used;
      words[end_of_blocks + b] = static_cast<std::uint32_t>(walk.end);
    }
    words[status + b] = walked ? 1 : 0;
  }
  team.sync();
  ok = ok && (n == 0 || (words[status] != 0 && words[status + 1] != 0));
  added_block<T> x[2];
  std::size_t section_at[2] = {0, 0};
  for (unsigned s = 0; s < 2 && ok && n > 0; ++s) {
    if (!in[s].coded()) continue;
    section_at[s] = words[end_of_blocks + s];
    if (lanes == 0) continue;
    x[s].start = words[s * threads + b];
    E::decode_checked_block(in[s].data + x[s].start, x[s].residuals);
  }
  team.sync();  // the exception sections' index (step 4) reuses the words
  std::int32_t sum[block_values];
  for (std::size_t j = 0; j < block_values; ++j) sum[j] = static_cast<std::int32_t>(x[0].residuals[j] + x[1].residuals[j]);

  // 3. Block by block, when both chunks are coded without exceptions.
  tile_block<E, T> block;
  block.lanes = lanes;
  chunk_plan plan;
  bool planned = false;
  if (ok && n > 0 && in[0].kind == chunk_kind::coded && in[1].kind == chunk_kind::coded) {
    if (lanes > 0) {
      const bool zero_a = encodes_zero_block<E>(in[0].data + x[0].start);
      const bool zero_b = encodes_zero_block<E>(in[1].data + x[1].start);
      if (zero_a || zero_b) {  // the sum is the other block, as it is
        const added_block<T>& kept = x[zero_a ? 1 : 0];
        const std::byte* kept_block = in[zero_a ? 1 : 0].data + kept.start;
        block.encoded_bytes = static_cast<std::uint32_t>(E::block_bytes(kept_block[0]));
        std::memcpy(block.encoded, kept_block, block.encoded_bytes);
      } else {
        block.encoded_bytes = static_cast<std::uint32_t>(E::encode_block(sum, block.encoded));
      }
    }
    std::uint32_t codes[block_values], block_sum = 0, unused = 0, outside_blocks = 0;
    for (std::size_t j = 0; j < block_values; ++j) {
      codes[j] = static_cast<std::uint32_t>(sum[j]);
      block_sum += lanes > 0 ? codes[j] : 0u;
    }
    const std::uint32_t incoming = team.exclusive_scan(block_sum, add_words{}, 0u, unused);
    auto state = predictor_state_after<P>(incoming);
    P::inverse(state, codes);
    const bool outside = lanes > 0 && codes_out_of_range<quantizer_type>(codes, lanes) != 0;
    team.exclusive_scan(outside ? 1u : 0u, add_words{}, 0u, outside_blocks);
    plan = plan_chunk(team, block, n, true);
    planned = outside_blocks == 0 && !plan.verbatim;
  }

  // 4. Lane by lane otherwise: each chunk's values (exception sections indexed by thread s), their sums,
  // and the sum's exact lanes.
  T sums[block_values] = {};
  if (ok && n > 0 && !planned) {
    for (unsigned s = 0; s < 2; ++s) {
      if (!in[s].coded()) {
        if (lanes > 0) std::memcpy(x[s].values, in[s].data + 1 + b * block_values * sizeof(T), lanes * sizeof(T));
        continue;
      }
      std::uint32_t block_sum = 0, unused = 0;
      for (std::size_t j = 0; j < block_values; ++j) block_sum += lanes > 0 ? x[s].residuals[j] : 0u;
      const std::uint32_t incoming = team.exclusive_scan(block_sum, add_words{}, 0u, unused);
      auto state = predictor_state_after<P>(incoming);
      P::inverse(state, x[s].residuals);  // now the codes
      if (lanes > 0) quantizer.dequantize(x[s].residuals, x[s].values, lanes);
    }
    if (b < 2) {
      bool indexed = true;
      if (in[b].kind == chunk_kind::coded_with_exceptions) {
        const std::size_t available = in[b].size - section_at[b];
        const exception_section_read read =
            index_exception_section<T>(in[b].data + section_at[b], available, b == 0 ? fills.in_a : fills.in_b, n,
                                       words + b * threads);
        if (read.fault != exception_fault::none) {
          fail(decode_fault_code::bad_exceptions, b, exception_fault_detail(section_at[b], read.fault));
        } else if (read.bytes != available) {
          fail(decode_fault_code::bytes_left, b, available - read.bytes);
        }
        indexed = read.fault == exception_fault::none && read.bytes == available;
      }
      words[status + b] = indexed ? 1 : 0;
    }
    team.sync();
    ok = words[status] != 0 && words[status + 1] != 0;
  }
  if (ok && n > 0 && !planned) {
    for (unsigned s = 0; s < 2; ++s) {
      if (in[s].kind != chunk_kind::coded_with_exceptions || lanes == 0) continue;
      x[s].exact = apply_indexed_exceptions<T>(in[s].data + section_at[s], words[s * threads + b], lanes,
                                               s == 0 ? fills.a : fills.b, x[s].values)
                       .any();
    }
    for (std::size_t j = 0; j < lanes; ++j) sums[j] = lane_sum(x[0].values[j], x[1].values[j]);
    block.values = sums;
    block.encoded_bytes = 0;
    block.e = {};
    const bool coded = in[0].coded() && in[1].coded();
    if (coded && lanes > 0) {
      std::uint32_t codes[block_values];
      for (std::size_t j = 0; j < block_values; ++j) codes[j] = x[0].residuals[j] + x[1].residuals[j];
      const block_mask exact = (x[0].exact | x[1].exact | codes_out_of_range<quantizer_type>(codes, lanes)) & first_lanes(lanes);
      const block_mask fill_lanes = fills.in_sum() ? lanes_with_bits(sums, fills.sum_bits()) & exact : 0;
      block.e = {fill_lanes, exact & ~fill_lanes};
      block.encoded_bytes = static_cast<std::uint32_t>(E::encode_block(sum, block.encoded));
    }
    plan = plan_chunk(team, block, n, coded);
  }

  // 5. The sum's chunk in place: the second scan over the tiles; then its bytes.
  const bool writes = ok && n > 0;
  const std::uint64_t prefix_bytes = c == 0 ? prefix : 0;
  const std::uint64_t chunk_bytes = writes ? plan.bytes : 0;
  const placement tile{prefix_bytes + chunk_bytes, prefix_bytes + chunk_bytes, c == 0 ? 1u : 0u};
  const placement earlier = team.tile_prefix(tile, 1);
  if (b == 0) {
    if (c == 0 && header_ok) store_stream_header(fills.header_of_sum(ha), job.out);
    if (writes) {
      const auto size32 = static_cast<std::uint32_t>(chunk_bytes);
      std::memcpy(job.out + stream_header_size_bytes + 4 * std::size_t{c}, &size32, 4);
    }
    if (t + 1 == job.tiles()) *job.total_bytes = earlier.offset + tile.offset;
  }
  if (writes) write_chunk(team, plan, block, n, blocks, job.out + earlier.offset + prefix_bytes);
}

}  // namespace zcoll::detail
