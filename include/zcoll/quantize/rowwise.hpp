#pragma once
/// Row-wise min-max integer quantization to 8, 4 or 2 bits (the DLRM quantized-collectives paper, §3.1),
/// written in FBGEMM's fused row-wise layout so buffers interoperate with FBGEMM and TorchRec's quantized
/// comms.
///
///     std::vector<std::byte> fused(rows * zcoll::quantize::rowwise_layout<4>::row_bytes(dim));
///     const double bound = zcoll::quantize::quantize_rows<4>(std::span<const float>(values), dim, fused);
///     zcoll::quantize::dequantize_rows<4>(std::span<const std::byte>(fused), dim, std::span<float>(restored));
///
/// Layout (FBGEMM's FloatToFused8BitRowwiseQuantizedSBFloat / FloatToFusedNBitRowwiseQuantizedSBHalf and
/// their dequantizers Fused8BitRowwiseQuantizedSBFloatToFloat / FusedNBitRowwiseQuantizedSBHalfToFloat),
/// rows back to back, no header, little-endian:
///
/// | Bits | per row                                                                       | row bytes          |
/// |-----:|-------------------------------------------------------------------------------|--------------------|
/// |    8 | dim u8 codes, then scale (f32), bias (f32)                                    | dim + 8            |
/// |  4,2 | ceil(dim × Bits / 8) bytes of packed codes, then scale (f16), bias (f16)      | ceil(dim×Bits/8)+4 |
///
/// Packed codes: element j sits in byte j / (8 / Bits) at bit (j % (8 / Bits)) × Bits, element 0 in the
/// low bits of byte 0, as FBGEMM packs them; the unused high bits of a row's last byte are zero. Element j
/// decodes to x'_j = code_j × scale + bias in float, as FBGEMM's dequantizers compute it.
///
/// The codes follow the paper: s = (max - min) / (2^q - 1), z = -min / s, code = rndint(x / s + z) with
/// ties to even, clamped to [0, 2^q - 1]. Because the decoder sees the stored scale S and bias B, not s
/// and min, the codes are computed from them: code = RNE((x - B) / S), which is x / S + z with z = -B / S
/// evaluated as one quotient (x - B and the quotient in double), so exact ties stay ties.
///
/// S and B are chosen so that [B, B + (2^q - 1) S] covers the row: B is the largest stored-format value
/// (f16 for 4 and 2 bits, f32 for 8 bits) <= min, S the smallest stored-format value with
/// B + (2^q - 1) S >= max exactly. The 8-bit scale is an f32 with at most 16 significant bits, so that
/// code × S (8 + 16 bits) is exact in float: FBGEMM's reference (multiply, then add) and AVX2 (FMA)
/// dequantizers then give the same, once-rounded value. A row whose values all equal B gets S = 0 and
/// codes 0, and is restored exactly (FBGEMM's constant-row scale 0 for 8 bits).
///
/// The bound (row_error_bound): every value of a row is within
///     e(S, B) = S/2 + 2^-42 S + 2^-24 max(|B|, |B + (2^q - 1) S|) + 2^-149   (rounded up; 0 when S = 0)
/// of its restored value: S/2 is the rounding to the nearest code in exact arithmetic; 2^-42 S covers
/// computing (x - B) / S in double; 2^-24 max(...) + 2^-149 is the float rounding of code × S + B in the
/// dequantizer (half an ulp of the result, or half the subnormal spacing). quantize_rows returns the largest
/// e over the rows.
///
/// Not representable, raising argument_error that names the row: NaN or ±Inf anywhere in a row; for 4 and
/// 2 bits a minimum below -65504 (no finite f16 bias <= it) or a row whose scale would exceed 65504 (the
/// largest finite f16); for 8 bits a minimum below -FLT_MAX (double input) or a scale with
/// (2^8 - 1) S + max(B, 0) > FLT_MAX (the dequantizer would overflow). Range computations are in double.

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

#if ZCOLL_HAS_AVX2 || ZCOLL_HAS_F16C
#include <immintrin.h>
#endif

