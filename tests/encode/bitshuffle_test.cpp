// Also compiled into the ISA variant executables (tests/CMakeLists.txt): the block format must not depend
// on which lanes.hpp path packs it.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/encode/bitshuffle.hpp"

namespace {

using residual_block = std::array<std::int32_t, zcoll::block_values>;
using BitShuffle = zcoll::encode::BitShuffle;
constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();

std::uint32_t magnitude(std::int32_t r) {
  return r < 0 ? static_cast<std::uint32_t>(-(static_cast<std::int64_t>(r))) : static_cast<std::uint32_t>(r);
}

/// Bit planes the documented format needs: the bit width of the largest magnitude.
unsigned expected_planes(const residual_block& r) {
  unsigned planes = 0;
  for (auto x : r) planes = std::max(planes, static_cast<unsigned>(std::bit_width(magnitude(x))));
  return planes;
}

/// Residual blocks of many shapes: small, wide, extreme, all zero, single non-zero lanes.
residual_block random_residuals(std::mt19937_64& rng) {
  residual_block r{};
  const auto style = rng() % 7;
  const unsigned width = static_cast<unsigned>(rng() % 33);
  for (auto& x : r) {
    switch (style) {
      case 0: x = 0; break;
      case 1: x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng())); break;
      case 2: x = rng() % 2 ? int_min : int_max; break;
      case 3: x = rng() % 4 == 0 ? static_cast<std::int32_t>(rng() % 3) - 1 : 0; break;
      case 4: {
        const std::int64_t limit = width == 0 ? 0 : (std::int64_t{1} << (width - 1)) - 1;
        x = static_cast<std::int32_t>(limit == 0 ? 0 : static_cast<std::int64_t>(rng() % (2 * limit + 1)) - limit);
        break;
      }
      case 5: x = static_cast<std::int32_t>(rng() % 2001) - 1000; break;
      default: x = 0; break;
    }
  }
  if (style == 6) r[rng() % 32] = rng() % 2 ? int_min : -1;
  return r;
}

}  // namespace

TEST_CASE("BitShuffle round-trips residual blocks and writes the documented layout", "[encode][bitshuffle]") {
  std::mt19937_64 rng(zcoll_test::seed);
  std::vector<residual_block> blocks;
  blocks.push_back({});  // all zero
  residual_block extremes{};
  for (std::size_t j = 0; j < 32; ++j) extremes[j] = j % 3 == 0 ? int_min : j % 3 == 1 ? int_max : -1;
  blocks.push_back(extremes);
  residual_block only_min{};
  only_min[31] = int_min;
  blocks.push_back(only_min);
  for (int i = 0; i < 5000; ++i) blocks.push_back(random_residuals(rng));

  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto& r = blocks[i];
    INFO("block " << i);
    std::array<std::byte, BitShuffle::max_block_bytes + 16> out;
    out.fill(std::byte{0xCD});
    const std::size_t size = BitShuffle::encode_block(r.data(), out.data());
    const unsigned planes = expected_planes(r);
    REQUIRE(size == (planes == 0 ? 1 : 5 + 4 * std::size_t{planes}));
    REQUIRE(size <= BitShuffle::max_block_bytes);
    // The encoder may use its whole room (max_block_bytes) as scratch, never more.
    for (std::size_t k = BitShuffle::max_block_bytes; k < out.size(); ++k) REQUIRE(out[k] == std::byte{0xCD});

    // The layout of encode/detail/bitshuffle_block.hpp: L, sign mask, planes least significant first.
    REQUIRE(std::to_integer<unsigned>(out[0]) == planes);
    if (planes > 0) {
      zcoll::block_mask sign;
      std::memcpy(&sign, out.data() + 1, 4);
      for (unsigned j = 0; j < 32; ++j) REQUIRE(((sign >> j) & 1u) == (r[j] < 0 ? 1u : 0u));
      for (unsigned p = 0; p < planes; ++p) {
        zcoll::block_mask plane;
        std::memcpy(&plane, out.data() + 5 + 4 * p, 4);
        for (unsigned j = 0; j < 32; ++j) REQUIRE(((plane >> j) & 1u) == ((magnitude(r[j]) >> p) & 1u));
      }
    }

    std::array<std::uint32_t, 32> decoded;
    decoded.fill(0x1234'5678u);  // decode must overwrite every lane
    const std::size_t consumed = BitShuffle::decode_block(std::span<const std::byte>(out.data(), out.size()), decoded.data());
    REQUIRE(consumed == size);
    for (std::size_t j = 0; j < 32; ++j) REQUIRE(static_cast<std::int32_t>(decoded[j]) == r[j]);
  }
}

