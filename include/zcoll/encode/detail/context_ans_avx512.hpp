#pragma once
/// The context-modelled rANS decoder's rounds in AVX-512 (format in encode/context_ans.hpp): the 32
/// segments' states are the lanes of two vectors, so that a round of 32 residuals takes two table gathers
/// a vector where the scalar decoder takes 64 dependent loads. The words a round's renormalizations read
/// come in segment order, which an expansion of the next 16 words into the lanes that renormalize
/// gives; the raw bits likewise, at bit positions from a prefix sum of the lanes' widths. Everything a
/// token decides (its symbol base, raw-bit width, class, the next magnitude context) is arithmetic on the
/// token, not a table. The encoder's rounds likewise: two gathers a vector (the symbols, their
/// frequencies), the renormalizing lanes' words compressed out in segment order, and the division by
/// the frequency in double precision. Host only (the CUDA side has no ContextAns coder).

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

#if ZCOLL_HAS_AVX512
#include <immintrin.h>
#endif

namespace zcoll::encode::detail {

#if ZCOLL_HAS_AVX512

// GCC 12 reports its own unmasked AVX-512 intrinsics, inlined here, as reading an uninitialized vector
// (the `__Y = __Y` of _mm512_undefined_epi32 and its kin: GCC bug 105593, fixed in GCC 13), hundreds of
// times a build; nothing here reads one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/// The first rounds of a chunk of `count` residuals in segments of `length` (ans_segment_length), from
/// round 0 while a word a segment remains: decodes them into `residuals` (segment-major, as the scalar
/// decoder writes them), moves `segments`, `raw` and the word on, and says where it stopped. `level`: the
/// residuals' level classes (with_levels), segment-major. Raises format_error where a token's context
/// has no table, with the scalar decoder's message.
template <bool with_levels>
ans_vector_rounds context_ans_decode_rounds_avx512(const context_ans_model& m, ans_segment_states segments,
                                                   const std::byte* word, const std::byte* words_end,
                                                   raw_bit_source& raw, const std::uint8_t* level,
                                                   std::uint32_t* residuals, std::size_t count, std::size_t length) {
  static_assert(ans_segments == 32, "two vectors of 16 lanes");
  static_assert(ans_direct_tokens == 16 && ans_token_count == 128 && ans_magnitude_contexts == 9);
  // Lane indices and raw-bit positions are 32-bit: chunks hold at most 2^20 residuals (format), and a
  // raw-bit position, which goes on counting past the bits of a damaged chunk, stays below 2^31 + 29 x 2^24.
  if (count == 0 || count > (std::size_t{1} << 24) || raw.size_bits() >= (std::uint64_t{1} << 31) ||
      raw.position() != 0) {
    return {0, word};
  }
  constexpr std::size_t round_words_bytes = 2 * ans_segments;
  // Level classes in round order (ans_levels_in_round_order).
  std::unique_ptr<std::uint8_t[]> level_rounds;
  if constexpr (with_levels) level_rounds = ans_levels_in_round_order(level, count, length);

  const __m512i zero = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i count_lanes = _mm512_set1_epi32(static_cast<int>(count));
  const __m512i raw_bits = _mm512_set1_epi32(static_cast<int>(raw.size_bits()));
  const auto* const raw_bytes = reinterpret_cast<const long long*>(raw.padded_bytes());
  const auto* const slot_token = reinterpret_cast<const int*>(m.slot_token.data());
  const auto* const frequencies = reinterpret_cast<const int*>(m.frequency_table.data());
  std::uint32_t raw_position = 0;
  // Per vector: the first residual of each lane's segment, the states, the magnitude contexts
  // (3 class(previous) + class(the one before)) and the previous residual's class.
  __m512i first[2], x[2], context[2], previous_class[2];
  for (unsigned h = 0; h < 2; ++h) {
    first[h] = _mm512_mullo_epi32(_mm512_add_epi32(lanes, _mm512_set1_epi32(16 * h)),
                                  _mm512_set1_epi32(static_cast<int>(length)));
    x[h] = _mm512_loadu_si512(segments.state + 16 * h);
    context[h] = _mm512_srli_epi32(_mm512_loadu_si512(segments.row + 16 * h), ans_scale_bits);
    previous_class[h] = _mm512_srli_epi32(_mm512_mullo_epi32(context[h], _mm512_set1_epi32(11)), 5);  // c / 3, c <= 8
  }

  // The raw bits of the lanes of `width` (0 where a lane has none), read in lane order from raw_position.
  const auto read_raw_bits = [&](__m512i width, __mmask16 wide) ZCOLL_LAMBDA_ALWAYS_INLINE {
    __m512i end = width;  // inclusive prefix sum over the lanes
    end = _mm512_add_epi32(end, _mm512_alignr_epi32(end, zero, 15));
    end = _mm512_add_epi32(end, _mm512_alignr_epi32(end, zero, 14));
    end = _mm512_add_epi32(end, _mm512_alignr_epi32(end, zero, 12));
    end = _mm512_add_epi32(end, _mm512_alignr_epi32(end, zero, 8));
    // As raw_bit_source::read: the eight bytes at the position, or at the bits' end past it.
    const __m512i at = _mm512_min_epu32(
        _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(raw_position)), _mm512_sub_epi32(end, width)), raw_bits);
    const __m512i byte = _mm512_srli_epi32(at, 3);
    const __m512i shift = _mm512_and_si512(at, _mm512_set1_epi32(7));
    __m512i low = _mm512_mask_i32gather_epi64(zero, static_cast<__mmask8>(wide), _mm512_castsi512_si256(byte),
                                              raw_bytes, 1);
    __m512i high = _mm512_mask_i32gather_epi64(zero, static_cast<__mmask8>(wide >> 8),
                                               _mm512_extracti64x4_epi64(byte, 1), raw_bytes, 1);
    low = _mm512_srlv_epi64(low, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(shift)));
    high = _mm512_srlv_epi64(high, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(shift, 1)));
    const __m512i bits =
        _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(low)), _mm512_cvtepi64_epi32(high), 1);
    raw_position += static_cast<std::uint32_t>(_mm_extract_epi32(_mm512_extracti32x4_epi32(end, 3), 3));
    return _mm512_and_si512(bits, _mm512_sub_epi32(_mm512_sllv_epi32(one, width), one));
  };

  ans_round_tile tile;  // the last rounds' residuals, copied to their segments every 16 rounds

  // Residual k of the segments of vector h (those with one: `active`).
  const auto decode = [&](unsigned h, std::size_t k, __mmask16 active) ZCOLL_LAMBDA_ALWAYS_INLINE {
    __m512i table = context[h];
    if constexpr (with_levels) {
      const __m512i levels = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(level_rounds.get() + k * ans_segments + 16 * h)));
      table = _mm512_add_epi32(table, _mm512_mullo_epi32(levels, _mm512_set1_epi32(ans_magnitude_contexts)));
    }
    const __m512i slot = _mm512_and_si512(x[h], _mm512_set1_epi32(ans_scale - 1));
    const __m512i token = _mm512_and_si512(
        _mm512_mask_i32gather_epi32(zero, active, _mm512_add_epi32(_mm512_slli_epi32(table, ans_scale_bits), slot),
                                    slot_token, 1),
        _mm512_set1_epi32(0xFF));
    const __m512i entry = _mm512_mask_i32gather_epi32(
        zero, active, _mm512_add_epi32(_mm512_slli_epi32(table, 7), token), frequencies, 4);
    const __m512i frequency = _mm512_and_si512(entry, _mm512_set1_epi32(0xFFFF));
    const __mmask16 missing = _mm512_mask_cmpeq_epi32_mask(active, frequency, zero);
    if (missing != 0) [[unlikely]] {
      alignas(64) std::uint32_t tables[16];
      _mm512_store_si512(tables, table);
      const unsigned lane = static_cast<unsigned>(zcoll::countr_zero(std::uint32_t{missing}));
      throw format_error("context-ans chunk: residual " + std::to_string((16 * h + lane) * length + k) +
                         " is in context " + std::to_string(tables[lane]) +
                         ", which the stream's model has no table for");
    }
    // x = f (x >> 12) + slot - c, then a word in where it fell below 2^15.
    __m512i y = _mm512_add_epi32(_mm512_mullo_epi32(frequency, _mm512_srli_epi32(x[h], ans_scale_bits)),
                                 _mm512_sub_epi32(slot, _mm512_srli_epi32(entry, 16)));
    const __mmask16 renormalize = _mm512_mask_cmplt_epu32_mask(active, y, _mm512_set1_epi32(ans_state_low));
    const __m512i words =
        _mm512_maskz_expand_epi32(renormalize, _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(word))));
    y = _mm512_mask_or_epi32(y, renormalize, _mm512_slli_epi32(y, 16), words);
    x[h] = _mm512_mask_mov_epi32(x[h], active, y);
    word += 2 * static_cast<unsigned>(zcoll::popcount(std::uint32_t{renormalize}));
    // The zigzag symbol: a token below 16 is its own; a larger one is (4 | its two low bits) << width,
    // width = (token - 16) / 4 + 2, with the raw bits below.
    __m512i symbol = token;
    const __mmask16 wide = _mm512_mask_cmpge_epu32_mask(active, token, _mm512_set1_epi32(ans_direct_tokens));
    if (wide != 0) {
      const __m512i above = _mm512_sub_epi32(token, _mm512_set1_epi32(ans_direct_tokens));
      const __m512i width = _mm512_maskz_add_epi32(wide, _mm512_srli_epi32(above, 2), _mm512_set1_epi32(2));
      const __m512i base = _mm512_sllv_epi32(_mm512_or_si512(_mm512_set1_epi32(4), _mm512_and_si512(above, _mm512_set1_epi32(3))), width);
      symbol = _mm512_mask_or_epi32(symbol, wide, base, read_raw_bits(width, wide));
    }
    const __m512i residual = _mm512_xor_si512(_mm512_srli_epi32(symbol, 1), _mm512_sub_epi32(zero, _mm512_and_si512(symbol, one)));
    _mm512_store_si512(tile.at(k, 16 * h), residual);
    // The next context: 3 class(token) + class(previous), class(t) = (t != 0) + (t > 2).
    const __m512i token_class = _mm512_add_epi32(_mm512_maskz_mov_epi32(_mm512_test_epi32_mask(token, token), one),
                                                 _mm512_maskz_mov_epi32(_mm512_cmpgt_epu32_mask(token, _mm512_set1_epi32(2)), one));
    context[h] = _mm512_mask_add_epi32(context[h], active, _mm512_mullo_epi32(token_class, _mm512_set1_epi32(3)),
                                       previous_class[h]);
    previous_class[h] = _mm512_mask_mov_epi32(previous_class[h], active, token_class);
  };

  std::size_t k = 0;
  for (; k < length && static_cast<std::size_t>(words_end - word) >= round_words_bytes; ++k) {
    for (unsigned h = 0; h < 2; ++h) {
      const __m512i index = _mm512_add_epi32(first[h], _mm512_set1_epi32(static_cast<int>(k)));
      const __mmask16 active = _mm512_cmplt_epu32_mask(index, count_lanes);  // the segments that reach round k
      if (active != 0) decode(h, k, active);
    }
    if (k % tile.rounds == tile.rounds - 1) tile.flush(residuals, count, length, k + 1 - tile.rounds, tile.rounds);
  }
  if (k % tile.rounds != 0) tile.flush(residuals, count, length, k - k % tile.rounds, k % tile.rounds);
  for (unsigned h = 0; h < 2; ++h) {
    _mm512_storeu_si512(segments.state + 16 * h, x[h]);
    _mm512_storeu_si512(segments.row + 16 * h, _mm512_slli_epi32(context[h], ans_scale_bits));
  }
  raw.advance(raw_position);
  return {k, word};
}

