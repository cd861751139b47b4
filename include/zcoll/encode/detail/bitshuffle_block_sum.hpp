#pragma once
/// The sum of two bit-shuffle blocks computed on their bit planes (the format is in bitshuffle_block.hpp),
/// written as the encoder writes the sum of their residuals, without taking either block apart into
/// integers: the block arithmetic of zcoll::add (codec/detail/pipeline_add.hpp).
///
/// Each 32-bit word of a block is one bit of all 32 lanes, so one word operation is 32 lane operations.
/// A lane holds sign and magnitude. Where the signs agree the magnitudes add; where they differ the
/// smaller is subtracted from the larger and the sign is the larger's. Both are one carry pass over the
/// planes: mA + (mB XOR d) + d, where d marks the lanes whose signs differ (two's complement of mB there).
/// - Portable (and device) form: a ripple carry plane by plane; the carry out of the top plane says, in
///   the lanes of differing signs, whether mA >= mB, and the lanes where it does not are negated in a
///   second pass (~D + 1).
/// - AVX2 form (blocks of up to 14 planes, most blocks at the bounds zcoll is used at): 8 planes to a
///   vector and the carries as a Kogge-Stone scan across its lanes; mA - mB and mB - mA are computed side
///   by side, and each lane takes the one that is not negative, so no pass waits for another. A loop over
///   the planes would mispredict its exit on most blocks (widths change from block to block); these
///   loads are masked and branch-free. Wider blocks are decoded, added and encoded with the AVX2
///   transposes, which are faster there than a ripple.
/// - AVX-512 form, where the CPU has it, for blocks of 7 to 14 planes (the widths at relative 1e-4): the
///   16 planes in one vector, so one scan of four steps and no carry between vectors (docs/performance.md,
///   issue 19's third round). Up to 6 planes the one-vector AVX2 form stays: it is as fast or faster there.
/// - GFNI form, where the CPU also has AVX-512 BW, VBMI and GFNI (Ice Lake and later, Zen 4 and later), for
///   blocks of up to 14 planes: no carries at all; the planes become 16-bit lanes by GFNI's 8x8 bit
///   transposes, add as integers and go back (1.5-1.8x the add of the forms above: docs/performance.md,
///   issue 19's sixth round).
///
/// Every function of the vector forms is forced inline: in a large translation unit (zcoll-bench's) GCC's
/// growth limits left them as calls inside the add's block loop, which then kept its cursors in memory
/// (the add 1.2-1.3x slower; docs/performance.md, issue 19's fourth round).
///
/// The result is byte for byte the encoder's block of decode(a) + decode(b) modulo 2^32
/// (tests/encode/bitshuffle_test.cpp checks every width against every width, and arbitrary bytes); on the
/// planes only where that sum cannot wrap (both blocks at most 30 planes).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/encode/detail/bitshuffle_block.hpp"

