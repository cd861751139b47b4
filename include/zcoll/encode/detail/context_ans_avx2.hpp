#pragma once
/// The context-modelled rANS coder's rounds in AVX2 (format in encode/context_ans.hpp), for builds without
/// AVX-512: the 32 segments' states are the lanes of four vectors of eight, and each step is the one of
/// encode/detail/context_ans_avx512.hpp (two table gathers a vector, a round's words in segment order, the
/// raw bits at positions from a prefix sum of the lanes' widths, the encoder's division in double
/// precision). AVX2 has gathers but no mask registers, no lane compression or expansion, no unsigned
/// comparison and no 64-to-32-bit narrowing, so: masks are vectors of all-one lanes; the words of the lanes
/// that renormalize go out (encoder) and come in (decoder) through a permutation looked up by their mask;
/// x >= y unsigned is max(x, y) == x; and the raw bits' 64-bit lanes are narrowed by a shuffle. Host only.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/encode/detail/context_ans_model.hpp"
#include "zcoll/encode/detail/context_ans_rounds.hpp"
#include "zcoll/encode/detail/raw_bit_source.hpp"

#if ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512
#include <immintrin.h>

namespace zcoll::encode::detail {

/// Per mask of eight lanes, a lane permutation (lane p takes the lane in the p-th nibble) that moves the
/// masked lanes, in lane order, to the top lanes: the encoder stores a vector's top below its last word.
inline constexpr auto ans_avx2_to_top = [] {
  std::array<std::uint32_t, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    unsigned out = 0;
    for (unsigned lane = 0; lane < 8; ++lane) out += mask >> lane & 1u;
    for (unsigned lane = 0, next = 8 - out; lane < 8; ++lane) {
      if ((mask >> lane & 1u) != 0) table[mask] |= lane << (4 * next++);
    }
  }
  return table;
}();

/// Per mask of eight lanes, the permutation that gives the masked lanes, in lane order, the first lanes of
/// a vector: the decoder's next words, one a lane that renormalizes.
inline constexpr auto ans_avx2_from_bottom = [] {
  std::array<std::uint32_t, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    for (unsigned lane = 0, next = 0; lane < 8; ++lane) {
      if ((mask >> lane & 1u) != 0) table[mask] |= next++ << (4 * lane);
    }
  }
  return table;
}();

/// The lane indices of a permutation of ans_avx2_to_top or ans_avx2_from_bottom.
ZCOLL_ALWAYS_INLINE __m256i ans_avx2_permutation(std::uint32_t nibbles) {
  return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(nibbles)),
                                            _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                          _mm256_set1_epi32(7));
}

/// The lanes of a mask vector (all ones or all zeros a lane) as eight bits.
ZCOLL_ALWAYS_INLINE unsigned ans_avx2_bits(__m256i mask) {
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(mask)));
}

/// `v` with its lanes moved up by `lanes` (1, 2 or 4), zeros below.
template <int lanes>
ZCOLL_ALWAYS_INLINE __m256i ans_avx2_lanes_up(__m256i v) {
  if constexpr (lanes == 4) {
    return _mm256_permute2x128_si256(v, v, 0x08);
  } else {
    const __m256i from = _mm256_setr_epi32(0, 1 - lanes, 2 - lanes, 3 - lanes, 4 - lanes, 5 - lanes, 6 - lanes, 7 - lanes);
    return _mm256_blend_epi32(_mm256_permutevar8x32_epi32(v, from), _mm256_setzero_si256(), (1 << lanes) - 1);
  }
}

