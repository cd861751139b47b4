// DCT-MP's per-row selection (sparsify/row_topk.hpp) and the mask applied backward (sparsify/mask.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/sparsify/mask.hpp"
#include "zcoll/sparsify/row_topk.hpp"

using namespace zcoll_test;
namespace sp = zcoll::sparsify;

namespace {

/// The columns each row keeps by a stable sort: NaN first (above every magnitude), then |x| decreasing,
/// ties by column; the first K. Written with floating-point compares, independent of the keys.
template <class T>
std::vector<bool> reference_mask(const std::vector<T>& x, std::size_t dim, std::size_t keep) {
  std::vector<bool> kept(x.size(), false);
  for (std::size_t r = 0; r < x.size() / dim; ++r) {
    std::vector<std::size_t> columns(dim);
    std::iota(columns.begin(), columns.end(), 0);
    const T* row = x.data() + r * dim;
    std::stable_sort(columns.begin(), columns.end(), [&](std::size_t a, std::size_t b) {
      const bool nan_a = std::isnan(row[a]), nan_b = std::isnan(row[b]);
      if (nan_a || nan_b) return nan_a && !nan_b;
      return std::fabs(row[a]) > std::fabs(row[b]);
    });
    for (std::size_t c = 0; c < keep; ++c) kept[r * dim + columns[c]] = true;
  }
  return kept;
}

template <class T>
std::vector<T> random_rows(std::size_t n, std::uint64_t offset, unsigned distinct) {
  std::mt19937_64 rng(seed + offset);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> x(n);
  for (auto& v : x) {
    v = distinct == 0 ? static_cast<T>(normal(rng)) : static_cast<T>((rng() & 1 ? 1.0 : -1.0) * static_cast<double>(rng() % distinct));
  }
  return x;
}

struct selection {
  std::vector<std::byte> mask;
  std::vector<double> values;  // as double so that float and double compare alike
  std::vector<std::uint64_t> residual_bits;
};

/// Runs row_topk_with_residual and checks everything against the reference; returns what it produced.
template <class T>
selection check_rows(const std::vector<T>& x, std::size_t dim, double keep_fraction, unsigned threads,
                     const std::string& what) {
  INFO(what << ", " << type_name<T>() << ", n = " << x.size() << ", dim = " << dim << ", keep_fraction = " << keep_fraction
            << ", threads = " << threads);
  const std::size_t rows = x.size() / dim, keep = sp::row_keep_count(dim, keep_fraction);
  REQUIRE(keep == std::max<std::size_t>(1, std::min(dim, static_cast<std::size_t>(std::ceil(keep_fraction * static_cast<double>(dim))))));
  std::vector<std::byte> mask(sp::mask_size_bytes(x.size()), std::byte{0xFF});  // stale bits must be cleared
  std::vector<T> values(rows * keep + 3, T(-7));
  std::vector<T> residual(x.size(), T(-9));
  const zcoll::exec::Host exec{threads};
  REQUIRE(sp::row_topk_with_residual(exec, std::span<const T>(x), dim, keep_fraction, std::span<std::byte>(mask),
                                     std::span<T>(values), std::span<T>(residual)) == rows * keep);
  const auto expected = reference_mask(x, dim, keep);
  std::size_t v = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (sp::mask_test(mask, i) != expected[i]) {
      INFO("element " << i << " (row " << i / dim << ", column " << i % dim << ") = " << x[i]);
      FAIL("the mask differs from a stable per-row sort's");
    }
    if (expected[i]) {
      REQUIRE(same_bits(values[v++], x[i]));
      REQUIRE(same_bits(residual[i], T(0)));
    } else {
      REQUIRE(same_bits(residual[i], x[i]));
    }
  }
  REQUIRE(v == rows * keep);
  REQUIRE(same_bits(values[rows * keep], T(-7)));  // nothing written past rows · K
  if (x.size() % 8 != 0) REQUIRE((std::to_integer<unsigned>(mask.back()) >> (x.size() % 8)) == 0u);
  REQUIRE(sp::mask_popcount(mask) == rows * keep);

  // row_topk (without residual) gives the same mask and values.
  std::vector<std::byte> mask2(mask.size());
  std::vector<T> values2(rows * keep);
  sp::row_topk(exec, std::span<const T>(x), dim, keep_fraction, std::span<std::byte>(mask2), std::span<T>(values2));
  REQUIRE(mask2 == mask);
  for (std::size_t i = 0; i < values2.size(); ++i) REQUIRE(same_bits(values2[i], values[i]));

