#pragma once
/// Value conversions between float/double and the low-precision formats of mixed-precision training:
/// IEEE binary16 (fp16), bfloat16 (bf16) and the two OCP 8-bit formats (fp8_e4m3, fp8_e5m2). They are the
/// "low precision" baseline of the DLRM compression paper (FP16, FP8: a fixed 2x or 4x, no error control).
///
///     const std::uint16_t h = zcoll::quantize::encode<zcoll::quantize::fp16>(0.1);  // 0x2E66
///     const float back = zcoll::quantize::decode<zcoll::quantize::fp16>(h);         // 0.0999755859375f
///     zcoll::quantize::encode<zcoll::quantize::bf16>(values, codes);                 // spans, vectorised
///     zcoll::quantize::encode_bytes<zcoll::quantize::fp8_e4m3>(values, body);        // little-endian bytes
///
/// Rounding is to nearest, ties to even, straight from the source type: a double is rounded once to the
/// target's precision (never through float, which would round twice). Subnormal sources and targets are
/// exact, signed zeros keep their sign, and NaN becomes a quiet NaN of the same sign that keeps the top
/// payload bits (as x86 conversions do). What a finite value beyond the largest finite one becomes, and
/// what ±Inf becomes, is the format's overflow_rule:
///
/// | format   | S.E.F  | max finite | relative precision | finite overflow | ±Inf becomes   | NaN codes        |
/// |----------|--------|-----------:|-------------------:|-----------------|----------------|------------------|
/// | fp16     | 1.5.10 | 65504      | 2^-11              | ±Inf (IEEE)     | ±Inf           | E all ones, F≠0  |
/// | bf16     | 1.8.7  | ≈3.39e38   | 2^-8               | ±Inf (IEEE)     | ±Inf           | E all ones, F≠0  |
/// | fp8_e4m3 | 1.4.3  | 448        | 2^-4               | saturates: ±448 | NaN, sign kept | S.1111.111 only  |
/// | fp8_e5m2 | 1.5.2  | 57344      | 2^-3               | ±Inf (IEEE)     | ±Inf           | E all ones, F≠0  |
///
/// E4M3 is the OCP "E4M3FN" format: no infinities, exponent 1111 holds normal numbers up to 448, and
/// S.1111.111 is its only NaN. A finite value that overflows saturates to ±448 (as NVIDIA's
/// __NV_SATFINITE and ONNX's saturate mode do), because a value that was finite stays finite and the
/// error is bounded by |x| - 448. ±Inf, however, becomes NaN of the same sign (as PyTorch's float8_e4m3fn
/// and OCP's non-saturating mode do, unlike __NV_SATFINITE which gives ±448): a non-finite value must stay
/// non-finite after communication, or an overflow check after an allreduce of gradients (a loss scaler's
/// "found inf") would see a plausible 448 and miss the overflow.
///
/// Relative precision is half the spacing of the values in a binade, relative to the binade's start: the
/// largest |x - x'| / |x| for normal x that does not overflow.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/half.hpp"
#include "zcoll/core/value_type.hpp"

#if ZCOLL_HAS_F16C
#include <immintrin.h>
#endif

