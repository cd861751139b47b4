// The Laplace threshold estimate (sparsify/laplace.hpp): the fit, the quantile, and the fraction it keeps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/sparsify/laplace.hpp"

using namespace zcoll_test;
namespace sp = zcoll::sparsify;

namespace {

/// Laplace(location, scale) samples by inverse transform of a uniform, independent of the fit's code.
template <class T>
std::vector<T> laplace_sample(std::size_t n, double location, double scale, std::uint64_t offset) {
  std::mt19937_64 rng(seed + offset);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<T> x(n);
  for (auto& v : x) {
    const double p = u(rng);
    v = static_cast<T>(location - scale * (p < 0 ? -1.0 : 1.0) * std::log(1.0 - 2.0 * std::fabs(p)));
  }
  return x;
}

/// P(|R| >= t) for R ~ Laplace(mu, b), from the CDF F: 1 - (F(t) - F(-t)) for t > 0.
double laplace_tail(double mu, double b, double t) {
  auto cdf = [&](double y) { return y < mu ? 0.5 * std::exp((y - mu) / b) : 1.0 - 0.5 * std::exp(-(y - mu) / b); };
  return 1.0 - (cdf(t) - cdf(-t));
}

template <class T>
double kept_fraction(const std::vector<T>& x, T tau) {
  std::size_t kept = 0;
  for (T v : x) kept += sp::threshold_keeps(v, tau);
  return static_cast<double>(kept) / static_cast<double>(x.size());
}

}  // namespace

TEST_CASE("The Laplace quantile solves P(|R| >= tau) = keep_fraction on both branches", "[sparsify][laplace]") {
  for (double mu : {0.0, 0.3, -0.3, 2.0, -5.0, 40.0}) {
    for (double b : {0.01, 1.0, 3.0}) {
      for (double f : {1e-6, 1e-3, 0.01, 0.05, 0.25, 0.5, 0.75, 0.9, 0.999}) {
        const sp::laplace_fit fit{mu, b, 100};
        const double tau = sp::laplace_magnitude_threshold(fit, f);
        INFO("mu " << mu << ", b " << b << ", keep_fraction " << f << ", tau " << tau);
        REQUIRE(tau >= 0.0);
        REQUIRE(std::isfinite(tau));
        CHECK(laplace_tail(mu, b, tau) == Approx(f).epsilon(1e-9).margin(1e-12));
      }
    }
  }
  CHECK(sp::laplace_magnitude_threshold({1.0, 2.0, 10}, 1.0) == 0.0);
  CHECK(sp::laplace_magnitude_threshold({-4.0, 0.0, 10}, 0.01) == 4.0);  // a constant tensor: tau = |mu|
  CHECK_THROWS_AS(sp::laplace_magnitude_threshold({0.0, 1.0, 10}, 0.0), zcoll::argument_error);
  // A tau beyond f32 range becomes +Inf (no undefined conversion), which keeps only ±Inf and NaN.
  CHECK(sp::laplace_threshold<float>({0.0, 1e38, 10}, 1e-9) == std::numeric_limits<float>::infinity());
  CHECK(sp::laplace_threshold<double>({0.0, 1.0, 10}, 0.5) == std::log(2.0));
}

TEMPLATE_TEST_CASE("The fit recovers location and scale", "[sparsify][laplace]", float, double) {
  using T = TestType;
  for (double mu : {0.0, 1.5, -1e4}) {
    const auto x = laplace_sample<T>(1 << 20, mu, 0.25, 7);
    const auto fit = sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>(x));
    INFO("mu " << mu << ": fitted " << fit.location << ", " << fit.scale);
    REQUIRE(fit.usable());
    CHECK(fit.finite_count == x.size());
    CHECK(std::fabs(fit.location - mu) < 0.002);
    CHECK(fit.scale == Approx(0.25).epsilon(0.01));
  }
}

