#pragma once
/// The per-block math of the bit-shuffle encoder, written once for every driver.
///
/// Block format (32 residuals, fZ-light / cuSZp layout):
///
/// | bytes   | field                                                                                  |
/// |---------|----------------------------------------------------------------------------------------|
/// | 1       | L: bit planes, 0..32 = bit width of the largest magnitude. L = 0: all residuals are 0, |
/// |         | nothing follows (a constant block costs one byte)                                      |
/// | 4       | sign mask (u32): bit j set when residual j < 0                                         |
/// | 4 × L   | bit planes, least significant first: bit j of plane p = bit p of |residual j|          |

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/encode/detail/bitshuffle_gfni.hpp"

namespace zcoll::encode::detail {

inline constexpr std::size_t bitshuffle_max_block_bytes = 1 + 4 + 4 * block_values;

/// Bytes of an encoded block with `planes` bit planes.
ZCOLL_HOST_DEVICE constexpr std::size_t bitshuffle_block_bytes(unsigned planes) { return planes == 0 ? 1 : 5 + 4 * std::size_t{planes}; }

#if ZCOLL_HAS_AVX512_GFNI
/// Writes the block of the 16 planes `planes` (gfni_planes::planes_of) and signs `sign` at `out` (room
/// for bitshuffle_max_block_bytes); returns its size. All 16 planes are stored, the size says how many
/// count: no branch on the width.
ZCOLL_ALWAYS_INLINE std::size_t bitshuffle_store_gfni_block(__m512i planes, block_mask sign, std::byte* out) {
  const unsigned used = gfni_planes::used_planes(planes);
  out[0] = static_cast<std::byte>(used);
  std::memcpy(out + 1, &sign, 4);
  _mm512_storeu_si512(out + 5, planes);
  return bitshuffle_block_bytes(used);
}
#endif

#if ZCOLL_HAS_AVX2
/// Byte slicing for AVX2. A bit plane of 32 lanes is one vpmovmskb of a vector that holds one byte of
/// every lane: slice s holds byte s of lanes 0..31, in lane order. byte_slices() builds the four slices
/// from four vectors of 8 lanes (a 4x4 byte transpose in each 128-bit half, a 4x4 dword transpose across
/// the four vectors, and a dword permutation into lane order); lanes_from_byte_slices() is its inverse.
struct byte_slicing {
  // Groups the 16 bytes of 4 lanes by byte position; its own inverse.
  static __m256i transpose_4x4_bytes(__m256i v) {
    const __m256i order = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,  //
                                           0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm256_shuffle_epi8(v, order);
  }
  // 4x4 transpose of the dwords in each 128-bit half of v0..v3; its own inverse.
  static void transpose_4x4_dwords(__m256i& v0, __m256i& v1, __m256i& v2, __m256i& v3) {
    const __m256i t0 = _mm256_unpacklo_epi32(v0, v1), t1 = _mm256_unpacklo_epi32(v2, v3);
    const __m256i t2 = _mm256_unpackhi_epi32(v0, v1), t3 = _mm256_unpackhi_epi32(v2, v3);
    v0 = _mm256_unpacklo_epi64(t0, t1);
    v1 = _mm256_unpackhi_epi64(t0, t1);
    v2 = _mm256_unpacklo_epi64(t2, t3);
    v3 = _mm256_unpackhi_epi64(t2, t3);
  }
  // After the transposes a slice holds lanes [0-3, 8-11, 16-19, 24-27 | 4-7, 12-15, 20-23, 28-31].
  static __m256i to_lane_order(__m256i v) {
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  static __m256i from_lane_order(__m256i v) {
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  }

  /// Slices from the 32 lanes held in four vectors of 8.
  static void byte_slices(const __m256i lanes[4], __m256i slice[4]) {
    __m256i v[4];
    for (int k = 0; k < 4; ++k) v[k] = transpose_4x4_bytes(lanes[k]);
    transpose_4x4_dwords(v[0], v[1], v[2], v[3]);
    for (int s = 0; s < 4; ++s) slice[s] = to_lane_order(v[s]);
  }

  /// The 32 lanes from their slices, negated where `sign` has their bit: byte interleaves put the four
  /// bytes of each lane together (12 operations), then the sign is applied in registers.
  static void lanes_from_byte_slices(const __m256i slice[4], block_mask sign, std::uint32_t* lanes) {
    const __m256i a_lo = _mm256_unpacklo_epi8(slice[0], slice[1]), a_hi = _mm256_unpackhi_epi8(slice[0], slice[1]);
    const __m256i b_lo = _mm256_unpacklo_epi8(slice[2], slice[3]), b_hi = _mm256_unpackhi_epi8(slice[2], slice[3]);
    const __m256i l0 = _mm256_unpacklo_epi16(a_lo, b_lo);  // lanes 0-3 | 16-19
    const __m256i l1 = _mm256_unpackhi_epi16(a_lo, b_lo);  // lanes 4-7 | 20-23
    const __m256i l2 = _mm256_unpacklo_epi16(a_hi, b_hi);  // lanes 8-11 | 24-27
    const __m256i l3 = _mm256_unpackhi_epi16(a_hi, b_hi);  // lanes 12-15 | 28-31
    const __m256i v[4] = {_mm256_permute2x128_si256(l0, l1, 0x20), _mm256_permute2x128_si256(l2, l3, 0x20),
                          _mm256_permute2x128_si256(l0, l1, 0x31), _mm256_permute2x128_si256(l2, l3, 0x31)};
    const __m256i signs = _mm256_set1_epi32(static_cast<int>(sign));
    for (int k = 0; k < 4; ++k) {
      // Lane j's sign bit moved to bit 31 and spread: all ones where negative.
      const __m256i to_top = _mm256_setr_epi32(31 - 8 * k, 30 - 8 * k, 29 - 8 * k, 28 - 8 * k, 27 - 8 * k, 26 - 8 * k,
                                               25 - 8 * k, 24 - 8 * k);
      const __m256i negate = _mm256_srai_epi32(_mm256_sllv_epi32(signs, to_top), 31);
      const __m256i value = _mm256_sub_epi32(_mm256_xor_si256(v[k], negate), negate);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes + 8 * k), value);
    }
  }

