#pragma once
/// Magnitude keys: |x| as an unsigned integer, the order every sparsifier selects by.
///
/// Clearing the sign bit of an IEEE-754 value leaves an unsigned integer that orders exactly like |x| for
/// every non-NaN value: ±0 is key 0, denormals come next, +Inf is the largest non-NaN key and every NaN
/// lies above it. Selecting on keys is exact, needs no floating-point compare (so no FTZ/DAZ mode or
/// -0.0 subtlety can change a result) and vectorizes as integer code. A radix select may take the key's
/// bits from the top, since the exponent sits above the mantissa.

#include <bit>
#include <limits>
#include <type_traits>

#include "zcoll/core/value_type.hpp"

namespace zcoll::sparsify {

/// All bits but the sign bit.
template <floating_value T>
inline constexpr bits_of<T> magnitude_bits = static_cast<bits_of<T>>(std::numeric_limits<std::make_signed_t<bits_of<T>>>::max());

/// Significant bits of a key: 31 for f32, 63 for f64.
template <floating_value T>
inline constexpr unsigned magnitude_key_width = sizeof(T) * 8 - 1;

/// The key of +Inf, the largest non-NaN key; keys above it are NaNs.
template <floating_value T>
inline constexpr bits_of<T> infinity_key = std::bit_cast<bits_of<T>>(std::numeric_limits<T>::infinity());

/// |x| as an unsigned integer with the order of |x| (NaNs above +Inf, ordered by payload).
template <floating_value T>
constexpr bits_of<T> magnitude_key(T x) {
  return std::bit_cast<bits_of<T>>(x) & magnitude_bits<T>;
}

/// The non-negative value whose key is `key`.
template <floating_value T>
constexpr T magnitude_of_key(bits_of<T> key) {
  return std::bit_cast<T>(static_cast<bits_of<T>>(key & magnitude_bits<T>));
}

}  // namespace zcoll::sparsify