namespace zcoll::quantize {

// The formats of the casts, by name; their conversions are core/half.hpp's.

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits.
struct fp16 : small_float::binary16 {
  static constexpr const char* name = "fp16";
};
/// bfloat16: float's exponent range with 7 fraction bits.
struct bf16 : small_float::bfloat16 {
  static constexpr const char* name = "bf16";
};
/// OCP FP8 E4M3 ("E4M3FN"): no infinities, max finite 448, NaN = S.1111.111; finite overflow saturates.
struct fp8_e4m3 : small_float::binary_format<std::uint8_t, 4, 3, small_float::overflow_rule::saturate> {
  static constexpr const char* name = "fp8-e4m3";
};
/// OCP FP8 E5M2: IEEE-like (binary16 with 2 fraction bits).
struct fp8_e5m2 : small_float::binary_format<std::uint8_t, 5, 2, small_float::overflow_rule::infinity> {
  static constexpr const char* name = "fp8-e5m2";
};

static_assert(fp16::max_finite == 65504.0 && fp16::min_normal == 0x1p-14 && fp16::min_subnormal == 0x1p-24);
static_assert(bf16::max_finite == 0x1.FEp127 && bf16::min_normal == 0x1p-126 && bf16::min_subnormal == 0x1p-133);
static_assert(fp8_e4m3::max_finite == 448.0 && fp8_e4m3::min_normal == 0x1p-6 && fp8_e4m3::min_subnormal == 0x1p-9);
static_assert(fp8_e5m2::max_finite == 57344.0 && fp8_e5m2::min_normal == 0x1p-14 && fp8_e5m2::min_subnormal == 0x1p-16);
static_assert(fp16::max_finite_code == 0x7BFF && fp16::quiet_nan_code == 0x7E00 && bf16::quiet_nan_code == 0x7FC0);
static_assert(fp8_e4m3::max_finite_code == 0x7E && fp8_e4m3::quiet_nan_code == 0x7F);
static_assert(fp8_e5m2::max_finite_code == 0x7B && fp8_e5m2::quiet_nan_code == 0x7E);

// Internals live in cast_detail, not detail: an unqualified `detail::` inside zcoll::quantize (as in
// quantize/linear.hpp, meaning zcoll::detail) would otherwise find this namespace first.
namespace cast_detail {

/// Values per step of the bulk loops: a fixed trip count is what GCC vectorises at -O2 (its very-cheap
/// cost model leaves a loop of unknown length scalar), 32 values = four AVX2 vectors of f32.
inline constexpr std::size_t bulk_lanes = 32;

// The bulk loops read and write codes as little-endian bytes of any alignment, through memcpy (which
// compiles to plain loads and stores, and vectorises): so they serve typed spans of codes and stream
// bodies alike, without aliasing or alignment trouble.
static_assert(std::endian::native == std::endian::little,
              "codes are stored little-endian: a big-endian port must swap");

template <class Format>
ZCOLL_ALWAYS_INLINE void store_code(std::byte* out, std::size_t i, typename Format::storage code) {
  std::memcpy(out + i * sizeof(code), &code, sizeof(code));
}

template <class Format>
ZCOLL_ALWAYS_INLINE typename Format::storage load_code(const std::byte* in, std::size_t i) {
  typename Format::storage code;
  std::memcpy(&code, in + i * sizeof(code), sizeof(code));
  return code;
}

/// Bulk forms of the scalar conversions: fixed-length loops the compiler vectorises, then the tail.
template <class Format, floating_value T>
void encode_portable(const T* ZCOLL_RESTRICT in, std::byte* ZCOLL_RESTRICT out, std::size_t count) {
  const auto encoded = [](T x) { return small_float::encode_bits<Format, T>(std::bit_cast<bits_of<T>>(x)); };
  std::size_t i = 0;
  for (; i + bulk_lanes <= count; i += bulk_lanes) {
    for (std::size_t j = 0; j < bulk_lanes; ++j) store_code<Format>(out, i + j, encoded(in[i + j]));
  }
  const std::size_t rest = count - i;  // (a tail loop on i itself draws a false GCC 12 overflow warning)
  for (std::size_t j = 0; j < rest; ++j) store_code<Format>(out, i + j, encoded(in[i + j]));
}

/// Every 8-bit code's float bit pattern: a 1 KiB table, L1-resident. Looking a code up is about 3x faster
/// than computing it (a 16-bit table would be 256 KiB: 16-bit codes are computed, or F16C-converted).
template <class Format>
inline constexpr auto decode_table = [] {
  std::array<std::uint32_t, 256> table{};
  for (unsigned code = 0; code < 256; ++code) {
    table[code] = small_float::decode_bits<Format>(static_cast<typename Format::storage>(code));
  }
  return table;
}();

template <class Format, floating_value T>
void decode_portable(const std::byte* ZCOLL_RESTRICT in, T* ZCOLL_RESTRICT out, std::size_t count) {
  if constexpr (Format::storage_bits == 8) {
    const auto& table = decode_table<Format>;
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = static_cast<T>(std::bit_cast<float>(table[load_code<Format>(in, i)]));
    }
  } else {
    const auto decoded = [](typename Format::storage code) {
      return static_cast<T>(std::bit_cast<float>(small_float::decode_bits<Format>(code)));
    };
    std::size_t i = 0;
    for (; i + bulk_lanes <= count; i += bulk_lanes) {
      for (std::size_t j = 0; j < bulk_lanes; ++j) out[i + j] = decoded(load_code<Format>(in, i + j));
    }
    const std::size_t rest = count - i;
    for (std::size_t j = 0; j < rest; ++j) out[i + j] = decoded(load_code<Format>(in, i + j));
  }
}

#if ZCOLL_HAS_F16C
/// float -> fp16 with F16C: vcvtps2ph with an immediate round-to-nearest-even mode gives the portable
/// loop's bits for every input (NaNs included: quieted, top payload bits kept), whatever MXCSR says.
inline void encode_fp16_f16c(const float* in, std::byte* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i codes = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), codes);
  }
  encode_portable<fp16, float>(in + i, out + 2 * i, count - i);
}

