#pragma once
/// The sum of two chunks of pipeline streams written with the same bin width (zcoll::add, codec/add.hpp),
/// without dequantizing: the predictors of the addable pipelines (none, Lorenzo 1-D, 2-D, 3-D) are linear
/// in the integer codes, modulo 2^32 as they compute, so the residuals of a sum of codes are the sums of
/// the residuals. A chunk pair is added in one of two ways:
///
/// - **block by block** (both chunks coded without exceptions, the usual case): each block pair's
///   residuals are decoded, added and encoded again; a block whose residuals are all zero (one byte with
///   BitShuffle) is not decoded at all: the other block is copied (hZCCL's shortcut). Nothing is predicted
///   back or dequantized. The codes of the sum must stay within the quantizer's code range: a code is a
///   sum of residuals of its chunk (Lorenzo's inverse is a prefix sum over the values before it, in every
///   dimension, with 0 outside the chunk; without prediction a code is its residual), so the sum of the
///   residual magnitudes bounds every code; only when that bound passes the range are the codes computed
///   and checked.
/// - **lane by lane** (otherwise): both chunks are decoded to values as the decoder does, keeping their
///   residuals and exception lanes. Lanes that were exceptions in either chunk, and lanes whose summed code
///   leaves the code range, become exceptions of the sum holding what decompress-then-add gives for them
///   (a + b in T, a NaN as the canonical quiet NaN, so that a + b and b + a are the same bytes; a sum equal
///   to the fill value is a fill lane, any other an outlier). A chunk stored verbatim in either stream, or a
///   sum whose coded form would not be smaller than its values, is stored verbatim as the sums a + b.
///
/// Either way the coded lanes of the sum decode to float(qa + qb) · 2eb: one rounding, where decompressing
/// both and adding rounds three times.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "zcoll/codec/detail/exception_section.hpp"
#include "zcoll/codec/detail/pipeline_add_tile.hpp"
#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/codec/detail/pipeline_chunk.hpp"
#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/predict/none.hpp"

#if ZCOLL_HAS_AVX2
#include <immintrin.h>
#endif

namespace zcoll::detail {

/// Per-worker scratch of the lane-by-lane path, sized for one chunk.
template <floating_value T>
struct chunk_sum_scratch {
  explicit chunk_sum_scratch(std::size_t chunk_values)
      : residuals_a(padded(chunk_values)), residuals_b(padded(chunk_values)), residuals_sum(padded(chunk_values)),
        values_a(chunk_values), values_b(chunk_values), sums(chunk_values),
        lanes_a(padded(chunk_values) / block_values), lanes_b(padded(chunk_values) / block_values) {
    exceptions.reserve(padded(chunk_values) / block_values);
  }
  static std::size_t padded(std::size_t values) { return (values + block_values - 1) / block_values * block_values; }

  std::vector<std::uint32_t> residuals_a, residuals_b, residuals_sum;
  std::vector<T> values_a, values_b, sums;
  std::vector<block_mask> lanes_a, lanes_b;  // each block's exception lanes (fill or outlier)
  std::vector<block_exceptions> exceptions;
};

template <class P, class E>
struct pipeline_add {
  using chunk = pipeline_chunk<P, E>;
  /// Without prediction a code is its residual; with Lorenzo it is a sum of the chunk's residuals.
  static constexpr bool codes_are_residuals = std::is_same_v<P, predict::None>;

  /// Writes the sum of chunks `a` and `b` (each of `n` values) at `out` (room for 1 + n·sizeof(T)
  /// bytes); returns its size. `new_state()` makes the predictor's state at the chunk's start.
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::size_t add_chunk(const BlockQuantizer& quantizer, const std::optional<T>& fill, const NewState& new_state,
                               std::span<const std::byte> a, std::span<const std::byte> b, std::size_t n, std::byte* out,
                               chunk_sum_scratch<T>& scratch, std::size_t chunk_number) {
    const auto kind = [&](std::span<const std::byte> c) {
      if (c.empty()) throw format_error("chunk " + std::to_string(chunk_number) + " is empty");
      return static_cast<chunk_kind>(std::to_integer<std::uint8_t>(c[0]));
    };
    if (kind(a) == chunk_kind::coded && kind(b) == chunk_kind::coded && quantizer.usable()) {
      if (const auto size = add_blocks<T, BlockQuantizer>(new_state, a, b, n, out, chunk_number)) return *size;
    }
    return add_lanes<T>(quantizer, fill, new_state, a, b, n, out, scratch, chunk_number);
  }

