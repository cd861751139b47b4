#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/quantize/exact.hpp"
#include "zcoll/quantize/linear.hpp"

namespace {

template <class T>
using quantizer_of = zcoll::quantize::Linear::block_quantizer<T>;

template <class T>
using block = std::array<T, zcoll::block_values>;

/// Blocks that probe the quantizer: uniform values, exact multiples of 2eb, the bin edges k*2eb ± eb and
/// their neighbours, values around the code limit, tiny and subnormal values, signed zeros.
template <class T>
block<T> probe_block(std::mt19937_64& rng, double eb) {
  const double step = 2 * eb;
  const double code_limit = quantizer_of<T>::max_code;
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  block<T> x{};
  const auto style = rng() % 6;
  for (auto& v : x) {
    const double k = std::round(unit(rng) * (style == 3 ? code_limit : 1000.0));
    switch (style) {
      case 0: v = static_cast<T>(unit(rng) * 1000.0 * step); break;
      case 1: v = static_cast<T>(k * step); break;
      case 2: {
        const T edge = static_cast<T>(k * step + (rng() % 2 ? eb : -eb));
        const int nudge = static_cast<int>(rng() % 3) - 1;
        v = nudge == 0 ? edge : std::nextafter(edge, nudge > 0 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity());
        break;
      }
      case 3: v = static_cast<T>((k + unit(rng)) * step); break;  // up to the code limit and just past it
      case 4: v = static_cast<T>(unit(rng) * 4) * std::numeric_limits<T>::denorm_min(); break;
      default: v = rng() % 2 ? T(0.0) : T(-0.0); break;
    }
  }
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("Linear quantizer is unusable where no step of T honours the bound", "[quantize][linear]", float,
                   double) {
  using T = TestType;
  CHECK_FALSE(quantizer_of<T>(0.0).usable());
  // 2eb rounds to 0 in T, or 0.5/eb overflows T.
  const double tiny = std::is_same_v<T, float> ? 1e-46 : 1e-320;
  const double tiny_inverse_overflows = std::is_same_v<T, float> ? 1e-40 : 1e-310;
  // 2eb overflows T.
  const double huge = std::is_same_v<T, float> ? 1e39 : 1e308;
  for (double eb : {tiny, tiny_inverse_overflows, huge, std::numeric_limits<double>::max(),
                    std::numeric_limits<double>::denorm_min()}) {
    INFO("eb " << eb);
    CHECK_FALSE(quantizer_of<T>(eb).usable());
  }
  for (double eb : {1e-30, 1e-3, 0.5, 1.0, 1e30}) {
    INFO("eb " << eb);
    CHECK(quantizer_of<T>(eb).usable());
    CHECK(quantizer_of<T>(eb).guaranteed_bound() == eb);
  }
}

TEMPLATE_TEST_CASE("Linear quantizer flags NaN, Inf and values beyond the code range", "[quantize][linear]", float,
                   double) {
  using T = TestType;
  const double eb = 0.5e-3;
  const quantizer_of<T> q(eb);
  REQUIRE(q.usable());
  const double step = 2 * eb;
  const double beyond = (quantizer_of<T>::max_code + 2.0) * step;
  block<T> x{};
  for (std::size_t j = 0; j < 32; ++j) x[j] = static_cast<T>(0.01 * static_cast<double>(j));
  x[1] = std::numeric_limits<T>::quiet_NaN();
  x[4] = -std::numeric_limits<T>::quiet_NaN();
  x[7] = std::numeric_limits<T>::infinity();
  x[9] = -std::numeric_limits<T>::infinity();
  x[12] = static_cast<T>(beyond);
  x[13] = static_cast<T>(-beyond);
  x[20] = std::numeric_limits<T>::max();
  x[21] = std::numeric_limits<T>::lowest();
  x[30] = static_cast<T>(1e30);
  const zcoll::block_mask must_flag = (1u << 1) | (1u << 4) | (1u << 7) | (1u << 9) | (1u << 12) | (1u << 13) |
                                      (1u << 20) | (1u << 21) | (1u << 30);
  std::array<std::int32_t, 32> codes{};
  const zcoll::block_mask flagged = q.quantize(x.data(), codes.data());
  CHECK((flagged & must_flag) == must_flag);
  // The ordinary values here are multiples of 2eb in exact arithmetic, far from the bin edges.
  CHECK((flagged & ~must_flag) == 0u);
}

TEMPLATE_TEST_CASE("Linear quantizer: every unflagged lane dequantizes within eb exactly", "[quantize][linear]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(zcoll_test::seed);
  const std::vector<double> bounds{1e-3,   0.5,    1.0 / 3.0, 1e-7, 123.456, 1e-30, 1e30,
                                   0.1,    2.5e-5, 1e-12,     7.0,  // and the smallest bounds that are usable:
                                   std::is_same_v<T, float> ? 3e-39 : 3e-309};
  for (double eb : bounds) {
    const quantizer_of<T> q(eb);
    INFO("eb " << eb);
    REQUIRE(q.usable());
    std::size_t lanes = 0, flagged_lanes = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const auto x = probe_block<T>(rng, eb);
      std::array<std::int32_t, 32> codes{};
      const zcoll::block_mask flagged = q.quantize(x.data(), codes.data());
      std::array<std::uint32_t, 32> words;
      for (std::size_t j = 0; j < 32; ++j) words[j] = static_cast<std::uint32_t>(codes[j]);
      std::array<T, 34> restored;
      restored.fill(T(-7));
      q.dequantize(words.data(), restored.data() + 1, 32);
      REQUIRE(restored.front() == T(-7));
      REQUIRE(restored.back() == T(-7));
      for (std::size_t j = 0; j < 32; ++j) {
        ++lanes;
        if ((flagged >> j) & 1u) {
          ++flagged_lanes;
          continue;
        }
        INFO("x " << x[j] << ", code " << codes[j] << ", restored " << restored[j + 1]);
        REQUIRE(std::abs(codes[j]) <= quantizer_of<T>::max_code);
        REQUIRE(zcoll::exactly_within(x[j], restored[j + 1], eb));
      }
    }
    // The quantizer flags only what it must: bin edges, values past the code limit, subnormal steps.
    CHECK(flagged_lanes < lanes / 4);
  }
}

TEMPLATE_TEST_CASE("Linear quantizer maps exact multiples of the step to their code", "[quantize][linear]", float,
                   double) {
  using T = TestType;
  std::mt19937_64 rng(zcoll_test::seed + 1);
  for (double eb : {1e-3, 0.5, 0.3, 1e-20}) {
    const quantizer_of<T> q(eb);
    const T step = static_cast<T>(2 * eb);
    block<T> x;
    std::array<std::int32_t, 32> k;
    for (int trial = 0; trial < 200; ++trial) {
      for (std::size_t j = 0; j < 32; ++j) {
        k[j] = static_cast<std::int32_t>(rng() % (2 * 100000 + 1)) - 100000;
        x[j] = static_cast<T>(k[j]) * step;  // exactly the decoder's reconstruction of code k
      }
      std::array<std::int32_t, 32> codes{};
      INFO("eb " << eb);
      REQUIRE(q.quantize(x.data(), codes.data()) == 0u);
      REQUIRE(codes == k);
    }
  }
}

TEMPLATE_TEST_CASE("Linear dequantize writes only the lanes asked for", "[quantize][linear]", float, double) {
  using T = TestType;
  const quantizer_of<T> q(0.25);
  std::array<std::uint32_t, 32> codes;
  for (std::size_t j = 0; j < 32; ++j) codes[j] = static_cast<std::uint32_t>(static_cast<std::int32_t>(j) - 16);
  for (std::size_t lanes = 0; lanes <= 32; ++lanes) {
    std::array<T, 32> out;
    out.fill(T(99));
    q.dequantize(codes.data(), out.data(), lanes);
    for (std::size_t j = 0; j < 32; ++j) {
      REQUIRE(out[j] == (j < lanes ? static_cast<T>(static_cast<double>(static_cast<int>(j) - 16) * 0.5) : T(99)));
    }
  }
}

TEMPLATE_TEST_CASE("Exact quantizer is never usable and flags every lane", "[quantize][exact]", float, double) {
  using T = TestType;
  const zcoll::quantize::Exact::block_quantizer<T> q(0.5);
  CHECK_FALSE(q.usable());
  CHECK(q.guaranteed_bound() == 0.0);
  block<T> x{};
  std::array<std::int32_t, 32> codes;
  codes.fill(5);
  CHECK(q.quantize(x.data(), codes.data()) == ~zcoll::block_mask{0});
  for (auto c : codes) CHECK(c == 0);
}