namespace zcoll::encode::detail {

/// Blocks of at most this many planes are added on their planes: their sums need one plane more and
/// stay within an int32, as the decoder's modular arithmetic gives them.
inline constexpr unsigned bitshuffle_sum_max_planes = 30;

ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::uint32_t bitshuffle_word(const std::byte* at) {
  std::uint32_t word;
  std::memcpy(&word, at, 4);
  return word;
}

/// bitshuffle_add_blocks one plane after another, for blocks of at most bitshuffle_sum_max_planes planes:
/// a ripple carry over the wider block's planes (the portable and device path).
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::size_t bitshuffle_add_blocks_by_plane(const std::byte* ZCOLL_RESTRICT a,
                                                                       const std::byte* ZCOLL_RESTRICT b,
                                                                       std::byte* ZCOLL_RESTRICT out) {
  const unsigned planes_a = std::to_integer<unsigned>(a[0]), planes_b = std::to_integer<unsigned>(b[0]);
  const unsigned width = planes_a > planes_b ? planes_a : planes_b;
  const std::uint32_t sign_a = planes_a > 0 ? bitshuffle_word(a + 1) : 0u;
  const std::uint32_t sign_b = planes_b > 0 ? bitshuffle_word(b + 1) : 0u;
  const std::uint32_t differ = sign_a ^ sign_b;

  // mA + (mB ^ differ) + differ over `width` planes, the sum's planes written where they go.
  std::byte* const planes = out + 5;
  std::uint32_t carry = differ;
  for (unsigned p = 0; p < width; ++p) {
    const std::uint32_t x = p < planes_a ? bitshuffle_word(a + 5 + 4 * p) : 0u;
    const std::uint32_t y = (p < planes_b ? bitshuffle_word(b + 5 + 4 * p) : 0u) ^ differ;
    const std::uint32_t half = x ^ y;
    const std::uint32_t digit = half ^ carry;
    carry = (x & y) | (carry & half);
    std::memcpy(planes + 4 * p, &digit, 4);
  }
  // Lanes of differing signs without a carry out had mB > mA: their difference is negated (~D + 1) and
  // takes b's sign. Lanes of equal signs keep the carry as one plane more.
  const std::uint32_t negate = differ & ~carry;
  const std::uint32_t top = carry & ~differ;
  std::uint32_t increment = negate, any = top;
  unsigned highest = 0;  // planes up to the highest nonzero one below `width`
  for (unsigned p = 0; p < width; ++p) {
    const std::uint32_t flipped = bitshuffle_word(planes + 4 * p) ^ negate;
    const std::uint32_t digit = flipped ^ increment;
    increment = flipped & increment;
    any |= digit;
    highest = digit != 0 ? p + 1 : highest;
    std::memcpy(planes + 4 * p, &digit, 4);
  }
  std::memcpy(planes + 4 * width, &top, 4);
  const unsigned used = top != 0 ? width + 1 : highest;
  // A lane whose sum is 0 has no sign, as the encoder writes it (a damaged block may carry one on a zero
  // magnitude).
  const std::uint32_t sign = (sign_a ^ negate) & any;
  out[0] = static_cast<std::byte>(used);
  std::memcpy(out + 1, &sign, 4);
  return bitshuffle_block_bytes(used);
}

#if ZCOLL_HAS_AVX2
/// bitshuffle_add_blocks with AVX2 for blocks of at most 8V - 2 planes (V = 1 or 2 vectors of 8 planes;
/// the file's comment says how). Over 8V planes mA + mB (equal signs) stays below 2^(8V-1), so the top
/// plane of mA - mB marks the lanes where mB - mA is the magnitude.
template <int V>
struct bitshuffle_vector_sum {
  static constexpr unsigned max_planes = 8 * V - 2;

  /// Lane i gets lane i - k, lanes below k get 0.
  template <int k>
  ZCOLL_ALWAYS_INLINE static __m256i planes_up(__m256i v) {
    const __m256i from = _mm256_setr_epi32((0 - k) & 7, (1 - k) & 7, (2 - k) & 7, (3 - k) & 7, (4 - k) & 7, (5 - k) & 7,
                                           (6 - k) & 7, (7 - k) & 7);
    return _mm256_blend_epi32(_mm256_permutevar8x32_epi32(v, from), _mm256_setzero_si256(), (1 << k) - 1);
  }
  ZCOLL_ALWAYS_INLINE static __m256i top_lane(__m256i v) {
    return _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(7));
  }

  /// The carries into 8 planes, c_i = generate_i | propagate_i & c_(i-1), where lane i holds what plane
  /// i - 1 generates and propagates (moved up a plane) and lane 0 generates the carry in.
  ZCOLL_ALWAYS_INLINE static __m256i carries(__m256i generate, __m256i propagate) {
    generate = _mm256_or_si256(generate, _mm256_and_si256(propagate, planes_up<1>(generate)));
    propagate = _mm256_and_si256(propagate, planes_up<1>(propagate));
    generate = _mm256_or_si256(generate, _mm256_and_si256(propagate, planes_up<2>(generate)));
    propagate = _mm256_and_si256(propagate, planes_up<2>(propagate));
    return _mm256_or_si256(generate, _mm256_and_si256(propagate, planes_up<4>(generate)));
  }

