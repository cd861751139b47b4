#pragma once
/// What the context-modelled rANS coder's vector rounds (encode/detail/context_ans_avx512.hpp and
/// context_ans_avx2.hpp) share with the chunk coder that calls them (encode/detail/context_ans_chunk.hpp):
/// which form runs, where the vector rounds stopped, and the decoder's round-order buffers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "zcoll/core/config.hpp"
#include "zcoll/encode/detail/context_ans_alphabet.hpp"

namespace zcoll::encode::detail {

/// Which form codes or decodes a chunk's rounds: the vector one where the build has AVX-512 or AVX2, then
/// the scalar one for the rounds it leaves (where under a word a segment of room or of words remains); or
/// the scalar one alone, which the tests compare with it.
enum class ans_rounds { vector, scalar };
inline constexpr ans_rounds ans_default_rounds =
    ZCOLL_HAS_AVX512 || ZCOLL_HAS_AVX2 ? ans_rounds::vector : ans_rounds::scalar;

/// The decoder's per-segment state, ans_segments of each: the coder states and the rows of their
/// magnitude contexts (context << ans_scale_bits).
struct ans_segment_states {
  std::uint32_t* state;
  std::uint32_t* row;
};

/// Where the vector decoder stopped: the next round and the next word.
struct ans_vector_rounds {
  std::size_t rounds;
  const std::byte* word;
};

/// Where the vector encoder stopped: the rounds left to code (0..rounds_left - 1), the last word written,
/// and whether a residual's token had no frequency in its context.
struct ans_vector_coded {
  std::size_t rounds_left;
  std::byte* word;
  bool missing;
};

/// The level classes of a chunk's `count` residuals in segments of `length` (segment-major, as the caller
/// gives them) in round order: residual k of segment s at k * 32 + s, 0 past the chunk's end, so that the
/// vector decoder loads a round's classes side by side. In tiles of 64 rounds (2 KiB of output, which stays
/// in the first-level cache while each segment gives a cache line of its classes): a segment's whole run
/// at once wrote a byte into every line of the output 32 times, a sixth of the AVX2 decoder's time at
/// relative 1e-2 (Zen 3).
inline std::unique_ptr<std::uint8_t[]> ans_levels_in_round_order(const std::uint8_t* level, std::size_t count,
                                                                 std::size_t length) {
  constexpr std::size_t tile_rounds = 64;
  auto rounds = std::make_unique<std::uint8_t[]>(length * ans_segments);
  for (std::size_t tile = 0; tile < length; tile += tile_rounds) {
    const std::size_t tile_end = std::min(length, tile + tile_rounds);
    for (std::size_t segment = 0; segment < ans_segments; ++segment) {
      const std::size_t first = segment * length;
      const std::size_t end = std::min(tile_end, count > first ? count - first : 0);
      for (std::size_t k = tile; k < end; ++k) rounds[k * ans_segments + segment] = level[first + k];
    }
  }
  return rounds;
}

/// The vector decoder's last 16 rounds of residuals in round order (residual k of segment s at
/// (k % 16) * 32 + s), copied to their segments every 16 rounds: a scatter a vector into the segments cost
/// more than the round's decoding on a Zen 5 core.
struct ans_round_tile {
  static constexpr std::size_t rounds = 16;
  alignas(64) std::uint32_t residuals[rounds * ans_segments];

  /// Where round k's residual of segment s goes.
  std::uint32_t* at(std::size_t k, std::size_t segment) { return residuals + (k % rounds) * ans_segments + segment; }

  /// Copies `n` rounds from `first_round` on to `out`: a chunk's `count` residuals in segments of `length`.
  void flush(std::uint32_t* out, std::size_t count, std::size_t length, std::size_t first_round, std::size_t n) const {
    for (std::size_t segment = 0; segment < ans_segments; ++segment) {
      const std::size_t i = segment * length + first_round;
      if (i >= count) break;
      const std::size_t kept = std::min(n, count - i);
      for (std::size_t r = 0; r < kept; ++r) out[i + r] = residuals[r * ans_segments + segment];
    }
  }
};

}  // namespace zcoll::encode::detail
