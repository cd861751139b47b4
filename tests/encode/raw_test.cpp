#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "support/test_support.hpp"
#include "zcoll/encode/raw.hpp"

using Raw = zcoll::encode::Raw;

TEST_CASE("Raw round-trips residual blocks as 32-bit little-endian words", "[encode][raw]") {
  std::mt19937_64 rng(zcoll_test::seed);
  for (int trial = 0; trial < 1000; ++trial) {
    std::array<std::int32_t, 32> r;
    for (auto& x : r) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
    if (trial == 0) r.fill(0);
    if (trial == 1) r.fill(std::numeric_limits<std::int32_t>::min());
    if (trial == 2) r.fill(std::numeric_limits<std::int32_t>::max());
    std::array<std::byte, Raw::max_block_bytes + 8> out;
    out.fill(std::byte{0xCD});
    REQUIRE(Raw::encode_block(r.data(), out.data()) == 128);
    CHECK(out[128] == std::byte{0xCD});
    for (std::size_t j = 0; j < 32; ++j) {
      const auto u = static_cast<std::uint32_t>(r[j]);
      REQUIRE(std::to_integer<std::uint32_t>(out[4 * j]) == (u & 0xFF));
      REQUIRE(std::to_integer<std::uint32_t>(out[4 * j + 3]) == (u >> 24));
    }
    std::array<std::uint32_t, 32> decoded{};
    REQUIRE(Raw::decode_block(std::span<const std::byte>(out.data(), out.size()), decoded.data()) == 128);
    for (std::size_t j = 0; j < 32; ++j) REQUIRE(static_cast<std::int32_t>(decoded[j]) == r[j]);
  }
}

TEST_CASE("Raw decode rejects truncated blocks", "[encode][raw]") {
  std::array<std::byte, 128> in{};
  std::array<std::uint32_t, 32> decoded{};
  for (std::size_t n = 0; n < in.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    CHECK_THROWS_AS(Raw::decode_block(std::span<const std::byte>(in.data(), n), decoded.data()), zcoll::format_error);
  }
  CHECK(Raw::decode_block(in, decoded.data()) == 128);
}
