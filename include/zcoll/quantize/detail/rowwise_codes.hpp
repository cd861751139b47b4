#pragma once
/// Row-wise quantization, step 2: the codes of a row from its scale and bias (code = RNE((x - B) / S);
/// portable and AVX2 paths that give the same codes), packed into FBGEMM's layout with the scale and bias.

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
#include "zcoll/quantize/detail/rowwise_scale_bias.hpp"
#include "zcoll/quantize/rowwise_layout.hpp"

#if ZCOLL_HAS_AVX2 || ZCOLL_HAS_F16C
#include <immintrin.h>
#endif

namespace zcoll::quantize::detail {

// ---- codes ----

/// The code of x: RNE((x - B) / S) in double, clamped to [0, max_code]. The definition every path matches.
/// Since B <= x <= B + max_code S exactly, the computed quotient lies in [0, max_code (1 + 2^-51)]:
/// adding and subtracting 2^52 rounds it to the nearest integer, ties to even, as std::nearbyint does
/// under FE_TONEAREST (the rounding mode zcoll assumes), and the result is already in [0, max_code]; the
/// integer clamp only keeps that a fact. No libm call where SSE4.1 is missing, no floating-point select
/// (which keeps GCC from vectorising under -ftrapping-math): the portable loops vectorize.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::uint8_t code_of(T x, double bias, double scale) {
  constexpr double shift = 0x1p52;
  const double q = ((static_cast<double>(x) - bias) / scale + shift) - shift;
  const auto code = static_cast<std::uint32_t>(static_cast<std::int32_t>(q));
  constexpr std::uint32_t max_code = rowwise_layout<Bits>::max_code;  // a local: std::min binds a reference
  return static_cast<std::uint8_t>(std::min(code, max_code));
}

/// What the code loops of one row need.
struct code_parameters {
  double bias;
  double scale;
  float bias_f;
  float inverse_scale_f;  ///< 1 / S in float, for the float estimate (0 when the row must use double)
};

#if ZCOLL_HAS_AVX2
/// Codes of 4 doubles, exactly code_of, as 4 int32.
ZCOLL_ALWAYS_INLINE __m128i codes4_exact(__m256d x, __m256d bias, __m256d scale, __m256d max_code) {
  const __m256d q = _mm256_round_pd(_mm256_div_pd(_mm256_sub_pd(x, bias), scale),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_cvttpd_epi32(_mm256_min_pd(_mm256_max_pd(q, _mm256_setzero_pd()), max_code));
}

/// Codes of 8 values as 8 int32, exactly code_of.
template <int Bits, floating_value T>
ZCOLL_ALWAYS_INLINE __m256i codes8_exact(const T* x, const code_parameters& p) {
  const __m256d bias = _mm256_set1_pd(p.bias), scale = _mm256_set1_pd(p.scale);
  const __m256d max_code = _mm256_set1_pd(rowwise_layout<Bits>::max_code);
  __m256d a, b;
  if constexpr (std::is_same_v<T, float>) {
    const __m256 v = _mm256_loadu_ps(x);
    a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  } else {
    a = _mm256_loadu_pd(x);
    b = _mm256_loadu_pd(x + 4);
  }
  return _mm256_set_m128i(codes4_exact(b, bias, scale, max_code), codes4_exact(a, bias, scale, max_code));
}

template <int Bits>
[[gnu::noinline]] inline __m256i codes8_exact_outlined(const float* x, const code_parameters& p) {
  return codes8_exact<Bits, float>(x, p);
}

/// Codes of 8 floats as 8 int32, equal to code_of: a float estimate q = (x - B) × (1/S), within 2^-14.3 of
/// the double quotient for codes up to 255 (three roundings of 2^-24 relative each), is rounded to nearest;
/// when some lane lies within 2^-13 of a half-integer the nearest integer could differ, and the 8 lanes
/// are recomputed in double. Uniform data takes that branch for about 1 in 500 vectors.
template <int Bits>
ZCOLL_ALWAYS_INLINE __m256i codes8(const float* x, const code_parameters& p) {
  const __m256 v = _mm256_loadu_ps(x);
  const __m256 q = _mm256_mul_ps(_mm256_sub_ps(v, _mm256_set1_ps(p.bias_f)), _mm256_set1_ps(p.inverse_scale_f));
  const __m256 r = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 distance = _mm256_and_ps(_mm256_sub_ps(q, r), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
  const __m256 near_tie = _mm256_cmp_ps(distance, _mm256_set1_ps(0.5f - 0x1p-13f), _CMP_GE_OQ);
  if (_mm256_movemask_ps(near_tie) != 0) [[unlikely]] {
    return codes8_exact_outlined<Bits>(x, p);
  }
  const __m256 clamped = _mm256_min_ps(_mm256_max_ps(r, _mm256_setzero_ps()),
                                       _mm256_set1_ps(static_cast<float>(rowwise_layout<Bits>::max_code)));
  return _mm256_cvttps_epi32(clamped);
}

template <int Bits, floating_value T>
ZCOLL_ALWAYS_INLINE __m256i codes8_any(const T* x, const code_parameters& p, bool estimate) {
  if constexpr (std::is_same_v<T, float>) {
    if (estimate) return codes8<Bits>(x, p);
  }
  return codes8_exact<Bits, T>(x, p);
}
#endif

#if ZCOLL_HAS_AVX2
/// Stores 32 codes (bytes in element order) packed: 32, 16 or 8 bytes.
template <int Bits>
ZCOLL_ALWAYS_INLINE void store_packed32(__m256i codes, std::byte* out) {
  if constexpr (Bits == 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), codes);
  } else if constexpr (Bits == 4) {
    // c0 + 16 c1 per pair of bytes; the 16-bit sums narrowed to bytes; the low 8 bytes of each lane joined.
    const __m256i pairs = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(0x1001));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(pairs, pairs), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  } else {
    // c0 + 4 c1 per pair, (c0 + 4 c1) + 16 (c2 + 4 c3) per quad, narrowed twice; 4 bytes from each lane.
    const __m256i pairs = _mm256_maddubs_epi16(codes, _mm256_set1_epi16(0x0401));
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00100001));
    const __m256i words = _mm256_packus_epi32(quads, quads);
    const __m256i bytes = _mm256_packus_epi16(words, words);
    const __m256i joined = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(joined));
  }
}
#endif

