#pragma once
/// Row-wise dequantization: x'_j = RN_float(code_j × S + B), as FBGEMM's dequantizers compute it; portable
/// and AVX2 paths that give the same values.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/half.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/rowwise_layout.hpp"

#if ZCOLL_HAS_AVX2 || ZCOLL_HAS_F16C
#include <immintrin.h>
#endif

namespace zcoll::quantize::detail {

// ---- dequantization ----

/// A row's scale and bias as stored, read from the bytes after its codes.
template <int Bits>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE row_scale_bias load_scale_bias(const std::byte* at) {
  row_scale_bias p;
  if constexpr (Bits == 8) {
    std::memcpy(&p.scale_bits, at, 4);
    std::memcpy(&p.bias_bits, at + 4, 4);
    p.scale = std::bit_cast<float>(p.scale_bits);
    p.bias = std::bit_cast<float>(p.bias_bits);
  } else {
    std::uint16_t scale, bias;
    std::memcpy(&scale, at, 2);
    std::memcpy(&bias, at + 2, 2);
    p.scale_bits = scale;
    p.bias_bits = bias;
    p.scale = small_float::half_to_float(scale);
    p.bias = small_float::half_to_float(bias);
  }
  return p;
}

/// Why a stored row is not one the encoder writes (the decoder's checks, codec/rowwise.hpp).
enum class stored_row_fault : std::uint8_t {
  none = 0,
  scale_not_finite_or_negative,
  bias_not_finite,
  scale_beyond_16_bits,  // 8 bits: the encoder keeps the low 8 mantissa bits of a scale zero
  dequantize_overflow,   // 8 bits: 255 x scale + max(bias, 0) exceeds FLT_MAX
  padding_bits_set,      // 4, 2 bits: unused high bits of the row's last code byte
};

inline const char* to_string(stored_row_fault fault) {
  switch (fault) {
    case stored_row_fault::none: return "none";
    case stored_row_fault::scale_not_finite_or_negative: return "the scale is not finite and >= 0";
    case stored_row_fault::bias_not_finite: return "the bias is not finite";
    case stored_row_fault::scale_beyond_16_bits: return "the scale has more than 16 significant bits (the encoder keeps code x scale exact)";
    case stored_row_fault::dequantize_overflow: return "255 x scale + bias exceeds FLT_MAX";
    case stored_row_fault::padding_bits_set: return "unused bits of the last code byte are set";
  }
  return "unknown stored row fault";
}

/// Checks a stored row's scale, bias and padding bits against what the encoder writes, on either side.
template <int Bits>
ZCOLL_HOST_DEVICE stored_row_fault check_stored_row(const std::byte* row, std::size_t dim, const row_scale_bias& sb) {
  constexpr float largest = std::numeric_limits<float>::max();
  // Compares, not std::isfinite: the same on both sides, and NaN fails every one.
  if (!(sb.scale >= 0.0f && sb.scale <= largest) || std::bit_cast<std::uint32_t>(sb.scale) >> 31 != 0) {
    return stored_row_fault::scale_not_finite_or_negative;
  }
  if (!(sb.bias >= -largest && sb.bias <= largest)) return stored_row_fault::bias_not_finite;
  if constexpr (Bits == 8) {
    if ((sb.scale_bits & 0xFFu) != 0) return stored_row_fault::scale_beyond_16_bits;
    const double bias = sb.bias;
    if (255.0 * sb.scale + (bias > 0.0 ? bias : 0.0) > largest) return stored_row_fault::dequantize_overflow;
  } else {
    const std::size_t used = dim % rowwise_layout<Bits>::codes_per_byte;
    if (used != 0) {
      const auto last = static_cast<unsigned>(row[rowwise_layout<Bits>::code_bytes(dim) - 1]);
      if ((last >> (used * Bits)) != 0) return stored_row_fault::padding_bits_set;
    }
  }
  return stored_row_fault::none;
}

/// Code j of a row's packed codes.
template <int Bits>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE unsigned code_at(const std::byte* codes, std::size_t j) {
  constexpr std::size_t per_byte = 8 / Bits;
  return (static_cast<unsigned>(codes[j / per_byte]) >> ((j % per_byte) * Bits)) & rowwise_layout<Bits>::max_code;
}

#if ZCOLL_HAS_AVX2
/// 8 float values from 8 codes (int32 lanes): code × S + B. The product is exact (f16 scale, or an 8-bit
/// scale with 16 significant bits), so whether the compiler fuses it into an FMA does not matter.
template <floating_value T>
ZCOLL_ALWAYS_INLINE void store8(__m256i codes, __m256 scale, __m256 bias, T* out) {
  const __m256 y = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(codes), scale), bias);
  if constexpr (std::is_same_v<T, float>) {
    _mm256_storeu_ps(out, y);
  } else {
    _mm256_storeu_pd(out, _mm256_cvtps_pd(_mm256_castps256_ps128(y)));
    _mm256_storeu_pd(out + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(y, 1)));
  }
}

