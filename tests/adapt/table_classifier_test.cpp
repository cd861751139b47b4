#include <catch2/catch.hpp>

#include <cmath>

#include "zcoll/adapt/table_classifier.hpp"
#include "zcoll/core/error.hpp"

using zcoll::adapt::bound_class;
using zcoll::adapt::table_classifier;

TEST_CASE("Table classifier: the paper's 0.05 / 0.03 / 0.01 from a global bound, alpha and beta",
          "[adapt][classifier]") {
  const table_classifier c{.global_bound = 0.03, .alpha = 5.0 / 3.0, .beta = 3.0, .large_below = 0.2, .small_above = 0.6};
  CHECK(c.bound_of(bound_class::large) == Approx(0.05));
  CHECK(c.bound_of(bound_class::medium) == 0.03);
  CHECK(c.bound_of(bound_class::small) == Approx(0.01));
  // Thresholds: strictly below large_below is large, strictly above small_above is small.
  CHECK(c.classify(0.0) == bound_class::large);
  CHECK(c.classify(0.19999) == bound_class::large);
  CHECK(c.classify(0.2) == bound_class::medium);
  CHECK(c.classify(0.6) == bound_class::medium);
  CHECK(c.classify(0.60001) == bound_class::small);
  CHECK(c.classify(1.0) == bound_class::small);
}

TEST_CASE("Table classifier: out-of-range parameters and indices are argument errors naming them",
          "[adapt][classifier]") {
  const table_classifier good{.global_bound = 0.03, .alpha = 2, .beta = 2, .large_below = 0.2, .small_above = 0.6};
  CHECK_THROWS_WITH(good.classify(1.5), Catch::Contains("index"));
  CHECK_THROWS_WITH(good.classify(std::nan("")), Catch::Contains("index"));
  auto bad = good;
  bad.global_bound = 0.0;
  CHECK_THROWS_WITH(bad.classify(0.5), Catch::Contains("global_bound"));
  bad = good;
  bad.alpha = 0.5;
  CHECK_THROWS_WITH(bad.bound_of(bound_class::large), Catch::Contains("alpha"));
  bad = good;
  bad.beta = INFINITY;
  CHECK_THROWS_WITH(bad.bound_of(bound_class::small), Catch::Contains("beta"));
  bad = good;
  bad.large_below = 0.7;
  CHECK_THROWS_WITH(bad.classify(0.5), Catch::Contains("large_below"));
}
