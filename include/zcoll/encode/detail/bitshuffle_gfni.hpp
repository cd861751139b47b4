#pragma once
/// GFNI's 8x8 bit transposes between a bit-shuffle block's planes (bitshuffle_block.hpp has the format)
/// and its 32 lanes, for blocks of at most 16 planes, where the CPU has AVX-512 BW, VBMI and GFNI (Ice
/// Lake and later, Zen 4 and later): a byte permutation, one transpose a qword and a byte permutation
/// each way, where the AVX2 byte slicing takes a dozen shuffles and three delta swaps a slice. The
/// decoder, the encoder and the sum of two blocks (bitshuffle_block_sum.hpp) use them; every other CPU
/// keeps the AVX2 or portable forms, which write and read the same bytes.

#include <array>
#include <cstddef>
#include <cstdint>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"

#if ZCOLL_HAS_AVX512_GFNI
#include <immintrin.h>

namespace zcoll::encode::detail {

/// The byte permutation that puts byte h of lane l, as the transposes leave it (byte l % 8 of qword
/// 2 (l / 8) + h), at byte stride * (l - first) + h, for `lanes` lanes from `first` on.
constexpr std::array<std::uint8_t, 64> gfni_lanes_from_qwords(int stride, int first, int lanes) {
  std::array<std::uint8_t, 64> t{};
  for (int l = first; l < first + lanes; ++l) {
    for (int h = 0; h < 2; ++h) t[stride * (l - first) + h] = static_cast<std::uint8_t>(8 * (2 * (l / 8) + h) + l % 8);
  }
  return t;
}

/// Its inverse for the transposes' input: byte m of qword 2k + h gets byte h of lane 8k + 7 - m, whose
/// bytes start at stride * lane (16-bit lanes: stride 2; dwords in two vectors: stride 4, the second
/// vector's bytes numbered 64.. in a two-source permutation).
constexpr std::array<std::uint8_t, 64> gfni_qwords_from_lanes(int stride) {
  std::array<std::uint8_t, 64> t{};
  for (int q = 0; q < 8; ++q) {
    for (int m = 0; m < 8; ++m) t[8 * q + m] = static_cast<std::uint8_t>(stride * (8 * (q / 2) + 7 - m) + q % 2);
  }
  return t;
}

struct gfni_planes {
  /// The widest block whose magnitudes fit the 16-bit lanes.
  static constexpr unsigned max_planes = 16;

  /// GFNI's affine transform with the data as the matrix and bit i as the vector of byte i: byte i of a
  /// qword gets bit i of its 8 bytes, bit b from byte 7 - b (a transpose with the rows reversed, which
  /// the byte permutations around it undo).
  ZCOLL_ALWAYS_INLINE static __m512i transpose_qwords(__m512i x) {
    return _mm512_gf2p8affine_epi64_epi8(_mm512_set1_epi64(0x8040201008040201), x, 0);
  }

  /// The byte permutations, as index tables (byte i of the result is byte table[i] of the source). Plane
  /// p's byte k (lanes 8k..8k+7) sits at 4p + k in a block; qword 2k + h is the transpose's input for
  /// lanes 8k..8k+7 and planes 8h..8h+7, and after the transpose holds byte h of each of those lanes.
  using table = std::array<std::uint8_t, 64>;
  static constexpr table planes_to_qwords = [] {  // byte m of qword 2k + h: byte k of plane 8h + 7 - m
    table t{};
    for (int q = 0; q < 8; ++q)
      for (int m = 0; m < 8; ++m) t[8 * q + m] = static_cast<std::uint8_t>(4 * (8 * (q % 2) + 7 - m) + q / 2);
    return t;
  }();
  static constexpr table qwords_to_planes = [] {  // byte k of plane 8h + i: byte i of qword 2k + h
    table t{};
    for (int p = 0; p < 16; ++p)
      for (int k = 0; k < 4; ++k) t[4 * p + k] = static_cast<std::uint8_t>(8 * (2 * k + p / 8) + p % 8);
    return t;
  }();
  /// The transposed lanes as 16-bit lanes (the sum), or as the low halves of 16 dwords, lanes 0..15 or
  /// 16..31 (the decoder; the other bytes are zeroed by the permutation's mask).
  static constexpr table qwords_to_lanes = gfni_lanes_from_qwords(2, 0, 32);
  static constexpr table qwords_to_low_dwords = gfni_lanes_from_qwords(4, 0, 16);
  static constexpr table qwords_to_high_dwords = gfni_lanes_from_qwords(4, 16, 16);
  /// The transpose's input from 16-bit lanes (the sum), or from two vectors of 16 dwords below 2^16 (the
  /// encoder: one two-source permutation instead of narrowing them first).
  static constexpr table lanes_to_qwords = gfni_qwords_from_lanes(2);
  static constexpr table dwords_to_qwords = gfni_qwords_from_lanes(4);

