#include <catch2/catch.hpp>

#include <cmath>

#include "zcoll/adapt/error_bound_schedule.hpp"
#include "zcoll/core/error.hpp"

using zcoll::adapt::decay_shape;
using zcoll::adapt::error_bound_schedule;

TEST_CASE("Error-bound schedules: constant is 1 at every iteration", "[adapt][schedule]") {
  const error_bound_schedule s{.shape = decay_shape::constant, .initial_factor = 3.0, .decay_iterations = 100};
  for (const std::uint64_t i : {0ull, 1ull, 99ull, 100ull, 1000000ull}) CHECK(s.factor(i) == 1.0);
}

TEST_CASE("Error-bound schedules: step decay is a staircase from the initial factor to 1 at the phase's end",
          "[adapt][schedule]") {
  const error_bound_schedule s{.shape = decay_shape::step, .initial_factor = 3.0, .decay_iterations = 300, .steps = 3};
  CHECK(s.factor(0) == 3.0);
  CHECK(s.factor(99) == 3.0);                         // last iteration of stair 0
  CHECK(s.factor(100) == Approx(3.0 - 2.0 / 3.0));    // stair 1 starts at ceil(1 * 300 / 3)
  CHECK(s.factor(199) == Approx(3.0 - 2.0 / 3.0));
  CHECK(s.factor(200) == Approx(3.0 - 4.0 / 3.0));
  CHECK(s.factor(299) == Approx(3.0 - 4.0 / 3.0));
  CHECK(s.factor(300) == 1.0);                        // the later phase: constant
  CHECK(s.factor(1u << 30) == 1.0);
  // Stairs that do not divide the phase: stair k starts at ceil(k * D / steps).
  const error_bound_schedule uneven{.shape = decay_shape::step, .initial_factor = 2.0, .decay_iterations = 10, .steps = 3};
  CHECK(uneven.factor(3) == 2.0);
  CHECK(uneven.factor(4) == Approx(2.0 - 1.0 / 3.0));  // 4 * 3 / 10 = 1
  CHECK(uneven.factor(6) == Approx(2.0 - 1.0 / 3.0));
  CHECK(uneven.factor(7) == Approx(2.0 - 2.0 / 3.0));  // 7 * 3 / 10 = 2
  CHECK(uneven.factor(10) == 1.0);
}

TEST_CASE("Error-bound schedules: logarithmic decay falls fast, then slowly, and reaches 1", "[adapt][schedule]") {
  const error_bound_schedule s{.shape = decay_shape::logarithmic, .initial_factor = 2.0, .decay_iterations = 1000};
  CHECK(s.factor(0) == 2.0);
  CHECK(s.factor(1000) == 1.0);
  CHECK(s.factor(999) == Approx(2.0 - std::log1p(999.0) / std::log1p(1000.0)));
  double previous = s.factor(0);
  for (std::uint64_t i = 1; i < 1000; ++i) {
    const double f = s.factor(i);
    REQUIRE(f < previous);
    REQUIRE(f > 1.0);
    previous = f;
  }
  // Half of the decay is spent by iteration sqrt(1001) - 1, long before half of the phase.
  CHECK(s.factor(31) < 1.5);
}

TEST_CASE("Error-bound schedules: a phase of zero iterations or a factor of 1 is constant", "[adapt][schedule]") {
  CHECK(error_bound_schedule{.shape = decay_shape::step, .initial_factor = 3.0, .decay_iterations = 0}.factor(0) == 1.0);
  CHECK(error_bound_schedule{.shape = decay_shape::logarithmic, .initial_factor = 1.0, .decay_iterations = 50}.factor(7) ==
        1.0);
}

TEST_CASE("Error-bound schedules: fields out of range are argument errors naming them", "[adapt][schedule]") {
  const auto message = [](const error_bound_schedule& s) {
    try {
      (void)s.factor(0);
    } catch (const zcoll::argument_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(message({.shape = decay_shape::step, .initial_factor = 0.5}), Catch::Contains("initial_factor"));
  CHECK_THAT(message({.shape = decay_shape::step, .initial_factor = NAN}), Catch::Contains("initial_factor"));
  CHECK_THAT(message({.shape = decay_shape::step, .initial_factor = 2.0, .steps = 0}), Catch::Contains("steps"));
  CHECK_THAT(message({.shape = static_cast<decay_shape>(7)}), Catch::Contains("shape"));
}