TEST_CASE("BitShuffle all-zero block costs one byte", "[encode][bitshuffle]") {
  const residual_block zeros{};
  std::array<std::byte, BitShuffle::max_block_bytes> out{};
  REQUIRE(BitShuffle::encode_block(zeros.data(), out.data()) == 1);
  CHECK(out[0] == std::byte{0});
  std::array<std::uint32_t, 32> decoded;
  decoded.fill(~0u);
  CHECK(BitShuffle::decode_block(std::span<const std::byte>(out.data(), 1), decoded.data()) == 1);
  for (auto d : decoded) CHECK(d == 0u);
}

TEST_CASE("BitShuffle decode rejects truncated blocks and too many planes", "[encode][bitshuffle]") {
  std::mt19937_64 rng(zcoll_test::seed + 1);
  std::array<std::uint32_t, 32> decoded{};
  SECTION("every truncation of blocks of every width") {
    for (unsigned width = 1; width <= 32; ++width) {
      residual_block r{};
      r[rng() % 32] = width == 32 ? int_min : static_cast<std::int32_t>((std::uint32_t{1} << (width - 1)));
      std::array<std::byte, BitShuffle::max_block_bytes> out{};
      const std::size_t size = BitShuffle::encode_block(r.data(), out.data());
      REQUIRE(size == 5 + 4 * std::size_t{width});
      for (std::size_t n = 0; n < size; ++n) {
        INFO("width " << width << ", truncated to " << n << " of " << size << " bytes");
        CHECK_THROWS_AS(BitShuffle::decode_block(std::span<const std::byte>(out.data(), n), decoded.data()),
                        zcoll::format_error);
      }
    }
  }
  SECTION("an empty input") {
    CHECK_THROWS_AS(BitShuffle::decode_block({}, decoded.data()), zcoll::format_error);
  }
  SECTION("a planes byte above 32") {
    std::vector<std::byte> in(BitShuffle::max_block_bytes + 1000, std::byte{0});
    for (unsigned planes = 33; planes < 256; ++planes) {
      in[0] = static_cast<std::byte>(planes);
      INFO("planes byte " << planes);
      CHECK_THROWS_AS(BitShuffle::decode_block(in, decoded.data()), zcoll::format_error);
    }
    in[0] = std::byte{32};
    CHECK(BitShuffle::decode_block(in, decoded.data()) == BitShuffle::max_block_bytes);  // the control
  }
}

TEST_CASE("BitShuffle decodes any well-sized bytes without overflow", "[encode][bitshuffle]") {
  // Random sign masks and planes: the result wraps in two's complement (sign-magnitude of up to 2^32 - 1).
  std::mt19937_64 rng(zcoll_test::seed + 2);
  for (int trial = 0; trial < 2000; ++trial) {
    const unsigned planes = static_cast<unsigned>(rng() % 33);
    std::vector<std::byte> in(zcoll::encode::detail::bitshuffle_block_bytes(planes));
    for (auto& b : in) b = static_cast<std::byte>(rng());
    in[0] = static_cast<std::byte>(planes);
    std::array<std::uint32_t, 32> decoded{};
    REQUIRE(BitShuffle::decode_block(in, decoded.data()) == in.size());
    if (planes == 0) continue;
    zcoll::block_mask sign;
    std::memcpy(&sign, in.data() + 1, 4);
    for (unsigned j = 0; j < 32; ++j) {
      std::uint32_t m = 0;
      for (unsigned p = 0; p < planes; ++p) {
        zcoll::block_mask plane;
        std::memcpy(&plane, in.data() + 5 + 4 * p, 4);
        m |= ((plane >> j) & 1u) << p;
      }
      REQUIRE(decoded[j] == (((sign >> j) & 1u) ? 0u - m : m));
    }
  }
}

TEST_CASE("BitShuffle decode reads nothing past the block", "[encode][bitshuffle]") {
  if (!zcoll_test::guarded_buffer<>::available) {
    WARN("no guard pages on this platform: test skipped");
    return;
  }
  // Each block, and each truncation of it, ends at an inaccessible page: one byte read too many faults.
  std::mt19937_64 rng(zcoll_test::seed + 3);
  for (unsigned width = 0; width <= 32; ++width) {
    residual_block r{};
    if (width > 0) {
      for (auto& x : r) x = static_cast<std::int32_t>(rng() % (std::uint64_t{1} << (width - 1)));
      r[rng() % 32] = width == 32 ? int_min : -static_cast<std::int32_t>(std::uint32_t{1} << (width - 1));
    }
    std::array<std::byte, BitShuffle::max_block_bytes> encoded{};
    const std::size_t size = BitShuffle::encode_block(r.data(), encoded.data());
    REQUIRE(size == zcoll::encode::detail::bitshuffle_block_bytes(width));
    for (std::size_t n = 0; n <= size; ++n) {
      auto guarded = zcoll_test::guarded_buffer<>::copy_of(std::span<const std::byte>(encoded.data(), n));
      std::array<std::uint32_t, 32> decoded{};
      INFO("width " << width << ", " << n << " of " << size << " bytes before the guard page");
      if (n < size) {
        CHECK_THROWS_AS(BitShuffle::decode_block(guarded.span(), decoded.data()), zcoll::format_error);
      } else {
        REQUIRE(BitShuffle::decode_block(guarded.span(), decoded.data()) == size);
        for (std::size_t j = 0; j < 32; ++j) REQUIRE(static_cast<std::int32_t>(decoded[j]) == r[j]);
      }
    }
  }
}

