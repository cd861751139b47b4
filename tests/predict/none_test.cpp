#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>

#include "support/test_support.hpp"
#include "zcoll/predict/none.hpp"

using None = zcoll::predict::None;

TEST_CASE("predict::None is the identity in both directions", "[predict][none]") {
  std::mt19937_64 rng(zcoll_test::seed);
  None::state s{};
  for (int trial = 0; trial < 100; ++trial) {
    std::array<std::int32_t, 32> codes;
    for (auto& c : codes) c = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
    codes[0] = std::numeric_limits<std::int32_t>::min();
    std::array<std::int32_t, 32> residuals{};
    None::forward(s, codes.data(), residuals.data());
    REQUIRE(residuals == codes);
    std::array<std::uint32_t, 32> values;
    for (std::size_t j = 0; j < 32; ++j) values[j] = static_cast<std::uint32_t>(residuals[j]);
    const auto before = values;
    None::inverse(s, values.data());
    REQUIRE(values == before);
  }
}
