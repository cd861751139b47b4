#pragma once
/// zcoll::float16 and zcoll::bfloat16: the 16-bit values deep-learning gradients and embeddings are
/// stored in, as value types of the collectives and of the codecs' 16-bit face. A value holds the
/// format's bits; conversion from float rounds to nearest even (±Inf past the largest finite value, NaN
/// kept), conversion to float is exact. The arithmetic happens in float: a reduction widens, accumulates
/// in float and rounds once at the end.
///
///     std::vector<zcoll::bfloat16> grad = ...;   // e.g. from a torch.bfloat16 tensor's storage
///     coll.allreduce(std::span<zcoll::bfloat16>(grad), zcoll::op::sum);
///     float x = static_cast<float>(grad[0]);

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <span>

#include "zcoll/core/config.hpp"
#include "zcoll/core/half.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

namespace detail {

/// A 16-bit binary format as a value: its bits, and the conversions of core/half.hpp.
template <class Format, class Tag>
struct half_value_of {
  using format = Format;
  std::uint16_t bits = 0;

  half_value_of() = default;
  /// The nearest value of the format to `v` (ties to even).
  explicit half_value_of(float v) : bits(small_float::encode_bits<Format, float>(std::bit_cast<std::uint32_t>(v))) {}
  static half_value_of from_bits(std::uint16_t b) {
    half_value_of h;
    h.bits = b;
    return h;
  }
  /// Exact: every value of the format is a float.
  explicit operator float() const { return std::bit_cast<float>(small_float::decode_bits<Format>(bits)); }
  /// Equal bits (so NaN equals the same NaN, and -0 is not +0), as the collectives' exactness checks want.
  friend bool operator==(half_value_of a, half_value_of b) { return a.bits == b.bits; }
};

}  // namespace detail

/// IEEE 754 binary16 (torch.float16): 5 exponent bits, 10 fraction bits, largest finite 65504.
using float16 = detail::half_value_of<small_float::binary16, struct float16_tag>;
/// bfloat16 (torch.bfloat16): float's exponent range, 7 fraction bits.
using bfloat16 = detail::half_value_of<small_float::bfloat16, struct bfloat16_tag>;

/// The 16-bit value types.
template <class T>
concept half_value = std::same_as<T, float16> || std::same_as<T, bfloat16>;

/// Every value type the collectives move and reduce.
template <class T>
concept collective_value = floating_value<T> || half_value<T>;

/// The value type a collective computes in: float for the 16-bit types, T itself otherwise.
template <collective_value T>
using compute_type_of = std::conditional_t<half_value<T>, float, T>;

namespace detail {

/// A format's code widened to float (exact), on the host and on a device.
template <class Format>
ZCOLL_HOST_DEVICE constexpr float widened(std::uint16_t code) {
  return std::bit_cast<float>(small_float::decode_bits<Format>(code));
}

/// x rounded to a 16-bit format (ties to even): its code, and how far that moved it — |H(x) - x| for a
/// finite x (+Inf where a finite x overflows to ±Inf), 0 for NaN and ±Inf, which stay themselves.
struct rounded_half {
  std::uint16_t code = 0;
  double error = 0.0;
};

template <class Format>
ZCOLL_HOST_DEVICE constexpr rounded_half round_to_half(float x) {
  const auto code = static_cast<std::uint16_t>(small_float::encode_bits<Format, float>(std::bit_cast<std::uint32_t>(x)));
  const bool finite = (std::bit_cast<std::uint32_t>(x) & 0x7F800000u) != 0x7F800000u;
  const double moved = static_cast<double>(widened<Format>(code)) - static_cast<double>(x);
  return {code, finite ? (moved < 0 ? -moved : moved) : 0.0};
}

}  // namespace detail

/// values[i] widened to float.
template <half_value H>
void widen(std::span<const H> values, std::span<float> out) {
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = detail::widened<typename H::format>(values[i].bits);
}

/// values[i] rounded to H; returns the largest rounding error |H(x) - x| over finite x (+Inf when a
/// finite value overflowed to ±Inf): what the final rounding adds to a collective's bound.
template <half_value H>
double narrow(std::span<const float> values, std::span<H> out) {
  double worst = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const detail::rounded_half r = detail::round_to_half<typename H::format>(values[i]);
    out[i] = H::from_bits(r.code);
    worst = std::max(worst, r.error);
  }
  return worst;
}

}  // namespace zcoll
