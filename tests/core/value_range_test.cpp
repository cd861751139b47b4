#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/value_range.hpp"

using zcoll_test::bits;

TEMPLATE_TEST_CASE("find_value_extent ignores NaN, Inf and the fill value", "[core][value_range]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const T fill = T(-1e10);
  const std::vector<T> values{nan, T(3), -inf, fill, T(-2), inf, T(0.5), fill, nan};

  const auto with_fill = zcoll::find_value_extent<T>(zcoll::exec::Host{}, values, bits(fill));
  CHECK(with_fill.lowest == T(-2));
  CHECK(with_fill.highest == T(3));
  CHECK(with_fill.range() == 5.0);
  CHECK_FALSE(with_fill.empty());

  const auto without_fill = zcoll::find_value_extent<T>(zcoll::exec::Host{}, values, std::nullopt);
  CHECK(without_fill.lowest == fill);
  CHECK(without_fill.highest == T(3));

  SECTION("nothing countable is an empty extent of range 0") {
    for (const std::vector<T>& none : {std::vector<T>{}, std::vector<T>{nan, inf, -inf}, std::vector<T>{fill, nan, fill}}) {
      const auto e = zcoll::find_value_extent<T>(zcoll::exec::Host{4}, none, bits(fill));
      CHECK(e.empty());
      CHECK(e.range() == 0.0);
    }
  }
  SECTION("a NaN fill value") {
    const T fill_nan = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(bits(nan) | 5));
    const std::vector<T> v{fill_nan, T(1), T(-1)};
    const auto e = zcoll::find_value_extent<T>(zcoll::exec::Host{}, v, bits(fill_nan));
    CHECK(e.range() == 2.0);
  }
  SECTION("the extremes of the type") {
    const T max = std::numeric_limits<T>::max();
    const std::vector<T> v{max, -max, inf};
    const auto e = zcoll::find_value_extent<T>(zcoll::exec::Host{}, v, std::nullopt);
    CHECK(e.lowest == -max);
    CHECK(e.highest == max);
  }
}

TEMPLATE_TEST_CASE("find_value_extent agrees with a plain loop for every thread count", "[core][value_range]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(zcoll_test::seed);
  std::uniform_real_distribution<double> u(-100.0, 100.0);
  // More than three parts of 65536 values, so several workers share the work.
  std::vector<T> values(3 * 65536 + 4321);
  for (auto& x : values) x = static_cast<T>(u(rng));
  const T fill = T(-1e10);
  for (std::size_t i = 0; i < values.size(); i += 97) values[i] = fill;
  for (std::size_t i = 5; i < values.size(); i += 1009) values[i] = std::numeric_limits<T>::quiet_NaN();
  // The extremes sit in the last part, and a larger fill value in the first.
  values[values.size() - 3] = T(250);
  values[values.size() - 2] = T(-300);

  const double expected = zcoll_test::reference_range<T>(values, bits(fill));
  REQUIRE(expected == 550.0);
  for (unsigned threads = 1; threads <= 5; ++threads) {
    const auto e = zcoll::find_value_extent<T>(zcoll::exec::Host{threads}, values, bits(fill));
    INFO(threads << " threads");
    CHECK(e.lowest == T(-300));
    CHECK(e.highest == T(250));
    CHECK(e.range() == expected);
  }
}

TEMPLATE_TEST_CASE("find_value_extent agrees with a plain loop on every short length", "[core][value_range]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(zcoll_test::seed + 1);
  const T fill = T(-1e10);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const T max = std::numeric_limits<T>::max();
  // Lengths around the 32-value groups of the vectorised loop and its scalar tail; every special value at
  // every position.
  for (std::size_t n = 0; n <= 130; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<T> v(n);
      for (auto& x : v) {
        switch (rng() % 10) {
          case 0: x = nan; break;
          case 1: x = (rng() % 2 ? 1 : -1) * inf; break;
          case 2: x = fill; break;
          case 3: x = (rng() % 2 ? 1 : -1) * max; break;
          case 4: x = rng() % 2 ? T(0.0) : T(-0.0); break;
          case 5: x = static_cast<T>(static_cast<int>(rng() % 7) - 3) * std::numeric_limits<T>::denorm_min(); break;
          default: x = static_cast<T>(std::ldexp(static_cast<double>(rng() % 2001) - 1000.0, static_cast<int>(rng() % 40) - 20));
        }
      }
      for (const auto fill_bits : {std::optional<zcoll::bits_of<T>>(bits(fill)), std::optional<zcoll::bits_of<T>>()}) {
        const auto e = zcoll::find_value_extent<T>(zcoll::exec::Host{}, v, fill_bits);
        const double expected = zcoll_test::reference_range<T>(v, fill_bits);
        INFO("n " << n << ", trial " << trial << (fill_bits ? ", fill declared" : ""));
        REQUIRE(e.range() == expected);
        bool any = false;
        T lo = 0, hi = 0;
        for (const T x : v) {
          if (!std::isfinite(x) || (fill_bits && bits(x) == *fill_bits)) continue;
          if (!any || x < lo) lo = x;
          if (!any || x > hi) hi = x;
          any = true;
        }
        REQUIRE(e.empty() == !any);
        if (any) {
          REQUIRE(e.lowest == lo);
          REQUIRE(e.highest == hi);
        }
      }
    }
  }
}
