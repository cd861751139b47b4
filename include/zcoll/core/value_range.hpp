#pragma once
/// The range max - min of the values a relative error bound refers to: finite values that are not the
/// declared fill value.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>

#include "zcoll/core/config.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

/// Smallest and largest finite, non-fill value; lowest > highest when there is none.
template <floating_value T>
struct value_extent {
  T lowest = std::numeric_limits<T>::infinity();
  T highest = -std::numeric_limits<T>::infinity();

  ZCOLL_HOST_DEVICE bool empty() const { return lowest > highest; }
  /// highest - lowest in double, rounded toward zero so that a bound derived from it never exceeds
  /// fraction * (max - min) (exact for f32 data; for f64 the rounding error is recovered by TwoSum).
  /// 0 when empty.
  ZCOLL_HOST_DEVICE double range() const {
    if (empty()) return 0.0;
    const double hi = highest, lo = -static_cast<double>(lowest);
    const double r = hi + lo;
    if (std::isinf(r)) return std::numeric_limits<double>::max();  // f64 extremes: toward zero, as below
    const double b = r - hi;
    const double error = (hi - (r - b)) + (lo - b);  // hi - lowest = r + error exactly
    return error < 0.0 ? std::nextafter(r, 0.0) : r;
  }
};

/// Signed integer whose order is the order of the floating-point values (for non-NaN values): negative
/// values have their magnitude bits flipped. Integer min/max vectorise where floating-point ones do not
/// (without -ffast-math).
template <floating_value T>
constexpr auto order_key(T v) {
  using key = std::make_signed_t<bits_of<T>>;
  const auto k = std::bit_cast<key>(v);
  constexpr key magnitude = std::numeric_limits<key>::max();
  return static_cast<key>(k ^ ((k >> (sizeof(key) * 8 - 1)) & magnitude));
}

template <floating_value T>
constexpr T from_order_key(std::make_signed_t<bits_of<T>> k) {
  using key = std::make_signed_t<bits_of<T>>;
  constexpr key magnitude = std::numeric_limits<key>::max();
  return std::bit_cast<T>(static_cast<key>(k ^ ((k >> (sizeof(key) * 8 - 1)) & magnitude)));
}

/// Extent of the finite values of x[0, n) other than the fill value, branch-free on order keys with one
/// accumulator per lane, all integer operations: this form vectorises under GCC's default flags.
template <floating_value T>
value_extent<T> extent_of(const T* x, std::size_t n, std::optional<bits_of<T>> fill_bits) {
  using bits = bits_of<T>;
  using key = std::make_signed_t<bits>;
  constexpr std::size_t lanes = 32;
  constexpr bits magnitude_bits = std::numeric_limits<key>::max();
  constexpr bits max_finite_bits = std::bit_cast<bits>(std::numeric_limits<T>::max());
  constexpr key no_low = order_key(std::numeric_limits<T>::infinity());
  constexpr key no_high = order_key(-std::numeric_limits<T>::infinity());
  const bool has_fill = fill_bits.has_value();
  const bits fill = fill_bits.value_or(0);
  key lo[lanes], hi[lanes];
  std::fill_n(lo, lanes, no_low);
  std::fill_n(hi, lanes, no_high);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const bits b = std::bit_cast<bits>(x[i + j]);
      const bool take = ((b & magnitude_bits) <= max_finite_bits) & (!has_fill | (b != fill));
      const auto s = static_cast<key>(b);
      const auto k = static_cast<key>(s ^ ((s >> (sizeof(key) * 8 - 1)) & static_cast<key>(magnitude_bits)));
      lo[j] = std::min(lo[j], take ? k : no_low);
      hi[j] = std::max(hi[j], take ? k : no_high);
    }
  }
  key low = no_low, high = no_high;
  for (; i < n; ++i) {
    const bits b = std::bit_cast<bits>(x[i]);
    if ((b & magnitude_bits) <= max_finite_bits && !(has_fill && b == fill)) {
      low = std::min(low, order_key(x[i]));
      high = std::max(high, order_key(x[i]));
    }
  }
  for (std::size_t j = 0; j < lanes; ++j) {
    low = std::min(low, lo[j]);
    high = std::max(high, hi[j]);
  }
  return {from_order_key<T>(low), from_order_key<T>(high)};
}

/// One pass over `values` (vectorised: no per-value branch), split over `exec`'s threads.
template <floating_value T>
value_extent<T> find_value_extent(const exec::Host& exec, std::span<const T> values,
                                  std::optional<bits_of<T>> fill_bits) {
  constexpr std::size_t part_values = 1 << 16;
  const std::size_t parts = (values.size() + part_values - 1) / part_values;
  const std::size_t workers = exec::worker_count(exec, parts);
  // One slot per worker; at most `threads` of them, and only when threads > 1.
  constexpr std::size_t max_slots = 256;
  value_extent<T> slots[max_slots];
  exec::for_each_range(exec::Host{static_cast<unsigned>(std::min(workers, max_slots))}, parts,
                       [&](std::size_t w, std::size_t begin, std::size_t end) {
    const std::size_t first = begin * part_values, last = std::min(values.size(), end * part_values);
    slots[w] = extent_of(values.data() + first, last - first, fill_bits);
  });
  value_extent<T> all;
  for (std::size_t w = 0; w < std::min(workers, max_slots); ++w) {
    all.lowest = std::min(all.lowest, slots[w].lowest);
    all.highest = std::max(all.highest, slots[w].highest);
  }
  return all;
}

}  // namespace zcoll
