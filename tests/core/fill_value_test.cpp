#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "zcoll/core/fill_value.hpp"

TEST_CASE("fill_bits_of: the value of the data's type nearest to the number", "[core][fill]") {
  using zcoll::fill_bits_of;
  // NetCDF's -1e34f: the float nearest to -1e34, not an error.
  CHECK(fill_bits_of<float>(-1e34) == std::bit_cast<std::uint32_t>(-1e34f));
  CHECK(zcoll::fill_value_of<float>(fill_bits_of<float>(-1e34)) == static_cast<double>(-1e34f));
  CHECK(zcoll::fill_value_of<float>(fill_bits_of<float>(-1e34)) != -1e34);
  CHECK(fill_bits_of<float>(0.1) == std::bit_cast<std::uint32_t>(0.1f));
  // Halfway between two floats: to the even one (1 + 2^-24 lies between 1 and 1 + 2^-23).
  CHECK(fill_bits_of<float>(1.0 + std::ldexp(1.0, -24)) == std::bit_cast<std::uint32_t>(1.0f));
  CHECK(fill_bits_of<float>(1.0 + 3 * std::ldexp(1.0, -24)) == std::bit_cast<std::uint32_t>(1.0f + 0x1p-22f));
  // Doubles are exact; -0.0 stays -0.0 (matched bit for bit, it is not 0.0).
  CHECK(fill_bits_of<double>(0.1) == std::bit_cast<std::uint64_t>(0.1));
  CHECK(fill_bits_of<float>(-0.0) == std::bit_cast<std::uint32_t>(-0.0f));
  // NaN and infinities are what they are.
  CHECK(std::isnan(std::bit_cast<float>(fill_bits_of<float>(std::numeric_limits<double>::quiet_NaN()))));
  CHECK(fill_bits_of<float>(-std::numeric_limits<double>::infinity()) ==
        std::bit_cast<std::uint32_t>(-std::numeric_limits<float>::infinity()));
  // The largest float as a user types it (3.4028235e38 is above FLT_MAX but rounds to it).
  CHECK(fill_bits_of<float>(3.4028235e38) == std::bit_cast<std::uint32_t>(std::numeric_limits<float>::max()));
  CHECK_FALSE(fill_bits_of<float>(std::optional<double>{}).has_value());
}

TEST_CASE("fill_bits_of: a finite number beyond the type's range is an argument error", "[core][fill]") {
  CHECK_THROWS_AS(zcoll::fill_bits_of<float>(1e39), zcoll::argument_error);
  CHECK_THROWS_WITH(zcoll::fill_bits_of<float>(-3.5e38),
                    Catch::Contains("fill_value -3.5e+38") && Catch::Contains("beyond the range of f32"));
  CHECK_NOTHROW(zcoll::fill_bits_of<double>(1e300));
}