  /// Bit planes 8s..8s+7 of slice s, stored as 8 little-endian words at `out` (32 bytes): the 8x8 bit
  /// transpose of slice_of_planes, then the bytes back into plane order.
  static void store_planes(__m256i slice, std::byte* out) {
    const __m256i x = transpose_8x8_bits(slice);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), transpose_4x4_bytes(from_lane_order(x)));
  }

  /// In each qword, the 8x8 bit matrix whose row r is byte r, transposed (three delta swaps); its own inverse.
  static __m256i transpose_8x8_bits(__m256i x) {
    __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 7)), _mm256_set1_epi64x(0x00AA00AA00AA00AALL));
    x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 7)));
    t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 14)), _mm256_set1_epi64x(0x0000CCCC0000CCCCLL));
    x = _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 14)));
    t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi64(x, 28)), _mm256_set1_epi64x(0x00000000F0F0F0F0LL));
    return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi64(t, 28)));
  }

  /// Slice s from bit planes 8s..8s+7 (`count` of them, the rest read as zero). Byte i of plane j is
  /// bit j of lanes 8i..8i+7: gathering byte i of the 8 planes into one qword makes each qword an 8x8
  /// bit matrix, and its transpose (three delta swaps) is byte i..i+7 of the slice. 20 operations for 8
  /// planes, where expanding each plane's mask alone takes 8.
  static __m256i slice_of_planes(const std::byte* planes, unsigned count) {
    const __m256i active = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    // Masked load: lanes past `count` read nothing, so a block at the end of a buffer is never overrun.
    __m256i x = _mm256_maskload_epi32(reinterpret_cast<const int*>(planes), active);
    return transpose_8x8_bits(to_lane_order(transpose_4x4_bytes(x)));  // qword i: byte i of the 8 planes
  }

};
#endif

/// Encodes 32 residuals at `out` (which has room for bitshuffle_max_block_bytes); returns bytes written.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::size_t bitshuffle_encode_block(const std::int32_t* ZCOLL_RESTRICT residuals,
                                                        std::byte* ZCOLL_RESTRICT out) {
#if ZCOLL_HAS_AVX512_GFNI
  {
    // Magnitudes below 2^16 (nearly every block): their planes by GFNI's transposes, no branch on the
    // width within 0..16 planes. The residuals are read in the 8-lane vectors the predictor stored: a
    // 16-lane load of what two 8-lane stores just wrote misses store-to-load forwarding (measured: it
    // made compression 7 % slower, this way 2-14 % faster than the AVX2 form).
    constexpr __mmask16 all = 0xFFFF;
    const auto half = [&](int k) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(residuals + 8 * k)); };
    const __m512i low = _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(half(0)), half(1), 1);
    const __m512i high = _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(half(2)), half(3), 1);
    const __m512i low_magnitude = _mm512_maskz_abs_epi32(all, low), high_magnitude = _mm512_maskz_abs_epi32(all, high);
    const __m512i upper_half = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    if (_mm512_test_epi32_mask(_mm512_or_si512(low_magnitude, high_magnitude), upper_half) == 0) {
      const __m512i zero = _mm512_setzero_si512();
      const block_mask sign = static_cast<block_mask>(_mm512_cmplt_epi32_mask(low, zero)) |
                              static_cast<block_mask>(_mm512_cmplt_epi32_mask(high, zero)) << 16;
      return bitshuffle_store_gfni_block(gfni_planes::planes_of(low_magnitude, high_magnitude), sign, out);
    }
  }