TEST_CASE("BitShuffle encode stays within max_block_bytes", "[encode][bitshuffle]") {
  if (!zcoll_test::guarded_buffer<>::available) {
    WARN("no guard pages on this platform: test skipped");
    return;
  }
  std::mt19937_64 rng(zcoll_test::seed + 4);
  zcoll_test::guarded_buffer<> out(BitShuffle::max_block_bytes);
  for (int trial = 0; trial < 500; ++trial) {
    const auto r = random_residuals(rng);
    REQUIRE(BitShuffle::encode_block(r.data(), out.span().data()) <= BitShuffle::max_block_bytes);
  }
}

namespace {

/// A block of any well-sized bytes: random planes (possibly with nonzero bits above the widest magnitude
/// a real encoder would write, and signs on zero magnitudes, as damaged streams hold).
std::vector<std::byte> arbitrary_block(std::mt19937_64& rng, unsigned planes) {
  std::vector<std::byte> block(zcoll::encode::detail::bitshuffle_block_bytes(planes));
  block[0] = static_cast<std::byte>(planes);
  for (std::size_t k = 1; k < block.size(); ++k) block[k] = static_cast<std::byte>(rng());
  return block;
}

/// decode(a) + decode(b), modulo 2^32 as the add path computes, encoded.
std::vector<std::byte> decode_add_encode(const std::byte* a, const std::byte* b) {
  std::array<std::uint32_t, 32> ra, rb;
  BitShuffle::decode_checked_block(a, ra.data());
  BitShuffle::decode_checked_block(b, rb.data());
  residual_block sum;
  for (std::size_t j = 0; j < 32; ++j) sum[j] = static_cast<std::int32_t>(ra[j] + rb[j]);
  std::vector<std::byte> out(BitShuffle::max_block_bytes);
  out.resize(BitShuffle::encode_block(sum.data(), out.data()));
  return out;
}

}  // namespace

TEST_CASE("BitShuffle sums a block's residuals on its planes as decoding and adding does", "[encode][bitshuffle]") {
  std::mt19937_64 rng(zcoll_test::seed + 8);
  const auto decoded_sum = [](const std::vector<std::byte>& block) {
    std::array<std::uint32_t, 32> r;
    BitShuffle::decode_checked_block(block.data(), r.data());
    std::uint32_t sum = 0;
    for (const std::uint32_t x : r) sum += x;
    return sum;
  };
  SECTION("blocks the encoder wrote, every width") {
    for (unsigned w = 0; w <= 32; ++w) {
      for (int trial = 0; trial < 20; ++trial) {
        residual_block r;
        const std::uint64_t limit = w == 0 ? 0 : (std::uint64_t{1} << w) - 1;
        for (auto& x : r) {
          const auto m = static_cast<std::int64_t>(limit == 0 ? 0 : rng() % (limit + 1));
          x = static_cast<std::int32_t>(rng() % 2 ? -m : m);
        }
        if (w > 0 && w < 32) r[rng() % 32] = static_cast<std::int32_t>(limit);
        std::vector<std::byte> block(BitShuffle::max_block_bytes);
        block.resize(BitShuffle::encode_block(r.data(), block.data()));
        std::uint32_t expected = 0;
        for (const std::int32_t x : r) expected += static_cast<std::uint32_t>(x);
        INFO("width " << w << ", trial " << trial);
        REQUIRE(BitShuffle::residual_sum(block.data()) == expected);
        REQUIRE(decoded_sum(block) == expected);
      }
    }
  }
  SECTION("any well-sized bytes: signs on zero magnitudes, sums that wrap modulo 2^32") {
    for (int trial = 0; trial < 4000; ++trial) {
      const auto block = arbitrary_block(rng, static_cast<unsigned>(rng() % 33));
      INFO("trial " << trial << ", " << std::to_integer<unsigned>(block[0]) << " planes");
      REQUIRE(BitShuffle::residual_sum(block.data()) == decoded_sum(block));
    }
  }
  SECTION("runs of blocks through residual_sums: each take() is the sum of the blocks added since the last") {
    BitShuffle::residual_sums sums;
    REQUIRE(sums.take() == 0u);
    for (int run = 0; run < 400; ++run) {
      const auto length = static_cast<int>(rng() % 40);
      std::uint32_t expected = 0;
      for (int k = 0; k < length; ++k) {
        // Mostly the widths of the vector form (up to 16 planes), some wider, some of 0 planes.
        const auto planes = static_cast<unsigned>(rng() % 4 == 0 ? rng() % 33 : rng() % 17);
        const auto block = arbitrary_block(rng, planes);
        sums.add(block.data());
        expected += decoded_sum(block);
      }
      INFO("run " << run << " of " << length << " blocks");
      REQUIRE(sums.take() == expected);
    }
    REQUIRE(sums.take() == 0u);
  }
}