 private:
  /// The size of the block at `offset` of `c`, checked to lie inside it.
  static std::size_t checked_block_bytes(std::span<const std::byte> c, std::size_t offset, std::size_t chunk_number) {
    const std::size_t size = offset < c.size() ? E::block_bytes(c[offset]) : 0;
    if (size == 0 || size > c.size() - offset) {
      throw format_error("chunk " + std::to_string(chunk_number) + ": block at byte " + std::to_string(offset) +
                         " is malformed or runs past the chunk's end");
    }
    return size;
  }

  /// sum = a + b, modulo 2^32. With AVX2 in the 8-lane vectors the decoder stored: a wider load of
  /// what two narrower stores just wrote misses store-to-load forwarding (measured: the add was the
  /// hottest instruction of add_blocks with AVX-512 loads).
  ZCOLL_ALWAYS_INLINE static void add_residuals(const std::uint32_t* a, const std::uint32_t* b, std::int32_t* sum) {
#if ZCOLL_HAS_AVX2
    for (std::size_t k = 0; k < block_values; k += 8) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k));
      const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(sum + k), _mm256_add_epi32(x, y));
    }
#else
    for (std::size_t j = 0; j < block_values; ++j) sum[j] = static_cast<std::int32_t>(a[j] + b[j]);
#endif
  }

  /// A bound on the magnitudes of the encoded block at `block`: from its first byte where the encoder
  /// states its bit width there (BitShuffle), else from its residuals decoded into `scratch`.
  static std::uint64_t encoded_magnitude(const std::byte* block, std::uint32_t* scratch) {
    if constexpr (requires { E::magnitude_bound(std::byte{}); }) {
      return E::magnitude_bound(block[0]);
    } else {
      E::decode_checked_block(block, scratch);
      return magnitude_bound(scratch);
    }
  }

  /// A bound on the magnitudes of 32 residuals: their bitwise OR as unsigned magnitudes.
  static std::uint64_t magnitude_bound(const std::uint32_t* residuals) {
    std::uint32_t bits = 0;
    for (std::size_t j = 0; j < block_values; ++j) {
      const auto r = static_cast<std::int32_t>(residuals[j]);
      bits |= r < 0 ? 0u - static_cast<std::uint32_t>(r) : static_cast<std::uint32_t>(r);
    }
    return bits;
  }

  /// Block by block; nothing when the sum needs the lane-by-lane path (a code out of range, or a coded
  /// form not smaller than the values).
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::optional<std::size_t> add_blocks(const NewState& new_state,
                                               std::span<const std::byte> a, std::span<const std::byte> b, std::size_t n,
                                               std::byte* out, std::size_t chunk_number) {
    std::byte* const limit = out + n * sizeof(T);  // the chunk must end up smaller than its verbatim form
    std::byte* cursor = out + 1;
    std::size_t at_a = 1, at_b = 1;
    std::uint64_t code_bound = 0;
    alignas(64) std::uint32_t ra[block_values], rb[block_values];
    alignas(64) std::int32_t sum[block_values];
    const std::size_t blocks = (n + block_values - 1) / block_values;
    for (std::size_t k = 0; k < blocks; ++k) {
      const std::size_t size_a = checked_block_bytes(a, at_a, chunk_number);
      const std::size_t size_b = checked_block_bytes(b, at_b, chunk_number);
      const std::byte* block_a = a.data() + at_a;
      const std::byte* block_b = b.data() + at_b;
      at_a += size_a;
      at_b += size_b;
      const bool zero_a = encodes_zero_block<E>(block_a), zero_b = encodes_zero_block<E>(block_b);
      std::uint64_t magnitude = 0;
      if (zero_a || zero_b) {  // the sum is the other block, as it is
        const std::byte* kept = zero_a ? block_b : block_a;
        const std::size_t size = zero_a ? size_b : size_a;
        if (size > static_cast<std::size_t>(limit - cursor)) return std::nullopt;
        std::memcpy(cursor, kept, size);
        cursor += size;
        magnitude = encoded_magnitude(kept, ra);
      } else {
        E::decode_checked_block(block_a, ra);
        E::decode_checked_block(block_b, rb);
        add_residuals(ra, rb, sum);
        std::byte* const written = cursor;
        if (static_cast<std::size_t>(limit - cursor) >= E::max_block_bytes) {
          cursor += E::encode_block(sum, cursor);
        } else {
          std::byte aside[E::max_block_bytes];
          const std::size_t size = E::encode_block(sum, aside);
          if (size > static_cast<std::size_t>(limit - cursor)) return std::nullopt;
          std::memcpy(cursor, aside, size);
          cursor += size;
        }
        magnitude = encoded_magnitude(written, ra);
      }
      code_bound = codes_are_residuals ? std::max(code_bound, magnitude) : code_bound + block_values * magnitude;
    }
    if (at_a != a.size() || at_b != b.size()) {
      throw format_error("chunk " + std::to_string(chunk_number) + ": bytes left after the last block");
    }
    if (code_bound > static_cast<std::uint64_t>(BlockQuantizer::max_code) &&
        !codes_within_range<BlockQuantizer>(new_state, out + 1, n)) {
      return std::nullopt;
    }
    out[0] = static_cast<std::byte>(chunk_kind::coded);
    return static_cast<std::size_t>(cursor - out);
  }

  /// Whether every code of the coded chunk at `blocks` (n values) is within the quantizer's range.
  template <class BlockQuantizer, class NewState>
  static bool codes_within_range(const NewState& new_state, const std::byte* blocks, std::size_t n) {
    auto state = new_state();
    alignas(64) std::uint32_t codes[block_values];
    for (std::size_t first = 0; first < n; first += block_values) {
      const std::size_t size = E::block_bytes(blocks[0]);
      E::decode_checked_block(blocks, codes);
      blocks += size;
      P::inverse(state, codes);
      if (codes_out_of_range<BlockQuantizer>(codes, std::min(block_values, n - first)) != 0) return false;
    }
    return true;
  }

  /// Decodes chunk `c` of n values as the decoder does, keeping its residuals (when coded) and each
  /// block's exception lanes; returns its kind.
  template <floating_value T, class BlockQuantizer, class NewState>
  static chunk_kind decode_lanes(const BlockQuantizer& quantizer, const std::optional<T>& fill, const NewState& new_state,
                                 std::span<const std::byte> c, std::size_t n, std::uint32_t* residuals, T* values,
                                 block_mask* lanes, std::size_t chunk_number) {
    const std::size_t blocks = (n + block_values - 1) / block_values;
    std::fill_n(lanes, blocks, block_mask{0});
    const auto kind = static_cast<chunk_kind>(std::to_integer<std::uint8_t>(c[0]));
    const auto where = [&] { return "chunk " + std::to_string(chunk_number) + ": "; };
    if (kind == chunk_kind::verbatim) {
      if (c.size() != 1 + n * sizeof(T)) throw format_error(where() + "verbatim chunk of the wrong size");
      std::memcpy(values, c.data() + 1, n * sizeof(T));
      return kind;
    }
    if (kind != chunk_kind::coded && kind != chunk_kind::coded_with_exceptions) {
      throw format_error(where() + "unknown chunk kind " + std::to_string(static_cast<unsigned>(kind)));
    }
    if (!quantizer.usable()) throw format_error(where() + "coded chunk in a stream whose error bound admits no quantizer step");
    auto state = new_state();
    std::size_t offset = 1;
    alignas(64) std::uint32_t codes[block_values];
    alignas(64) T tail[block_values];
    for (std::size_t k = 0; k < blocks; ++k) {
      offset += E::decode_block(c.subspan(offset), residuals + k * block_values);
      std::copy_n(residuals + k * block_values, block_values, codes);
      P::inverse(state, codes);
      const std::size_t first = k * block_values, count = std::min(block_values, n - first);
      quantizer.dequantize(codes, tail, count);
      std::copy_n(tail, count, values + first);
    }
    if (kind == chunk_kind::coded_with_exceptions) {
      const auto read = apply_exception_section(c.data() + offset, c.size() - offset, fill.has_value(),
                                                fill.value_or(T(0)), values, n,
                                                [&](std::size_t block, block_mask f, block_mask o) { lanes[block] = f | o; });
      if (read.fault != exception_fault::none) {
        throw format_error(where() + "exception section, entry " + std::to_string(read.entry) + ": " + to_string(read.fault));
      }
      offset += read.bytes;
    }
    if (offset != c.size()) throw format_error(where() + "bytes left after the exception section");
    return kind;
  }

  /// Lane by lane (the file's comment says when).
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::size_t add_lanes(const BlockQuantizer& quantizer, const std::optional<T>& fill, const NewState& new_state,
                               std::span<const std::byte> a, std::span<const std::byte> b, std::size_t n, std::byte* out,
                               chunk_sum_scratch<T>& s, std::size_t chunk_number) {
    const chunk_kind kind_a = decode_lanes<T>(quantizer, fill, new_state, a, n, s.residuals_a.data(), s.values_a.data(),
                                              s.lanes_a.data(), chunk_number);
    const chunk_kind kind_b = decode_lanes<T>(quantizer, fill, new_state, b, n, s.residuals_b.data(), s.values_b.data(),
                                              s.lanes_b.data(), chunk_number);
    for (std::size_t i = 0; i < n; ++i) s.sums[i] = lane_sum(s.values_a[i], s.values_b[i]);
    const std::span<const T> sums(s.sums.data(), n);
    if (kind_a == chunk_kind::verbatim || kind_b == chunk_kind::verbatim) return chunk::write_verbatim(sums, out);

    const std::size_t blocks = (n + block_values - 1) / block_values;
    auto state = new_state();
    s.exceptions.clear();
    alignas(64) std::uint32_t codes[block_values];
    const bool has_fill = fill.has_value();
    const bits_of<T> fill_bits = std::bit_cast<bits_of<T>>(fill.value_or(T(0)));
    for (std::size_t k = 0; k < blocks; ++k) {
      std::uint32_t* residuals = s.residuals_sum.data() + k * block_values;
      for (std::size_t j = 0; j < block_values; ++j) {
        residuals[j] = s.residuals_a[k * block_values + j] + s.residuals_b[k * block_values + j];
      }
      std::copy_n(residuals, block_values, codes);
      P::inverse(state, codes);
      const std::size_t first = k * block_values, lanes = std::min(block_values, n - first);
      const block_mask exact = (s.lanes_a[k] | s.lanes_b[k] | codes_out_of_range<BlockQuantizer>(codes, lanes)) & first_lanes(lanes);
      if (exact == 0) continue;
      block_mask fill_lanes = 0;
      for (block_mask rest = has_fill ? exact : 0; rest != 0; rest &= rest - 1) {
        const auto j = static_cast<std::size_t>(zcoll::countr_zero(rest));
        if (std::bit_cast<bits_of<T>>(sums[first + j]) == fill_bits) fill_lanes |= block_mask{1} << j;
      }
      s.exceptions.push_back({static_cast<std::uint16_t>(k), fill_lanes, exact & ~fill_lanes});
    }

    std::byte* const limit = out + n * sizeof(T);
    std::byte* cursor = out + 1;
    for (std::size_t k = 0; k < blocks; ++k) {
      const auto* residuals = reinterpret_cast<const std::int32_t*>(s.residuals_sum.data() + k * block_values);
      std::byte aside[E::max_block_bytes];
      const std::size_t size = E::encode_block(residuals, aside);
      if (size > static_cast<std::size_t>(limit - cursor)) return chunk::write_verbatim(sums, out);
      std::memcpy(cursor, aside, size);
      cursor += size;
    }
    return chunk::finish_chunk(std::span<const block_exceptions>(s.exceptions), sums, out, cursor, limit);
  }
};

}  // namespace zcoll::detail
