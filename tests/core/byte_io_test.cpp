#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/byte_io.hpp"

TEST_CASE("byte_writer and byte_reader round-trip mixed little-endian values", "[core][byte_io]") {
  std::mt19937_64 rng(zcoll_test::seed);
  std::vector<std::byte> buffer(1 + 2 + 4 + 8 + 4 + 8 + 5);
  const auto u8 = static_cast<std::uint8_t>(rng());
  const auto u16 = static_cast<std::uint16_t>(rng());
  const auto u32 = static_cast<std::uint32_t>(rng());
  const std::uint64_t u64 = rng();
  const float f = -1.5e-7f;
  const double d = 6.02214076e23;
  const std::array<std::byte, 5> raw{std::byte{1}, std::byte{0}, std::byte{0xFF}, std::byte{0x80}, std::byte{7}};

  zcoll::byte_writer out(buffer);
  out.write(u8);
  out.write(u16);
  out.write(u32);
  out.write(u64);
  out.write(f);
  out.write(d);
  out.write_bytes(raw);
  CHECK(out.offset() == buffer.size());
  CHECK(out.remaining() == 0);

  // Little-endian on the wire: the u32 starts with its low byte.
  CHECK(std::to_integer<std::uint32_t>(buffer[3]) == (u32 & 0xFF));
  CHECK(std::to_integer<std::uint32_t>(buffer[6]) == (u32 >> 24));

  zcoll::byte_reader in(buffer);
  CHECK(in.read<std::uint8_t>("u8") == u8);
  CHECK(in.read<std::uint16_t>("u16") == u16);
  CHECK(in.read<std::uint32_t>("u32") == u32);
  CHECK(in.read<std::uint64_t>("u64") == u64);
  CHECK(zcoll_test::same_bits(in.read<float>("f"), f));
  CHECK(zcoll_test::same_bits(in.read<double>("d"), d));
  const auto tail = in.take(raw.size(), "raw");
  CHECK(std::equal(tail.begin(), tail.end(), raw.begin(), raw.end()));
  CHECK(in.offset() == buffer.size());
  CHECK(in.remaining() == 0);
}

TEST_CASE("byte_reader raises format_error when reading past the end", "[core][byte_io]") {
  std::vector<std::byte> buffer(7, std::byte{0x11});
  SECTION("a word that straddles the end") {
    zcoll::byte_reader in(buffer);
    CHECK(in.read<std::uint32_t>("first") == 0x11111111u);
    CHECK_THROWS_AS(in.read<std::uint32_t>("second"), zcoll::format_error);
    // A failed read consumes nothing: the three bytes left can still be read.
    CHECK(in.offset() == 4);
    CHECK(in.read<std::uint16_t>("third") == 0x1111u);
    CHECK(in.read<std::uint8_t>("fourth") == 0x11u);
    CHECK_THROWS_AS(in.read<std::uint8_t>("fifth"), zcoll::format_error);
  }
  SECTION("take more than remains") {
    zcoll::byte_reader in(buffer);
    CHECK_THROWS_AS(in.take(8, "too much"), zcoll::format_error);
    CHECK(in.take(7, "all").size() == 7);
    CHECK(in.take(0, "nothing").empty());
    CHECK_THROWS_AS(in.take(1, "one more"), zcoll::format_error);
  }
  SECTION("an empty span") {
    zcoll::byte_reader in(std::span<const std::byte>{});
    CHECK_THROWS_AS(in.read<std::uint8_t>("byte"), zcoll::format_error);
    CHECK_THROWS_AS(in.read<double>("double"), zcoll::format_error);
  }
  SECTION("a huge size does not wrap around") {
    zcoll::byte_reader in(buffer);
    in.take(3, "skip");
    CHECK_THROWS_AS(in.take(std::numeric_limits<std::size_t>::max(), "huge"), zcoll::format_error);
    CHECK_THROWS_AS(in.take(std::numeric_limits<std::size_t>::max() - 1, "huge"), zcoll::format_error);
  }
  SECTION("the message names the field") {
    zcoll::byte_reader in(buffer);
    CHECK_THROWS_WITH(in.take(9, "chunk size index"), Catch::Contains("chunk size index"));
  }
}

TEST_CASE("byte_writer raises argument_error when writing past the end", "[core][byte_io]") {
  std::vector<std::byte> buffer(10, std::byte{0});
  const std::vector<std::byte> sentinel(buffer.size() + 8, std::byte{0x5C});
  SECTION("a word that does not fit") {
    zcoll::byte_writer out(std::span<std::byte>(buffer).first(6));
    out.write(std::uint32_t{0xDDCCBBAA});
    CHECK_THROWS_AS(out.write(std::uint32_t{1}), zcoll::argument_error);
    CHECK(out.offset() == 4);
    out.write(std::uint16_t{0x2211});
    CHECK_THROWS_AS(out.write(std::uint8_t{1}), zcoll::argument_error);
    // Nothing was written beyond the span.
    CHECK(buffer[6] == std::byte{0});
    CHECK(buffer[9] == std::byte{0});
  }
  SECTION("write_bytes and claim") {
    zcoll::byte_writer out(buffer);
    CHECK_THROWS_AS(out.write_bytes(sentinel), zcoll::argument_error);
    CHECK(out.offset() == 0);
    out.write_bytes(std::span(sentinel).first(10));
    CHECK_THROWS_AS(out.claim(1), zcoll::argument_error);
    CHECK(out.claim(0).empty());
    out.write_bytes({});  // an empty write always fits
    CHECK(buffer[9] == std::byte{0x5C});
  }
  SECTION("a huge claim does not wrap around") {
    zcoll::byte_writer out(buffer);
    out.claim(4);
    CHECK_THROWS_AS(out.claim(std::numeric_limits<std::size_t>::max()), zcoll::argument_error);
  }
}
