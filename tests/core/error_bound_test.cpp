#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "support/test_support.hpp"
#include "zcoll/core/error_bound.hpp"

namespace {

constexpr double pinf = std::numeric_limits<double>::infinity();
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();

/// a <= f * r in exact arithmetic: the fused f * r - a is rounded once, and rounding keeps the sign
/// (a tiny negative difference rounds to -0.0, never to +0.0).
bool exactly_at_most_product(double a, double f, double r) { return !std::signbit(std::fma(f, r, -a)); }

}  // namespace

TEST_CASE("absolute and relative reject negative, NaN and infinite bounds", "[core][error_bound]") {
  for (double bad : {-1.0, -std::numeric_limits<double>::denorm_min(), -0.0 - 1e-300, qnan, -qnan, pinf, -pinf}) {
    INFO("bound " << bad);
    CHECK_THROWS_AS(zcoll::absolute(bad), zcoll::argument_error);
    CHECK_THROWS_AS(zcoll::relative(bad), zcoll::argument_error);
  }
  for (double good : {0.0, -0.0, std::numeric_limits<double>::denorm_min(), 1e-3, 0.5, 1.0, 1e300,
                      std::numeric_limits<double>::max()}) {
    INFO("bound " << good);
    const auto a = zcoll::absolute(good);
    CHECK(a.mode == zcoll::bound_mode::absolute);
    CHECK(a.value == good);
    const auto r = zcoll::relative(good);
    CHECK(r.mode == zcoll::bound_mode::relative);
    CHECK(r.value == good);
    CHECK(a != r);
  }
  CHECK(zcoll::bound{} == zcoll::absolute(0.0));  // the default is lossless
}

TEST_CASE("absolute_bound of an absolute bound ignores the range", "[core][error_bound]") {
  for (double range : {0.0, 1.0, 1e30, pinf, qnan}) {
    CHECK(zcoll::absolute_bound(zcoll::absolute(0.25), range) == 0.25);
    CHECK(zcoll::absolute_bound(zcoll::absolute(0.0), range) == 0.0);
  }
}

TEST_CASE("absolute_bound of a relative bound is at most fraction * range, exactly", "[core][error_bound]") {
  std::mt19937_64 rng(zcoll_test::seed);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-60, 60);
  for (int trial = 0; trial < 100000; ++trial) {
    const double fraction = std::ldexp(mantissa(rng), exponent(rng) - 20);
    const double range = std::ldexp(mantissa(rng), exponent(rng));
    const double eb = zcoll::absolute_bound(zcoll::relative(fraction), range);
    INFO("fraction " << fraction << ", range " << range << ", eb " << eb);
    REQUIRE(eb > 0.0);
    REQUIRE(exactly_at_most_product(eb, fraction, range));
    // Rounded down by at most two steps: two ulps above eb is beyond fraction * range.
    REQUIRE_FALSE(exactly_at_most_product(std::nextafter(std::nextafter(eb, pinf), pinf), fraction, range));
  }
  SECTION("products that are exact in double are stepped below") {
    for (const auto& [fraction, range] : {std::pair{0.5, 2.0}, std::pair{0.25, 8.0}, std::pair{1.0, 3.0}}) {
      const double eb = zcoll::absolute_bound(zcoll::relative(fraction), range);
      CHECK(eb < fraction * range);
      CHECK(std::nextafter(eb, pinf) == fraction * range);
    }
  }
  SECTION("subnormal products") {
    const double eb = zcoll::absolute_bound(zcoll::relative(1e-10), 1e-300);
    CHECK(exactly_at_most_product(eb, 1e-10, 1e-300));
    CHECK(eb >= 0.0);
    // A product that rounds to the smallest subnormal or to zero gives a lossless bound.
    CHECK(zcoll::absolute_bound(zcoll::relative(1e-200), 1e-200) == 0.0);
  }
}

TEST_CASE("absolute_bound of a relative bound over an empty or degenerate range", "[core][error_bound]") {
  CHECK(zcoll::absolute_bound(zcoll::relative(1e-2), 0.0) == 0.0);
  CHECK(zcoll::absolute_bound(zcoll::relative(1e-2), -1.0) == 0.0);
  CHECK(zcoll::absolute_bound(zcoll::relative(1e-2), qnan) == 0.0);
  CHECK(zcoll::absolute_bound(zcoll::relative(0.0), 5.0) == 0.0);
  // A product that overflows is no bound any quantizer step can honour; it is reported as infinite.
  CHECK(std::isinf(zcoll::absolute_bound(zcoll::relative(1e300), 1e300)));
  CHECK(std::isinf(zcoll::absolute_bound(zcoll::relative(1e-2), pinf)));
}

TEST_CASE("bounds print their mode", "[core][error_bound]") {
  CHECK_THAT(zcoll::to_string(zcoll::absolute(0.5)), Catch::StartsWith("abs"));
  CHECK_THAT(zcoll::to_string(zcoll::relative(0.5)), Catch::StartsWith("rel"));
}
