#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/backend/none.hpp"
#include "zcoll/backend/zstd.hpp"
#include "zcoll/core/error.hpp"

namespace {

/// A coded chunk: its kind byte, then `body` bytes that are mostly zeros (what Huffman writes at coarse
/// bounds) or random (what does not pack).
std::vector<std::byte> chunk_of(std::size_t body, bool compressible, std::uint8_t kind = 2) {
  std::mt19937_64 rng(zcoll_test::seed + body);
  std::vector<std::byte> chunk(1 + body);
  chunk[0] = std::byte{kind};
  for (std::size_t i = 1; i < chunk.size(); ++i) {
    chunk[i] = compressible ? std::byte{static_cast<std::uint8_t>(i % 61 == 0 ? rng() : 0)} : std::byte{static_cast<std::uint8_t>(rng())};
  }
  return chunk;
}

}  // namespace

TEST_CASE("zstd back end: packs what shrinks, never grows a chunk, unpacks to the same bytes", "[backend]") {
  STATIC_REQUIRE(zcoll::backend::lossless_backend<zcoll::backend::Zstd>);
  STATIC_REQUIRE(zcoll::backend::lossless_backend<zcoll::backend::None>);
  zcoll::backend::Zstd::context context;
  for (const std::size_t body : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{20000}}) {
    for (const bool compressible : {true, false}) {
      INFO(body << " bytes, compressible " << compressible);
      const auto original = chunk_of(body, compressible);
      auto chunk = original;
      const std::size_t size = context.pack(chunk);
      CHECK(size <= original.size());
      const bool packed = (std::to_integer<std::uint8_t>(chunk[0]) & zcoll::backend::packed_chunk) != 0;
      CHECK(packed == (size < original.size()));
      if (compressible && body >= 20000) CHECK(size * 10 < original.size());
      const auto unpacked = context.unpack(std::span<const std::byte>(chunk).first(size), original.size());
      CHECK(std::vector<std::byte>(unpacked.begin(), unpacked.end()) == original);
    }
  }
}

TEST_CASE("zstd back end: damaged and oversized frames are format errors", "[backend]") {
  zcoll::backend::Zstd::context context;
  const auto original = chunk_of(5000, true);
  auto chunk = original;
  const std::size_t size = context.pack(chunk);
  REQUIRE(size < original.size());
  chunk.resize(size);
  // Unpacking to more than a chunk may hold.
  CHECK_THROWS_AS(context.unpack(chunk, original.size() - 1), zcoll::format_error);
  // Every truncation.
  for (std::size_t keep = 1; keep < size; ++keep) {
    INFO("truncated to " << keep << " bytes");
    CHECK_THROWS_AS(context.unpack(std::span<const std::byte>(chunk).first(keep), original.size()), zcoll::format_error);
  }
  // Flipped bits: an error or the very bytes the frame's checksum-free content allows, never a crash.
  std::mt19937_64 rng(zcoll_test::seed);
  for (int k = 0; k < 300; ++k) {
    auto damaged = chunk;
    const std::size_t at = 1 + rng() % (size - 1);
    damaged[at] ^= std::byte{static_cast<std::uint8_t>(1u << (rng() % 8))};
    try {
      const auto unpacked = context.unpack(damaged, original.size());
      CHECK(unpacked.size() <= original.size());
    } catch (const zcoll::format_error&) {
    }
  }
}