namespace zcoll::quantize {

/// Byte sizes of FBGEMM's fused row-wise layout for `Bits`-bit codes.
template <int Bits>
struct rowwise_layout {
  static_assert(Bits == 8 || Bits == 4 || Bits == 2,
                "rowwise_layout<Bits>: Bits must be 8, 4 or 2 (FBGEMM's fused row-wise bit rates)");
  static constexpr int bits = Bits;
  /// Largest code, 2^Bits - 1.
  static constexpr std::uint32_t max_code = (1u << Bits) - 1;
  /// Codes per byte.
  static constexpr std::size_t codes_per_byte = 8 / Bits;
  /// Scale and bias after the codes: two f32 for 8 bits, two f16 below.
  static constexpr std::size_t scale_bias_bytes = Bits == 8 ? 8 : 4;

  /// Bytes of a row's codes: ceil(dim × Bits / 8).
  static constexpr std::size_t code_bytes(std::size_t dim) {
    return dim / codes_per_byte + (dim % codes_per_byte != 0 ? 1 : 0);
  }
  /// Bytes of one row: codes, then scale and bias (FBGEMM's output_columns).
  static constexpr std::size_t row_bytes(std::size_t dim) { return code_bytes(dim) + scale_bias_bytes; }
  /// Bytes of `rows` rows; argument_error when that does not fit in size_t.
  static std::size_t fused_bytes(std::size_t rows, std::size_t dim) {
    const std::size_t per_row = row_bytes(dim);
    if (dim > std::numeric_limits<std::size_t>::max() - scale_bias_bytes ||
        (rows != 0 && per_row > std::numeric_limits<std::size_t>::max() / rows)) {
      throw argument_error("rowwise_layout: " + std::to_string(rows) + " rows of dim " + std::to_string(dim) +
                           " exceed the addressable size");
    }
    return rows * per_row;
  }
};

/// A row's stored scale and bias, as the dequantizer reads them (f16 widened to float for 4 and 2 bits).
struct rowwise_parameters {
  float scale = 0.0f;
  float bias = 0.0f;
};

/// e(S, B) of the header comment: the bound every value of a row quantized by quantize_rows to scale S and
/// bias B is within, after FBGEMM's (or dequantize_rows') float dequantization. 0 for S = 0, which
/// quantize_rows writes only for rows whose every value equals B.
template <int Bits>
double row_error_bound(float scale, float bias) {
  if (scale == 0.0f) return 0.0;
  const double s = scale, b = bias;
  const double top = b + s * rowwise_layout<Bits>::max_code;  // s × max_code is exact in double
  const double largest = std::max(std::abs(b), std::abs(top));
  const double e = 0.5 * s + 0x1p-42 * s + 0x1p-24 * largest + 0x1p-149;
  // Three roundings above lose at most 2^-51 relative; adding 2^-50 e rounds the sum up past the exact value.
  return e + 0x1p-50 * e;
}

namespace detail {

// ---- the 8-bit scale format, without F16C: one conversion per row, identical on every build (the f16
// conversions are core/half.hpp's) ----

inline constexpr std::uint32_t float_infinity_bits = 0x7F800000;

/// The f32 bits of the smallest float with at most 16 significant bits (low 8 mantissa bits zero) that is
/// >= v >= 0; the infinity bits when it exceeds FLT_MAX.
inline std::uint32_t scale16_bits_round_up(double v) {
  if (v == 0.0) return 0;
  const int e = small_float::binary_exponent(v);
  if (e > 127) return float_infinity_bits;
  // Spacing 2^(E - 15) in binade E, 2^-141 below 2^-126: bits ((E + 126) << 23) + (k << 8), k in [0, 2^16].
  const int binade = std::max(e, -126);
  const std::uint64_t k = small_float::round_integral(v * small_float::power_of_two(15 - binade), true);
  const std::uint64_t bits = (static_cast<std::uint64_t>(binade + 126) << 23) + (k << 8);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(bits, float_infinity_bits));
}

/// The largest float <= v (finite v), or -Inf below -FLT_MAX. Zero is +0.
inline float float_round_down(double v) {
  constexpr double largest = std::numeric_limits<float>::max();
  if (v < -largest) return -std::numeric_limits<float>::infinity();
  if (v > largest) return std::numeric_limits<float>::max();
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) {
    const auto bits = std::bit_cast<std::uint32_t>(f);
    f = f > 0.0f ? std::bit_cast<float>(bits - 1)
                 : (f == 0.0f ? -std::numeric_limits<float>::denorm_min() : std::bit_cast<float>(bits + 1));
  }
  return f == 0.0f ? 0.0f : f;
}