  selection s{mask, {}, {}};
  for (std::size_t i = 0; i < rows * keep; ++i) s.values.push_back(static_cast<double>(values[i]));
  for (T r : residual) s.residual_bits.push_back(static_cast<std::uint64_t>(bits(r)));
  return s;
}

template <class T>
void check_rows_all_threads(const std::vector<T>& x, std::size_t dim, double keep_fraction, const std::string& what) {
  const selection one = check_rows(x, dim, keep_fraction, 1, what);
  for (unsigned threads : {2u, 3u}) {
    const selection more = check_rows(x, dim, keep_fraction, threads, what);
    REQUIRE(more.mask == one.mask);
    REQUIRE(more.residual_bits == one.residual_bits);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("row_topk masks equal a per-row sort's", "[sparsify][row_topk]", float, double) {
  using T = TestType;
  std::uint64_t offset = 0;
  for (std::size_t dim : std::vector<std::size_t>{1, 2, 7, 32, 33, 100, 1024}) {
    for (std::size_t rows : std::vector<std::size_t>{1, 3, 8, 17}) {
      for (double f : {0.01, 0.05, 0.25, 0.5, 1.0}) {
        check_rows_all_threads(random_rows<T>(rows * dim, ++offset, 0), dim, f, "normal");
        check_rows_all_threads(random_rows<T>(rows * dim, ++offset, 4), dim, f, "4 distinct magnitudes (ties)");
      }
    }
  }
}

TEMPLATE_TEST_CASE("row_topk on adversarial rows", "[sparsify][row_topk]", float, double) {
  using T = TestType;
  using lim = std::numeric_limits<T>;
  const std::size_t dim = 13, rows = 11;
  auto x = random_rows<T>(rows * dim, 99, 0);
  // Row 0: NaNs (more than K), row 1: ±Inf, row 2: all zero and -0, row 3: constant, row 4: denormals,
  // row 5: one NaN among ties, row 6: ±max.
  for (std::size_t j = 0; j < dim; ++j) {
    x[0 * dim + j] = j % 2 ? lim::quiet_NaN() : T(j);
    x[1 * dim + j] = j % 3 == 0 ? (j % 2 ? lim::infinity() : -lim::infinity()) : T(j);
    x[2 * dim + j] = j % 2 ? T(0) : T(-0.0);
    x[3 * dim + j] = T(-4.5);
    x[4 * dim + j] = static_cast<T>(static_cast<double>(j % 4) * lim::denorm_min());
    x[5 * dim + j] = j == 9 ? -lim::quiet_NaN() : T(1);
    x[6 * dim + j] = j % 2 ? lim::max() : lim::lowest();
  }
  for (double f : {0.1, 0.3, 0.7, 1.0}) check_rows_all_threads(x, dim, f, "adversarial rows");
  SECTION("empty input") {
    std::vector<std::byte> mask;
    std::vector<T> values;
    CHECK(sp::row_topk(zcoll::exec::Host{}, std::span<const T>(), 4, 0.5, std::span<std::byte>(mask), std::span<T>(values)) == 0);
  }
}

TEMPLATE_TEST_CASE("The backward pass applies the forward mask to the gradient", "[sparsify][row_topk][mask]", float,
                   double) {
  using T = TestType;
  const std::size_t dim = 37, rows = 19, n = dim * rows;
  const auto activations = random_rows<T>(n, 5, 0);
  const auto gradient = random_rows<T>(n, 6, 0);
  const std::size_t keep = sp::row_keep_count(dim, 0.2);
  std::vector<std::byte> mask(sp::mask_size_bytes(n));
  std::vector<T> values(rows * keep);
  sp::row_topk(zcoll::exec::Host{}, std::span<const T>(activations), dim, 0.2, std::span<std::byte>(mask), std::span<T>(values));
  const auto expected = reference_mask(activations, dim, keep);

  for (unsigned threads : {1u, 2u, 3u}) {
    const zcoll::exec::Host exec{threads};
    // Dense: X_grad ⊙ M.
    std::vector<T> masked(n, T(-1));
    sp::apply_mask(exec, std::span<const T>(gradient), std::span<const std::byte>(mask), std::span<T>(masked));
    // Packed: the gradient entries at the forward's positions, in the forward's order.
    std::vector<T> packed(rows * keep, T(-1));
    REQUIRE(sp::gather_masked(exec, std::span<const T>(gradient), std::span<const std::byte>(mask), std::span<T>(packed)) ==
            rows * keep);
    std::size_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      INFO("element " << i << ", threads " << threads);
      REQUIRE(same_bits(masked[i], expected[i] ? gradient[i] : T(0)));
      if (expected[i]) {
        REQUIRE(same_bits(packed[v], gradient[i]));
        // The same slot of the forward values holds this position's activation.
        REQUIRE(same_bits(values[v], activations[i]));
        ++v;
      }
    }
    // The receiver's dense form: scatter is gather's inverse.
    std::vector<T> dense(n, T(-1));
    sp::scatter_masked(exec, std::span<const T>(packed), std::span<const std::byte>(mask), std::span<T>(dense));
    for (std::size_t i = 0; i < n; ++i) REQUIRE(same_bits(dense[i], masked[i]));
    // In place: the gradient buffer itself becomes X_grad ⊙ M.
    std::vector<T> in_place = gradient;
    sp::apply_mask(exec, std::span<const T>(in_place), std::span<const std::byte>(mask), std::span<T>(in_place));
    for (std::size_t i = 0; i < n; ++i) REQUIRE(same_bits(in_place[i], masked[i]));
  }
}

TEST_CASE("Mask helpers on sizes around the word boundaries", "[sparsify][mask]") {
  std::mt19937_64 rng(seed + 3);
  for (std::size_t n : std::vector<std::size_t>{0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 1000, 4099}) {
    std::vector<float> x(n);
    for (auto& v : x) v = static_cast<float>(rng() % 100) + 1.0f;
    std::vector<std::byte> mask(sp::mask_size_bytes(n));
    std::size_t set = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (rng() % 3 == 0) {
        mask[i / 8] |= static_cast<std::byte>(1u << (i % 8));
        ++set;
      }
    }
    INFO("n = " << n);
    CHECK(sp::mask_popcount(mask) == set);
    for (unsigned threads : {1u, 3u}) {
      std::vector<float> packed(set + 1, -1.0f);
      REQUIRE(sp::gather_masked(zcoll::exec::Host{threads}, std::span<const float>(x), std::span<const std::byte>(mask),
                                std::span<float>(packed)) == set);
      CHECK(packed[set] == -1.0f);
      std::vector<float> dense(n, -1.0f);
      sp::scatter_masked(zcoll::exec::Host{threads}, std::span<const float>(packed).first(set),
                         std::span<const std::byte>(mask), std::span<float>(dense));
      for (std::size_t i = 0; i < n; ++i) REQUIRE(dense[i] == (sp::mask_test(mask, i) ? x[i] : 0.0f));
    }
  }
}

