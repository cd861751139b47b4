#pragma once
/// Row-wise quantization, step 1: a row's extent and the stored scale S and bias B that cover it (the
/// rules are in quantize/rowwise.hpp's header comment), portable and with F16C's directed conversions,
/// both giving the same bytes.

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

// ---- the 8-bit scale format, without F16C: one conversion per row, identical on every build (the f16
// conversions are core/half.hpp's) ----

inline constexpr std::uint32_t float_infinity_bits = 0x7F800000;

/// The f32 bits of the smallest float with at most 16 significant bits (low 8 mantissa bits zero) that is
/// >= v >= 0; the infinity bits when it exceeds FLT_MAX.
ZCOLL_HOST_DEVICE inline std::uint32_t scale16_bits_round_up(double v) {
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
ZCOLL_HOST_DEVICE inline float float_round_down(double v) {
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
ZCOLL_HOST_DEVICE inline bool covers(double b, double span, double hi) {
  const double h = b + span;
  const double v = h - b;
  const double l = (b - (h - v)) + (span - v);
  return h > hi || (h == hi && l >= 0.0);
}

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

  ZCOLL_HOST_DEVICE static float value(std::uint32_t bits) {
    if constexpr (Bits == 8) {
      return std::bit_cast<float>(bits);
    } else {
      return small_float::half_to_float(static_cast<std::uint16_t>(bits));
    }
  }
  /// The smallest scale >= v >= 0, or infinity_bits.
  ZCOLL_HOST_DEVICE static std::uint32_t scale_round_up(double v) {
    if constexpr (Bits == 8) {
      return scale16_bits_round_up(v);
    } else {
      return small_float::half_bits_toward(v, true);
    }
  }
  /// The largest bias <= v: its bits (not finite below the format's range).
  ZCOLL_HOST_DEVICE static std::uint32_t bias_round_down(double v) {
    if constexpr (Bits == 8) {
      return std::bit_cast<std::uint32_t>(float_round_down(v));
    } else {
      return small_float::half_bits_round_down(v);
    }
  }
};

/// Why a row cannot be quantized: the layout has no code for it, or its scale or bias has no stored form.
enum class row_fault : std::uint8_t {
  none = 0,
  non_finite,           // a NaN or ±Inf in the row
  bias_below_f32,       // 8 bits: the minimum is below -FLT_MAX
  bias_below_f16,       // 4, 2 bits: the minimum is below -65504
  scale_beyond_f32,     // 8 bits: (max - min) / 255 exceeds FLT_MAX
  scale_beyond_f16,     // 4, 2 bits: (max - bias) / (2^q - 1) exceeds 65504
  dequantize_overflow,  // 8 bits: 255 x scale + bias exceeds FLT_MAX
};

/// Why, in words (the argument_error the host raises, the fault the device records).
inline const char* to_string(row_fault fault) {
  switch (fault) {
    case row_fault::none: return "none";
    case row_fault::non_finite: return "it holds NaN or ±Inf, for which the layout has no code";
    case row_fault::bias_below_f32: return "its minimum is below -FLT_MAX (f32 bias)";
    case row_fault::bias_below_f16: return "its minimum is below -65504, the lowest finite f16 bias";
    case row_fault::scale_beyond_f32: return "its scale (max - min) / 255 exceeds FLT_MAX";
    case row_fault::scale_beyond_f16: return "its scale (max - bias) / (2^q - 1) exceeds 65504, the largest finite f16";
    case row_fault::dequantize_overflow: return "255 × scale + bias exceeds FLT_MAX, so dequantization would overflow";
  }
  return "unknown row fault";
}

/// S and B for a row of finite values in [lo, hi] (header comment) into `p`, on either side; the fault
/// when the stored format cannot hold them (`p` is then unusable).
template <int Bits>
ZCOLL_HOST_DEVICE row_fault choose_scale_bias_of(double lo, double hi, row_scale_bias& p) {
  using format = stored_format<Bits>;
  constexpr double max_code = rowwise_layout<Bits>::max_code;
  p = row_scale_bias{};
  p.bias_bits = format::bias_round_down(lo);
  p.bias = format::value(p.bias_bits);
  if (!(p.bias >= -std::numeric_limits<float>::max())) {  // -Inf: no finite bias at or below lo
    return Bits == 8 ? row_fault::bias_below_f32 : row_fault::bias_below_f16;
  }
  const double b = p.bias;
  if (hi == b) return row_fault::none;  // every value equals the bias: scale 0, codes 0, restored exactly
  // A candidate within a format step of the smallest covering scale; the exact test settles it.
  std::uint32_t bits = format::scale_round_up((hi - b) * (1.0 / max_code));
  while (bits < format::infinity_bits && !covers(b, max_code * format::value(bits), hi)) bits += format::step_bits;
  while (bits > 0 && covers(b, max_code * format::value(bits - format::step_bits), hi)) bits -= format::step_bits;
  if (bits >= format::infinity_bits) return Bits == 8 ? row_fault::scale_beyond_f32 : row_fault::scale_beyond_f16;
  p.scale_bits = bits;
  p.scale = format::value(bits);
  if constexpr (Bits == 8) {
    // code × S + B must stay finite in the dequantizer for every code.
    if (max_code * static_cast<double>(p.scale) + (b > 0.0 ? b : 0.0) > std::numeric_limits<float>::max()) {
      return row_fault::dequantize_overflow;
    }
  }
  return row_fault::none;
}

/// S and B for a row of finite values in [lo, hi]; argument_error naming `row` when the stored format
/// cannot hold them.
template <int Bits>
row_scale_bias choose_scale_bias(double lo, double hi, std::size_t row) {
  row_scale_bias p;
  const row_fault fault = choose_scale_bias_of<Bits>(lo, hi, p);
  if (fault != row_fault::none) throw_unrepresentable(Bits, row, lo, hi, to_string(fault));
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
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE row_extent<T> extent_of_row(const T* ZCOLL_RESTRICT x, std::size_t dim) {
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

}  // namespace zcoll::quantize::detail
