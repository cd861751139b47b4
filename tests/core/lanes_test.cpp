// Also compiled into zcoll-tests-portable and zcoll-tests-avx2 (tests/CMakeLists.txt), so each code path
// of core/lanes.hpp is checked against the same plain reference loops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/lanes.hpp"

// The variant executables pin the path they were built for.
#if defined(ZCOLL_TEST_EXPECT_PORTABLE)
static_assert(!ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512, "the portable variant must not see AVX2 or AVX-512");
#elif defined(ZCOLL_TEST_EXPECT_AVX2)
static_assert(ZCOLL_HAS_AVX2 && !ZCOLL_HAS_AVX512, "the AVX2 variant must see AVX2 and not AVX-512");
#elif defined(ZCOLL_TEST_EXPECT_AVX512)
static_assert(ZCOLL_HAS_AVX2 && ZCOLL_HAS_AVX512 && !ZCOLL_HAS_AVX512_GFNI,
              "the AVX-512 variant must see AVX2 and AVX-512 (F), and not the GFNI bit-plane forms");
#elif defined(ZCOLL_TEST_EXPECT_AVX512GFNI)
static_assert(ZCOLL_HAS_AVX2 && ZCOLL_HAS_AVX512 && ZCOLL_HAS_AVX512_GFNI,
              "the AVX-512 GFNI variant must see AVX2, AVX-512 and the GFNI bit-plane forms");
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

const char* path_name() { return ZCOLL_HAS_AVX512 ? "AVX-512" : ZCOLL_HAS_AVX2 ? "AVX2" : "portable"; }

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

TEMPLATE_TEST_CASE("lanes_with_bits finds the lanes holding a bit pattern, NaN payloads included", "[core][lanes]", float,
                   double) {
  using bits = zcoll::bits_of<TestType>;
  std::mt19937_64 rng(zcoll_test::seed + 4);
  const TestType payload_nan = std::bit_cast<TestType>(static_cast<bits>(std::bit_cast<bits>(std::numeric_limits<TestType>::quiet_NaN()) | 5u));
  for (const TestType fill : {TestType(-1e10), TestType(0), TestType(-0.0), payload_nan,
                              std::numeric_limits<TestType>::infinity()}) {
    for (int trial = 0; trial < 2000; ++trial) {
      std::array<TestType, zcoll::block_values> v{};
      zcoll::block_mask expected = 0;
      for (unsigned j = 0; j < 32; ++j) {
        switch (rng() % 5) {
          case 0: v[j] = fill; break;
          case 1: v[j] = std::numeric_limits<TestType>::quiet_NaN(); break;  // a NaN of another payload
          case 2: v[j] = -fill; break;
          default: v[j] = static_cast<TestType>(static_cast<double>(rng() % 1000) - 500.0); break;
        }
        if (std::bit_cast<bits>(v[j]) == std::bit_cast<bits>(fill)) expected |= zcoll::block_mask{1} << j;
      }
      INFO("fill bits " << std::hex << std::bit_cast<bits>(fill) << ", trial " << std::dec << trial);
      REQUIRE(zcoll::lanes_with_bits(v.data(), std::bit_cast<bits>(fill)) == expected);
    }
  }
}

TEMPLATE_TEST_CASE("set_lanes and copy_lanes write exactly their lanes, and stay inside a short last block", "[core][lanes]",
                   float, double) {
  INFO("lanes path: " << path_name());
  std::mt19937_64 rng(zcoll_test::seed + 5);
  for (int trial = 0; trial < 5000; ++trial) {
    // A last block of `valid` lanes at the very end of its allocation: lanes past it must be neither
    // read nor written (the sanitizer builds see an access past the vector).
    const std::size_t valid = trial % 3 == 0 ? 32 : 1 + rng() % 32;
    const zcoll::block_mask inside = valid == 32 ? ~zcoll::block_mask{0} : (zcoll::block_mask{1} << valid) - 1;
    const auto lanes = static_cast<zcoll::block_mask>(trial % 11 == 0 ? ~0u : rng()) & inside;
    std::vector<TestType> to(valid), from(valid), expected_set(valid), expected_copy(valid);
    for (std::size_t j = 0; j < valid; ++j) {
      to[j] = static_cast<TestType>(j);
      from[j] = static_cast<TestType>(1000 + j);
      const bool in = (lanes >> j) & 1u;
      expected_set[j] = in ? TestType(-7.5) : to[j];
      expected_copy[j] = in ? from[j] : to[j];
    }
    INFO("trial " << trial << ", valid " << valid << ", lanes " << std::hex << lanes);
    auto copied = to;
    zcoll::copy_lanes(copied.data(), lanes, from.data());
    REQUIRE(copied == expected_copy);
    zcoll::set_lanes(to.data(), lanes, TestType(-7.5));
    REQUIRE(to == expected_set);
  }
}