TEST_CASE("BitShuffle adds two blocks on their bit planes to the encoder's block of the sum", "[encode][bitshuffle]") {
  std::mt19937_64 rng(zcoll_test::seed + 7);
  const auto check_pair = [](const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
    std::array<std::byte, BitShuffle::max_block_bytes + 16> out;
    out.fill(std::byte{0xCD});
    const std::size_t size = BitShuffle::add_blocks(a.data(), b.data(), out.data());
    // The sum may use the whole room as scratch, never more.
    for (std::size_t k = BitShuffle::max_block_bytes; k < out.size(); ++k) REQUIRE(out[k] == std::byte{0xCD});
    const auto expected = decode_add_encode(a.data(), b.data());
    REQUIRE(size == expected.size());
    REQUIRE(std::equal(expected.begin(), expected.end(), out.begin()));
  };
  SECTION("blocks the encoder wrote, every width against every width") {
    for (unsigned wa = 0; wa <= 32; ++wa) {
      for (unsigned wb = 0; wb <= 32; ++wb) {
        for (int trial = 0; trial < 6; ++trial) {
          INFO("widths " << wa << " and " << wb << ", trial " << trial);
          residual_block ra, rb;
          const auto fill_block = [&](residual_block& r, unsigned w) {
            const std::uint64_t limit = w == 0 ? 0 : (std::uint64_t{1} << w) - 1;
            for (auto& x : r) {
              const auto m = static_cast<std::int64_t>(limit == 0 ? 0 : rng() % (limit + 1));
              // Opposite and equal signs, cancelling pairs and zeros all occur.
              x = static_cast<std::int32_t>(rng() % 2 ? -m : m);
            }
            if (w > 0 && w < 32) r[rng() % 32] = static_cast<std::int32_t>(limit);  // the width is reached
          };
          fill_block(ra, wa);
          fill_block(rb, wb);
          if (trial == 5) {
            for (std::size_t j = 0; j < 32; j += 2) rb[j] = static_cast<std::int32_t>(0u - static_cast<std::uint32_t>(ra[j]));
          }
          std::vector<std::byte> a(BitShuffle::max_block_bytes), b(BitShuffle::max_block_bytes);
          a.resize(BitShuffle::encode_block(ra.data(), a.data()));
          b.resize(BitShuffle::encode_block(rb.data(), b.data()));
          check_pair(a, b);
          check_pair(b, a);
        }
      }
    }
  }
  SECTION("any well-sized bytes: signs on zero magnitudes, sums that wrap modulo 2^32") {
    for (int trial = 0; trial < 4000; ++trial) {
      INFO("trial " << trial);
      const auto a = arbitrary_block(rng, static_cast<unsigned>(rng() % 33));
      const auto b = arbitrary_block(rng, static_cast<unsigned>(rng() % 33));
      check_pair(a, b);
    }
  }
  SECTION("a block and its negation give the zero block") {
    for (int trial = 0; trial < 200; ++trial) {
      const residual_block r = random_residuals(rng);
      residual_block negated;
      for (std::size_t j = 0; j < 32; ++j) negated[j] = static_cast<std::int32_t>(0u - static_cast<std::uint32_t>(r[j]));
      std::vector<std::byte> a(BitShuffle::max_block_bytes), b(BitShuffle::max_block_bytes);
      a.resize(BitShuffle::encode_block(r.data(), a.data()));
      b.resize(BitShuffle::encode_block(negated.data(), b.data()));
      std::array<std::byte, BitShuffle::max_block_bytes> out{};
      REQUIRE(BitShuffle::add_blocks(a.data(), b.data(), out.data()) == 1);
      CHECK(out[0] == std::byte{0});
    }
  }
}