/// Eight floats -> eight FP8 codes (in 16-bit lanes, sign at bit 7) through F16C, 2-3x faster than the
/// portable integer path. Both FP8 formats have fewer bits than fp16 and a range inside it, so:
/// - x is first truncated to fp16 (round toward zero, an immediate mode: MXCSR does not matter), with a
///   sticky bit ORed into bit 0 when that was inexact (converting back differs). Rounding that to the
///   FP8 precision, to nearest even, is then exact rounding of x: the sticky bit lies below the round bit
///   (fp16 keeps 7 or 8 more bits), so it can only break ties, as the discarded bits should. Finite
///   values beyond fp16 truncate to 65504 + sticky, which still overflows both FP8 formats.
/// - E5M2 has fp16's exponent range: its code is the rounded top byte of that fp16 code, subnormals too.
/// - E4M3 normals rebias the exponent by 15 - 7. E4M3 subnormals (|x| < 2^-6) are fp16 normals, so they
///   take another route: x * 2^-15 (exact: a power of two, and no result that matters is subnormal)
///   rounded to nearest even by vcvtps2ph is an fp16 subnormal whose code is round(x * 2^9) = the E4M3
///   subnormal code, 8 = min normal included.
/// The tests compare this with the portable loop over every float of the binades where the rounding
/// regime changes (and a hidden test over all 2^32 floats).
template <class Format>
ZCOLL_ALWAYS_INLINE __m128i fp8_codes_f16c(__m256 x) {
  const __m128i truncated = _mm256_cvtps_ph(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  // (AVX and SSE4.1 operations only: F16C implies those, not AVX2.)
  const __m256i exact = _mm256_castps_si256(_mm256_cmp_ps(_mm256_cvtph_ps(truncated), x, _CMP_EQ_OQ));
  const __m128i exact16 = _mm_packs_epi32(_mm256_castsi256_si128(exact), _mm256_extractf128_si256(exact, 1));
  const __m128i truncated_magnitude = _mm_and_si128(truncated, _mm_set1_epi16(0x7FFF));
  const __m128i magnitude = _mm_or_si128(truncated_magnitude, _mm_andnot_si128(exact16, _mm_set1_epi16(1)));
  const __m128i sign = _mm_srli_epi16(_mm_and_si128(truncated, _mm_set1_epi16(static_cast<short>(0x8000))), 8);
  // Inf and NaN: fp16 exponent all ones (finite values truncate to at most 65504).
  const __m128i special = _mm_cmpgt_epi16(truncated_magnitude, _mm_set1_epi16(Format::has_infinity ? 0x7C00 : 0x7BFF));
  __m128i code, special_code;
  if constexpr (std::is_same_v<Format, fp8_e5m2>) {
    // Round off the low 8 bits: v + 0x7F + (bit 8) carries when they exceed half, or equal it with bit 8 set.
    const __m128i lsb = _mm_and_si128(_mm_srli_epi16(magnitude, 8), _mm_set1_epi16(1));
    code = _mm_srli_epi16(_mm_add_epi16(_mm_add_epi16(magnitude, _mm_set1_epi16(0x7F)), lsb), 8);
    // NaN: quiet, with the top payload bit.
    special_code = _mm_or_si128(_mm_srli_epi16(truncated_magnitude, 8), _mm_set1_epi16(0x02));
  } else {
    static_assert(std::is_same_v<Format, fp8_e4m3>, "fp8_codes_f16c: Format is fp8_e4m3 or fp8_e5m2");
    const __m128i rebased = _mm_sub_epi16(magnitude, _mm_set1_epi16((15 - 7) << 10));
    const __m128i lsb = _mm_and_si128(_mm_srli_epi16(rebased, 7), _mm_set1_epi16(1));
    const __m128i normal =
        _mm_min_epu16(_mm_srli_epi16(_mm_add_epi16(_mm_add_epi16(rebased, _mm_set1_epi16(0x3F)), lsb), 7),
                      _mm_set1_epi16(Format::max_finite_code));  // saturation
    const __m128i scaled =
        _mm256_cvtps_ph(_mm256_mul_ps(x, _mm256_set1_ps(0x1p-15f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i subnormal = _mm_and_si128(scaled, _mm_set1_epi16(0x7FFF));
    const __m128i is_subnormal = _mm_cmplt_epi16(truncated_magnitude, _mm_set1_epi16(0x2400));  // |x| < 2^-6
    code = _mm_blendv_epi8(normal, subnormal, is_subnormal);
    special_code = _mm_set1_epi16(Format::quiet_nan_code);  // ±Inf and NaN: NaN (sign kept)
  }
  return _mm_or_si128(sign, _mm_blendv_epi8(code, special_code, special));
}

/// float -> E4M3 / E5M2 with F16C (see fp8_codes_f16c): the portable loop's bits, 16 values a step.
template <class Format>
void encode_fp8_f16c(const float* in, std::byte* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m128i low = fp8_codes_f16c<Format>(_mm256_loadu_ps(in + i));
    const __m128i high = fp8_codes_f16c<Format>(_mm256_loadu_ps(in + i + 8));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(low, high));
  }
  encode_portable<Format, float>(in + i, out + i, count - i);
}

/// fp16 -> float with F16C (exact; signaling NaNs are quieted, as by the portable loop).
inline void decode_fp16_f16c(const std::byte* in, float* out, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i))));
  }
  decode_portable<fp16, float>(in + 2 * i, out + i, count - i);
}
#endif

