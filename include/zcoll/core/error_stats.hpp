#pragma once
/// How far a reconstruction is from the original: the exact bound check, max error, PSNR, NRMSE.

#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include "zcoll/core/error.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

/// |x - y| <= bound in exact arithmetic. The difference is computed in double with its rounding error
/// recovered (TwoSum: x - y = s + e exactly), so the answer is exact for f32 and f64 alike. A bound of
/// +inf (a stream that states none, like a cast after an overflow) holds for every pair but NaN and
/// infinities of the same sign, whose difference is NaN.
template <floating_value T>
bool exactly_within(T x, T y, double bound) {
  const double a = x, b = -static_cast<double>(y);
  const double s = a + b;
  const double bv = s - a;
  const double e = (a - (s - bv)) + (b - bv);
  const double m = std::abs(s);
  if (bound == std::numeric_limits<double>::infinity()) return !std::isnan(s);  // no bound: any difference but NaN
  if (m < bound) return true;
  if (!(m == bound)) return false;  // larger, or NaN / overflow
  return e == 0.0 || std::signbit(e) != std::signbit(s);
}

/// Error of a reconstruction over the values a bound applies to (finite, not the fill value); the
/// others must come back bit for bit.
struct error_stats {
  std::size_t compared_values = 0;   ///< finite, non-fill originals
  std::size_t exact_mismatches = 0;  ///< NaN, ±Inf or fill originals not restored bit for bit
  std::size_t bound_violations = 0;  ///< compared values with |x - x'| > bound, exactly
  double max_abs_error = 0.0;
  double value_range = 0.0;          ///< max - min of the compared originals
  double mse = 0.0;
  double psnr_db = std::numeric_limits<double>::infinity();
  double nrmse = 0.0;

  bool bound_held() const { return exact_mismatches == 0 && bound_violations == 0; }
};

template <floating_value T>
error_stats measure_error(std::span<const T> original, std::span<const T> reconstructed, double bound,
                          std::optional<bits_of<T>> fill_bits = std::nullopt) {
  if (original.size() != reconstructed.size()) {
    throw argument_error("measure_error: reconstructed has " + std::to_string(reconstructed.size()) +
                         " values, original " + std::to_string(original.size()));
  }
  error_stats stats;
  double lowest = std::numeric_limits<double>::infinity(), highest = -lowest, squared = 0.0;
  for (std::size_t i = 0; i < original.size(); ++i) {
    const T x = original[i], y = reconstructed[i];
    const bool is_fill = fill_bits && std::bit_cast<bits_of<T>>(x) == *fill_bits;
    if (!std::isfinite(x) || is_fill) {
      stats.exact_mismatches += std::bit_cast<bits_of<T>>(x) != std::bit_cast<bits_of<T>>(y);
      continue;
    }
    ++stats.compared_values;
    const double error = std::abs(static_cast<double>(x) - static_cast<double>(y));
    stats.bound_violations += !exactly_within(x, y, bound);
    stats.max_abs_error = std::isnan(error) ? error : std::max(stats.max_abs_error, error);
    squared += error * error;
    lowest = std::min<double>(lowest, x);
    highest = std::max<double>(highest, x);
  }
  if (stats.compared_values > 0) {
    stats.value_range = highest - lowest;
    stats.mse = squared / static_cast<double>(stats.compared_values);
    const double rmse = std::sqrt(stats.mse);
    stats.nrmse = stats.value_range > 0 ? rmse / stats.value_range : rmse;
    stats.psnr_db = stats.mse > 0 ? 20 * std::log10(stats.value_range) - 10 * std::log10(stats.mse)
                                  : std::numeric_limits<double>::infinity();
  }
  return stats;
}

}  // namespace zcoll