/// The decoder's first rounds in AVX2: as context_ans_decode_rounds_avx512 (the same arguments, results
/// and errors).
template <bool with_levels>
ans_vector_rounds context_ans_decode_rounds_avx2(const context_ans_model& m, ans_segment_states segments,
                                                 const std::byte* word, const std::byte* words_end,
                                                 raw_bit_source& raw, const std::uint8_t* level,
                                                 std::uint32_t* residuals, std::size_t count, std::size_t length) {
  static_assert(ans_segments == 32, "four vectors of 8 lanes");
  static_assert(ans_direct_tokens == 16 && ans_token_count == 128 && ans_magnitude_contexts == 9);
  // Lane indices and raw-bit positions are 32-bit, as in the AVX-512 rounds.
  if (count == 0 || count > (std::size_t{1} << 24) || raw.size_bits() >= (std::uint64_t{1} << 31) ||
      raw.position() != 0) {
    return {0, word};
  }
  constexpr std::size_t round_words_bytes = 2 * ans_segments;
  // Level classes in round order (ans_levels_in_round_order).
  std::unique_ptr<std::uint8_t[]> level_rounds;
  if constexpr (with_levels) level_rounds = ans_levels_in_round_order(level, count, length);

  const __m256i zero = _mm256_setzero_si256();
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i count_lanes = _mm256_set1_epi32(static_cast<int>(count));
  const __m256i raw_bits = _mm256_set1_epi32(static_cast<int>(raw.size_bits()));
  const auto* const raw_bytes = reinterpret_cast<const long long*>(raw.padded_bytes());
  const auto* const slot_token = reinterpret_cast<const int*>(m.slot_token.data());
  const auto* const frequencies = reinterpret_cast<const int*>(m.frequency_table.data());
  std::uint32_t raw_position = 0;
  // Per vector: the first residual of each lane's segment, the states, the magnitude contexts
  // (3 class(previous) + class(the one before)) and the previous residual's class.
  __m256i first[4], x[4], context[4], previous_class[4];
  for (unsigned h = 0; h < 4; ++h) {
    first[h] = _mm256_mullo_epi32(_mm256_add_epi32(lanes, _mm256_set1_epi32(static_cast<int>(8 * h))),
                                  _mm256_set1_epi32(static_cast<int>(length)));
    x[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(segments.state + 8 * h));
    context[h] = _mm256_srli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(segments.row + 8 * h)),
                                   ans_scale_bits);
    previous_class[h] = _mm256_srli_epi32(_mm256_mullo_epi32(context[h], _mm256_set1_epi32(11)), 5);  // c / 3, c <= 8
  }

  // The raw bits of the lanes of `width` (0 where a lane has none; `wide`: the others, all ones), read in
  // lane order from raw_position.
  const auto read_raw_bits = [&](__m256i width, __m256i wide) ZCOLL_LAMBDA_ALWAYS_INLINE {
    __m256i end = width;  // inclusive prefix sum over the lanes
    end = _mm256_add_epi32(end, ans_avx2_lanes_up<1>(end));
    end = _mm256_add_epi32(end, ans_avx2_lanes_up<2>(end));
    end = _mm256_add_epi32(end, ans_avx2_lanes_up<4>(end));
    // As raw_bit_source::read: the eight bytes at the position, or at the bits' end past it.
    const __m256i at = _mm256_min_epu32(
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(raw_position)), _mm256_sub_epi32(end, width)), raw_bits);
    const __m256i byte = _mm256_srli_epi32(at, 3);
    const __m256i shift = _mm256_and_si256(at, _mm256_set1_epi32(7));
    const __m128i byte_low = _mm256_castsi256_si128(byte), byte_high = _mm256_extracti128_si256(byte, 1);
    __m256i low = _mm256_mask_i32gather_epi64(zero, raw_bytes, byte_low,
                                              _mm256_cvtepi32_epi64(_mm256_castsi256_si128(wide)), 1);
    __m256i high = _mm256_mask_i32gather_epi64(zero, raw_bytes, byte_high,
                                               _mm256_cvtepi32_epi64(_mm256_extracti128_si256(wide, 1)), 1);
    low = _mm256_srlv_epi64(low, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(shift)));
    high = _mm256_srlv_epi64(high, _mm256_cvtepu32_epi64(_mm256_extracti128_si256(shift, 1)));
    // The low halves of the 64-bit lanes, in lane order.
    const __m256i halves = _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castsi256_ps(low), _mm256_castsi256_ps(high), _MM_SHUFFLE(2, 0, 2, 0)));
    const __m256i bits = _mm256_permute4x64_epi64(halves, _MM_SHUFFLE(3, 1, 2, 0));
    raw_position += static_cast<std::uint32_t>(_mm256_extract_epi32(end, 7));
    return _mm256_and_si256(bits, _mm256_sub_epi32(_mm256_sllv_epi32(one, width), one));
  };

  ans_round_tile tile;  // the last rounds' residuals, copied to their segments every 16 rounds

  // Residual k of the segments of vector h (those with one: `active`, all ones a lane).
  const auto decode = [&](unsigned h, std::size_t k, __m256i active) ZCOLL_LAMBDA_ALWAYS_INLINE {
    __m256i table = context[h];
    if constexpr (with_levels) {
      const __m256i levels = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(level_rounds.get() + k * ans_segments + 8 * h)));
      table = _mm256_add_epi32(table, _mm256_mullo_epi32(levels, _mm256_set1_epi32(ans_magnitude_contexts)));
    }
    const __m256i slot = _mm256_and_si256(x[h], _mm256_set1_epi32(ans_scale - 1));
    const __m256i token = _mm256_and_si256(
        _mm256_mask_i32gather_epi32(zero, slot_token, _mm256_add_epi32(_mm256_slli_epi32(table, ans_scale_bits), slot),
                                    active, 1),
        _mm256_set1_epi32(0xFF));
    const __m256i entry = _mm256_mask_i32gather_epi32(zero, frequencies, _mm256_add_epi32(_mm256_slli_epi32(table, 7), token),
                                                      active, 4);
    const __m256i frequency = _mm256_and_si256(entry, _mm256_set1_epi32(0xFFFF));
    const unsigned missing = ans_avx2_bits(_mm256_and_si256(active, _mm256_cmpeq_epi32(frequency, zero)));
    if (missing != 0) [[unlikely]] {
      alignas(32) std::uint32_t tables[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tables), table);
      const unsigned lane = static_cast<unsigned>(zcoll::countr_zero(missing));
      throw format_error("context-ans chunk: residual " + std::to_string((8 * h + lane) * length + k) +
                         " is in context " + std::to_string(tables[lane]) +
                         ", which the stream's model has no table for");
    }
    // x = f (x >> 12) + slot - c, then a word in where it fell below 2^15.
    __m256i y = _mm256_add_epi32(_mm256_mullo_epi32(frequency, _mm256_srli_epi32(x[h], ans_scale_bits)),
                                 _mm256_sub_epi32(slot, _mm256_srli_epi32(entry, 16)));
    const __m256i renormalize = _mm256_and_si256(  // y < 2^15, unsigned
        active, _mm256_cmpeq_epi32(_mm256_min_epu32(y, _mm256_set1_epi32(ans_state_low - 1)), y));
    const unsigned renormalizing = ans_avx2_bits(renormalize);
    const __m256i next_words = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(word)));
    const __m256i words = _mm256_permutevar8x32_epi32(next_words, ans_avx2_permutation(ans_avx2_from_bottom[renormalizing]));
    y = _mm256_blendv_epi8(y, _mm256_or_si256(_mm256_slli_epi32(y, 16), words), renormalize);
    x[h] = _mm256_blendv_epi8(x[h], y, active);
    word += 2 * static_cast<unsigned>(zcoll::popcount(renormalizing));
    // The zigzag symbol: a token below 16 is its own; a larger one is (4 | its two low bits) << width,
    // width = (token - 16) / 4 + 2, with the raw bits below.
    __m256i symbol = token;
    const __m256i wide = _mm256_and_si256(active, _mm256_cmpgt_epi32(token, _mm256_set1_epi32(ans_direct_tokens - 1)));
    if (ans_avx2_bits(wide) != 0) {
      const __m256i above = _mm256_sub_epi32(token, _mm256_set1_epi32(ans_direct_tokens));
      const __m256i width = _mm256_and_si256(wide, _mm256_add_epi32(_mm256_srli_epi32(above, 2), _mm256_set1_epi32(2)));
      const __m256i base =
          _mm256_sllv_epi32(_mm256_or_si256(_mm256_set1_epi32(4), _mm256_and_si256(above, _mm256_set1_epi32(3))), width);
      symbol = _mm256_blendv_epi8(symbol, _mm256_or_si256(base, read_raw_bits(width, wide)), wide);
    }
    const __m256i residual =
        _mm256_xor_si256(_mm256_srli_epi32(symbol, 1), _mm256_sub_epi32(zero, _mm256_and_si256(symbol, one)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(tile.at(k, 8 * h)), residual);
    // The next context: 3 class(token) + class(previous), class(t) = (t != 0) + (t > 2).
    const __m256i token_class = _mm256_sub_epi32(_mm256_add_epi32(one, _mm256_cmpeq_epi32(token, zero)),
                                                 _mm256_cmpgt_epi32(token, _mm256_set1_epi32(2)));
    context[h] = _mm256_blendv_epi8(
        context[h], _mm256_add_epi32(_mm256_mullo_epi32(token_class, _mm256_set1_epi32(3)), previous_class[h]), active);
    previous_class[h] = _mm256_blendv_epi8(previous_class[h], token_class, active);
  };

  std::size_t k = 0;
  for (; k < length && static_cast<std::size_t>(words_end - word) >= round_words_bytes; ++k) {
    for (unsigned h = 0; h < 4; ++h) {
      const __m256i index = _mm256_add_epi32(first[h], _mm256_set1_epi32(static_cast<int>(k)));
      const __m256i active = _mm256_cmpgt_epi32(count_lanes, index);  // the segments that reach round k
      if (ans_avx2_bits(active) != 0) decode(h, k, active);
    }
    if (k % tile.rounds == tile.rounds - 1) tile.flush(residuals, count, length, k + 1 - tile.rounds, tile.rounds);
  }
  if (k % tile.rounds != 0) tile.flush(residuals, count, length, k - k % tile.rounds, k % tile.rounds);
  for (unsigned h = 0; h < 4; ++h) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(segments.state + 8 * h), x[h]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(segments.row + 8 * h), _mm256_slli_epi32(context[h], ans_scale_bits));
  }
  raw.advance(raw_position);
  return {k, word};
}