#endif
#if ZCOLL_HAS_AVX2
  // All in registers: magnitudes (vpabsd gives 2^31 for INT32_MIN, read as unsigned), sign bits by
  // vmovmskps, the bit width from the OR of the magnitudes, planes from the byte slices.
  __m256i magnitude[4];
  block_mask sign = 0;
  __m256i any = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    const __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(residuals + 8 * k));
    sign |= static_cast<block_mask>(_mm256_movemask_ps(_mm256_castsi256_ps(r))) << (8 * k);
    magnitude[k] = _mm256_abs_epi32(r);
    any = _mm256_or_si256(any, magnitude[k]);
  }
  __m128i any4 = _mm_or_si128(_mm256_castsi256_si128(any), _mm256_extracti128_si256(any, 1));
  any4 = _mm_or_si128(any4, _mm_shuffle_epi32(any4, 0x4E));
  any4 = _mm_or_si128(any4, _mm_shuffle_epi32(any4, 0xB1));
  const auto all_bits = static_cast<std::uint32_t>(_mm_cvtsi128_si32(any4));
  const unsigned planes = 32 - static_cast<unsigned>(zcoll::countl_zero(all_bits));
  // No branch on the bit width within 0..8 planes (it changes from block to block, so such a branch
  // mispredicts often): the sign and a whole group of 8 planes are always stored (the caller gives
  // room for a full block), and the returned size says how much of it counts.
  out[0] = static_cast<std::byte>(planes);
  std::memcpy(out + 1, &sign, 4);
  if (planes <= 8) {
    // Every magnitude fits a byte: two saturating packs and a dword permutation give slice 0.
    const __m256i words = _mm256_packus_epi16(_mm256_packus_epi32(magnitude[0], magnitude[1]),
                                              _mm256_packus_epi32(magnitude[2], magnitude[3]));
    byte_slicing::store_planes(byte_slicing::to_lane_order(words), out + 5);
    return bitshuffle_block_bytes(planes);
  }
  __m256i slice[4];
  byte_slicing::byte_slices(magnitude, slice);
  for (unsigned group = 0; group * 8 < planes; ++group) byte_slicing::store_planes(slice[group], out + 5 + 32 * group);
  return bitshuffle_block_bytes(planes);
#else
  alignas(64) std::uint32_t magnitude[block_values];
  std::uint32_t any = 0;
  for (std::size_t j = 0; j < block_values; ++j) {
    const auto r = static_cast<std::uint32_t>(residuals[j]);
    // |r| in unsigned arithmetic, so INT32_MIN gives 2^31 instead of overflowing.
    magnitude[j] = static_cast<std::int32_t>(r) < 0 ? 0u - r : r;
    any |= magnitude[j];
  }
  const unsigned planes = 32 - static_cast<unsigned>(zcoll::countl_zero(any));
  out[0] = static_cast<std::byte>(planes);
  if (planes == 0) return 1;
  const block_mask sign = lanes_with_bit(reinterpret_cast<const std::uint32_t*>(residuals), 31);
  std::memcpy(out + 1, &sign, 4);
  for (unsigned p = 0; p < planes; ++p) {
    const block_mask plane = lanes_with_bit(magnitude, p);
    std::memcpy(out + 5 + 4 * p, &plane, 4);
  }
  return bitshuffle_block_bytes(planes);
#endif
}

