#pragma once
/// The context-modelled rANS coder's symbols (format in encode/context_ans.hpp): each residual's context
/// and token as one index into the model's tables, which both the statistics pass and the chunk coder
/// compute for every residual.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "zcoll/core/config.hpp"
#include "zcoll/encode/detail/context_ans_alphabet.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"

#if ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512
#include <immintrin.h>
#endif

namespace zcoll::encode::detail {

#if ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512
/// The symbols of the eight residuals from r[0] (r[-1] and r[-2] are the two before them in their
/// segment), as context_ans_symbols computes them, at out[0..7]; `level`: their level classes, or
/// nullptr. Compilers vectorize the scalar loop where the CPU counts leading zeros in vector lanes
/// (AVX-512 CD), not with AVX2, whose lanes then find a symbol's bit width as the exponent of its float,
/// exact below 2^24 (wider symbols are shifted down by 8 first): 4.8x faster on a Zen 3 core.
ZCOLL_ALWAYS_INLINE void context_ans_symbols_avx2(const std::int32_t* r, const std::uint8_t* level, std::uint16_t* out) {
  static_assert(ans_direct_tokens == 16 && ans_token_count == 128 && ans_magnitude_contexts == 9);
  const __m256i zero = _mm256_setzero_si256();
  const auto zigzag_of = [](const std::int32_t* at) ZCOLL_LAMBDA_ALWAYS_INLINE {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
    return _mm256_xor_si256(_mm256_slli_epi32(v, 1), _mm256_srai_epi32(v, 31));
  };
  // ans_class of a zigzag symbol: (min(s, 3) + 1) / 2, which is 0, 1, 1 and 2 for 0, 1, 2 and 3 or more.
  const auto class_of = [](__m256i symbol) ZCOLL_LAMBDA_ALWAYS_INLINE {
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_min_epu32(symbol, _mm256_set1_epi32(3)), _mm256_set1_epi32(1)), 1);
  };
  const __m256i symbol = zigzag_of(r);
  // top = bit_width(symbol | 16) - 1, as ans_token_of computes it.
  const __m256i v = _mm256_or_si256(symbol, _mm256_set1_epi32(static_cast<int>(ans_direct_tokens)));
  const __m256i wider = _mm256_cmpgt_epi32(_mm256_srli_epi32(v, 24), zero);
  const __m256i exact = _mm256_blendv_epi8(v, _mm256_srli_epi32(v, 8), wider);
  const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(exact)), 23);
  const __m256i top = _mm256_add_epi32(_mm256_sub_epi32(exponent, _mm256_set1_epi32(127)),
                                       _mm256_and_si256(wider, _mm256_set1_epi32(8)));
  // A symbol of 16 or more: token 16 + 4 (top - 4) + its two bits below the leading one.
  const __m256i wide = _mm256_cmpgt_epi32(_mm256_srli_epi32(symbol, 4), zero);
  const __m256i wide_token =
      _mm256_add_epi32(_mm256_slli_epi32(top, 2),
                       _mm256_and_si256(_mm256_srlv_epi32(symbol, _mm256_sub_epi32(top, _mm256_set1_epi32(2))),
                                        _mm256_set1_epi32(3)));
  const __m256i token = _mm256_blendv_epi8(symbol, wide_token, wide);
  __m256i context = _mm256_add_epi32(_mm256_mullo_epi32(class_of(zigzag_of(r - 1)), _mm256_set1_epi32(3)),
                                     class_of(zigzag_of(r - 2)));
  if (level != nullptr) {
    const __m256i levels = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(level)));
    context = _mm256_add_epi32(context, _mm256_mullo_epi32(levels, _mm256_set1_epi32(ans_magnitude_contexts)));
  }
  const __m256i symbols = _mm256_add_epi32(_mm256_slli_epi32(context, 7), token);  // below 2^16
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(symbols, symbols), _MM_SHUFFLE(3, 1, 2, 0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}
#endif

/// Each residual's context and token as one index into the model's tables (context * 128 + token),
/// segment by segment (ans_segment_length). A residual's context depends on its level class and the two
/// residuals before it, not on a running state, so the loop is elementwise: AVX2 builds run it eight
/// residuals a step, and compilers vectorize it for AVX-512.
inline void context_ans_symbols(std::span<const std::int32_t> residuals, ans_level_span levels,
                                std::span<std::uint16_t> symbols) {
  const std::size_t count = residuals.size(), length = ans_segment_length(count);
  const std::int32_t* const r = residuals.data();
  const std::uint8_t* const level = levels.empty() ? nullptr : levels.data();
  std::uint16_t* const out = symbols.data();
  for (std::size_t first = 0; first < count; first += length) {
    const std::size_t end = std::min(count, first + length);
    // The symbol of residual i after the zigzag symbols `previous` and `before_previous`.
    const auto symbol_at = [&](std::size_t i, std::uint32_t previous, std::uint32_t before_previous) {
      const std::uint32_t level_rows = level != nullptr ? ans_magnitude_contexts * level[i] : 0u;
      return static_cast<std::uint16_t>((level_rows + ans_context(previous, before_previous)) * ans_token_count +
                                        ans_token_of(zigzag(r[i])).token);
    };
    if (first < end) out[first] = symbol_at(first, 0, 0);
    if (first + 1 < end) out[first + 1] = symbol_at(first + 1, zigzag(r[first]), 0);
    std::size_t i = first + 2;
#if ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512
    for (; i + 8 <= end; i += 8) context_ans_symbols_avx2(r + i, level != nullptr ? level + i : nullptr, out + i);
#endif
    for (; i < end; ++i) out[i] = symbol_at(i, zigzag(r[i - 1]), zigzag(r[i - 2]));
  }
}

}  // namespace zcoll::encode::detail
