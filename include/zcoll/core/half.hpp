#pragma once
/// Small binary floating-point formats — IEEE binary16 (f16), bfloat16 and the OCP 8-bit formats — as
/// integer bit manipulations: one implementation of every conversion zcoll makes to and from them, for
/// the casts (quantize/cast.hpp, to nearest even, vectorised) and the row-wise quantizers' f16 scale and
/// bias (quantize/rowwise.hpp, rounded up or down). Integer operations only: no floating-point
/// environment (rounding mode, flush-to-zero) changes a result, on the host or the device.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "zcoll/core/config.hpp"
#include "zcoll/core/value_type.hpp"

#if ZCOLL_HAS_F16C
#include <immintrin.h>
#endif

namespace zcoll::small_float {

/// What a finite value beyond the largest finite one becomes.
enum class overflow_rule : std::uint8_t {
  infinity,  ///< IEEE: values that round beyond max finite become ±Inf; ±Inf stays ±Inf
  saturate,  ///< no infinities: finite values clamp to ±max finite; ±Inf becomes NaN (sign kept)
};

// Internals live in cast_detail, not detail: an unqualified `detail::` inside zcoll::quantize (as in

/// 2^k as a double, for the normal exponents of double.
constexpr double power_of_two(int k) { return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52); }

/// The properties every binary format derives from its field widths. The exponent bias is the IEEE one,
/// 2^(E-1) - 1. With overflow_rule::infinity the top exponent field holds ±Inf and NaN (IEEE); with
/// overflow_rule::saturate it holds normal numbers except the all-ones pattern, the only NaN (E4M3FN).
template <class Storage, int ExponentBits, int MantissaBits, overflow_rule Overflow>
struct binary_format {
  using storage = Storage;
  static constexpr int storage_bits = 8 * static_cast<int>(sizeof(Storage));
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = MantissaBits;  ///< stored fraction bits, without the implicit one
  static constexpr int exponent_bias = (1 << (ExponentBits - 1)) - 1;
  static constexpr overflow_rule overflow = Overflow;
  static constexpr bool has_infinity = Overflow == overflow_rule::infinity;
  static_assert(1 + ExponentBits + MantissaBits == storage_bits, "a format fills its storage word");

  static constexpr Storage sign_code = static_cast<Storage>(Storage{1} << (storage_bits - 1));
  static constexpr Storage magnitude_mask = static_cast<Storage>(sign_code - 1);
  static constexpr Storage mantissa_mask = static_cast<Storage>((Storage{1} << MantissaBits) - 1);
  /// Exponent field all ones, fraction zero: +Inf where the format has it.
  static constexpr Storage top_exponent_code = static_cast<Storage>(magnitude_mask & ~mantissa_mask);
  /// The largest finite magnitude: just below +Inf (IEEE), or just below the all-ones NaN (E4M3FN).
  static constexpr Storage max_finite_code =
      static_cast<Storage>(has_infinity ? top_exponent_code - 1 : magnitude_mask - 1);
  /// The NaN encode produces for a NaN without payload bits (add the sign bit for a negative one).
  static constexpr Storage quiet_nan_code =
      has_infinity ? static_cast<Storage>(top_exponent_code | (Storage{1} << (MantissaBits - 1))) : magnitude_mask;

  /// Largest unbiased exponent of a finite value.
  static constexpr int max_exponent = has_infinity ? exponent_bias : exponent_bias + 1;
  static constexpr int min_exponent = 1 - exponent_bias;  ///< of the smallest normal value
  static constexpr double max_finite =
      power_of_two(max_exponent) * (2.0 - power_of_two(has_infinity ? -MantissaBits : 1 - MantissaBits));
  static constexpr double min_normal = power_of_two(min_exponent);
  static constexpr double min_subnormal = power_of_two(min_exponent - MantissaBits);
  /// Largest |x - x'| / |x| for a normal x that does not overflow: half an ulp at the binade's start.
  static constexpr double relative_precision = power_of_two(-MantissaBits - 1);
};


/// IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits.
using binary16 = binary_format<std::uint16_t, 5, 10, overflow_rule::infinity>;
/// bfloat16: float's exponent range with 7 fraction bits.
using bfloat16 = binary_format<std::uint16_t, 8, 7, overflow_rule::infinity>;

/// v / 2^Shift rounded to nearest, ties to even (v + 2^Shift must not wrap): adding half - 1 plus the
/// would-be result's low bit carries exactly when the dropped bits exceed half, or equal it with an odd
/// result.
template <int Shift, class Bits>
ZCOLL_ALWAYS_INLINE constexpr Bits shift_round_to_even(Bits v) {
  constexpr Bits half_minus_one = (Bits{1} << (Shift - 1)) - 1;
  return static_cast<Bits>((v + half_minus_one + ((v >> Shift) & 1)) >> Shift);
}

/// The format's code for the float or double with bit pattern x. Integer operations and selects only, so
/// that a loop over it vectorises and the result does not depend on the floating-point environment.
template <class Format, floating_value T>
ZCOLL_ALWAYS_INLINE constexpr typename Format::storage encode_bits(bits_of<T> x) {
  using bits = bits_of<T>;
  using signed_bits = std::make_signed_t<bits>;
  constexpr int source_bits = 8 * static_cast<int>(sizeof(T));
  constexpr int source_mantissa_bits = std::numeric_limits<T>::digits - 1;
  constexpr int source_bias = std::numeric_limits<T>::max_exponent - 1;
  constexpr int dropped_bits = source_mantissa_bits - Format::mantissa_bits;
  constexpr int bias_difference = source_bias - Format::exponent_bias;
  static_assert(dropped_bits >= 2 && bias_difference >= 0, "encode narrows: the target is no wider than the source");

  constexpr bits sign_bit = bits{1} << (source_bits - 1);
  constexpr bits source_infinity = std::bit_cast<bits>(std::numeric_limits<T>::infinity());
  constexpr bits source_mantissa_mask = (bits{1} << source_mantissa_bits) - 1;
  const bits magnitude = x & ~sign_bit;

  // The value to round at a constant shift of dropped_bits. A normal target (biased exponent >= 1):
  // the magnitude with its exponent field rebiased in place; a carry out of the fraction moves into the
  // exponent, up to Inf, as it should.
  bits aligned = magnitude - (static_cast<bits>(bias_difference) << source_mantissa_bits);
  if constexpr (bias_difference != 0) {
    // A subnormal target: the significand with its implicit one shifted right by `excess`, so that bit
    // dropped_bits is the target's smallest subnormal. The bits shifted out are ORed into bit 0 (sticky):
    // below the round bit, they decide only ties, as they should. Shifts beyond mantissa + 1 leave just the
    // sticky bit, which rounds to 0, so clamp there. A subnormal source takes that clamp (its exponent is
    // far below the target's), which is why its significand may carry a wrong implicit one.
    // (Only variables are shifted by variable counts: GCC 12 does not vectorise a 64-bit constant
    // shifted by a vector of counts. Compares are on signed words, which AVX2 has, as magnitudes are
    // below 2^(width-1).)
    static_assert(bias_difference > source_mantissa_bits + 1, "subnormal sources round to zero in the target");
    constexpr auto min_normal_target =
        static_cast<signed_bits>(static_cast<bits>(bias_difference + 1) << source_mantissa_bits);
    const auto exponent = static_cast<signed_bits>(magnitude >> source_mantissa_bits);
    const bits significand = (magnitude & source_mantissa_mask) | (source_mantissa_mask + 1);
    const auto excess = static_cast<bits>(
        std::min<signed_bits>(std::max<signed_bits>(bias_difference + 1 - exponent, 0), source_mantissa_bits + 1));
    const bits kept = significand >> excess;
    const bits sticky = (kept << excess) != significand ? 1 : 0;
    aligned = static_cast<signed_bits>(magnitude) >= min_normal_target ? aligned : (kept | sticky);
  }
  // (With the same exponent range, float -> bf16, a subnormal source is a subnormal target with the same
  // fields: the rebiased form, with nothing to rebias, serves every value.)
  const bits rounded = shift_round_to_even<dropped_bits>(aligned);

  // Overflow: IEEE formats take Inf (the code after max finite), E4M3FN clamps to max finite.
  constexpr bits overflow_code = bits{Format::max_finite_code} + (Format::has_infinity ? 1 : 0);
  const bits finite_code =
      static_cast<signed_bits>(rounded) < static_cast<signed_bits>(overflow_code) ? rounded : overflow_code;
  bits special_code;  // for NaN (and for ±Inf in E4M3FN)
  if constexpr (Format::has_infinity) {
    special_code = bits{Format::quiet_nan_code} | ((magnitude >> dropped_bits) & bits{Format::mantissa_mask});
  } else {
    special_code = Format::quiet_nan_code;
  }
  const auto signed_magnitude = static_cast<signed_bits>(magnitude);
  constexpr auto signed_infinity = static_cast<signed_bits>(source_infinity);
  const bool special = Format::has_infinity ? signed_magnitude > signed_infinity : signed_magnitude >= signed_infinity;
  const bits sign = (x >> (source_bits - Format::storage_bits)) & bits{Format::sign_code};
  return static_cast<typename Format::storage>(sign | (special ? special_code : finite_code));
}