  /// The planes of the block at `at` with `planes` planes, 8 at a time (zero past the block).
  ZCOLL_ALWAYS_INLINE static void load_planes(const std::byte* at, unsigned planes, __m256i (&out)[V]) {
    for (int v = 0; v < V; ++v) {
      const __m256i lane = _mm256_setr_epi32(8 * v, 8 * v + 1, 8 * v + 2, 8 * v + 3, 8 * v + 4, 8 * v + 5, 8 * v + 6, 8 * v + 7);
      const __m256i inside = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(planes)), lane);
      out[v] = _mm256_maskload_epi32(reinterpret_cast<const int*>(at + 5 + 32 * v), inside);
    }
  }

  /// x + (y ^ differ) + differ over 8V planes, 8 at a time, each vector's carry out into the next.
  ZCOLL_ALWAYS_INLINE static void add_planes(const __m256i (&x)[V], const __m256i (&y)[V], __m256i spread,
                                             __m256i (&sum)[V]) {
    __m256i carry_in = spread;
    for (int v = 0; v < V; ++v) {
      const __m256i flipped = _mm256_xor_si256(y[v], spread);
      const __m256i half = _mm256_xor_si256(x[v], flipped), both = _mm256_and_si256(x[v], flipped);
      const __m256i carry = carries(_mm256_blend_epi32(planes_up<1>(both), carry_in, 0x01), planes_up<1>(half));
      sum[v] = _mm256_xor_si256(half, carry);
      carry_in = top_lane(_mm256_or_si256(both, _mm256_and_si256(half, carry)));
    }
  }

  /// The sum's block at `out`; returns its size.
  ZCOLL_ALWAYS_INLINE static std::size_t add(const std::byte* a, const std::byte* b, unsigned planes_a,
                                             unsigned planes_b, std::uint32_t sign_a, std::uint32_t differ,
                                             std::byte* out) {
    const __m256i spread = _mm256_set1_epi32(static_cast<int>(differ));
    __m256i x[V], y[V], forward[V], backward[V];
    load_planes(a, planes_a, x);
    load_planes(b, planes_b, y);
    // mA - mB and mB - mA side by side (equal signs: mA + mB in both), so that neither waits for the
    // other; the lanes where the first is negative (its top plane) take the second.
    add_planes(x, y, spread, forward);
    add_planes(y, x, spread, backward);
    const __m256i negate = top_lane(forward[V - 1]);
    __m256i magnitude[V];
    __m256i any = _mm256_setzero_si256();
    unsigned zero_planes = 0;
    for (int v = 0; v < V; ++v) {
      magnitude[v] = _mm256_xor_si256(forward[v], _mm256_and_si256(_mm256_xor_si256(forward[v], backward[v]), negate));
      any = _mm256_or_si256(any, magnitude[v]);
      zero_planes |= static_cast<unsigned>(_mm256_movemask_ps(
                         _mm256_castsi256_ps(_mm256_cmpeq_epi32(magnitude[v], _mm256_setzero_si256()))))
                     << (8 * v);
    }
    // The planes used: up to the highest nonzero one; the sign only on lanes that are not 0.
    const unsigned all_planes = (1u << (8 * V)) - 1;
    const auto used = static_cast<unsigned>(32 - zcoll::countl_zero(~zero_planes & all_planes));
    __m128i lanes = _mm_or_si128(_mm256_castsi256_si128(any), _mm256_extracti128_si256(any, 1));
    lanes = _mm_or_si128(lanes, _mm_shuffle_epi32(lanes, 0x4E));
    lanes = _mm_or_si128(lanes, _mm_shuffle_epi32(lanes, 0xB1));
    const auto negative = static_cast<std::uint32_t>(_mm256_extract_epi32(negate, 0));
    const std::uint32_t sign = (sign_a ^ negative) & static_cast<std::uint32_t>(_mm_cvtsi128_si32(lanes));
    out[0] = static_cast<std::byte>(used);
    std::memcpy(out + 1, &sign, 4);
    for (int v = 0; v < V; ++v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 5 + 32 * v), magnitude[v]);
    return bitshuffle_block_bytes(used);
  }
};
#endif

