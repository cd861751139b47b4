#pragma once
/// A fill value given as a number, as the data's type holds it.
///
/// Data sets mark missing points with a fill value of their own type: a NetCDF f32 field declares
/// `_FillValue = -1e34f`, which is float(-1e34) = -9.99999979e33, not the double -1e34. A user types the
/// decimal, so a configured fill value means the value of the data's type nearest to it (IEEE
/// round-to-nearest-even, what a compiler does with `-1e34f`); the stream header, and so every report,
/// states the value that was used (`codec_report::fill_value`, `zcoll-bench codec`'s notes).
///
///     zcoll::fill_bits_of<float>(-1e34);   // the bits of -9.99999979e33f
///     zcoll::fill_bits_of<float>(1e39);    // argument_error: beyond the range of f32

#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "zcoll/core/error.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

/// The bit pattern of the T nearest to `fill`. NaN stays NaN and ±Inf stay ±Inf; a finite number that
/// rounds beyond T's largest finite value is an argument_error (no value of T is near it).
template <floating_value T>
bits_of<T> fill_bits_of(double fill) {
  const T nearest = static_cast<T>(fill);
  if (std::isinf(nearest) && std::isfinite(fill)) {
    std::ostringstream message;
    message.precision(std::numeric_limits<double>::max_digits10);
    message << "fill_value " << fill << " is beyond the range of " << to_string(value_type_of<T>)
            << " (largest finite value " << static_cast<double>(std::numeric_limits<T>::max()) << ")";
    throw argument_error(message.str());
  }
  return std::bit_cast<bits_of<T>>(nearest);
}

/// The same for an optional fill value: nothing when none is declared.
template <floating_value T>
std::optional<bits_of<T>> fill_bits_of(const std::optional<double>& fill) {
  if (!fill) return std::nullopt;
  return fill_bits_of<T>(*fill);
}

/// The fill value a stream of T declares, as a double (exact: every T is a double).
template <floating_value T>
double fill_value_of(bits_of<T> bits) {
  return static_cast<double>(std::bit_cast<T>(bits));
}

}  // namespace zcoll