/// b + span >= hi exactly (no overflow in double): TwoSum gives b + span = h + l exactly, and a rounded h
/// above (below) hi puts the exact sum above (below) it too.
inline bool covers(double b, double span, double hi) {
  const double h = b + span;
  const double v = h - b;
  const double l = (b - (h - v)) + (span - v);
  return h > hi || (h == hi && l >= 0.0);
}

/// The stored form of a row's scale and bias: `scale_bits`/`bias_bits` as written (f16 in the low 16 bits
/// for 4 and 2 bits), `scale`/`bias` as the dequantizer reads them.
struct row_scale_bias {
  std::uint32_t scale_bits = 0;
  std::uint32_t bias_bits = 0;
  float scale = 0.0f;
  float bias = 0.0f;
};

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_unrepresentable(int bits, std::size_t row, double lo,
                                                                         double hi, const char* why) {
  throw argument_error("quantize_rows: row " + std::to_string(row) + " spans [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "], which the " + std::to_string(bits) + "-bit fused row-wise layout " +
                       "cannot hold: " + why);
}

/// The stored formats of scale and bias: f32 (scale with 16 significant bits) for 8 bits, f16 below.
/// Positive stored values are ordered like their bits, so the next larger scale is bits + step_bits.
template <int Bits>
struct stored_format {
  static constexpr std::uint32_t infinity_bits = Bits == 8 ? float_infinity_bits : small_float::half_infinity_bits;
  static constexpr std::uint32_t step_bits = Bits == 8 ? 256 : 1;

  static float value(std::uint32_t bits) {
    if constexpr (Bits == 8) {
      return std::bit_cast<float>(bits);
    } else {
      return small_float::half_to_float(static_cast<std::uint16_t>(bits));
    }
  }
  /// The smallest scale >= v >= 0, or infinity_bits.
  static std::uint32_t scale_round_up(double v) {
    if constexpr (Bits == 8) {
      return scale16_bits_round_up(v);
    } else {
      return small_float::half_bits_toward(v, true);
    }
  }
  /// The largest bias <= v: its bits (not finite below the format's range).
  static std::uint32_t bias_round_down(double v) {
    if constexpr (Bits == 8) {
      return std::bit_cast<std::uint32_t>(float_round_down(v));
    } else {
      return small_float::half_bits_round_down(v);
    }
  }
};

/// S and B for a row of finite values in [lo, hi] (header comment); argument_error naming `row` when the
/// stored format cannot hold them.
template <int Bits>
row_scale_bias choose_scale_bias(double lo, double hi, std::size_t row) {
  using format = stored_format<Bits>;
  constexpr double max_code = rowwise_layout<Bits>::max_code;
  row_scale_bias p;
  p.bias_bits = format::bias_round_down(lo);
  p.bias = format::value(p.bias_bits);
  if (!std::isfinite(p.bias)) {
    throw_unrepresentable(Bits, row, lo, hi,
                          Bits == 8 ? "its minimum is below -FLT_MAX (f32 bias)"
                                    : "its minimum is below -65504, the lowest finite f16 bias");
  }
  const double b = p.bias;
  if (hi == b) return p;  // every value equals the bias: scale 0, codes 0, restored exactly
  // A candidate within a format step of the smallest covering scale; the exact test settles it.
  std::uint32_t bits = format::scale_round_up((hi - b) * (1.0 / max_code));
  while (bits < format::infinity_bits && !covers(b, max_code * format::value(bits), hi)) bits += format::step_bits;
  while (bits > 0 && covers(b, max_code * format::value(bits - format::step_bits), hi)) bits -= format::step_bits;
  if (bits >= format::infinity_bits) {
    throw_unrepresentable(Bits, row, lo, hi,
                          Bits == 8 ? "its scale (max - min) / 255 exceeds FLT_MAX"
                                    : "its scale (max - bias) / (2^q - 1) exceeds 65504, the largest finite f16");
  }
  p.scale_bits = bits;
  p.scale = format::value(bits);
  if constexpr (Bits == 8) {
    // code × S + B must stay finite in the dequantizer for every code.
    if (max_code * static_cast<double>(p.scale) + std::max(b, 0.0) > std::numeric_limits<float>::max()) {
      throw_unrepresentable(Bits, row, lo, hi, "255 × scale + bias exceeds FLT_MAX, so dequantization would overflow");
    }
  }
  return p;
}