/// 32 codes as bytes (element order) from the packed codes of 32 elements.
template <int Bits>
ZCOLL_ALWAYS_INLINE void unpack32(const std::byte* packed, __m128i& first16, __m128i& last16) {
  if constexpr (Bits == 8) {
    first16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
    last16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + 16));
  } else if constexpr (Bits == 4) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i low = _mm_and_si128(b, nibble), high = _mm_and_si128(_mm_srli_epi16(b, 4), nibble);
    first16 = _mm_unpacklo_epi8(low, high);
    last16 = _mm_unpackhi_epi8(low, high);
  } else {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
    const __m128i two = _mm_set1_epi8(0x03);
    const __m128i f0 = _mm_and_si128(b, two), f1 = _mm_and_si128(_mm_srli_epi16(b, 2), two);
    const __m128i f2 = _mm_and_si128(_mm_srli_epi16(b, 4), two), f3 = _mm_and_si128(_mm_srli_epi16(b, 6), two);
    const __m128i p01 = _mm_unpacklo_epi8(f0, f1), p23 = _mm_unpacklo_epi8(f2, f3);
    first16 = _mm_unpacklo_epi16(p01, p23);
    last16 = _mm_unpackhi_epi16(p01, p23);
  }
}
#endif

/// Dequantizes one row: out[j] = RN_float(code_j × S + B), widened to T. For an 8-bit scale with more than
/// 16 significant bits (a buffer FBGEMM wrote) the product is inexact; the value is then the fused,
/// once-rounded one (FBGEMM's AVX2 dequantizer), computed with std::fma.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE void dequantize_row(const std::byte* ZCOLL_RESTRICT row, std::size_t dim, const row_scale_bias& sb,
                                      T* ZCOLL_RESTRICT out) {
  const float scale = sb.scale, bias = sb.bias;
  if (Bits == 8 && (sb.scale_bits & 0xFFu) != 0) {
    for (std::size_t j = 0; j < dim; ++j) {
      out[j] = static_cast<T>(std::fma(static_cast<float>(code_at<Bits>(row, j)), scale, bias));
    }
    return;
  }
  std::size_t j = 0;
#if ZCOLL_HAS_AVX2
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  for (; j + 32 <= dim; j += 32) {
    __m128i first16, last16;
    unpack32<Bits>(row + j * Bits / 8, first16, last16);
    store8<T>(_mm256_cvtepu8_epi32(first16), vs, vb, out + j);
    store8<T>(_mm256_cvtepu8_epi32(_mm_srli_si128(first16, 8)), vs, vb, out + j + 8);
    store8<T>(_mm256_cvtepu8_epi32(last16), vs, vb, out + j + 16);
    store8<T>(_mm256_cvtepu8_epi32(_mm_srli_si128(last16, 8)), vs, vb, out + j + 24);
  }
#endif
  // The rest (all of the row without AVX2) a byte of codes at a time, in loops compilers vectorize.
  constexpr std::size_t per_byte = 8 / Bits;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(row);
  for (; j + per_byte <= dim; j += per_byte) {
    const unsigned byte = bytes[j / per_byte];
    for (std::size_t k = 0; k < per_byte; ++k) {
      const unsigned code = (byte >> (k * Bits)) & rowwise_layout<Bits>::max_code;
      out[j + k] = static_cast<T>(static_cast<float>(code) * scale + bias);
    }
  }
  for (; j < dim; ++j) out[j] = static_cast<T>(static_cast<float>(code_at<Bits>(row, j)) * scale + bias);
}

}  // namespace zcoll::quantize::detail
