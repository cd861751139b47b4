#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/error_stats.hpp"

namespace {

constexpr double dinf = std::numeric_limits<double>::infinity();

}  // namespace

TEMPLATE_TEST_CASE("exactly_within at the bound, one ulp over, NaN and Inf", "[core][error_stats]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();

  SECTION("exactly at the bound") {
    CHECK(zcoll::exactly_within(T(1), T(1.25), 0.25));
    CHECK(zcoll::exactly_within(T(1.25), T(1), 0.25));
    CHECK(zcoll::exactly_within(T(-3), T(-3.5), 0.5));
    CHECK(zcoll::exactly_within(T(7), T(7), 0.0));
    CHECK(zcoll::exactly_within(T(-0.0), T(0.0), 0.0));
  }
  SECTION("one ulp over the bound") {
    CHECK_FALSE(zcoll::exactly_within(T(1), std::nextafter(T(1.25), T(2)), 0.25));
    CHECK_FALSE(zcoll::exactly_within(T(1), T(1.25), std::nextafter(0.25, 0.0)));
    CHECK_FALSE(zcoll::exactly_within(T(7), std::nextafter(T(7), T(8)), 0.0));
    CHECK_FALSE(zcoll::exactly_within(std::numeric_limits<T>::denorm_min(), T(0), 0.0));
    CHECK(zcoll::exactly_within(std::numeric_limits<T>::denorm_min(), T(0),
                                static_cast<double>(std::numeric_limits<T>::denorm_min())));
  }
  SECTION("NaN is never within, Inf only of nothing") {
    CHECK_FALSE(zcoll::exactly_within(nan, nan, 1.0));
    CHECK_FALSE(zcoll::exactly_within(nan, T(0), dinf));
    CHECK_FALSE(zcoll::exactly_within(T(0), nan, 1e300));
    CHECK_FALSE(zcoll::exactly_within(inf, inf, 1.0));
    CHECK_FALSE(zcoll::exactly_within(-inf, -inf, dinf));
    CHECK_FALSE(zcoll::exactly_within(inf, T(0), 1e300));
    CHECK_FALSE(zcoll::exactly_within(T(0), -inf, 1e300));
    CHECK_FALSE(zcoll::exactly_within(T(1), T(1), std::numeric_limits<double>::quiet_NaN()));
  }
  SECTION("a bound of +inf (none stated) holds for finite values that overflowed, never for NaN") {
    CHECK(zcoll::exactly_within(std::numeric_limits<T>::max(), inf, dinf));
    CHECK(zcoll::exactly_within(T(-1), -inf, dinf));
    CHECK(zcoll::exactly_within(T(0), std::numeric_limits<T>::lowest(), dinf));
    CHECK_FALSE(zcoll::exactly_within(T(1), nan, dinf));
    CHECK_FALSE(zcoll::exactly_within(inf, inf, dinf));
  }
  SECTION("the largest finite values") {
    const T max = std::numeric_limits<T>::max();
    CHECK(zcoll::exactly_within(max, max, 0.0));
    CHECK(zcoll::exactly_within(-max, -max, 0.0));
    // 2 * max of f32 is finite in double; 2 * max of f64 overflows, which is never within.
    CHECK(zcoll::exactly_within(max, -max, 1e300) == std::is_same_v<T, float>);
  }
}