#if ZCOLL_HAS_F16C
/// choose_scale_bias<Bits> for 4 and 2 bits and a float row, with F16C's directed conversions: B rounds lo
/// down to f16 in one instruction and S rounds (hi - B) / (2^q - 1), computed in float (within 2^-22 of
/// the exact quotient, so within one f16 step of the answer), up. In double, B + (2^q - 1) S is exact for
/// f16 values, so the same cover test as choose_scale_bias proves S and not S - 1 step covers; rows where
/// it does not (or with an f16 overflow) go to choose_scale_bias, and both give the same bytes.

template <int Bits>
ZCOLL_ALWAYS_INLINE row_scale_bias choose_scale_bias_f16c(float lo, float hi, std::size_t row) {
  constexpr double max_code = rowwise_layout<Bits>::max_code;
  std::uint16_t bias_bits = small_float::half_bits_f16c<_MM_FROUND_TO_NEG_INF>(lo);
  if (bias_bits == 0x8000) bias_bits = 0;  // -0 rounds to +0, as half_bits_round_down gives
  const float bias = small_float::half_to_float_f16c(bias_bits);
  const std::uint16_t scale_bits =
      small_float::half_bits_f16c<_MM_FROUND_TO_POS_INF>((hi - bias) * (1.0f / static_cast<float>(max_code)));
  const double b = bias, h = hi;
  const double scale = small_float::half_to_float_f16c(scale_bits);
  const double smaller =
      scale_bits == 0 ? -1.0 : static_cast<double>(small_float::half_to_float_f16c(static_cast<std::uint16_t>(scale_bits - 1)));
  const bool finite = (bias_bits & 0x7C00) != 0x7C00 && scale_bits < small_float::half_infinity_bits;
  if (finite && b + max_code * scale >= h && !(b + max_code * smaller >= h)) [[likely]] {
    return {scale_bits, bias_bits, static_cast<float>(scale), bias};
  }
  return choose_scale_bias<Bits>(lo, hi, row);
}
#endif

/// choose_scale_bias<8> for a float row: B = lo exactly, and the candidate S rounds (hi - B) / 255, in
/// double, up to float and then up to 16 significant bits with integer steps on its bits (no exponent
/// arithmetic). The cover test proves it as in choose_scale_bias; other rows go there (same bytes).
ZCOLL_ALWAYS_INLINE row_scale_bias choose_scale_bias8(float lo, float hi, std::size_t row) {
  constexpr double max_code = 255.0;
  const float bias = lo == 0.0f ? 0.0f : lo;  // -0 becomes +0, as float_round_down gives
  const double b = bias, h = hi;
  const double t = (h - b) * (1.0 / max_code);  // <= 2 FLT_MAX / 255: no overflow in float
  const float rounded = static_cast<float>(t);
  std::uint32_t bits = std::bit_cast<std::uint32_t>(rounded) + (static_cast<double>(rounded) < t ? 1u : 0u);
  bits = (bits + 255u) & ~255u;
  const double scale = std::bit_cast<float>(bits);
  const double smaller = bits == 0 ? -1.0 : static_cast<double>(std::bit_cast<float>(bits - 256));
  if (bits < float_infinity_bits && covers(b, max_code * scale, h) && !covers(b, max_code * smaller, h) &&
      max_code * scale + std::max(b, 0.0) <= std::numeric_limits<float>::max()) [[likely]] {
    return {bits, std::bit_cast<std::uint32_t>(bias), static_cast<float>(scale), bias};
  }
  return choose_scale_bias<8>(lo, hi, row);
}

