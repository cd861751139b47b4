#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/bit_io.hpp"

namespace {

std::uint64_t low_bits(std::uint64_t value, unsigned width) {
  return width == 0 ? 0 : value & (~std::uint64_t{0} >> (64 - width));
}

}  // namespace

TEST_CASE("bit_writer and bit_reader round-trip random fields of 0..57 bits", "[core][bit_io]") {
  std::mt19937_64 rng(zcoll_test::seed);
  std::uniform_int_distribution<unsigned> width_of(0, zcoll::bit_writer::max_width_bits);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::pair<std::uint64_t, unsigned>> fields(1 + rng() % 300);
    std::size_t total_bits = 0;
    for (auto& [value, width] : fields) {
      width = width_of(rng);
      value = rng();  // the writer must drop the bits above `width`
      total_bits += width;
    }
    const std::size_t total_bytes = (total_bits + 7) / 8;
    std::vector<std::byte> buffer(total_bytes + 8, std::byte{0xEE});
    zcoll::bit_writer out(std::span<std::byte>(buffer).first(total_bytes));
    for (const auto& [value, width] : fields) out.write(value, width);
    REQUIRE(out.flush() == total_bytes);
    for (std::size_t i = total_bytes; i < buffer.size(); ++i) REQUIRE(buffer[i] == std::byte{0xEE});

    zcoll::bit_reader in(std::span<const std::byte>(buffer).first(total_bytes));
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const auto [value, width] = fields[i];
      INFO("trial " << trial << ", field " << i << " of width " << width);
      REQUIRE(in.read(width) == low_bits(value, width));
    }
    CHECK(in.bytes_consumed() == total_bytes);
    // The flush padding reads as zeros, and nothing past it.
    const unsigned padding = static_cast<unsigned>(8 * total_bytes - total_bits);
    CHECK(in.read(padding) == 0);
    CHECK_THROWS_AS(in.read(1), zcoll::format_error);
  }
}

TEST_CASE("bit_writer packs least significant bit first", "[core][bit_io]") {
  std::vector<std::byte> buffer(3);
  zcoll::bit_writer out(buffer);
  out.write(0b1, 1);
  out.write(0b10, 2);
  out.write(0b11111, 5);
  out.write(0xABC, 12);
  CHECK(out.flush() == 3);
  CHECK(std::to_integer<unsigned>(buffer[0]) == 0b11111'10'1u);
  CHECK(std::to_integer<unsigned>(buffer[1]) == 0xBCu);
  CHECK(std::to_integer<unsigned>(buffer[2]) == 0x0Au);
}

TEST_CASE("bit_reader raises format_error on overrun", "[core][bit_io]") {
  std::vector<std::byte> buffer(5, std::byte{0xFF});
  SECTION("a field that straddles the end") {
    zcoll::bit_reader in(buffer);
    CHECK(in.read(33) == (std::uint64_t{1} << 33) - 1);
    CHECK_THROWS_AS(in.read(8), zcoll::format_error);
  }
  SECTION("exactly the whole buffer, then one bit more") {
    zcoll::bit_reader in(buffer);
    CHECK(in.read(40) == (std::uint64_t{1} << 40) - 1);
    CHECK(in.read(0) == 0);
    CHECK_THROWS_AS(in.read(1), zcoll::format_error);
  }
  SECTION("an empty buffer") {
    zcoll::bit_reader in(std::span<const std::byte>{});
    CHECK(in.read(0) == 0);
    CHECK_THROWS_AS(in.read(1), zcoll::format_error);
    CHECK_THROWS_AS(in.read(57), zcoll::format_error);
  }
  SECTION("widths above 57 are argument errors") {
    zcoll::bit_reader in(buffer);
    CHECK_THROWS_AS(in.read(58), zcoll::argument_error);
  }
}

TEST_CASE("bit_writer raises argument_error when full or given a too-wide field", "[core][bit_io]") {
  std::vector<std::byte> buffer(4, std::byte{0});
  SECTION("full") {
    zcoll::bit_writer out(std::span<std::byte>(buffer).first(2));
    out.write(0xFFFF, 16);
    CHECK_THROWS_AS(out.write(1, 8), zcoll::argument_error);
    CHECK(buffer[2] == std::byte{0});
  }
  SECTION("flush of a partial byte into a full buffer") {
    zcoll::bit_writer out(std::span<std::byte>(buffer).first(1));
    out.write(0xFF, 8);
    out.write(1, 1);
    CHECK_THROWS_AS(out.flush(), zcoll::argument_error);
    CHECK(buffer[1] == std::byte{0});
  }
  SECTION("too wide") {
    zcoll::bit_writer out(buffer);
    CHECK_THROWS_AS(out.write(0, 58), zcoll::argument_error);
    CHECK_THROWS_AS(out.write(0, 64), zcoll::argument_error);
  }
}
