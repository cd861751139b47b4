#pragma once
// Checks of the homomorphic sums (collective/detail/homomorphic.hpp), shared by the transport::Local and
// MPI tests: every contribution in a result is quantized once, so each lane of a rank's result is its own
// value plus float(sum of the others' codes) * 2eb, or float(sum of every rank's codes) * 2eb where the
// rank's own values were replaced by a finished stream, bit for bit (the decompress-reduce-compress chain
// rounds its partial sums in float at every hop).
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <iomanip>
#include <limits>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/linear.hpp"

namespace zcoll_test {

/// The code quantize::Linear gives x at the absolute bound eb, or nothing where it stores x exactly.
template <class T>
std::optional<std::int64_t> bin_code(T x, double eb) {
  const T rounded = std::nearbyint(x * static_cast<T>(0.5 / eb));
  if (!std::isfinite(rounded) || std::abs(rounded) > zcoll::quantize::Linear::block_quantizer<T>::max_code) return std::nullopt;
  const T reconstructed = static_cast<T>(static_cast<std::int32_t>(rounded)) * static_cast<T>(2.0 * eb);
  // The quantizer's own check in T, lowered by the rounding of the subtraction (quantize/linear.hpp).
  const double lowered = eb * (1.0 - std::ldexp(1.0, -(std::numeric_limits<T>::digits - 1)));
  T threshold = static_cast<T>(lowered);
  if (static_cast<double>(threshold) > lowered) threshold = std::nextafter(threshold, T(0));
  if (!(std::abs(x - reconstructed) <= threshold)) return std::nullopt;
  return static_cast<std::int64_t>(rounded);
}

/// Smooth values, different on every rank, off the bin grid (so a chain that quantizes partial sums again
/// gives other values than one that adds codes).
template <class T>
std::vector<T> smooth_contribution(int rank, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    v[i] = static_cast<T>(5.0 * std::sin(0.003 * t + 0.7 * rank) + 0.2 * std::cos(0.05 * t * (rank + 1)));
  }
  return v;
}

/// Every lane of rank `me`'s result `got` over `ranks` ranks' smooth contributions (shifted by `first`
/// values) is own + float(sum of the others' codes) · 2eb or float(sum of all codes) · 2eb.
template <class T>
void require_codes_summed_once(std::span<const T> got, int ranks, int me, std::size_t first, std::size_t n, double eb,
                               const std::string& what) {
  std::vector<std::vector<T>> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(smooth_contribution<T>(r, n));
  const T step = static_cast<T>(2.0 * eb);
  std::size_t checked = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::int64_t all = 0, others = 0;
    bool coded = true;
    for (int r = 0; r < ranks; ++r) {
      const auto q = bin_code(inputs[static_cast<std::size_t>(r)][first + i], eb);
      if (!q) coded = false;
      all += q.value_or(0);
      if (r != me) others += q.value_or(0);
    }
    if (!coded) continue;  // a lane some rank stores exactly: the bound checks cover it
    const T own = inputs[static_cast<std::size_t>(me)][first + i];
    const T with_own = own + static_cast<T>(static_cast<std::int32_t>(others)) * step;
    const T finished = static_cast<T>(static_cast<std::int32_t>(all)) * step;
    const auto bits = [](T v) { return std::bit_cast<zcoll::bits_of<T>>(v); };
    if (bits(got[i]) != bits(with_own) && bits(got[i]) != bits(finished)) {
      FAIL(what << std::setprecision(9) << ": lane " << first + i << " is " << got[i] << ", a homomorphic sum gives " << with_own << " or "
                << finished);
    }
    ++checked;
  }
  REQUIRE(checked * 10 >= got.size() * 9);  // the check covers nearly every lane
}

}  // namespace zcoll_test
