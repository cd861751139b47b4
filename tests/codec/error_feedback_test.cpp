#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {
static_assert(zcoll::codec<zcoll::ErrorFeedback<zcoll::FZLight>>);
static_assert(zcoll::ErrorFeedback<zcoll::FZLight>::id == zcoll::FZLight::id);

/// Sums of what was sent and of what went in, per element, over `steps` calls with one key.
struct sums {
  std::vector<double> sent, input;
  double worst_gap() const {
    double gap = 0.0;
    for (std::size_t i = 0; i < sent.size(); ++i) gap = std::max(gap, std::abs(sent[i] - input[i]));
    return gap;
  }
};

template <class Codec>
sums run_steps(const Codec& codec, std::size_t n, int steps, bool feedback) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gradient(0.0, 0.02);
  sums s{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  std::vector<double> x(n), received(n);
  for (int step = 0; step < steps; ++step) {
    for (auto& v : x) v = gradient(rng);
    std::vector<std::byte> stream;
    if constexpr (requires { codec.inner(); }) {
      stream = feedback ? codec.compress(x, 7) : codec.inner().compress(x);
    } else {
      stream = codec.compress(x);
    }
    received = codec.template decompress<double>(stream);
    for (std::size_t i = 0; i < n; ++i) {
      s.sent[i] += received[i];
      s.input[i] += x[i];
    }
  }
  return s;
}
}  // namespace

TEST_CASE("ErrorFeedback: the sum of what was sent tracks the sum of the inputs within one bound",
          "[codec][error_feedback]") {
  // Gradients far below the bound: without feedback almost all of them quantize to 0 and the sums drift
  // apart; with it, sum(sent) = sum(input) - e, and |e| <= eb at every step.
  const double eb = 0.1;
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{{.error_bound = zcoll::absolute(eb)}};
  const int steps = 400;
  const auto with = run_steps(codec, 1000, steps, true);
  const auto without = run_steps(codec, 1000, steps, false);
  CHECK(with.worst_gap() <= eb * (1 + 1e-9) + 1e-12 * steps);
  CHECK(without.worst_gap() > 3 * eb);  // the control: the test can tell the two apart
  const auto residual = codec.residual<double>(7);
  REQUIRE(residual.size() == 1000);
  for (double e : residual) REQUIRE(std::abs(e) <= eb * (1 + 1e-9));
}

TEST_CASE("ErrorFeedback: keys are independent tensors; a key keeps its length and type", "[codec][error_feedback]") {
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{{.error_bound = zcoll::absolute(1.0)}};
  const std::vector<float> a(100, 0.3f), b(50, -0.4f);
  (void)codec.compress(a, 1);
  (void)codec.compress(b, 2);
  CHECK(codec.residual<float>(1) == std::vector<float>(100, 0.3f));  // 0.3 quantizes to 0: all of it carried
  CHECK(codec.residual<float>(2) == std::vector<float>(50, -0.4f));
  CHECK(codec.residual<float>(3).empty());
  CHECK_THROWS_AS(codec.compress(b, 1), zcoll::argument_error);                     // another length
  CHECK_THROWS_AS(codec.compress(std::vector<double>(100), 1), zcoll::argument_error);  // another type
  CHECK_THROWS_AS(codec.residual<double>(1), zcoll::argument_error);
  // The second step sends 0.6, which rounds to 1 bin of width 2: carried 0.6 - 0 or 0.6 - 2 ... within 1.
  (void)codec.compress(a, 1);
  for (float e : codec.residual<float>(1)) CHECK(std::abs(e) <= 1.0f);
  codec.reset(1);
  CHECK(codec.residual<float>(1).empty());
  codec.reset();
  CHECK(codec.residual<float>(2).empty());
}

TEST_CASE("ErrorFeedback: the stream is the inner codec's; NaN and Inf leave no residual", "[codec][error_feedback]") {
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{{.error_bound = zcoll::absolute(0.01)}};
  std::vector<double> x(64, 0.5);
  x[3] = std::numeric_limits<double>::quiet_NaN();
  x[4] = std::numeric_limits<double>::infinity();
  x[5] = -std::numeric_limits<double>::infinity();
  const auto stream = codec.compress(x, 0);
  const auto plain = codec.inner().decompress<double>(stream);
  CHECK(std::isnan(plain[3]));
  CHECK(plain[4] == std::numeric_limits<double>::infinity());
  CHECK(plain[5] == -std::numeric_limits<double>::infinity());
  for (double e : codec.residual<double>(0)) CHECK(std::isfinite(e));
  // The next step is not poisoned.
  x[3] = x[4] = x[5] = 0.5;
  const auto next = codec.decompress<double>(codec.compress(x, 0));
  for (double v : next) CHECK(std::abs(v - 0.5) <= 0.02);
}

TEST_CASE("ErrorFeedback<TopK>: the residual comes from the encode pass, the dropped entries", "[codec][error_feedback]") {
  static_assert(zcoll::detail::fuses_residual<zcoll::TopK, float>);
  const zcoll::ErrorFeedback<zcoll::TopK> codec{zcoll::TopK{{}, {.keep_fraction = 0.1}}};
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);  // the top 10 are 91..100
  const auto sent = codec.decompress<float>(codec.compress(x, 3));
  const auto residual = codec.residual<float>(3);
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    CHECK(sent[i] + residual[i] == x[i]);  // what was not sent is carried, exactly
    CHECK((i >= 90 ? sent[i] : residual[i]) == x[i]);
  }
}
