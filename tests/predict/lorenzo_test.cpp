#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/predict/lorenzo.hpp"

using Lorenzo = zcoll::predict::Lorenzo1D;

namespace {

constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();

std::vector<std::int32_t> random_codes(std::mt19937_64& rng, std::size_t blocks) {
  std::vector<std::int32_t> codes(blocks * zcoll::block_values);
  std::int64_t walk = 0;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    switch ((i / 64) % 4) {
      case 0: walk += static_cast<std::int64_t>(rng() % 21) - 10; codes[i] = static_cast<std::int32_t>(walk); break;
      case 1: codes[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng())); break;
      case 2: codes[i] = rng() % 2 ? int_min : int_max; break;  // differences wrap modulo 2^32
      default: codes[i] = static_cast<std::int32_t>(rng() % 7) - 3; break;
    }
  }
  return codes;
}

}  // namespace

TEST_CASE("Lorenzo1D forward and inverse round-trip with state carried across blocks", "[predict][lorenzo]") {
  std::mt19937_64 rng(zcoll_test::seed);
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t blocks = 1 + rng() % 40;
    const auto codes = random_codes(rng, blocks);

    Lorenzo::state forward_state{};
    std::vector<std::int32_t> residuals(codes.size());
    for (std::size_t b = 0; b < blocks; ++b) {
      Lorenzo::forward(forward_state, codes.data() + 32 * b, residuals.data() + 32 * b);
      CHECK(forward_state.previous == static_cast<std::uint32_t>(codes[32 * b + 31]));
    }
    // r_i = q_i - q_{i-1} modulo 2^32 over the whole chunk, starting from q_{-1} = 0.
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const std::uint32_t previous = i == 0 ? 0u : static_cast<std::uint32_t>(codes[i - 1]);
      REQUIRE(static_cast<std::uint32_t>(residuals[i]) == static_cast<std::uint32_t>(codes[i]) - previous);
    }

    Lorenzo::state inverse_state{};
    std::vector<std::uint32_t> values(residuals.begin(), residuals.end());
    for (std::size_t b = 0; b < blocks; ++b) Lorenzo::inverse(inverse_state, values.data() + 32 * b);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      INFO("trial " << trial << ", value " << i);
      REQUIRE(static_cast<std::int32_t>(values[i]) == codes[i]);
    }
    CHECK(inverse_state.previous == forward_state.previous);
  }
}

TEST_CASE("Lorenzo1D skip_block moves the state as inverse does, from the residuals' sum alone", "[predict][lorenzo]") {
  std::mt19937_64 rng(zcoll_test::seed + 1);
  for (int trial = 0; trial < 200; ++trial) {
    const auto codes = random_codes(rng, 1 + rng() % 8);  // walks, random words, extremes that wrap
    std::vector<std::uint32_t> residuals(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) {
      residuals[i] = static_cast<std::uint32_t>(codes[i]) - (i == 0 ? 0u : static_cast<std::uint32_t>(codes[i - 1]));
    }
    Lorenzo::state inverse_state{}, skipped{};
    inverse_state.previous = skipped.previous = static_cast<std::uint32_t>(rng());
    for (std::size_t first = 0; first < residuals.size(); first += 32) {
      std::uint32_t sum = 0;
      for (std::size_t j = 0; j < 32; ++j) sum += residuals[first + j];
      Lorenzo::inverse(inverse_state, residuals.data() + first);
      Lorenzo::skip_block(skipped, sum);
      REQUIRE(skipped.previous == inverse_state.previous);
    }
  }
}

TEST_CASE("Lorenzo1D state restarts from zero", "[predict][lorenzo]") {
  std::array<std::int32_t, 32> codes;
  codes.fill(int_min);
  std::array<std::int32_t, 32> residuals{};
  Lorenzo::state s{};
  Lorenzo::forward(s, codes.data(), residuals.data());
  CHECK(residuals[0] == int_min);  // 0 - 0 + INT32_MIN
  for (std::size_t j = 1; j < 32; ++j) CHECK(residuals[j] == 0);
  // The extreme jump: INT32_MAX after INT32_MIN wraps to -1.
  codes.fill(int_max);
  Lorenzo::forward(s, codes.data(), residuals.data());
  CHECK(residuals[0] == -1);
}

TEST_CASE("Lorenzo1D inverse of any residuals wraps instead of overflowing", "[predict][lorenzo]") {
  std::array<std::uint32_t, 32> values;
  values.fill(0x8000'0000u);
  Lorenzo::state s{};
  s.previous = 0x7FFF'FFFFu;
  Lorenzo::inverse(s, values.data());
  CHECK(values[0] == 0xFFFF'FFFFu);
  CHECK(values[1] == 0x7FFF'FFFFu);
  CHECK(s.previous == values[31]);
}