/// The rounds of a chunk's coding, from the last (the encoder's order: rANS codes last in, first out):
/// codes symbols[i] (context * 128 + token, segment-major, readable one symbol past `count`) into the
/// states and writes their words downwards from `word`, each round's below the last, while a round's
/// words (a word a segment) stay above `floor`; says where it stopped. The words and states are the
/// scalar encoder's: a round's words in segment order, state x -> x + (x / f) (2^12 - f) + c after
/// renormalization (x / f computed in double precision, exact for x < 2^31).
inline ans_vector_coded context_ans_encode_rounds_avx512(const context_ans_model& m, const std::uint16_t* symbols,
                                                        std::size_t count, std::size_t length, std::uint32_t* state,
                                                        std::byte* word, const std::byte* floor) {
  static_assert(ans_segments == 32, "two vectors of 16 lanes");
  if (count == 0 || count > (std::size_t{1} << 24)) return {length, word, false};
  constexpr std::size_t round_words_bytes = 2 * ans_segments;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i count_lanes = _mm512_set1_epi32(static_cast<int>(count));
  const auto* const frequencies = reinterpret_cast<const int*>(m.frequency_table.data());
  __m512i first[2], x[2];
  for (unsigned h = 0; h < 2; ++h) {
    first[h] = _mm512_mullo_epi32(_mm512_add_epi32(lanes, _mm512_set1_epi32(16 * h)),
                                  _mm512_set1_epi32(static_cast<int>(length)));
    x[h] = _mm512_loadu_si512(state + 16 * h);
  }
  __mmask16 missing = 0;
  // Residual k of the segments of vector h (those with one: `active`).
  const auto encode = [&](unsigned h, std::size_t k) ZCOLL_LAMBDA_ALWAYS_INLINE {
    const __m512i index = _mm512_add_epi32(first[h], _mm512_set1_epi32(static_cast<int>(k)));
    const __mmask16 active = _mm512_cmplt_epu32_mask(index, count_lanes);
    if (active == 0) return;
    const __m512i symbol = _mm512_and_si512(_mm512_mask_i32gather_epi32(zero, active, index, symbols, 2),
                                            _mm512_set1_epi32(0xFFFF));
    const __m512i entry = _mm512_mask_i32gather_epi32(zero, active, symbol, frequencies, 4);
    const __m512i frequency = _mm512_and_si512(entry, _mm512_set1_epi32(0xFFFF));
    const __mmask16 coded = _mm512_mask_test_epi32_mask(active, frequency, frequency);
    missing |= active & static_cast<__mmask16>(~coded);
    // Out goes the low word of a state that coding would take past 2^31, in segment order.
    const __mmask16 renormalize =
        _mm512_mask_cmpge_epu32_mask(active, x[h], _mm512_slli_epi32(frequency, 31 - ans_scale_bits));
    const unsigned out = static_cast<unsigned>(zcoll::popcount(std::uint32_t{renormalize}));
    word -= 2 * out;
    _mm512_mask_cvtepi32_storeu_epi16(word, static_cast<__mmask16>((1u << out) - 1u),
                                      _mm512_maskz_compress_epi32(renormalize, x[h]));
    __m512i y = _mm512_mask_srli_epi32(x[h], renormalize, x[h], 16);
    // x / f, exact in double (a quotient below 2^31 of integers below 2^31 is not rounded up to the next
    // integer); a lane without a frequency divides by 1 and is not kept.
    const __m512i divisor = _mm512_mask_mov_epi32(one, coded, frequency);
    const __m256i low = _mm512_cvttpd_epu32(_mm512_div_pd(_mm512_cvtepu32_pd(_mm512_castsi512_si256(y)),
                                                          _mm512_cvtepu32_pd(_mm512_castsi512_si256(divisor))));
    const __m256i high = _mm512_cvttpd_epu32(_mm512_div_pd(_mm512_cvtepu32_pd(_mm512_extracti64x4_epi64(y, 1)),
                                                           _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64(divisor, 1))));
    const __m512i quotient = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    y = _mm512_add_epi32(
        y, _mm512_add_epi32(_mm512_mullo_epi32(quotient, _mm512_sub_epi32(_mm512_set1_epi32(ans_scale), frequency)),
                            _mm512_srli_epi32(entry, 16)));
    x[h] = _mm512_mask_mov_epi32(x[h], coded, y);
  };
  std::size_t k = length;
  for (; k > 0 && static_cast<std::size_t>(word - floor) >= round_words_bytes; --k) {
    encode(1, k - 1);
    encode(0, k - 1);
  }
  for (unsigned h = 0; h < 2; ++h) _mm512_storeu_si512(state + 16 * h, x[h]);
  return {k, word, missing != 0};
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // ZCOLL_HAS_AVX512

}  // namespace zcoll::encode::detail
