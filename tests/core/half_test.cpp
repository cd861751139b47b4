#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "zcoll/core/half.hpp"

namespace sf = zcoll::small_float;

TEST_CASE("half_to_float is the exact f16 value of every code, on this build's path", "[core][half]") {
  // The portable fold (decode_bits) is the reference; with F16C, half_to_float is one instruction.
  for (std::uint32_t code = 0; code <= 0xFFFF; ++code) {
    const auto h = static_cast<std::uint16_t>(code);
    INFO("code " << code);
    REQUIRE(std::bit_cast<std::uint32_t>(sf::half_to_float(h)) == sf::decode_bits<sf::binary16>(h));
  }
  CHECK(sf::half_to_float(0x3C00) == 1.0f);
  CHECK(sf::half_to_float(0x7BFF) == 65504.0f);
  CHECK(sf::half_to_float(0x0001) == 0x1p-24f);
  CHECK(std::isnan(sf::half_to_float(0x7C01)));
}

TEST_CASE("half_bits_toward rounds down and up to the neighbouring f16 values", "[core][half]") {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> exponent(-30.0, 17.0);
  for (int i = 0; i < 20000; ++i) {
    const double v = std::exp2(exponent(rng));
    const std::uint16_t down = sf::half_bits_toward(v, false), up = sf::half_bits_toward(v, true);
    INFO("v = " << v << ", down " << down << ", up " << up);
    REQUIRE(static_cast<double>(sf::half_to_float(down)) <= v);
    REQUIRE(static_cast<double>(sf::half_to_float(up)) >= v);
    REQUIRE(up - down <= 1);  // neighbours (equal when v is an f16 value)
    if (v <= 65504.0) REQUIRE(static_cast<double>(sf::half_to_float(static_cast<std::uint16_t>(down + 1))) > v);
  }
  CHECK(sf::half_bits_toward(1e6, true) == sf::half_infinity_bits);
  CHECK(sf::half_bits_round_down(-1.0) == 0xBC00);
  CHECK(sf::half_bits_round_down(-1e6) == 0xFC00);  // -Inf below -65504
  CHECK(sf::half_bits_round_down(0.0) == 0);
}
