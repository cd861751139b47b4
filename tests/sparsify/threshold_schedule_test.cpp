// DCT-DP's threshold life span (sparsify/threshold_schedule.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/sparsify/threshold_schedule.hpp"

using namespace zcoll_test;
namespace sp = zcoll::sparsify;

namespace {

/// Step `step`'s gradient: Laplace values whose scale changes every step, so every recomputed threshold
/// differs from the one before.
template <class T>
std::vector<T> gradient(std::size_t n, int step) {
  std::mt19937_64 rng(seed + static_cast<std::uint64_t>(step));
  std::exponential_distribution<double> e(1.0);
  std::vector<T> x(n);
  const double scale = 1.0 + 0.1 * step;
  for (auto& v : x) v = static_cast<T>((rng() & 1 ? 1.0 : -1.0) * e(rng) * scale);
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("The threshold changes only every threshold_life_span calls", "[sparsify][threshold_schedule]", float,
                   double) {
  using T = TestType;
  for (std::uint32_t life_span : {1u, 2u, 5u, 7u}) {
    for (auto method : {sp::threshold_method::exact, sp::threshold_method::laplace}) {
      INFO("life span " << life_span << ", method " << sp::to_string(method));
      sp::threshold_schedule schedule{{.keep_fraction = 0.02, .threshold_life_span = life_span, .method = method}};
      double previous = -1.0;
      for (int call = 0; call < 23; ++call) {
        const auto x = gradient<T>(5000, call);
        const auto decision = schedule.next(zcoll::exec::Host{1 + static_cast<unsigned>(call % 3)}, std::span<const T>(x));
        INFO("call " << call);
        CHECK(decision.call_index == static_cast<std::uint64_t>(call));
        const bool due = call % static_cast<int>(life_span) == 0;
        REQUIRE(decision.recomputed == due);
        CHECK(decision.method_used == method);
        if (due) {
          // Recomputed from this call's data: the exact one equals topk_threshold's, and it changed.
          if (method == sp::threshold_method::exact) {
            CHECK(decision.threshold == static_cast<double>(sp::topk_threshold(std::span<const T>(x), 0.02)));
          } else {
            const auto fit = sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>(x));
            CHECK(decision.threshold == static_cast<double>(sp::laplace_threshold<T>(fit, 0.02)));
          }
          CHECK(decision.threshold != previous);
        } else {
          CHECK(decision.threshold == previous);  // reused although the data changed
        }
        CHECK(static_cast<double>(static_cast<T>(decision.threshold)) == decision.threshold);  // exact in T
        previous = decision.threshold;
        CHECK(schedule.last().threshold == decision.threshold);
      }
    }
  }
}

TEST_CASE("Another tensor length or type restarts the schedule", "[sparsify][threshold_schedule]") {
  sp::threshold_schedule schedule{{.keep_fraction = 0.1, .threshold_life_span = 100}};
  const auto a = gradient<float>(1000, 1), b = gradient<float>(1001, 2);
  CHECK(schedule.next(zcoll::exec::Host{}, std::span<const float>(a)).recomputed);
  CHECK_FALSE(schedule.next(zcoll::exec::Host{}, std::span<const float>(a)).recomputed);
  const auto other_length = schedule.next(zcoll::exec::Host{}, std::span<const float>(b));
  CHECK(other_length.recomputed);
  CHECK(other_length.call_index == 0);
  CHECK_FALSE(schedule.next(zcoll::exec::Host{}, std::span<const float>(b)).recomputed);
  const auto c = gradient<double>(1001, 3);
  CHECK(schedule.next(zcoll::exec::Host{}, std::span<const double>(c)).recomputed);
  CHECK_FALSE(schedule.next(zcoll::exec::Host{}, std::span<const double>(c)).recomputed);
  schedule.reset();
  CHECK(schedule.next(zcoll::exec::Host{}, std::span<const double>(c)).recomputed);
}

TEST_CASE("The Laplace method falls back to the exact threshold when the fit is unusable", "[sparsify][threshold_schedule]") {
  sp::threshold_schedule schedule{{.keep_fraction = 0.5, .method = sp::threshold_method::laplace}};
  std::vector<double> huge{1e300, -1e300, 2e300, 5.0};
  const auto decision = schedule.next(zcoll::exec::Host{}, std::span<const double>(huge));
  CHECK(decision.method_used == sp::threshold_method::exact);
  CHECK(decision.threshold == 1e300);
  std::vector<float> nan(10, std::numeric_limits<float>::quiet_NaN());
  const auto all_nan = schedule.next(zcoll::exec::Host{}, std::span<const float>(nan));
  CHECK(all_nan.method_used == sp::threshold_method::exact);
  CHECK(all_nan.threshold == 0.0);
}

TEST_CASE("A schedule rejects a bad configuration", "[sparsify][threshold_schedule]") {
  using config = sp::threshold_schedule_config;
  CHECK_THROWS_AS(sp::threshold_schedule(config{.keep_fraction = 0.0}), zcoll::argument_error);
  CHECK_THROWS_AS(sp::threshold_schedule(config{.keep_fraction = 1.5}), zcoll::argument_error);
  CHECK_THROWS_AS(sp::threshold_schedule(config{.keep_fraction = std::nan("")}), zcoll::argument_error);
  CHECK_THROWS_AS(sp::threshold_schedule(config{.keep_fraction = 0.1, .threshold_life_span = 0}), zcoll::argument_error);
  CHECK_NOTHROW(sp::threshold_schedule(config{.keep_fraction = 1.0, .threshold_life_span = 1}));
}