TEMPLATE_TEST_CASE("The fit leaves out NaN and Inf and is the same on any thread count", "[sparsify][laplace]", float, double) {
  using T = TestType;
  auto x = laplace_sample<T>(100003, 0.5, 2.0, 8);
  const auto clean = sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>(x));
  std::vector<T> with_specials;
  for (std::size_t i = 0; i < x.size(); ++i) {
    with_specials.push_back(x[i]);
    if (i % 100 == 0) with_specials.push_back(std::numeric_limits<T>::quiet_NaN());
    if (i % 333 == 0) with_specials.push_back(-std::numeric_limits<T>::infinity());
  }
  for (unsigned threads : {1u, 2u, 3u}) {
    const auto fit = sp::fit_laplace(zcoll::exec::Host{threads}, std::span<const T>(with_specials));
    CHECK(fit.finite_count == x.size());
    CHECK(fit.location == Approx(clean.location).epsilon(1e-12));
    CHECK(fit.scale == Approx(clean.scale).epsilon(1e-12));
    // Blocks are summed in index order whatever the split: bit-identical across thread counts.
    const auto one = sp::fit_laplace(zcoll::exec::Host{1}, std::span<const T>(with_specials));
    CHECK(same_bits(fit.location, one.location));
    CHECK(same_bits(fit.scale, one.scale));
  }
}

TEMPLATE_TEST_CASE("Fits that cannot be used", "[sparsify][laplace]", float, double) {
  using T = TestType;
  CHECK_FALSE(sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>()).usable());
  const std::vector<T> specials{std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity()};
  CHECK_FALSE(sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>(specials)).usable());
  const std::vector<T> constant(1000, T(-3));
  const auto fit = sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>(constant));
  REQUIRE(fit.usable());
  CHECK(fit.scale == 0.0);
  CHECK(sp::laplace_threshold<T>(fit, 0.01) == T(3));
  if constexpr (std::is_same_v<T, double>) {
    // Squares overflow in f64: the caller must fall back to the exact threshold.
    std::vector<T> huge(100, T(1e300));
    huge[0] = T(-1e300);
    CHECK_FALSE(sp::fit_laplace(zcoll::exec::Host{}, std::span<const T>(huge)).usable());
  }
}

TEMPLATE_TEST_CASE("On Laplace data the estimate keeps the target fraction within 5 %", "[sparsify][laplace]", float,
                   double) {
  using T = TestType;
  // 2^20 samples: the tail count at 1 % has a relative standard deviation of 1 %, the scale estimate
  // moves the fraction by about ln(1 / f) times its own 0.1 %; 5 % is four to five of those combined.
  for (double mu : {0.0, 0.1}) {
    const auto x = laplace_sample<T>(1 << 20, mu, 1.0, 9);
    const auto fit = sp::fit_laplace(zcoll::exec::Host{2}, std::span<const T>(x));
    for (double f : {0.01, 0.05, 0.25}) {
      const double obtained = kept_fraction(x, sp::laplace_threshold<T>(fit, f));
      WARN(type_name<T>() << " Laplace(" << mu << ", 1) data, target keep fraction " << f << ": the Laplace estimate keeps "
                          << obtained << " (" << (obtained / f - 1.0) * 100.0 << " % off)");
      CHECK(std::fabs(obtained / f - 1.0) < 0.05);
    }
  }
}

TEST_CASE("On Gaussian data the Laplace estimate keeps less than the target (its tail is heavier)",
          "[sparsify][laplace]") {
  std::mt19937_64 rng(seed + 10);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> x(1 << 20);
  for (auto& v : x) v = static_cast<float>(normal(rng));
  const auto fit = sp::fit_laplace(zcoll::exec::Host{}, std::span<const float>(x));
  for (double f : {0.01, 0.05}) {
    const double obtained = kept_fraction(x, sp::laplace_threshold<float>(fit, f));
    WARN("Gaussian data, target keep fraction " << f << ": the Laplace estimate keeps " << obtained);
    CHECK(obtained < f);
    CHECK(obtained > 0.0);
  }
}