TEST_CASE("exactly_within decides differences that double subtraction rounds", "[core][error_stats]") {
  // 1 - 2^-60 rounds to 1 in double: the naive |x - y| <= 1 would accept both of these.
  const double tiny = std::ldexp(1.0, -60);
  CHECK(zcoll::exactly_within(1.0, tiny, 1.0));         // exactly 1 - 2^-60 <= 1
  CHECK_FALSE(zcoll::exactly_within(1.0, -tiny, 1.0));  // exactly 1 + 2^-60 > 1
  CHECK(zcoll::exactly_within(-1.0, tiny, 1.0 + std::ldexp(1.0, -52)));
  CHECK_FALSE(zcoll::exactly_within(-1.0, tiny, 1.0));
  // The same for float inputs far apart in magnitude (the double difference is inexact).
  const float big = 1e30f, small = 1e-30f;
  const double big_d = big;
  CHECK(zcoll::exactly_within(big, small, big_d));
  CHECK_FALSE(zcoll::exactly_within(big, -small, big_d));

  std::mt19937_64 rng(zcoll_test::seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 20000; ++trial) {
    // x - y exact in double: the answer must agree with the plain comparison.
    const float x = static_cast<float>(u(rng)), y = static_cast<float>(u(rng));
    const double d = std::abs(static_cast<double>(x) - static_cast<double>(y));
    REQUIRE(zcoll::exactly_within(x, y, d));
    REQUIRE_FALSE(zcoll::exactly_within(x, y, std::nextafter(d, 0.0)));
  }
}

TEMPLATE_TEST_CASE("measure_error counts violations and exact mismatches", "[core][error_stats]", float, double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const T fill = T(-1e10);
  const std::vector<T> original{T(1), T(2), T(3), nan, inf, -inf, fill, T(4)};

  SECTION("everything restored within the bound") {
    const std::vector<T> restored{T(1.5), T(2), T(2.5), nan, inf, -inf, fill, T(4)};
    const auto s = zcoll::measure_error(std::span<const T>(original), std::span<const T>(restored), 0.5,
                                        zcoll_test::bits(fill));
    CHECK(s.compared_values == 4);
    CHECK(s.exact_mismatches == 0);
    CHECK(s.bound_violations == 0);
    CHECK(s.bound_held());
    CHECK(s.max_abs_error == 0.5);
    CHECK(s.value_range == 3.0);
    CHECK(s.mse == Approx((0.25 + 0.25) / 4));
  }
  SECTION("one ulp over the bound is a violation") {
    const std::vector<T> restored{T(1), std::nextafter(T(2.5), T(3)), T(3), nan, inf, -inf, fill, T(4)};
    const auto s = zcoll::measure_error(std::span<const T>(original), std::span<const T>(restored), 0.5,
                                        zcoll_test::bits(fill));
    CHECK(s.bound_violations == 1);
    CHECK_FALSE(s.bound_held());
  }
  SECTION("a NaN with another payload, a flipped infinity, a changed fill are mismatches") {
    const T other_nan = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(zcoll_test::bits(nan) | 1));
    const std::vector<T> restored{T(1), T(2), T(3), other_nan, -inf, -inf, std::nextafter(fill, T(0)), T(4)};
    const auto s = zcoll::measure_error(std::span<const T>(original), std::span<const T>(restored), 1.0,
                                        zcoll_test::bits(fill));
    CHECK(s.exact_mismatches == 3);
    CHECK(s.bound_violations == 0);
    CHECK_FALSE(s.bound_held());
  }
  SECTION("without a declared fill value the fill is an ordinary value") {
    const std::vector<T> restored{T(1), T(2), T(3), nan, inf, -inf, T(0), T(4)};
    const auto s = zcoll::measure_error(std::span<const T>(original), std::span<const T>(restored), 1.0);
    CHECK(s.compared_values == 5);
    CHECK(s.bound_violations == 1);
  }
  SECTION("a NaN restored for a finite value is a violation") {
    const std::vector<T> restored{nan, T(2), T(3), nan, inf, -inf, fill, T(4)};
    const auto s = zcoll::measure_error(std::span<const T>(original), std::span<const T>(restored), 1e30,
                                        zcoll_test::bits(fill));
    CHECK(s.bound_violations == 1);
  }
  SECTION("sizes must match") {
    const std::vector<T> shorter(original.size() - 1);
    CHECK_THROWS_AS(zcoll::measure_error(std::span<const T>(original), std::span<const T>(shorter), 1.0),
                    zcoll::argument_error);
  }
}
