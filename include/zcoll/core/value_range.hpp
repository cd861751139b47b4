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

#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

/// Smallest and largest finite, non-fill value; lowest > highest when there is none.
template <floating_value T>
struct value_extent {
  T lowest = std::numeric_limits<T>::infinity();
  T highest = -std::numeric_limits<T>::infinity();

  bool empty() const { return lowest > highest; }
  /// highest - lowest in double (exact for f32 data), 0 when empty.
  double range() const { return empty() ? 0.0 : static_cast<double>(highest) - static_cast<double>(lowest); }
};

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
    const T* x = values.data();
    const std::size_t first = begin * part_values, last = std::min(values.size(), end * part_values);
    constexpr T max_finite = std::numeric_limits<T>::max();
    constexpr T inf = std::numeric_limits<T>::infinity();
    T lo = inf, hi = -inf;
    if (fill_bits) {
      const bits_of<T> fill = *fill_bits;
      for (std::size_t i = first; i < last; ++i) {
        const bool counted = std::abs(x[i]) <= max_finite && std::bit_cast<bits_of<T>>(x[i]) != fill;
        lo = std::min(lo, counted ? x[i] : inf);
        hi = std::max(hi, counted ? x[i] : -inf);
      }
    } else {
      for (std::size_t i = first; i < last; ++i) {
        const bool counted = std::abs(x[i]) <= max_finite;
        lo = std::min(lo, counted ? x[i] : inf);
        hi = std::max(hi, counted ? x[i] : -inf);
      }
    }
    slots[w] = {lo, hi};
  });
  value_extent<T> all;
  for (std::size_t w = 0; w < std::min(workers, max_slots); ++w) {
    all.lowest = std::min(all.lowest, slots[w].lowest);
    all.highest = std::max(all.highest, slots[w].highest);
  }
  return all;
}

}  // namespace zcoll
