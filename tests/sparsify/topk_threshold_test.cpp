// The exact top-K threshold (sparsify/topk_threshold.hpp) against a plain std::sort of the magnitudes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/sparsify/topk_threshold.hpp"

using namespace zcoll_test;
namespace sp = zcoll::sparsify;

namespace {

/// tau by the definition: sort the non-NaN magnitudes in decreasing order and take the K-th (0 when
/// there are fewer than K). Floating-point compares only, independent of the magnitude keys.
template <class T>
T reference_threshold(const std::vector<T>& x, double keep_fraction) {
  std::vector<T> magnitudes;
  for (T v : x) {
    if (!std::isnan(v)) magnitudes.push_back(std::fabs(v));
  }
  std::sort(magnitudes.begin(), magnitudes.end(), std::greater<T>{});
  const std::size_t k = x.empty() ? 0 : std::max<std::size_t>(1, std::min<std::size_t>(x.size(), static_cast<std::size_t>(std::ceil(keep_fraction * static_cast<double>(x.size())))));
  if (k == 0 || k > magnitudes.size()) return T(0);
  return magnitudes[k - 1];
}

/// The kept set by the documented rule: NaN, or |x| >= tau and x != 0.
template <class T>
std::vector<bool> reference_kept(const std::vector<T>& x, T tau) {
  std::vector<bool> kept(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) kept[i] = std::isnan(x[i]) || (x[i] != 0 && std::fabs(x[i]) >= tau);
  return kept;
}

template <class T>
void check_threshold(const std::vector<T>& x, double keep_fraction, const std::string& what) {
  INFO(what << ", n = " << x.size() << ", keep_fraction = " << keep_fraction << ", " << type_name<T>());
  const T expected = reference_threshold(x, keep_fraction);
  std::vector<zcoll::bits_of<T>> scratch;
  for (unsigned threads : {1u, 2u, 3u}) {
    INFO(threads << " threads");
    const T tau = sp::topk_threshold(zcoll::exec::Host{threads}, std::span<const T>(x), keep_fraction, scratch);
    REQUIRE(same_bits(tau, expected));
    const auto kept = reference_kept(x, expected);
    std::size_t kept_count = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (sp::threshold_keeps(x[i], tau) != kept[i]) {
        INFO("element " << i << " = " << x[i] << ", tau = " << tau);
        FAIL("threshold_keeps disagrees with |x| >= tau && x != 0 || isnan(x)");
      }
      kept_count += kept[i];
    }
    // At least K of the non-NaN, non-zero entries survive, unless there are fewer than K of them.
    std::size_t nonzero = 0;
    for (T v : x) nonzero += !std::isnan(v) && v != 0;
    std::size_t nan = 0;
    for (T v : x) nan += std::isnan(v);
    const std::size_t k = sp::topk_count(x.size(), keep_fraction);
    REQUIRE(kept_count >= std::min(k, nonzero) + nan);
  }
}

template <class T>
std::vector<T> laplace_values(std::size_t n, std::uint64_t offset, double scale = 1.0) {
  std::mt19937_64 rng(seed + offset);
  std::exponential_distribution<double> e(1.0);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>((rng() & 1 ? 1.0 : -1.0) * e(rng) * scale);
  return x;
}

/// Values from a set of `distinct` magnitudes, so that many entries tie at any threshold.
template <class T>
std::vector<T> tied_values(std::size_t n, std::uint64_t offset, unsigned distinct) {
  std::mt19937_64 rng(seed + offset);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>((rng() & 1 ? 1.0 : -1.0) * static_cast<double>(rng() % distinct) * 0.25);
  return x;
}

const std::vector<double> fractions{1e-4, 0.01, 0.05, 0.3, 0.5, 1.0};
const std::vector<std::size_t> sizes{1, 2, 7, 31, 32, 33, 1000, 65536, 65537, 300001};

}  // namespace