// ---- the row extent ----

/// Min and max of a row; `finite` is false when a NaN or ±Inf is present (min and max are then unusable).
template <floating_value T>
struct row_extent {
  T lo;
  T hi;
  bool finite;
};

template <floating_value T>
ZCOLL_ALWAYS_INLINE row_extent<T> extent_of_row(const T* ZCOLL_RESTRICT x, std::size_t dim) {
  std::size_t i = 0;
  T lo = x[0], hi = x[0];
  bool finite = true;
#if ZCOLL_HAS_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (dim >= 8) {
      const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
      const __m256 largest = _mm256_set1_ps(std::numeric_limits<float>::max());
      __m256 vlo = _mm256_loadu_ps(x), vhi = vlo, bad = _mm256_setzero_ps();
      for (; i + 8 <= dim; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        vlo = _mm256_min_ps(vlo, v);
        vhi = _mm256_max_ps(vhi, v);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(v, magnitude), largest, _CMP_NLE_UQ));
      }
      __m128 l = _mm_min_ps(_mm256_castps256_ps128(vlo), _mm256_extractf128_ps(vlo, 1));
      __m128 h = _mm_max_ps(_mm256_castps256_ps128(vhi), _mm256_extractf128_ps(vhi, 1));
      l = _mm_min_ps(l, _mm_movehl_ps(l, l));
      h = _mm_max_ps(h, _mm_movehl_ps(h, h));
      l = _mm_min_ss(l, _mm_shuffle_ps(l, l, 1));
      h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
      lo = _mm_cvtss_f32(l);
      hi = _mm_cvtss_f32(h);
      finite = _mm256_movemask_ps(bad) == 0;
    }
  } else {
    if (dim >= 4) {
      const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
      const __m256d largest = _mm256_set1_pd(std::numeric_limits<double>::max());
      __m256d vlo = _mm256_loadu_pd(x), vhi = vlo, bad = _mm256_setzero_pd();
      for (; i + 4 <= dim; i += 4) {
        const __m256d v = _mm256_loadu_pd(x + i);
        vlo = _mm256_min_pd(vlo, v);
        vhi = _mm256_max_pd(vhi, v);
        bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_and_pd(v, magnitude), largest, _CMP_NLE_UQ));
      }
      __m128d l = _mm_min_pd(_mm256_castpd256_pd128(vlo), _mm256_extractf128_pd(vlo, 1));
      __m128d h = _mm_max_pd(_mm256_castpd256_pd128(vhi), _mm256_extractf128_pd(vhi, 1));
      l = _mm_min_sd(l, _mm_unpackhi_pd(l, l));
      h = _mm_max_sd(h, _mm_unpackhi_pd(h, h));
      lo = _mm_cvtsd_f64(l);
      hi = _mm_cvtsd_f64(h);
      finite = _mm256_movemask_pd(bad) == 0;
    }
  }
#endif
  for (; i < dim; ++i) {
    const T v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    finite = finite && std::abs(v) <= std::numeric_limits<T>::max();
  }
  return {lo, hi, finite};
}

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_non_finite(std::size_t row, std::size_t column,
                                                                    double value) {
  throw argument_error("quantize_rows: row " + std::to_string(row) + ", column " + std::to_string(column) +
                       " holds " + std::to_string(value) +
                       "; the fused row-wise layout has no code for NaN or ±Inf (only finite rows can be quantized)");
}

template <floating_value T>
[[noreturn]] void report_non_finite(const T* x, std::size_t dim, std::size_t row) {
  for (std::size_t j = 0; j < dim; ++j) {
    if (!std::isfinite(x[j])) throw_non_finite(row, j, static_cast<double>(x[j]));
  }
  throw_non_finite(row, 0, static_cast<double>(x[0]));  // not reached: the caller saw a non-finite value
}

