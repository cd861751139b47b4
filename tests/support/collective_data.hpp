#pragma once
// Data and checks shared by the collective tests (transport::Local and MPI): values whose reductions are
// exact in float, so a collective's only error is compression, and the element-wise bound check.
// Include after support/thread_safe_assertions.hpp where ranks assert on threads.
#include <catch2/catch.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/error_stats.hpp"

namespace zcoll_test {

/// Dyadic values (multiples of 1/64, |x| < 64): every partial sum of up to 64 of them, and of their
/// reconstructions on a grid of 2eb = 2^-9, is exact in float, so a reduction's only error is compression.
inline float dyadic(int rank, std::size_t i) {
  const long v = static_cast<long>((i * 2654435761u + static_cast<std::size_t>(rank) * 40503u) % 8191u) - 4095;
  return static_cast<float>(v) / 64.0f;
}

/// Smooth, rank-dependent data with exactly representable samples.
template <class T>
std::vector<T> contribution(int rank, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(dyadic(rank, i / 4));  // runs of 4: compressible
  return v;
}

inline constexpr double eb = 1.0 / 1024;  // 2^-10: reconstructions are multiples of 2^-9

/// Every element of `got` within `bound` of `want`, exactly.
template <class T>
void require_within(std::span<const T> got, std::span<const T> want, double bound, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!zcoll::exactly_within(got[i], want[i], bound)) {
      FAIL(what << ": element " << i << " is " << got[i] << ", reference " << want[i] << ", bound " << bound);
    }
  }
}

template <class T>
void require_equal(std::span<const T> got, std::span<const T> want, const std::string& what) {
  require_within<T>(got, want, 0.0, what);
}

/// The element-wise sum of ranks 0..ranks-1's contributions (exact in float: dyadic values).
template <class T>
std::vector<T> sum_of_contributions(int ranks, std::size_t n) {
  std::vector<T> sum(n, T(0));
  for (int r = 0; r < ranks; ++r) {
    const auto c = contribution<T>(r, n);
    for (std::size_t i = 0; i < n; ++i) sum[i] += c[i];
  }
  return sum;
}

}  // namespace zcoll_test
