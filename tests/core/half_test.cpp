#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "zcoll/core/half.hpp"

namespace sf = zcoll::small_float;

TEST_CASE("half_to_float is the exact f16 value of every code", "[core][half]") {
  // The reference: the value the fields define, computed with ldexp (independent of the bit fold).
  for (std::uint32_t code = 0; code <= 0xFFFF; ++code) {
    const auto h = static_cast<std::uint16_t>(code);
    const int exponent = static_cast<int>((code >> 10) & 0x1F), mantissa = static_cast<int>(code & 0x3FF);
    const double sign = (code & 0x8000) != 0 ? -1.0 : 1.0;
    const float value = sf::half_to_float(h);
    INFO("code " << code);
    if (exponent == 0x1F) {
      REQUIRE((mantissa == 0 ? std::isinf(value) : std::isnan(value)));
      REQUIRE(std::signbit(value) == (sign < 0));
    } else {
      const double expected = exponent == 0 ? sign * std::ldexp(mantissa, -24)
                                            : sign * std::ldexp(1024 + mantissa, exponent - 25);
      REQUIRE(static_cast<double>(value) == expected);
      REQUIRE(std::signbit(value) == (sign < 0));  // -0 stays -0
    }
  }
  CHECK(sf::half_to_float(0x3C00) == 1.0f);
  CHECK(sf::half_to_float(0x7BFF) == 65504.0f);
  CHECK(sf::half_to_float(0x0001) == 0x1p-24f);
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

#if ZCOLL_HAS_F16C
TEST_CASE("The F16C conversions give the integer forms' bits", "[core][half]") {
  for (std::uint32_t code = 0; code <= 0xFFFF; ++code) {
    const auto h = static_cast<std::uint16_t>(code);
    INFO("code " << code);
    const float f16c = sf::half_to_float_f16c(h), portable = sf::half_to_float(h);
    if (std::isnan(portable)) {
      REQUIRE(std::isnan(f16c));  // F16C quiets a signalling NaN; the portable form keeps the payload
    } else {
      REQUIRE(std::bit_cast<std::uint32_t>(f16c) == std::bit_cast<std::uint32_t>(portable));
    }
  }
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> exponent(-30.0, 15.9);
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<float>(std::exp2(exponent(rng)));
    INFO("v = " << v);
    REQUIRE(sf::half_bits_f16c<_MM_FROUND_TO_NEG_INF>(v) == sf::half_bits_toward(v, false));
    REQUIRE(sf::half_bits_f16c<_MM_FROUND_TO_POS_INF>(v) == sf::half_bits_toward(v, true));
  }
}
#endif