TEST_CASE("topk_count is ceil(fraction * n), at least 1 and at most n", "[sparsify][topk_threshold]") {
  CHECK(sp::topk_count(0, 0.5) == 0);
  CHECK(sp::topk_count(1, 1e-9) == 1);
  CHECK(sp::topk_count(100, 0.01) == 1);
  CHECK(sp::topk_count(101, 0.01) == 2);
  CHECK(sp::topk_count(1000, 0.25) == 250);
  CHECK(sp::topk_count(7, 1.0) == 7);
  CHECK(sp::topk_count(16u << 20, 0.01) == 167773);
  for (double bad : {0.0, -0.1, 1.0000001, 2.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    INFO("keep_fraction " << bad);
    CHECK_THROWS_AS(sp::topk_count(10, bad), zcoll::argument_error);
  }
}

TEMPLATE_TEST_CASE("The exact threshold equals the K-th largest magnitude of a sort", "[sparsify][topk_threshold]",
                   float, double) {
  using T = TestType;
  std::uint64_t offset = 0;
  for (std::size_t n : sizes) {
    for (double f : fractions) {
      check_threshold(laplace_values<T>(n, ++offset), f, "Laplace");
      if (n <= 65537) check_threshold(tied_values<T>(n, ++offset, 7), f, "7 distinct magnitudes");
    }
  }
  check_threshold(tied_values<T>(300001, 77, 3), 0.01, "3 distinct magnitudes");
  check_threshold(tied_values<T>(300001, 78, 1000), 0.2, "1000 distinct magnitudes");
}

TEMPLATE_TEST_CASE("The threshold of adversarial inputs", "[sparsify][topk_threshold]", float, double) {
  using T = TestType;
  using lim = std::numeric_limits<T>;
  const T nan = lim::quiet_NaN(), inf = lim::infinity(), tiny = lim::denorm_min();
  SECTION("empty and one element") {
    CHECK(sp::topk_threshold(std::span<const T>(), 0.5) == T(0));
    check_threshold(std::vector<T>{T(-3)}, 0.01, "one element");
    check_threshold(std::vector<T>{nan}, 0.5, "one NaN");
    check_threshold(std::vector<T>{T(-0.0)}, 0.5, "one -0");
  }
  for (std::size_t n : {std::size_t{5}, std::size_t{1000}, std::size_t{200003}}) {
    check_threshold(std::vector<T>(n, T(0)), 0.01, "all zero");
    check_threshold(std::vector<T>(n, T(-2.5)), 0.01, "constant");
    check_threshold(std::vector<T>(n, nan), 0.01, "all NaN");
    check_threshold(std::vector<T>(n, -inf), 0.01, "all -Inf");
    auto x = laplace_values<T>(n, 5, 1e-3);
    for (std::size_t i = 0; i < n; i += 3) x[i] = nan;  // a third NaN: they never count toward K
    x[1] = inf;
    x[n - 1] = -inf;
    check_threshold(x, 0.01, "NaN, +-Inf");
    check_threshold(x, 0.9, "NaN, +-Inf, more K than non-NaN entries");
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>((i % 2 ? -1 : 1) * static_cast<double>(i % 97) * tiny);
    check_threshold(x, 0.05, "denormals");
    for (std::size_t i = 0; i < n; i += 2) x[i] = T(-0.0);
    check_threshold(x, 0.7, "denormals and -0");
    for (std::size_t i = 0; i < n; ++i) x[i] = (i % 5 == 0 ? lim::max() : lim::lowest()) * (i % 3 ? T(1) : T(0.5));
    check_threshold(x, 0.3, "+-max");
  }
}

TEMPLATE_TEST_CASE("Inputs that defeat the sample still get the exact threshold", "[sparsify][topk_threshold]", float,
                   double) {
  using T = TestType;
  const std::size_t n = sp::detail::sample_values * 64;
  const std::size_t stride = n / sp::detail::sample_values;
  // The sampled positions hold zeros, everything else large values: the sample's window misses tau.
  auto x = laplace_values<T>(n, 11);
  for (std::size_t i = 0; i < sp::detail::sample_values; ++i) x[i * stride + stride / 2] = T(0);
  std::vector<zcoll::bits_of<T>> scratch;
  CHECK_FALSE(sp::detail::sampled_select(zcoll::exec::Host{}, std::span<const T>(x), sp::topk_count(n, 0.01), scratch));
  check_threshold(x, 0.01, "sample positions zeroed");
  // Sorted data, and data whose sample sees only the largest values.
  std::sort(x.begin(), x.end());
  check_threshold(x, 0.01, "sorted");
  auto y = laplace_values<T>(n, 12, 1e-6);
  for (std::size_t i = 0; i < sp::detail::sample_values; ++i) y[i * stride + stride / 2] = T(1e3);
  check_threshold(y, 0.05, "sample positions large");
}

TEMPLATE_TEST_CASE("The sampled and the radix selects agree with the sort", "[sparsify][topk_threshold]", float, double) {
  using T = TestType;
  for (std::size_t n : {std::size_t{65537}, std::size_t{250007}}) {
    for (double f : {1e-5, 0.01, 0.5, 1.0}) {
      const auto x = laplace_values<T>(n, 20 + n);
      const auto expected = zcoll::bits_of<T>(std::bit_cast<zcoll::bits_of<T>>(reference_threshold(x, f)));
      const std::size_t k = sp::topk_count(n, f);
      std::vector<zcoll::bits_of<T>> scratch;
      INFO("n = " << n << ", keep_fraction " << f);
      for (unsigned threads : {1u, 2u, 3u}) {
        const zcoll::exec::Host exec{threads};
        CHECK(sp::detail::radix_select(exec, std::span<const T>(x), k, scratch) == expected);
        const auto sampled = sp::detail::sampled_select(exec, std::span<const T>(x), k, scratch);
        REQUIRE(sampled.has_value());  // on smooth random data the window holds tau
        CHECK(*sampled == expected);
      }
    }
  }
}

TEST_CASE("The threshold rule on single values", "[sparsify][topk_threshold]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK(sp::threshold_keeps(nan, inf));
  CHECK(sp::threshold_keeps(-nan, 0.0f));
  CHECK(sp::threshold_keeps(-inf, inf));
  CHECK_FALSE(sp::threshold_keeps(std::numeric_limits<float>::max(), inf));
  CHECK_FALSE(sp::threshold_keeps(0.0f, 0.0f));
  CHECK_FALSE(sp::threshold_keeps(-0.0f, 0.0f));
  CHECK(sp::threshold_keeps(std::numeric_limits<float>::denorm_min(), 0.0f));
  CHECK(sp::threshold_keeps(-2.0f, 2.0f));
  CHECK_FALSE(sp::threshold_keeps(std::nextafter(2.0f, 0.0f), 2.0f));
  CHECK(sp::threshold_rank_key(nan) == 0u);
  CHECK(sp::threshold_rank_key(-inf) == sp::infinity_key<float>);
  CHECK(sp::magnitude_key(-0.0) == 0u);
}