/// Decodes the block whose planes byte is `planes` (<= 32) from `in`, which holds the whole block.
/// Residuals come back as unsigned words (two's complement): a corrupted stream then wraps instead of
/// overflowing a signed integer.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void bitshuffle_decode_block(unsigned planes, const std::byte* ZCOLL_RESTRICT in,
                                                 std::uint32_t* ZCOLL_RESTRICT residuals) {
#if ZCOLL_HAS_AVX512_GFNI
  if (planes <= gfni_planes::max_planes) {  // nearly every block: branch-free up to 16 planes, no byte slicing
    const int has_planes = planes > 0 ? -1 : 0;
    const auto sign = static_cast<block_mask>(
        _mm_cvtsi128_si32(_mm_maskload_epi32(reinterpret_cast<const int*>(in + 1), _mm_setr_epi32(has_planes, 0, 0, 0))));
    __m512i low, high;
    gfni_planes::magnitudes(in + 5, planes, low, high);
    const __m512i zero = _mm512_setzero_si512();
    _mm512_storeu_si512(residuals, _mm512_mask_sub_epi32(low, static_cast<__mmask16>(sign), zero, low));
    _mm512_storeu_si512(residuals + 16, _mm512_mask_sub_epi32(high, static_cast<__mmask16>(sign >> 16), zero, high));
    return;
  }
#endif
#if ZCOLL_HAS_AVX2
  // Branch-free up to 8 planes (zcoll-bench on the navy winds at 1e-2..1e-4: most blocks need at most
  // 8, and their number changes from block to block, so a branch on it mispredicts). Masked loads read nothing past
  // the block, so a one-byte block at the end of the buffer is never overrun.
  const int has_planes = planes > 0 ? -1 : 0;
  const block_mask sign = static_cast<block_mask>(
      _mm_cvtsi128_si32(_mm_maskload_epi32(reinterpret_cast<const int*>(in + 1), _mm_setr_epi32(has_planes, 0, 0, 0))));
  __m256i slice[4] = {byte_slicing::slice_of_planes(in + 5, std::min(8u, planes)), _mm256_setzero_si256(),
                      _mm256_setzero_si256(), _mm256_setzero_si256()};
  for (unsigned group = 1; group * 8 < planes; ++group) {
    slice[group] = byte_slicing::slice_of_planes(in + 5 + 32 * group, std::min(8u, planes - 8 * group));
  }
  byte_slicing::lanes_from_byte_slices(slice, sign, residuals);
#else
  block_mask sign = 0;
  if (planes > 0) std::memcpy(&sign, in + 1, 4);
  for (std::size_t j = 0; j < block_values; ++j) residuals[j] = 0;
  for (unsigned p = 0; p < planes; ++p) {
    block_mask plane;
    std::memcpy(&plane, in + 5 + 4 * p, 4);
    set_bit_in_lanes(residuals, plane, p);
  }
  for (std::size_t j = 0; j < block_values; ++j) {
    const std::uint32_t negate = 0u - ((sign >> j) & 1u);  // all ones where the sign bit is set
    residuals[j] = (residuals[j] ^ negate) - negate;
  }
#endif
}

#if ZCOLL_HAS_AVX512_POPCOUNT
/// The balance of each plane of a block of at most 16 planes (at `planes_at`, signs `negative`): in
/// dword lane p, the count of positive lanes holding bit p less the count of negative ones. Every plane
/// in one vector lane: no loop, whose exit the widths of consecutive blocks would mispredict (measured:
/// the loop was a quarter of the add's time on ECHAM5 at relative 1e-4, whose chunks have exception
/// lanes). Balances add as vectors, so a run of blocks is weighted and summed across lanes once
/// (bitshuffle_weighted_sum_16). Only zero-masking AVX-512 forms: GCC 12's unmasked ones start from an
/// undefined vector and warn (-Wmaybe-uninitialized) where they are inlined.
ZCOLL_ALWAYS_INLINE __m512i bitshuffle_plane_balance_16(const std::byte* planes_at, unsigned planes,
                                                       std::uint32_t negative) {
  constexpr __mmask16 all = 0xFFFF;
  const __m512i plane = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << planes) - 1), planes_at);
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(negative));
  const __m512i up = _mm512_maskz_popcnt_epi32(all, _mm512_maskz_andnot_epi32(all, sign, plane));
  const __m512i down = _mm512_maskz_popcnt_epi32(all, _mm512_maskz_and_epi32(all, sign, plane));
  return _mm512_sub_epi32(up, down);
}

/// The residual sum of plane balances (bitshuffle_plane_balance_16, or sums of them): balance p times
/// 2^p, summed, modulo 2^32 (so that balances summed modulo 2^32 give the sum of their blocks' sums).
ZCOLL_ALWAYS_INLINE std::uint32_t bitshuffle_weighted_sum_16(__m512i balance) {
  constexpr __mmask16 all = 0xFFFF;
  const __m512i weight = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i weighted = _mm512_maskz_sllv_epi32(all, balance, weight);
  const __m256i half = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, weighted, 0),
                                        _mm512_maskz_extracti64x4_epi64(0xF, weighted, 1));
  __m128i quarter = _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
  quarter = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, 0x4E));
  quarter = _mm_add_epi32(quarter, _mm_shuffle_epi32(quarter, 0xB1));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(quarter));
}

/// BitShuffle::residual_sum of a block of at most 16 planes.
ZCOLL_ALWAYS_INLINE std::uint32_t bitshuffle_residual_sum_16(const std::byte* planes_at, unsigned planes,
                                                            std::uint32_t negative) {
  return bitshuffle_weighted_sum_16(bitshuffle_plane_balance_16(planes_at, planes, negative));
}
#endif

}  // namespace zcoll::encode::detail