/// float or double values -> codes as bytes, by the fastest path compiled in: F16C for float -> fp16,
/// E4M3 and E5M2 where the compiler targets it, the portable loops otherwise (the bits are the same).
template <class Format, floating_value T>
void encode_values(const T* in, std::byte* out, std::size_t count) {
#if ZCOLL_HAS_F16C
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Format, fp16>) {
    encode_fp16_f16c(in, out, count);
    return;
  } else if constexpr (std::is_same_v<T, float> &&
                       (std::is_same_v<Format, fp8_e4m3> || std::is_same_v<Format, fp8_e5m2>)) {
    encode_fp8_f16c<Format>(in, out, count);
    return;
  }
#endif
  encode_portable<Format, T>(in, out, count);
}

template <class Format, floating_value T>
void decode_values(const std::byte* in, T* out, std::size_t count) {
#if ZCOLL_HAS_F16C
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Format, fp16>) {
    decode_fp16_f16c(in, out, count);
    return;
  }
#endif
  decode_portable<Format, T>(in, out, count);
}

/// Throws argument_error unless `values` values have exactly their `size` codes (or code bytes: `unit`).
inline void check_sizes(const char* function, std::size_t values, std::size_t size, std::size_t per_value,
                        const char* unit) {
  if (values * per_value != size) {
    throw argument_error(std::string(function) + ": " + std::to_string(values) + " values need " +
                         std::to_string(values * per_value) + " " + unit + ", the span of " + unit + " has " +
                         std::to_string(size));
  }
}

}  // namespace cast_detail

/// The format's code nearest to x (ties to even); overflow, ±Inf and NaN as the format's table above says.
template <class Format>
constexpr typename Format::storage encode(float x) {
  return small_float::encode_bits<Format, float>(std::bit_cast<std::uint32_t>(x));
}
/// Rounded once, directly from double: not the same as encode(float(x)) when float(x) is a tie.
template <class Format>
constexpr typename Format::storage encode(double x) {
  return small_float::encode_bits<Format, double>(std::bit_cast<std::uint64_t>(x));
}

/// The value of a code, exactly (widen to double with a cast: that is exact too).
template <class Format>
constexpr float decode(typename Format::storage code) {
  return std::bit_cast<float>(small_float::decode_bits<Format>(code));
}

/// Encodes every value of `in` into `out` (of the same size); vectorised, and through F16C for float ->
/// fp16, E4M3 and E5M2 where the compiler targets it (the bits are the same either way).
template <class Format>
void encode(std::span<const float> in, std::span<typename Format::storage> out) {
  cast_detail::check_sizes("encode", in.size(), out.size(), 1, "codes");
  cast_detail::encode_values<Format>(in.data(), reinterpret_cast<std::byte*>(out.data()), in.size());
}
template <class Format>
void encode(std::span<const double> in, std::span<typename Format::storage> out) {
  cast_detail::check_sizes("encode", in.size(), out.size(), 1, "codes");
  cast_detail::encode_values<Format>(in.data(), reinterpret_cast<std::byte*>(out.data()), in.size());
}

/// Decodes every code of `in` into `out` (of the same size).
template <class Format>
void decode(std::span<const typename Format::storage> in, std::span<float> out) {
  cast_detail::check_sizes("decode", out.size(), in.size(), 1, "codes");
  cast_detail::decode_values<Format>(reinterpret_cast<const std::byte*>(in.data()), out.data(), out.size());
}
template <class Format>
void decode(std::span<const typename Format::storage> in, std::span<double> out) {
  cast_detail::check_sizes("decode", out.size(), in.size(), 1, "codes");
  cast_detail::decode_values<Format>(reinterpret_cast<const std::byte*>(in.data()), out.data(), out.size());
}