#if ZCOLL_HAS_AVX512
/// bitshuffle_add_blocks with AVX-512 for blocks of at most 14 planes: all 16 planes in one vector, so the
/// carries are one Kogge-Stone scan of four steps and none passes between vectors (AVX2 needs two vectors
/// from 7 planes on, the widths of most blocks at relative 1e-4). Otherwise the AVX2 form above, lane for
/// lane: the two give the same bytes.
struct bitshuffle_avx512_sum {
  static constexpr unsigned max_planes = 14;

  // Only the zero-masking forms of the lane moves: GCC 12's unmasked ones start from an undefined vector
  // and warn (-Wmaybe-uninitialized) wherever they are inlined.

  /// Lane i gets lane (i - k) mod 16 where `kept` has bit i, 0 elsewhere.
  template <int k>
  ZCOLL_ALWAYS_INLINE static __m512i lanes_from_below(__m512i v, __mmask16 kept) {
    const __m512i from = _mm512_sub_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(k));
    return _mm512_maskz_permutexvar_epi32(kept, _mm512_and_si512(from, _mm512_set1_epi32(15)), v);
  }

  /// Lane i gets lane i - k, lanes below k get 0.
  template <int k>
  ZCOLL_ALWAYS_INLINE static __m512i planes_up(__m512i v) {
    return lanes_from_below<k>(v, static_cast<__mmask16>(0xFFFFu << k));
  }

  /// The OR of the 16 lanes.
  ZCOLL_ALWAYS_INLINE static std::uint32_t or_of_lanes(__m512i v) {
    v = _mm512_or_si512(v, lanes_from_below<8>(v, 0xFFFF));
    v = _mm512_or_si512(v, lanes_from_below<4>(v, 0xFFFF));
    v = _mm512_or_si512(v, lanes_from_below<2>(v, 0xFFFF));
    v = _mm512_or_si512(v, lanes_from_below<1>(v, 0xFFFF));
    return static_cast<std::uint32_t>(_mm512_cvtsi512_si32(v));
  }

  /// The carries into 16 planes (bitshuffle_vector_sum::carries, one step more).
  ZCOLL_ALWAYS_INLINE static __m512i carries(__m512i generate, __m512i propagate) {
    generate = _mm512_or_si512(generate, _mm512_and_si512(propagate, planes_up<1>(generate)));
    propagate = _mm512_and_si512(propagate, planes_up<1>(propagate));
    generate = _mm512_or_si512(generate, _mm512_and_si512(propagate, planes_up<2>(generate)));
    propagate = _mm512_and_si512(propagate, planes_up<2>(propagate));
    generate = _mm512_or_si512(generate, _mm512_and_si512(propagate, planes_up<4>(generate)));
    propagate = _mm512_and_si512(propagate, planes_up<4>(propagate));
    return _mm512_or_si512(generate, _mm512_and_si512(propagate, planes_up<8>(generate)));
  }

  /// x + (y ^ differ) + differ over 16 planes.
  ZCOLL_ALWAYS_INLINE static __m512i add_planes(__m512i x, __m512i y, __m512i spread) {
    const __m512i flipped = _mm512_xor_si512(y, spread);
    const __m512i half = _mm512_xor_si512(x, flipped), both = _mm512_and_si512(x, flipped);
    const __m512i generate = _mm512_mask_mov_epi32(planes_up<1>(both), 1, spread);
    return _mm512_xor_si512(half, carries(generate, planes_up<1>(half)));
  }

  /// The sum's block at `out`; returns its size.
  ZCOLL_ALWAYS_INLINE static std::size_t add(const std::byte* a, const std::byte* b, unsigned planes_a,
                                             unsigned planes_b, std::uint32_t sign_a, std::uint32_t differ,
                                             std::byte* out) {
    const __m512i spread = _mm512_set1_epi32(static_cast<int>(differ));
    // Masked loads: nothing past a block's planes is read.
    const __m512i x = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << planes_a) - 1), a + 5);
    const __m512i y = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << planes_b) - 1), b + 5);
    const __m512i forward = add_planes(x, y, spread), backward = add_planes(y, x, spread);
    const __m512i negate = _mm512_maskz_permutexvar_epi32(0xFFFF, _mm512_set1_epi32(15), forward);
    const __m512i magnitude = _mm512_xor_si512(forward, _mm512_and_si512(_mm512_xor_si512(forward, backward), negate));
    const unsigned nonzero_planes = _mm512_test_epi32_mask(magnitude, magnitude);
    const auto used = static_cast<unsigned>(32 - zcoll::countl_zero(nonzero_planes));
    const auto negative = static_cast<std::uint32_t>(_mm512_cvtsi512_si32(negate));
    const std::uint32_t sign = (sign_a ^ negative) & or_of_lanes(magnitude);
    out[0] = static_cast<std::byte>(used);
    std::memcpy(out + 1, &sign, 4);
    _mm512_storeu_si512(out + 5, magnitude);
    return bitshuffle_block_bytes(used);
  }
};
#endif

