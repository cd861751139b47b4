// Also compiled into zcoll-tests-portable and zcoll-tests-avx2 (tests/CMakeLists.txt), so each code path
// of core/lanes.hpp is checked against the same plain reference loops.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>

#include "support/test_support.hpp"
#include "zcoll/core/lanes.hpp"

// The variant executables pin the path they were built for.
#if defined(ZCOLL_TEST_EXPECT_PORTABLE)
static_assert(!ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512, "the portable variant must not see AVX2 or AVX-512");
#elif defined(ZCOLL_TEST_EXPECT_AVX2)
static_assert(ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512, "the AVX2 variant must see AVX2 and not AVX-512");
#elif defined(ZCOLL_TEST_EXPECT_AVX512)
static_assert(ZCOLL_HAS_AVX2 && ZCOLL_HAS_AVX512, "the AVX-512 variant must see AVX2 and AVX-512");
#endif

namespace {

using block = std::array<std::uint32_t, zcoll::block_values>;

zcoll::block_mask reference_lanes_with_bit(const block& v, unsigned bit) {
  zcoll::block_mask m = 0;
  for (unsigned j = 0; j < 32; ++j) {
    if ((v[j] >> bit) & 1u) m |= zcoll::block_mask{1} << j;
  }
  return m;
}

zcoll::block_mask reference_lanes_nonzero(const block& v) {
  zcoll::block_mask m = 0;
  for (unsigned j = 0; j < 32; ++j) {
    if (v[j] != 0) m |= zcoll::block_mask{1} << j;
  }
  return m;
}

/// Random words with many zeros, single bits, sign bits and all-ones, not only uniform noise.
block random_block(std::mt19937_64& rng) {
  block v{};
  const auto style = rng() % 5;
  for (auto& x : v) {
    switch (style) {
      case 0: x = static_cast<std::uint32_t>(rng()); break;
      case 1: x = rng() % 3 == 0 ? static_cast<std::uint32_t>(rng()) : 0u; break;
      case 2: x = std::uint32_t{1} << (rng() % 32); break;
      case 3: x = rng() % 2 ? 0xFFFF'FFFFu : 0x8000'0000u; break;
      default: x = static_cast<std::uint32_t>(rng() % 4); break;
    }
  }
  return v;
}

const char* path_name() { return ZCOLL_HAS_AVX2 ? "AVX2" : "portable"; }

}  // namespace

TEST_CASE("lanes_with_bit agrees with a plain loop", "[core][lanes]") {
  INFO("lanes path: " << path_name());
  std::mt19937_64 rng(zcoll_test::seed);
  for (int trial = 0; trial < 2000; ++trial) {
    const block v = random_block(rng);
    for (unsigned bit = 0; bit < 32; ++bit) {
      INFO("trial " << trial << ", bit " << bit);
      REQUIRE(zcoll::lanes_with_bit(v.data(), bit) == reference_lanes_with_bit(v, bit));
    }
  }
  // Every single lane and every bit on its own.
  for (unsigned j = 0; j < 32; ++j) {
    for (unsigned bit = 0; bit < 32; ++bit) {
      block v{};
      v[j] = std::uint32_t{1} << bit;
      for (unsigned probe = 0; probe < 32; ++probe) {
        REQUIRE(zcoll::lanes_with_bit(v.data(), probe) == (probe == bit ? zcoll::block_mask{1} << j : 0u));
      }
    }
  }
}

TEST_CASE("lanes_nonzero agrees with a plain loop", "[core][lanes]") {
  INFO("lanes path: " << path_name());
  std::mt19937_64 rng(zcoll_test::seed + 1);
  for (int trial = 0; trial < 20000; ++trial) {
    const block v = random_block(rng);
    INFO("trial " << trial);
    REQUIRE(zcoll::lanes_nonzero(v.data()) == reference_lanes_nonzero(v));
  }
  block zeros{};
  CHECK(zcoll::lanes_nonzero(zeros.data()) == 0u);
  for (unsigned j = 0; j < 32; ++j) {
    block v{};
    v[j] = 0x8000'0000u;
    CHECK(zcoll::lanes_nonzero(v.data()) == zcoll::block_mask{1} << j);
  }
}

TEST_CASE("set_bit_in_lanes agrees with a plain loop and writes only its 32 words", "[core][lanes]") {
  INFO("lanes path: " << path_name());
  std::mt19937_64 rng(zcoll_test::seed + 2);
  constexpr std::uint32_t guard = 0xDEAD'BEEF;
  for (int trial = 0; trial < 20000; ++trial) {
    std::array<std::uint32_t, 34> words{};
    words.front() = words.back() = guard;
    block expected = random_block(rng);
    std::copy(expected.begin(), expected.end(), words.begin() + 1);
    const auto lanes = static_cast<zcoll::block_mask>(trial % 7 == 0 ? ~0u : rng());
    const auto bit = static_cast<unsigned>(rng() % 32);
    for (unsigned j = 0; j < 32; ++j) {
      if ((lanes >> j) & 1u) expected[j] |= std::uint32_t{1} << bit;
    }
    zcoll::set_bit_in_lanes(words.data() + 1, lanes, bit);
    INFO("trial " << trial << ", lanes " << std::hex << lanes << ", bit " << std::dec << bit);
    REQUIRE(std::equal(expected.begin(), expected.end(), words.begin() + 1));
    REQUIRE(words.front() == guard);
    REQUIRE(words.back() == guard);
  }
}

TEST_CASE("set_bit_in_lanes rebuilds words from their bit planes", "[core][lanes]") {
  std::mt19937_64 rng(zcoll_test::seed + 3);
  for (int trial = 0; trial < 500; ++trial) {
    const block v = random_block(rng);
    block rebuilt{};
    for (unsigned bit = 0; bit < 32; ++bit) zcoll::set_bit_in_lanes(rebuilt.data(), zcoll::lanes_with_bit(v.data(), bit), bit);
    REQUIRE(rebuilt == v);
  }
}