/// codes[0, n) for x[0, n), n < 32 (a row's tail). `estimate`: the float estimate is valid for this row.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void compute_codes(const T* ZCOLL_RESTRICT x, std::size_t n, const code_parameters& p,
                                                         bool estimate, std::uint8_t* ZCOLL_RESTRICT codes) {
  std::size_t i = 0;
#if ZCOLL_HAS_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m256i a = codes8_any<Bits, T>(x + i, p, estimate);
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm_packus_epi16(words, words));
  }
#else
  (void)estimate;
#endif
  for (; i < n; ++i) codes[i] = code_of<Bits>(x[i], p.bias, p.scale);
}

/// Packs codes[0, n) into ceil(n × Bits / 8) bytes, element 0 in the low bits of byte 0; unused high bits
/// of the last byte are zero.
template <int Bits>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void pack_codes(const std::uint8_t* ZCOLL_RESTRICT codes, std::size_t n,
                                                      std::byte* ZCOLL_RESTRICT out) {
  if constexpr (Bits == 8) {
    std::memcpy(out, codes, n);
  } else {
    constexpr std::size_t per_byte = 8 / Bits;
    std::size_t i = 0;
#if ZCOLL_HAS_AVX2
    for (; i + 16 <= n; i += 16) {
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i));
      if constexpr (Bits == 4) {
        // c0 + 16 c1 per pair of bytes, then the 16-bit sums narrowed to bytes.
        const __m128i pairs = _mm_maddubs_epi16(c, _mm_set1_epi16(0x1001));
        const __m128i packed = _mm_packus_epi16(pairs, pairs);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i / 2), packed);
      } else {
        // c0 + 4 c1 per pair, then (c0 + 4 c1) + 16 (c2 + 4 c3) per quad.
        const __m128i pairs = _mm_maddubs_epi16(c, _mm_set1_epi16(0x0401));
        const __m128i quads = _mm_madd_epi16(pairs, _mm_set1_epi32(0x00100001));
        const __m128i words = _mm_packus_epi32(quads, quads);
        const auto packed = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(words, words)));
        std::memcpy(out + i / 4, &packed, 4);
      }
    }
#endif
    for (; i + per_byte <= n; i += per_byte) {
      unsigned byte = 0;
      for (std::size_t k = 0; k < per_byte; ++k) byte |= static_cast<unsigned>(codes[i + k]) << (k * Bits);
      out[i / per_byte] = static_cast<std::byte>(byte);
    }
    if (i < n) {
      unsigned byte = 0;
      for (std::size_t k = 0; i + k < n; ++k) byte |= static_cast<unsigned>(codes[i + k]) << (k * Bits);
      out[i / per_byte] = static_cast<std::byte>(byte);
    }
  }
}

