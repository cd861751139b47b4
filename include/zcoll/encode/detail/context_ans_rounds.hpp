#pragma once
/// What the context-modelled rANS coder's vector rounds (encode/detail/context_ans_avx512.hpp and
/// context_ans_avx2.hpp) share with the chunk coder that calls them (encode/detail/context_ans_chunk.hpp):
/// which form runs, and where the vector rounds stopped.

#include <cstddef>
#include <cstdint>

#include "zcoll/core/config.hpp"

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

}  // namespace zcoll::encode::detail
