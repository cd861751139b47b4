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
sums run_steps(const Codec& codec, zcoll::state_of<Codec>& state, std::size_t n, int steps, bool feedback) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gradient(0.0, 0.02);
  sums s{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  std::vector<double> x(n), received(n);
  for (int step = 0; step < steps; ++step) {
    for (auto& v : x) v = gradient(rng);
    std::vector<std::byte> stream;
    if constexpr (requires { codec.inner(); }) {
      stream = feedback ? zcoll::compress(codec, state, x) : codec.inner().compress(x);
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
  zcoll::codec_state<decltype(codec)> state;
  const auto with = run_steps(codec, state.at(7), 1000, steps, true);
  const auto without = run_steps(codec, state.at(8), 1000, steps, false);
  CHECK(with.worst_gap() <= eb * (1 + 1e-9) + 1e-12 * steps);
  CHECK(without.worst_gap() > 3 * eb);  // the control: the test can tell the two apart
  const auto residual = state.at(7).residual_values<double>();
  REQUIRE(residual.size() == 1000);
  for (double e : residual) REQUIRE(std::abs(e) <= eb * (1 + 1e-9));
}

TEST_CASE("ErrorFeedback: keys are independent tensors; a key keeps its length and type", "[codec][error_feedback]") {
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{{.error_bound = zcoll::absolute(1.0)}};
  zcoll::codec_state<decltype(codec)> state;
  const std::vector<float> a(100, 0.3f), b(50, -0.4f);
  (void)zcoll::compress(codec, state.at(1), a);
  (void)zcoll::compress(codec, state.at(2), b);
  const auto residual = [&](zcoll::state_key key) {
    const auto values = state.at(key).residual_values<float>();
    return std::vector<float>(values.begin(), values.end());
  };
  CHECK(residual(1) == std::vector<float>(100, 0.3f));  // 0.3 quantizes to 0: all of it carried
  CHECK(residual(2) == std::vector<float>(50, -0.4f));
  CHECK(state.find(3) == nullptr);
  CHECK_THROWS_AS(zcoll::compress(codec, state.at(1), b), zcoll::argument_error);                     // another length
  CHECK_THROWS_AS(zcoll::compress(codec, state.at(1), std::vector<double>(100)), zcoll::argument_error);  // another type
  CHECK(state.at(1).residual_values<double>().empty());  // a float residual read as double: none
  // The second step sends 0.6, which rounds to 1 bin of width 2: carried 0.6 - 0 or 0.6 - 2 ... within 1.
  (void)zcoll::compress(codec, state.at(1), a);
  for (float e : residual(1)) CHECK(std::abs(e) <= 1.0f);
  state.erase(1);
  CHECK(state.find(1) == nullptr);
  CHECK(residual(1).empty());  // at() makes a fresh entry
  state.clear();
  CHECK(state.size() == 0);
}

// The algorithm, written out with the plain codec: z = x + e; send C(z); e = z - decode(C(z)), NaN and
// Inf leaving no residual. ErrorFeedback with one state reused over the steps must give these bytes.
TEST_CASE("ErrorFeedback: a state reused across calls gives the streams of the algorithm, step by step",
          "[codec][error_feedback]") {
  const zcoll::FZLight plain{{.error_bound = zcoll::absolute(0.05)}};
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{plain};
  zcoll::ErrorFeedback<zcoll::FZLight>::state state;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gradient(0.0f, 0.03f);
  std::vector<float> x(333), e(x.size(), 0.0f), z(x.size());
  for (int step = 0; step < 25; ++step) {
    for (auto& v : x) v = gradient(rng);
    if (step == 7) x[11] = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t i = 0; i < x.size(); ++i) z[i] = x[i] + e[i];
    const auto expected = plain.compress(z);
    const auto decoded = plain.decompress<float>(expected);
    for (std::size_t i = 0; i < x.size(); ++i) e[i] = std::isfinite(z[i] - decoded[i]) ? z[i] - decoded[i] : 0.0f;
    INFO("step " << step);
    REQUIRE(zcoll::compress(codec, state, x) == expected);
    const auto carried = state.residual_values<float>();
    REQUIRE(std::equal(carried.begin(), carried.end(), e.begin(), e.end()));
  }
}

TEST_CASE("ErrorFeedback: the stream is the inner codec's; NaN and Inf leave no residual", "[codec][error_feedback]") {
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{{.error_bound = zcoll::absolute(0.01)}};
  std::vector<double> x(64, 0.5);
  x[3] = std::numeric_limits<double>::quiet_NaN();
  x[4] = std::numeric_limits<double>::infinity();
  x[5] = -std::numeric_limits<double>::infinity();
  zcoll::ErrorFeedback<zcoll::FZLight>::state state;
  const auto stream = zcoll::compress(codec, state, x);
  const auto plain = codec.inner().decompress<double>(stream);
  CHECK(std::isnan(plain[3]));
  CHECK(plain[4] == std::numeric_limits<double>::infinity());
  CHECK(plain[5] == -std::numeric_limits<double>::infinity());
  for (double e : state.residual_values<double>()) CHECK(std::isfinite(e));
  // The next step is not poisoned.
  x[3] = x[4] = x[5] = 0.5;
  const auto next = codec.decompress<double>(zcoll::compress(codec, state, x));
  for (double v : next) CHECK(std::abs(v - 0.5) <= 0.02);
}

TEST_CASE("ErrorFeedback<TopK>: the residual comes from the encode pass, the dropped entries", "[codec][error_feedback]") {
  static_assert(zcoll::detail::fuses_residual<zcoll::TopK, float>);
  const zcoll::ErrorFeedback<zcoll::TopK> codec{zcoll::TopK{{}, {.keep_fraction = 0.1}}};
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);  // the top 10 are 91..100
  zcoll::codec_state<decltype(codec)> state;
  const auto sent = codec.decompress<float>(zcoll::compress(codec, state.at(3), x));
  const auto residual = state.at(3).residual_values<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    CHECK(sent[i] + residual[i] == x[i]);  // what was not sent is carried, exactly
    CHECK((i >= 90 ? sent[i] : residual[i]) == x[i]);
  }
}