/// The encoder's rounds in AVX2: as context_ans_encode_rounds_avx512 (the same arguments and results, the
/// same words and states). A vector's words go out as a 16-byte store below the last word, the
/// renormalizing lanes' words at its top: the bytes below them are written over by the words that follow,
/// and stay above `floor` (a round starts with room for a word a segment).
inline ans_vector_coded context_ans_encode_rounds_avx2(const context_ans_model& m, const std::uint16_t* symbols,
                                                      std::size_t count, std::size_t length, std::uint32_t* state,
                                                      std::byte* word, const std::byte* floor) {
  static_assert(ans_segments == 32, "four vectors of 8 lanes");
  if (count == 0 || count > (std::size_t{1} << 24)) return {length, word, false};
  constexpr std::size_t round_words_bytes = 2 * ans_segments;
  const __m256i zero = _mm256_setzero_si256();
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i count_lanes = _mm256_set1_epi32(static_cast<int>(count));
  const auto* const symbol_words = reinterpret_cast<const int*>(symbols);
  const auto* const frequencies = reinterpret_cast<const int*>(m.frequency_table.data());
  __m256i first[4], x[4];
  for (unsigned h = 0; h < 4; ++h) {
    first[h] = _mm256_mullo_epi32(_mm256_add_epi32(lanes, _mm256_set1_epi32(static_cast<int>(8 * h))),
                                  _mm256_set1_epi32(static_cast<int>(length)));
    x[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(state + 8 * h));
  }
  __m256i missing = zero;
  // Residual k of the segments of vector h (those with one: `active`).
  const auto encode = [&](unsigned h, std::size_t k) ZCOLL_LAMBDA_ALWAYS_INLINE {
    const __m256i index = _mm256_add_epi32(first[h], _mm256_set1_epi32(static_cast<int>(k)));
    const __m256i active = _mm256_cmpgt_epi32(count_lanes, index);
    if (ans_avx2_bits(active) == 0) return;
    const __m256i symbol =
        _mm256_and_si256(_mm256_mask_i32gather_epi32(zero, symbol_words, index, active, 2), _mm256_set1_epi32(0xFFFF));
    const __m256i entry = _mm256_mask_i32gather_epi32(zero, frequencies, symbol, active, 4);
    const __m256i frequency = _mm256_and_si256(entry, _mm256_set1_epi32(0xFFFF));
    const __m256i uncoded = _mm256_and_si256(active, _mm256_cmpeq_epi32(frequency, zero));
    const __m256i coded = _mm256_andnot_si256(uncoded, active);
    missing = _mm256_or_si256(missing, uncoded);
    // Out goes the low word of a state that coding would take past 2^31, in segment order.
    const __m256i limit = _mm256_slli_epi32(frequency, 31 - ans_scale_bits);
    const __m256i renormalize =
        _mm256_and_si256(active, _mm256_cmpeq_epi32(_mm256_max_epu32(x[h], limit), x[h]));  // x >= limit
    const unsigned renormalizing = ans_avx2_bits(renormalize);
    const __m256i low_words = _mm256_and_si256(
        _mm256_permutevar8x32_epi32(x[h], ans_avx2_permutation(ans_avx2_to_top[renormalizing])),
        _mm256_set1_epi32(0xFFFF));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(low_words, low_words), _MM_SHUFFLE(3, 1, 2, 0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(word - 16), _mm256_castsi256_si128(packed));
    word -= 2 * zcoll::popcount(renormalizing);
    __m256i y = _mm256_blendv_epi8(x[h], _mm256_srli_epi32(x[h], 16), renormalize);
    // x / f, exact in double (a quotient below 2^31 of integers below 2^31 is not rounded up to the next
    // integer); a lane without a frequency divides by 1 and is not kept.
    const __m256i divisor = _mm256_blendv_epi8(one, frequency, coded);
    const __m128i low = _mm256_cvttpd_epi32(_mm256_div_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(y)),
                                                          _mm256_cvtepi32_pd(_mm256_castsi256_si128(divisor))));
    const __m128i high = _mm256_cvttpd_epi32(_mm256_div_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(y, 1)),
                                                           _mm256_cvtepi32_pd(_mm256_extracti128_si256(divisor, 1))));
    const __m256i quotient = _mm256_set_m128i(high, low);
    y = _mm256_add_epi32(
        y, _mm256_add_epi32(_mm256_mullo_epi32(quotient, _mm256_sub_epi32(_mm256_set1_epi32(ans_scale), frequency)),
                            _mm256_srli_epi32(entry, 16)));
    x[h] = _mm256_blendv_epi8(x[h], y, coded);
  };
  std::size_t k = length;
  for (; k > 0 && static_cast<std::size_t>(word - floor) >= round_words_bytes; --k) {
    for (unsigned h = 4; h-- > 0;) encode(h, k - 1);
  }
  for (unsigned h = 0; h < 4; ++h) _mm256_storeu_si256(reinterpret_cast<__m256i*>(state + 8 * h), x[h]);
  return {k, word, ans_avx2_bits(missing) != 0};
}

}  // namespace zcoll::encode::detail

#endif  // ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512