/// The float bit pattern of a format's code. Exact: every value of these formats is a float.
template <class Format>
ZCOLL_ALWAYS_INLINE constexpr std::uint32_t decode_bits(typename Format::storage code) {
  constexpr int widen = 23 - Format::mantissa_bits;
  constexpr std::uint32_t rebias = static_cast<std::uint32_t>(127 - Format::exponent_bias) << 23;
  const std::uint32_t c = code;
  const std::uint32_t magnitude = c & Format::magnitude_mask;
  if constexpr (Format::exponent_bias == 127) {
    // bf16 is float's top half (its subnormals are float subnormals): widen, and quiet a NaN.
    return (c << 16) | (magnitude > Format::top_exponent_code ? 0x00400000u : 0u);
  } else {
    const std::uint32_t mantissa = c & Format::mantissa_mask;
    const std::uint32_t sign = (c >> (Format::storage_bits - 1)) << 31;
    const std::uint32_t normal = (magnitude << widen) + rebias;  // the fields move, the exponent is rebiased
    // A subnormal code m is m x min_subnormal, a normal float: its exponent is that of m's leading one,
    // found with compares (integer operations only: they vectorise, and no floating-point environment,
    // flush-to-zero included, can change the result). A fold rather than a loop (GCC leaves a 9-step loop
    // rolled at -O2, and the outer loop scalar), and "x != 0" as the top bit of x + 0x7FFFFFFF (x < 2^31),
    // which GCC does not turn into a branch chain.
    const std::uint32_t leading_one = [mantissa]<int... k>(std::integer_sequence<int, k...>) {
      return (0u + ... + (((mantissa >> (k + 1)) + 0x7FFFFFFFu) >> 31));
    }
    (std::make_integer_sequence<int, Format::mantissa_bits - 1>{});
    constexpr auto unit_exponent = static_cast<std::uint32_t>(127 + Format::min_exponent - Format::mantissa_bits);
    const std::uint32_t normalised =
        ((unit_exponent + leading_one) << 23) | ((mantissa << (23 - leading_one)) & 0x007FFFFFu);
    const std::uint32_t subnormal = mantissa != 0 ? normalised : 0u;
    const std::uint32_t value = magnitude <= Format::mantissa_mask ? subnormal : normal;
    bool special;
    std::uint32_t special_value;
    if constexpr (Format::has_infinity) {
      special = magnitude >= Format::top_exponent_code;
      special_value = 0x7F800000u | (mantissa << widen) | (mantissa != 0 ? 0x00400000u : 0u);  // NaNs quieted
    } else {
      special = magnitude == Format::magnitude_mask;
      special_value = 0x7FC00000u;
    }
    return sign | (special ? special_value : value);
  }
}