/// Writes scale and bias after a row's codes.
template <int Bits>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void store_scale_bias(const row_scale_bias& p, std::byte* out) {
  if constexpr (Bits == 8) {
    std::memcpy(out, &p.scale_bits, 4);
    std::memcpy(out + 4, &p.bias_bits, 4);
  } else {
    const auto scale = static_cast<std::uint16_t>(p.scale_bits), bias = static_cast<std::uint16_t>(p.bias_bits);
    std::memcpy(out, &scale, 2);
    std::memcpy(out + 2, &bias, 2);
  }
}

/// Scale and bias of one row; argument_error naming the row for NaN, ±Inf or a range the layout cannot hold.
template <int Bits, floating_value T>
ZCOLL_ALWAYS_INLINE row_scale_bias scale_bias_of_row(const T* x, std::size_t dim, std::size_t row) {
  const row_extent<T> extent = extent_of_row(x, dim);
  if (!extent.finite) report_non_finite(x, dim, row);
  if constexpr (Bits == 8 && std::is_same_v<T, float>) return choose_scale_bias8(extent.lo, extent.hi, row);
#if ZCOLL_HAS_F16C
  if constexpr (Bits != 8 && std::is_same_v<T, float>) return choose_scale_bias_f16c<Bits>(extent.lo, extent.hi, row);
#endif
  return choose_scale_bias<Bits>(extent.lo, extent.hi, row);
}

/// Writes one row's codes, scale and bias (its row_bytes(dim) bytes).
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void code_row(const T* ZCOLL_RESTRICT x, std::size_t dim, const row_scale_bias& sb,
                                                    std::byte* ZCOLL_RESTRICT out) {
  using layout = rowwise_layout<Bits>;
  const std::size_t code_bytes = layout::code_bytes(dim);
  store_scale_bias<Bits>(sb, out + code_bytes);
  if (sb.scale == 0.0f) {
    std::memset(out, 0, code_bytes);
    return;
  }
  // The float estimate needs 1/S normal in float; S from f16 always is, an 8-bit S far from 1 may not be.
  const bool estimate = std::is_same_v<T, float> && sb.scale >= 0x1p-100f && sb.scale <= 0x1p100f;
  const code_parameters p{sb.bias, sb.scale, sb.bias, estimate ? 1.0f / sb.scale : 0.0f};
  std::size_t i = 0;
#if ZCOLL_HAS_AVX2
  // 32 codes: the int32 lanes of four vectors narrowed to bytes (packus interleaves the 128-bit lanes; the
  // permutation restores element order), then packed straight into the row.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (; i + 32 <= dim; i += 32) {
    const __m256i a = codes8_any<Bits, T>(x + i, p, estimate), b = codes8_any<Bits, T>(x + i + 8, p, estimate);
    const __m256i c = codes8_any<Bits, T>(x + i + 16, p, estimate), d = codes8_any<Bits, T>(x + i + 24, p, estimate);
    const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d));
    store_packed32<Bits>(_mm256_permutevar8x32_epi32(bytes, order), out + i * Bits / 8);
  }
#endif
  // The rest (all of the row without AVX2) in blocks of 32 through a scratch of codes.
  alignas(32) std::uint8_t codes[32];
  for (; i < dim; i += 32) {
    const std::size_t n = std::min<std::size_t>(32, dim - i);
    compute_codes<Bits, T>(x + i, n, p, estimate, codes);
    pack_codes<Bits>(codes, n, out + i / layout::codes_per_byte);
  }
}

/// Scale and bias of one row into `p` on either side (the portable path the host's F16C and 8-bit float
/// paths agree with); the fault when the row cannot be quantized.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE row_fault find_scale_bias(const T* x, std::size_t dim, row_scale_bias& p) {
  const row_extent<T> extent = extent_of_row(x, dim);
  if (!extent.finite) return row_fault::non_finite;
  return choose_scale_bias_of<Bits>(extent.lo, extent.hi, p);
}

/// Rows whose scale and bias are chosen before any of them is coded. The choice is a chain of dependent
/// scalar steps (min/max, f16 rounding, the exact cover test); done row after row it left the core
/// waiting on that latency (about 40 ns per row of 32); a group's chains are independent and overlap.
inline constexpr std::size_t row_group = 16;

}  // namespace zcoll::quantize::detail