#if ZCOLL_HAS_AVX512_GFNI
/// bitshuffle_add_blocks with GFNI for blocks of at most 14 planes, where the CPU has it: instead of a
/// carry scan across the planes, each block's planes become 32 lanes of 16 bits (a byte permutation, one
/// 8x8 bit transpose a qword, a byte permutation), the lanes add as integers, and the sum's magnitudes
/// go back to planes the same way: six byte permutations and three transposes a block pair where the
/// AVX-512 scan takes 23 lane permutes (docs/performance.md, issue 19's sixth round: 1.6x the block sum).
/// Over 14 planes |a| + |b| < 2^15, so the sum fits a signed 16-bit lane. The same bytes as the other forms.
struct bitshuffle_gfni_sum {
  static constexpr unsigned max_planes = 14;

  /// The block at `block` (`planes` planes, signs `sign`) as 32 signed 16-bit lanes.
  ZCOLL_ALWAYS_INLINE static __m512i lanes_of(const std::byte* block, unsigned planes, std::uint32_t sign) {
    const __m512i magnitude = gfni_planes::magnitudes(block + 5, planes);  // reads nothing past the planes
    return _mm512_mask_sub_epi16(magnitude, sign, _mm512_setzero_si512(), magnitude);
  }

  /// The sum's block at `out`; returns its size.
  ZCOLL_ALWAYS_INLINE static std::size_t add(const std::byte* a, const std::byte* b, unsigned planes_a,
                                             unsigned planes_b, std::uint32_t sign_a, std::uint32_t sign_b,
                                             std::byte* out) {
    const __m512i sum = _mm512_add_epi16(lanes_of(a, planes_a, sign_a), lanes_of(b, planes_b, sign_b));
    const auto sign = static_cast<block_mask>(_mm512_movepi16_mask(sum));  // set on the negative lanes only
    return bitshuffle_store_gfni_block(gfni_planes::planes_of(_mm512_abs_epi16(sum)), sign, out);
  }
};
#endif