// ---- f16 rounded up or down (the row-wise quantizers' scale and bias), and widened ----

inline constexpr std::uint16_t half_infinity_bits = 0x7C00;

/// floor(log2 v) for a positive normal double; -1023 for subnormals (callers clamp it).
ZCOLL_HOST_DEVICE inline int binary_exponent(double v) {
  return static_cast<int>((std::bit_cast<std::uint64_t>(v) >> 52) & 0x7FF) - 1023;
}

/// k rounded up (up) or down to an integer, for 0 <= k < 2^52. (A signed conversion: one instruction,
/// where an unsigned one needs a branch without AVX-512.)
ZCOLL_HOST_DEVICE inline std::uint64_t round_integral(double k, bool up) {
  const auto t = static_cast<std::int64_t>(k);
  return static_cast<std::uint64_t>(t + (up && static_cast<double>(t) < k ? 1 : 0));
}

/// The f16 bits of v >= 0 rounded up or down to f16; rounding up past 65504 gives the infinity bits.
ZCOLL_HOST_DEVICE inline std::uint16_t half_bits_toward(double v, bool up) {
  if (v == 0.0) return 0;
  const int e = binary_exponent(v);
  if (e > 15) return up ? half_infinity_bits : static_cast<std::uint16_t>(half_infinity_bits - 1);
  // Within binade E the f16 spacing is 2^(E - 10); below 2^-14 it stays 2^-24 (subnormals). The bits are
  // then ((E + 14) << 10) + k with k in [0, 2^11], continuous across binades.
  const int binade = std::max(e, -14);
  const std::uint64_t k = round_integral(v * power_of_two(10 - binade), up);
  return static_cast<std::uint16_t>((static_cast<std::uint64_t>(binade + 14) << 10) + k);
}

/// The largest f16 <= v (finite v); -Inf bits (0xFC00) below -65504. Zero is +0.
ZCOLL_HOST_DEVICE inline std::uint16_t half_bits_round_down(double v) {
  if (v >= 0.0) return half_bits_toward(v, false);
  return static_cast<std::uint16_t>(0x8000u | half_bits_toward(-v, true));
}

/// The float an f16 code is (exact; a NaN keeps its payload). Scalar and branchy, for the row-wise
/// dequantizer's two conversions a row, where the common normal code takes three operations: measured
/// there, decode_bits' branch-free fold (made for vectorised loops) cost Int4 decompression about 5 % on
/// f32 rows, and F16C's vcvtph2ps about 15 % on f64 rows.
ZCOLL_HOST_DEVICE inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  std::uint32_t magnitude;
  if (exponent == 0) {
    magnitude = std::bit_cast<std::uint32_t>(static_cast<float>(mantissa) * 0x1p-24f);  // subnormal, exact
  } else if (exponent == 0x1F) {
    magnitude = 0x7F800000u | (mantissa << 13);
  } else {
    magnitude = ((exponent + 112) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(sign | magnitude);
}

#if ZCOLL_HAS_F16C
/// F16C's conversions, for the row-wise quantizers' F16C path (rounding a row's bias and scale to f16 and
/// back, beside the other vector work of the row), where they are faster than the integer forms and
/// give the same bits: v rounded to f16 in the direction Rounding (_MM_FROUND_TO_NEG_INF / POS_INF), and
/// an f16 code widened.
template <int Rounding>
ZCOLL_ALWAYS_INLINE std::uint16_t half_bits_f16c(float v) {
  return static_cast<std::uint16_t>(_mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(v), Rounding | _MM_FROUND_NO_EXC)));
}
ZCOLL_ALWAYS_INLINE float half_to_float_f16c(std::uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }
#endif

}  // namespace zcoll::small_float