/// Encodes every value of `in` into `out` as little-endian codes, sizeof(storage) bytes each, at any
/// alignment: the body of a stream.
///
///     std::vector<std::byte> body(values.size() * sizeof(zcoll::quantize::fp16::storage));
///     zcoll::quantize::encode_bytes<zcoll::quantize::fp16>(values, body);
template <class Format>
void encode_bytes(std::span<const float> in, std::span<std::byte> out) {
  cast_detail::check_sizes("encode_bytes", in.size(), out.size(), sizeof(typename Format::storage), "bytes");
  cast_detail::encode_values<Format>(in.data(), out.data(), in.size());
}
template <class Format>
void encode_bytes(std::span<const double> in, std::span<std::byte> out) {
  cast_detail::check_sizes("encode_bytes", in.size(), out.size(), sizeof(typename Format::storage), "bytes");
  cast_detail::encode_values<Format>(in.data(), out.data(), in.size());
}

/// Decodes the little-endian codes of `in` (sizeof(storage) bytes each, any alignment) into `out`.
template <class Format>
void decode_bytes(std::span<const std::byte> in, std::span<float> out) {
  cast_detail::check_sizes("decode_bytes", out.size(), in.size(), sizeof(typename Format::storage), "bytes");
  cast_detail::decode_values<Format>(in.data(), out.data(), out.size());
}
template <class Format>
void decode_bytes(std::span<const std::byte> in, std::span<double> out) {
  cast_detail::check_sizes("decode_bytes", out.size(), in.size(), sizeof(typename Format::storage), "bytes");
  cast_detail::decode_values<Format>(in.data(), out.data(), out.size());
}

/// rounding_error_bound for a largest_magnitude that is not NaN, on either side: the CUDA cast driver
/// (codec/cast.cuh) writes its stream headers with it on the device, so both sides state the same bound.
template <class Format, floating_value T>
ZCOLL_HOST_DEVICE constexpr double rounding_error_bound_of_magnitude(T largest_magnitude) {
  using bits = bits_of<T>;
  const T magnitude = std::bit_cast<T>(static_cast<bits>(std::bit_cast<bits>(largest_magnitude) & ~(bits{1} << (8 * sizeof(T) - 1))));
  const double m = static_cast<double>(magnitude);
  if (m == 0.0) return 0.0;
  if (Format::has_infinity &&
      small_float::encode_bits<Format, T>(std::bit_cast<bits>(magnitude)) == Format::max_finite_code + 1) {
    return std::numeric_limits<double>::infinity();
  }
  double bound = Format::min_subnormal / 2;
  if (m >= Format::min_normal) {
    // floor(log2 m) from the exponent field (m is a normal double here), capped at the format's top binade.
    const int exponent = static_cast<int>((std::bit_cast<std::uint64_t>(m) >> 52) & 0x7FF) - 1023;
    const int top = Format::max_exponent;  // a local: std::min's reference to the member is not device code
    bound = small_float::power_of_two(std::min(exponent, top) - Format::mantissa_bits - 1);
  }
  if (!Format::has_infinity && m > Format::max_finite) {
    // Saturated values are off by |x| - max finite: round that difference up (TwoSum gives its error).
    const double a = m, b = -Format::max_finite;
    const double difference = a + b;  // > 0: m exceeds max finite
    const double b_part = difference - a;
    const double error = (a - (difference - b_part)) + (b - b_part);  // (m - max) - difference, exactly
    const double saturation =
        error > 0.0 ? std::bit_cast<double>(std::bit_cast<std::uint64_t>(difference) + 1) : difference;  // next up
    bound = std::max(bound, saturation);
  }
  return std::min(bound, m);
}

/// An upper bound on |x - decode(encode(x))| that holds for every finite x with |x| <= largest_magnitude:
/// +Inf when such an x overflows to Inf; else half the spacing of the format's values in the binade of
/// largest_magnitude (half the subnormal spacing below the normal range), or, for E4M3 saturation, the
/// saturation error largest_magnitude - 448 rounded up if that is larger; and never more than
/// largest_magnitude itself (nearest rounding is never farther away than zero is).
template <class Format, floating_value T>
double rounding_error_bound(T largest_magnitude) {
  if (std::isnan(largest_magnitude)) {
    throw argument_error("rounding_error_bound: largest_magnitude is NaN; expected a magnitude >= 0");
  }
  return rounding_error_bound_of_magnitude<Format>(largest_magnitude);
}

}  // namespace zcoll::quantize