/// The sum of blocks `a` and `b` decoded, added modulo 2^32 and encoded again: for blocks too wide to add
/// on their planes without wrapping (and, with AVX2, for those wider than its vectors take: there the
/// vector decoder and encoder are faster than a ripple over 15..30 planes).
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::size_t bitshuffle_add_decoded(const std::byte* ZCOLL_RESTRICT a,
                                                                        const std::byte* ZCOLL_RESTRICT b,
                                                                        std::byte* ZCOLL_RESTRICT out) {
  alignas(32) std::uint32_t ra[block_values], rb[block_values];
  alignas(32) std::int32_t sum[block_values];
  bitshuffle_decode_block(std::to_integer<unsigned>(a[0]), a, ra);
  bitshuffle_decode_block(std::to_integer<unsigned>(b[0]), b, rb);
  for (std::size_t j = 0; j < block_values; ++j) sum[j] = static_cast<std::int32_t>(ra[j] + rb[j]);
  return bitshuffle_encode_block(sum, out);
}

/// Writes the block of the sum of the whole blocks at `a` and `b` (each at most 32 planes) at `out` (room
/// for bitshuffle_max_block_bytes) and returns its size: the bytes bitshuffle_encode_block writes for the
/// sum of their residuals, modulo 2^32 as the decoder reads them.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::size_t bitshuffle_add_blocks(const std::byte* ZCOLL_RESTRICT a,
                                                                       const std::byte* ZCOLL_RESTRICT b,
                                                                       std::byte* ZCOLL_RESTRICT out) {
  const unsigned planes_a = std::to_integer<unsigned>(a[0]), planes_b = std::to_integer<unsigned>(b[0]);
  const unsigned width = planes_a > planes_b ? planes_a : planes_b;
#if ZCOLL_HAS_AVX512_GFNI
  if (width > bitshuffle_gfni_sum::max_planes) return bitshuffle_add_decoded(a, b, out);
  const std::uint32_t sign_a = planes_a > 0 ? bitshuffle_word(a + 1) : 0u;
  const std::uint32_t sign_b = planes_b > 0 ? bitshuffle_word(b + 1) : 0u;
  return bitshuffle_gfni_sum::add(a, b, planes_a, planes_b, sign_a, sign_b, out);
#elif ZCOLL_HAS_AVX512
  // Up to 6 planes the one-vector AVX2 form is faster (a scan of three steps on half-width vectors).
  if (width > bitshuffle_avx512_sum::max_planes) return bitshuffle_add_decoded(a, b, out);
  const std::uint32_t sign_a = planes_a > 0 ? bitshuffle_word(a + 1) : 0u;
  const std::uint32_t sign_b = planes_b > 0 ? bitshuffle_word(b + 1) : 0u;
  return width <= bitshuffle_vector_sum<1>::max_planes
             ? bitshuffle_vector_sum<1>::add(a, b, planes_a, planes_b, sign_a, sign_a ^ sign_b, out)
             : bitshuffle_avx512_sum::add(a, b, planes_a, planes_b, sign_a, sign_a ^ sign_b, out);
#elif ZCOLL_HAS_AVX2
  if (width > bitshuffle_vector_sum<2>::max_planes) return bitshuffle_add_decoded(a, b, out);
  const std::uint32_t sign_a = planes_a > 0 ? bitshuffle_word(a + 1) : 0u;
  const std::uint32_t sign_b = planes_b > 0 ? bitshuffle_word(b + 1) : 0u;
  return width <= bitshuffle_vector_sum<1>::max_planes
             ? bitshuffle_vector_sum<1>::add(a, b, planes_a, planes_b, sign_a, sign_a ^ sign_b, out)
             : bitshuffle_vector_sum<2>::add(a, b, planes_a, planes_b, sign_a, sign_a ^ sign_b, out);
#else
  return width <= bitshuffle_sum_max_planes ? bitshuffle_add_blocks_by_plane(a, b, out) : bitshuffle_add_decoded(a, b, out);
#endif
}

}  // namespace zcoll::encode::detail
