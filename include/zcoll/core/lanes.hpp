#pragma once
/// The 32-value block every stage works on, and the lane-mask primitives of its bit-plane math.
///
/// A block mask has bit j set for lane j. These primitives are the whole vector vocabulary of the host
/// codecs; each has a vector form and a portable loop, chosen at compile time (core/config.hpp), and all
/// forms give identical results: AVX2 for the bit tests and set_bit_in_lanes, AVX-512 masked stores for
/// set_lanes and copy_lanes (without AVX-512 they loop over the mask's bits).

#include <bit>
#include <cstddef>
#include <cstdint>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/value_type.hpp"

#if ZCOLL_HAS_AVX2 || ZCOLL_HAS_AVX512
#include <immintrin.h>
#endif

namespace zcoll {

/// Values per block: the unit of sign bits, bit planes and exception masks (fZ-light / cuSZp layout).
inline constexpr std::size_t block_values = 32;

/// `values` rounded up to whole blocks: the room of a chunk whose last block is partial.
ZCOLL_HOST_DEVICE constexpr std::size_t padded_to_blocks(std::size_t values) {
  return (values + block_values - 1) / block_values * block_values;
}

/// One bit per lane of a block.
using block_mask = std::uint32_t;

/// Lanes j with bit `bit` of v[j] set.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE block_mask lanes_with_bit(const std::uint32_t* v, unsigned bit) {
#if ZCOLL_HAS_AVX2
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(31 - bit));
  block_mask m = 0;
  for (int k = 0; k < 4; ++k) {
    const __m256i x = _mm256_sll_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * k)), shift);
    m |= static_cast<block_mask>(_mm256_movemask_ps(_mm256_castsi256_ps(x))) << (8 * k);
  }
  return m;
#else
  block_mask m = 0;
  for (unsigned j = 0; j < block_values; ++j) m |= ((v[j] >> bit) & 1u) << j;
  return m;
#endif
}

/// Lanes j with v[j] != 0.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE block_mask lanes_nonzero(const std::uint32_t* v) {
#if ZCOLL_HAS_AVX2
  block_mask zero = 0;
  for (int k = 0; k < 4; ++k) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * k));
    const __m256i z = _mm256_cmpeq_epi32(x, _mm256_setzero_si256());
    zero |= static_cast<block_mask>(_mm256_movemask_ps(_mm256_castsi256_ps(z))) << (8 * k);
  }
  return ~zero;
#else
  block_mask m = 0;
  for (unsigned j = 0; j < block_values; ++j) m |= static_cast<block_mask>(v[j] != 0) << j;
  return m;
#endif
}

/// Lanes j whose value v[j] has the bit pattern `bits` (a declared fill value's lanes: a bit compare,
/// so a NaN fill value matches itself). Reads all 32 values.
template <floating_value T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE block_mask lanes_with_bits(const T* v, bits_of<T> bits) {
  alignas(64) std::uint32_t equal[block_values];
  for (std::size_t j = 0; j < block_values; ++j) equal[j] = std::bit_cast<bits_of<T>>(v[j]) == bits ? 1u : 0u;
  return lanes_nonzero(equal);
}

/// v[j] |= 1 << bit for the lanes j in `lanes`.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void set_bit_in_lanes(std::uint32_t* v, block_mask lanes, unsigned bit) {
#if ZCOLL_HAS_AVX2
  const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i b = _mm256_set1_epi32(static_cast<int>(1u << bit));
  for (int k = 0; k < 4; ++k) {
    const __m256i m = _mm256_set1_epi32(static_cast<int>((lanes >> (8 * k)) & 0xFF));
    const __m256i on = _mm256_cmpeq_epi32(_mm256_and_si256(m, select), select);
    auto* p = reinterpret_cast<__m256i*>(v + 8 * k);
    _mm256_storeu_si256(p, _mm256_or_si256(_mm256_loadu_si256(p), _mm256_and_si256(on, b)));
  }
#else
  for (unsigned j = 0; j < block_values; ++j) v[j] |= ((lanes >> j) & 1u) << bit;
#endif
}

/// v[j] = value for the lanes j in `lanes`; the other lanes are neither read nor written (a last block's
/// lanes past the data may lie outside it).
template <floating_value T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void set_lanes(T* v, block_mask lanes, T value) {
#if ZCOLL_HAS_AVX512
  // Masked stores: a masked-off lane is not touched, so none can fault.
  if constexpr (sizeof(T) == 4) {
    const __m512 x = _mm512_set1_ps(value);
    for (int k = 0; k < 2; ++k) _mm512_mask_storeu_ps(v + 16 * k, static_cast<__mmask16>(lanes >> (16 * k)), x);
  } else {
    const __m512d x = _mm512_set1_pd(value);
    for (int k = 0; k < 4; ++k) _mm512_mask_storeu_pd(v + 8 * k, static_cast<__mmask8>(lanes >> (8 * k)), x);
  }
#else
  for (block_mask rest = lanes; rest != 0; rest &= rest - 1) v[zcoll::countr_zero(rest)] = value;
#endif
}

/// to[j] = from[j] for the lanes j in `lanes`; the other lanes of neither are read or written.
template <floating_value T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void copy_lanes(T* to, block_mask lanes, const T* from) {
#if ZCOLL_HAS_AVX512
  if constexpr (sizeof(T) == 4) {
    for (int k = 0; k < 2; ++k) {
      const auto m = static_cast<__mmask16>(lanes >> (16 * k));
      _mm512_mask_storeu_ps(to + 16 * k, m, _mm512_maskz_loadu_ps(m, from + 16 * k));
    }
  } else {
    for (int k = 0; k < 4; ++k) {
      const auto m = static_cast<__mmask8>(lanes >> (8 * k));
      _mm512_mask_storeu_pd(to + 8 * k, m, _mm512_maskz_loadu_pd(m, from + 8 * k));
    }
  }
#else
  for (block_mask rest = lanes; rest != 0; rest &= rest - 1) {
    const auto j = static_cast<unsigned>(zcoll::countr_zero(rest));
    to[j] = from[j];
  }
#endif
}

}  // namespace zcoll
