#pragma once
/// What the tests of every chunk encoder (encode/concepts.hpp) do alike: gather statistics, write and
/// read back a model, decode a chunk that ends at a guard page, compare residuals.

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll_test {

template <class E>
typename E::statistics statistics_of(const std::vector<std::vector<std::int32_t>>& chunks) {
  typename E::statistics stats;
  for (const auto& c : chunks) stats.add(c);
  return stats;
}

/// The model's bytes as write_model writes them, checked against model_size_bytes and max_model_bytes.
template <class E>
std::vector<std::byte> written_model(const typename E::model& m) {
  std::vector<std::byte> bytes(E::model_size_bytes(m));
  REQUIRE(bytes.size() <= E::max_model_bytes);
  zcoll::byte_writer out(bytes);
  E::write_model(m, out);
  REQUIRE(out.remaining() == 0);
  return bytes;
}

/// read_model from bytes that end at a guard page; checks that it read all of them.
template <class E>
typename E::model read_back(std::span<const std::byte> bytes) {
  auto guarded = guarded_buffer<std::byte>::copy_of(bytes);
  zcoll::byte_reader in(guarded.span());
  auto m = E::read_model(in);
  REQUIRE(in.remaining() == 0);
  return m;
}

/// decode_chunk of a chunk that ends at a guard page (a read past it faults); checks it read it all.
template <class E>
std::vector<std::uint32_t> decoded(const typename E::model& m, std::span<const std::byte> chunk, std::size_t count) {
  auto guarded = guarded_buffer<std::byte>::copy_of(chunk);
  std::vector<std::uint32_t> out(count, 0xDEAD'BEEFu);
  const std::size_t used = E::decode_chunk(m, guarded.span(), out);
  REQUIRE(used == chunk.size());
  return out;
}

inline void require_equal(std::span<const std::uint32_t> got, std::span<const std::int32_t> want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != static_cast<std::uint32_t>(want[i])) {
      INFO("residual " << i << " of " << want.size());
      REQUIRE(static_cast<std::int32_t>(got[i]) == want[i]);
    }
  }
}

/// How many damaged forms of a chunk the decoder rejected, of how many it was given.
struct damage_outcome {
  std::size_t rejected = 0;
  std::size_t trials = 0;
};

/// decode_chunk of `chunk` (of `count` residuals; with an encoder that takes them, of the level classes
/// `levels`): every truncation raises format_error, bytes after the chunk are not read, and single-byte
/// corruptions (3 random ones at every `stride`-th byte, the stride growing by one every 64 bytes when
/// `sparse`) raise format_error or decode without reading past the chunk.
template <class E>
damage_outcome check_damaged_chunk(const typename E::model& m, const std::vector<std::byte>& chunk, std::size_t count,
                                   std::mt19937_64& rng, bool sparse, std::span<const std::uint8_t> levels = {}) {
  std::vector<std::uint32_t> out(count);
  const auto decode = [&](std::span<const std::byte> in) {
    if constexpr (requires { E::uses_levels; }) {
      return E::decode_chunk(m, in, out, levels);
    } else {
      REQUIRE(levels.empty());
      return E::decode_chunk(m, in, out);
    }
  };
  for (std::size_t n = 0; n < chunk.size(); ++n) {
    auto truncated = guarded_buffer<std::byte>::copy_of(std::span<const std::byte>(chunk).first(n));
    INFO("truncated to " << n);
    REQUIRE_THROWS_AS(decode(truncated.span()), zcoll::format_error);
  }
  // Trailing bytes are not read: the caller sees where the chunk ends.
  std::vector<std::byte> longer = chunk;
  longer.insert(longer.end(), 9, std::byte{0xFF});
  auto guarded = guarded_buffer<std::byte>::copy_of(longer);
  CHECK(decode(guarded.span()) == chunk.size());
  damage_outcome outcome;
  for (std::size_t at = 0; at < chunk.size(); at += sparse ? 1 + at / 64 : 1) {
    for (int k = 0; k < 3; ++k) {
      std::vector<std::byte> bad = chunk;
      bad[at] ^= static_cast<std::byte>(1 + rng() % 255);
      auto g = guarded_buffer<std::byte>::copy_of(bad);
      ++outcome.trials;
      std::size_t used = 0;
      try {
        used = decode(g.span());
      } catch (const zcoll::format_error&) {
        ++outcome.rejected;
      }
      REQUIRE(used <= bad.size());
    }
  }
  return outcome;
}

/// decode_chunk of 2000 random byte strings (up to 300 bytes; every other one made plausible by
/// `plausible(bytes)`) into outputs of up to 1124 residuals: format_error or nothing read past them.
template <class E, class Plausible>
void check_arbitrary_bytes(const typename E::model& m, std::mt19937_64& rng, Plausible&& plausible) {
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::byte> bytes(rng() % 300);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
    if (trial % 2 == 0) plausible(bytes);
    std::vector<std::uint32_t> out(trial % 3 == 0 ? 1024 + rng() % 100 : rng() % 200);
    auto g = guarded_buffer<std::byte>::copy_of(bytes);
    std::size_t used = 0;
    try {
      used = E::decode_chunk(m, g.span(), out);
    } catch (const zcoll::format_error&) {
    }
    REQUIRE(used <= bytes.size());
  }
}

}  // namespace zcoll_test