// ---- codes ----

/// The code of x: RNE((x - B) / S) in double, clamped to [0, max_code]. The definition every path matches.
/// Since B <= x <= B + max_code S exactly, the computed quotient lies in [0, max_code (1 + 2^-51)]:
/// adding and subtracting 2^52 rounds it to the nearest integer, ties to even, as std::nearbyint does
/// under FE_TONEAREST (the rounding mode zcoll assumes), and the result is already in [0, max_code]; the
/// integer clamp only keeps that a fact. No libm call where SSE4.1 is missing, no floating-point select
/// (which keeps GCC from vectorising under -ftrapping-math): the portable loops vectorize.
template <int Bits, floating_value T>
ZCOLL_ALWAYS_INLINE std::uint8_t code_of(T x, double bias, double scale) {
  constexpr double shift = 0x1p52;
  const double q = ((static_cast<double>(x) - bias) / scale + shift) - shift;
  const auto code = static_cast<std::uint32_t>(static_cast<std::int32_t>(q));
  return static_cast<std::uint8_t>(std::min(code, rowwise_layout<Bits>::max_code));
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
ZCOLL_ALWAYS_INLINE void compute_codes(const T* ZCOLL_RESTRICT x, std::size_t n, const code_parameters& p,
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
ZCOLL_ALWAYS_INLINE void pack_codes(const std::uint8_t* ZCOLL_RESTRICT codes, std::size_t n,
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
ZCOLL_ALWAYS_INLINE void store_scale_bias(const row_scale_bias& p, std::byte* out) {
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
ZCOLL_ALWAYS_INLINE void code_row(const T* ZCOLL_RESTRICT x, std::size_t dim, const row_scale_bias& sb,
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

/// Rows whose scale and bias are chosen before any of them is coded. The choice is a chain of dependent
/// scalar steps (min/max, f16 rounding, the exact cover test); done row after row it left the core
/// waiting on that latency (about 40 ns per row of 32); a group's chains are independent and overlap.
inline constexpr std::size_t row_group = 16;

// ---- dequantization ----

/// A row's scale and bias as stored, read from the bytes after its codes.
template <int Bits>
ZCOLL_ALWAYS_INLINE row_scale_bias load_scale_bias(const std::byte* at) {
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

/// Code j of a row's packed codes.
template <int Bits>
ZCOLL_ALWAYS_INLINE unsigned code_at(const std::byte* codes, std::size_t j) {
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
void dequantize_row(const std::byte* ZCOLL_RESTRICT row, std::size_t dim, const row_scale_bias& sb,
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

/// Quantizes rows [first, end) of `values` (rows of dim) into their places in `fused`; returns the largest
/// row bound. Row indices in error messages are absolute; rows are checked in order, so the first
/// offending row is the one reported.
template <int Bits, floating_value T>
double quantize_row_range(const T* values, std::size_t dim, std::size_t first, std::size_t end, std::byte* fused) {
  const std::size_t row_bytes = rowwise_layout<Bits>::row_bytes(dim);
  double largest = 0.0;
  row_scale_bias group[row_group];
  for (std::size_t g = first; g < end; g += row_group) {
    const std::size_t n = std::min(row_group, end - g);
    for (std::size_t i = 0; i < n; ++i) group[i] = scale_bias_of_row<Bits, T>(values + (g + i) * dim, dim, g + i);
    for (std::size_t i = 0; i < n; ++i) {
      code_row<Bits, T>(values + (g + i) * dim, dim, group[i], fused + (g + i) * row_bytes);
      largest = std::max(largest, row_error_bound<Bits>(group[i].scale, group[i].bias));
    }
  }
  return largest;
}

/// Dequantizes rows [first, end) of `fused` into their places in `out`.
template <int Bits, floating_value T>
void dequantize_row_range(const std::byte* fused, std::size_t dim, std::size_t first, std::size_t end, T* out) {
  const std::size_t row_bytes = rowwise_layout<Bits>::row_bytes(dim);
  const std::size_t code_bytes = rowwise_layout<Bits>::code_bytes(dim);
  for (std::size_t r = first; r < end; ++r) {
    const std::byte* row = fused + r * row_bytes;
    dequantize_row<Bits, T>(row, dim, load_scale_bias<Bits>(row + code_bytes), out + r * dim);
  }
}

template <int Bits>
void check_dim(const char* function, std::size_t dim, std::size_t count) {
  if (dim == 0) throw argument_error(std::string(function) + ": dim 0; a row holds at least one value");
  if (count % dim != 0) {
    throw argument_error(std::string(function) + ": " + std::to_string(count) + " values are not a whole number of rows of dim " +
                         std::to_string(dim));
  }
  if (dim > std::numeric_limits<std::size_t>::max() / 16) {
    throw argument_error(std::string(function) + ": dim " + std::to_string(dim) + " is too large");
  }
}

}  // namespace detail

/// Quantizes rows values[r × dim, (r + 1) × dim) into `fused` (at least rowwise_layout<Bits>::fused_bytes
/// bytes; exactly those are written) in FBGEMM's fused layout, one row after another; returns the largest
/// row bound e(S, B) (0 for no rows). argument_error for dim 0, a count that is not a multiple of dim, too
/// small an output, or a row the layout cannot hold (NaN/±Inf, ranges beyond f16 or f32: header comment);
/// rows before the offending one may be written then, nothing past the output ever is.
///
///     const double bound = zcoll::quantize::quantize_rows<8>(std::span<const float>(x), 64, fused);
template <int Bits, floating_value T>
double quantize_rows(std::span<const T> values, std::size_t dim, std::span<std::byte> fused) {
  using layout = rowwise_layout<Bits>;
  detail::check_dim<Bits>("quantize_rows", dim, values.size());
  const std::size_t rows = values.size() / dim;
  const std::size_t needed = layout::fused_bytes(rows, dim);
  if (fused.size() < needed) {
    throw argument_error("quantize_rows: fused has " + std::to_string(fused.size()) + " bytes, " +
                         std::to_string(rows) + " rows of dim " + std::to_string(dim) + " need " +
                         std::to_string(needed));
  }
  return detail::quantize_row_range<Bits, T>(values.data(), dim, 0, rows, fused.data());
}

/// Dequantizes FBGEMM fused rows (exactly fused_bytes(out.size() / dim, dim) bytes) into `out`:
/// out[r × dim + j] = code × scale + bias rounded once to float (header comment), widened to T. Any bytes
/// decode without reading or writing outside the spans; whether they are a valid stream is the codec's
/// check (codec/rowwise.hpp).
template <int Bits, floating_value T>
void dequantize_rows(std::span<const std::byte> fused, std::size_t dim, std::span<T> out) {
  using layout = rowwise_layout<Bits>;
  detail::check_dim<Bits>("dequantize_rows", dim, out.size());
  const std::size_t rows = out.size() / dim;
  const std::size_t needed = layout::fused_bytes(rows, dim);
  if (fused.size() != needed) {
    throw argument_error("dequantize_rows: fused has " + std::to_string(fused.size()) + " bytes, " +
                         std::to_string(rows) + " rows of dim " + std::to_string(dim) + " are " +
                         std::to_string(needed));
  }
  detail::dequantize_row_range<Bits, T>(fused.data(), dim, 0, rows, out.data());
}

/// Scale and bias of row `row` of a fused buffer, as the dequantizer reads them.
template <int Bits>
rowwise_parameters row_parameters(std::span<const std::byte> fused, std::size_t dim, std::size_t row) {
  using layout = rowwise_layout<Bits>;
  if (dim == 0 || row >= fused.size() / layout::row_bytes(dim)) {
    throw argument_error("row_parameters: row " + std::to_string(row) + " is not in a buffer of " +
                         std::to_string(fused.size()) + " bytes with rows of dim " + std::to_string(dim));
  }
  const auto p = detail::load_scale_bias<Bits>(fused.data() + row * layout::row_bytes(dim) + layout::code_bytes(dim));
  return {p.scale, p.bias};
}

}  // namespace zcoll::quantize
