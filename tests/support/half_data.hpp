#pragma once
// 16-bit data and checks shared by the bf16/fp16 collective tests (transport::Local and MPI): adversarial
// values and the element-wise bound check against an exact double reference.
// Include after support/thread_safe_assertions.hpp where ranks assert on threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/half_value.hpp"

namespace zcoll_test {

/// The largest finite value of H, as a float.
template <class H>
float largest_half() {
  return static_cast<float>(H::from_bits(static_cast<std::uint16_t>(H::format::max_finite_code)));
}

/// Rank r's values: smooth ones, and at fixed places the adversarial ones — rank 0 alone holds ±largest
/// (their sums stay finite), every rank a subnormal, rank 1 a NaN.
template <class H>
std::vector<H> half_values(int rank, std::size_t n) {
  std::vector<H> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = H(std::sin(0.01f * static_cast<float>(i) + static_cast<float>(rank)) * 8.0f);
  if (n < 8) return v;
  const float subnormal = static_cast<float>(H::from_bits(1));
  v[1] = H(rank == 0 ? largest_half<H>() : 0.0f);
  v[2] = H(rank == 0 ? -largest_half<H>() : 0.0f);
  v[3] = H(subnormal * static_cast<float>(rank + 1));
  v[4] = H(-subnormal);
  v[5] = H(rank == 1 || n < 16 ? std::numeric_limits<float>::quiet_NaN() : 0.5f);
  return v;
}

template <class H>
std::vector<double> as_double(const std::vector<H>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = static_cast<float>(v[i]);
  return d;
}

/// Every element of `got` within `bound` of `want` (NaN where want is NaN).
template <class H>
void require_half_within(std::span<const H> got, std::span<const double> want, double bound, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<float>(got[i]);
    if (std::isnan(want[i])) {
      if (!std::isnan(g)) FAIL(what << ": element " << i << " is " << g << ", NaN expected");
      continue;
    }
    if (!(std::abs(g - want[i]) <= bound)) {
      FAIL(what << ": element " << i << " is " << g << ", exact " << want[i] << ", stated bound " << bound);
    }
  }
}

}  // namespace zcoll_test