TEST_CASE("row_topk and the mask helpers reject bad arguments", "[sparsify][row_topk][mask]") {
  std::vector<float> x(12, 1.0f), values(12), residual(12);
  std::vector<std::byte> mask(2);
  const zcoll::exec::Host exec{};
  auto run = [&](std::size_t dim, double f, std::size_t mask_bytes, std::size_t value_count) {
    std::vector<std::byte> m(mask_bytes);
    std::vector<float> v(value_count);
    sp::row_topk(exec, std::span<const float>(x), dim, f, std::span<std::byte>(m), std::span<float>(v));
  };
  CHECK_NOTHROW(run(4, 0.5, 2, 6));
  CHECK_THROWS_AS(run(0, 0.5, 2, 6), zcoll::argument_error);
  CHECK_THROWS_AS(run(5, 0.5, 2, 6), zcoll::argument_error);   // 12 is not a multiple of 5
  CHECK_THROWS_AS(run(4, 0.0, 2, 6), zcoll::argument_error);
  CHECK_THROWS_AS(run(4, 0.5, 1, 6), zcoll::argument_error);   // mask too small
  CHECK_THROWS_AS(run(4, 0.5, 3, 6), zcoll::argument_error);   // mask too large
  CHECK_THROWS_AS(run(4, 0.5, 2, 5), zcoll::argument_error);   // 3 rows × 2 values
  CHECK_THROWS_AS(sp::row_topk_with_residual(exec, std::span<const float>(x), 4, 0.5, std::span<std::byte>(mask),
                                             std::span<float>(values), std::span<float>(residual).first(11)),
                  zcoll::argument_error);
  std::vector<float> out(11);
  CHECK_THROWS_AS(sp::apply_mask(exec, std::span<const float>(x), std::span<const std::byte>(mask), std::span<float>(out)),
                  zcoll::argument_error);
  mask[0] = std::byte{0xFF};
  std::vector<float> few(7);
  CHECK_THROWS_AS(sp::gather_masked(exec, std::span<const float>(x), std::span<const std::byte>(mask), std::span<float>(few)),
                  zcoll::argument_error);
  CHECK_THROWS_AS(sp::scatter_masked(exec, std::span<const float>(few), std::span<const std::byte>(mask), std::span<float>(x)),
                  zcoll::argument_error);
}