  /// The zero-masking form: GCC 12's unmasked one starts from an undefined vector and warns
  /// (-Wmaybe-uninitialized) where it is inlined.
  ZCOLL_ALWAYS_INLINE static __m512i permute(const table& t, __m512i v) {
    return _mm512_maskz_permutexvar_epi8(~__mmask64{0}, _mm512_loadu_si512(t.data()), v);
  }

  /// The magnitudes of the block whose planes start at `planes_at` (`planes` of them, at most 16) as 32
  /// 16-bit lanes. A masked load: nothing past the block's planes is read.
  ZCOLL_ALWAYS_INLINE static __m512i magnitudes(const std::byte* planes_at, unsigned planes) {
    const __m512i bits = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << planes) - 1), planes_at);
    return permute(qwords_to_lanes, transpose_qwords(permute(planes_to_qwords, bits)));
  }

  /// The magnitudes of the block whose planes start at `planes_at` (`planes`, at most 16) as 32 dwords:
  /// lanes 0..15 in `low`, 16..31 in `high`.
  ZCOLL_ALWAYS_INLINE static void magnitudes(const std::byte* planes_at, unsigned planes, __m512i& low, __m512i& high) {
    const __m512i bits = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << planes) - 1), planes_at);
    const __m512i qwords = transpose_qwords(permute(planes_to_qwords, bits));
    constexpr __mmask64 low_words = 0x3333333333333333;  // bytes 0 and 1 of every dword
    low = _mm512_maskz_permutexvar_epi8(low_words, _mm512_loadu_si512(qwords_to_low_dwords.data()), qwords);
    high = _mm512_maskz_permutexvar_epi8(low_words, _mm512_loadu_si512(qwords_to_high_dwords.data()), qwords);
  }

  /// The 16 planes of 32 magnitudes below 2^16 held in two vectors of dwords (lanes 0..15, 16..31).
  ZCOLL_ALWAYS_INLINE static __m512i planes_of(__m512i low, __m512i high) {
    const __m512i qwords = _mm512_maskz_permutex2var_epi8(~__mmask64{0}, low, _mm512_loadu_si512(dwords_to_qwords.data()), high);
    return permute(qwords_to_planes, transpose_qwords(qwords));
  }

  /// The 16 planes of 32 16-bit magnitudes, plane p in dword p.
  ZCOLL_ALWAYS_INLINE static __m512i planes_of(__m512i magnitudes) {
    return permute(qwords_to_planes, transpose_qwords(permute(lanes_to_qwords, magnitudes)));
  }

  /// The number of planes up to the highest nonzero one.
  ZCOLL_ALWAYS_INLINE static unsigned used_planes(__m512i planes) {
    const auto nonzero = static_cast<unsigned>(_mm512_test_epi32_mask(planes, planes));
    return static_cast<unsigned>(32 - zcoll::countl_zero(nonzero));
  }
};

}  // namespace zcoll::encode::detail
#endif
