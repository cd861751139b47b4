#pragma once
/// The context-modelled rANS coder's alphabet and contexts (format in encode/context_ans.hpp): what a
/// residual's token is, which of the 27 contexts codes it, and how a chunk's residuals are cut into the
/// 32 segments that the coder's states take.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/core/error.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"

namespace zcoll::encode::detail {

/// Zigzag symbols below 16 are their own token; a larger symbol v of bit width w + 1 (w >= 4) has the
/// token 16 + 4 (w - 4) + (its two bits below the leading one) and its w - 2 lowest bits follow raw (the
/// "hybrid integer" of JPEG XL's entropy coder): 128 tokens cover every 32-bit symbol, the tables stay
/// small, and the raw bits of a large residual are close to uniform, so coding them costs little.
inline constexpr std::uint32_t ans_direct_tokens = 16;
inline constexpr std::uint32_t ans_token_count = 128;

/// A symbol as its token and the raw bits that follow it.
struct ans_token {
  std::uint32_t token;
  unsigned extra_width;
  std::uint32_t extra;
};

/// Both forms computed and one kept by masks: residuals on either side of 16 are common at the fine
/// bounds, where a branch would be mispredicted often.
constexpr ans_token ans_token_of(std::uint32_t symbol) {
  const unsigned top = static_cast<unsigned>(std::bit_width(symbol | ans_direct_tokens)) - 1;  // 4..31
  const std::uint32_t wide = 0u - static_cast<std::uint32_t>(symbol >= ans_direct_tokens);
  const unsigned width = (top - 2) & wide;
  const std::uint32_t token = ans_direct_tokens + 4 * (top - 4) + ((symbol >> (top - 2)) & 3u);
  return {(token & wide) | (symbol & ~wide), width, symbol & ((1u << width) - 1u)};
}

/// The raw bits that follow `token` (< ans_token_count).
constexpr unsigned ans_extra_width(std::uint32_t token) {
  return token < ans_direct_tokens ? 0 : (token - ans_direct_tokens) / 4 + 2;
}

/// The symbol of `token` and its raw bits.
constexpr std::uint32_t ans_symbol_of(std::uint32_t token, std::uint32_t extra) {
  if (token < ans_direct_tokens) return token;
  const unsigned extra_width = ans_extra_width(token);
  return ((4u | ((token - ans_direct_tokens) & 3u)) << extra_width) | extra;
}

/// Per token, the symbol with its raw bits zero and the number of raw bits: a symbol is
/// ans_token_base[t] | its raw bits.
inline constexpr auto ans_token_base = [] {
  std::array<std::uint32_t, ans_token_count> base{};
  for (std::uint32_t t = 0; t < ans_token_count; ++t) base[t] = ans_symbol_of(t, 0);
  return base;
}();
inline constexpr auto ans_token_extra_width = [] {
  std::array<std::uint8_t, ans_token_count> width{};
  for (std::uint32_t t = 0; t < ans_token_count; ++t) width[t] = static_cast<std::uint8_t>(ans_extra_width(t));
  return width;
}();

/// A residual's context is its level class (given by the caller: 0, 1 or 2) and the magnitude class of
/// the two residuals before it in its segment of the chunk (0, +-1, or larger; residuals before the
/// segment's first count as 0): 3 x 3 x 3 contexts, 9 x level class + 3 x class(previous) + class(before).
/// Measured on HighRatio's residuals (docs/performance.md, issue 21), the nine magnitude contexts take the
/// entropy at 1e-2 from 0.574 to 0.551 bits a value on ECHAM5 and from 0.808 to 0.739 on Penobscot; the
/// level class (an interpolation walk's level: stride 1, 2, or coarser) takes ECHAM5's ratio at 1e-2 from
/// 56.7 to 64.8 and Penobscot's from 45.0 to 48.7: at a coarse bound the finest level's residuals are
/// nearly all 0 and the coarser levels' are not.
inline constexpr std::uint32_t ans_level_classes = 3;
inline constexpr std::uint32_t ans_magnitude_contexts = 9;
inline constexpr std::uint32_t ans_context_count = ans_level_classes * ans_magnitude_contexts;

/// The class of a token, or alike of a zigzag symbol (a symbol below 16 is its token, a larger one has a
/// token above 2).
constexpr std::uint32_t ans_class(std::uint32_t token) {
  return static_cast<std::uint32_t>(token != 0) + static_cast<std::uint32_t>(token > 2);
}
constexpr std::uint32_t ans_context(std::uint32_t previous, std::uint32_t before_previous) {
  return 3 * ans_class(previous) + ans_class(before_previous);
}

/// Frequencies are normalized to 2^12 per context: the decoder's table of tokens by slot is then 27 x 4 KiB
/// (the contexts a stream uses: nine for a Lorenzo walk, whose residuals are all of level class 0).
inline constexpr unsigned ans_scale_bits = 12;
inline constexpr std::uint32_t ans_scale = 1u << ans_scale_bits;

/// The states live in [2^15, 2^31) between symbols and start and end at 2^15: a coded symbol moves a
/// state by at most 12 bits, so one 16-bit word in or out per symbol restores the interval.
inline constexpr std::uint32_t ans_state_low = 1u << 15;
inline constexpr std::uint32_t ans_state_high = 1u << 31;

/// A chunk's residuals are coded as 32 segments of L consecutive residuals (the last ones shorter or
/// empty), each with its own rANS state and its own context (residuals before a segment's first count as
/// 0): 32 independent chains of table lookups, which the vector rounds run as the lanes of two AVX-512 or
/// four AVX2 vectors (encode/detail/context_ans_avx512.hpp, context_ans_avx2.hpp) and scalar ones overlap
/// in a core. The coder visits them round
/// by round: residual k of segment 0, 1, ..., 31, then residual k + 1 of each. L is ceil(N / 32) rounded
/// up to an odd multiple of 32: the coder reads and writes the 32 segments side by side, and with L a
/// multiple of 2048 (chunks of 65536) their 2- and 4-byte arrays put all 32 in one set of a core's
/// first-level cache, which holds 8 to 12 lines a set (the encoder ran at 0.78x); an odd multiple of 32
/// spreads them over the sets.
inline constexpr std::size_t ans_segments = 32;
constexpr std::size_t ans_segment_length(std::size_t residuals) {
  const std::size_t even_share = (residuals + ans_segments - 1) / ans_segments;
  return (even_share + 31) / 64 * 64 + 32;
}

/// How many segments have a residual k (those before the chunk's end: a prefix of the 32).
constexpr std::size_t ans_round_segments(std::size_t residuals, std::size_t length, std::size_t k) {
  return k >= residuals ? 0 : std::min(ans_segments, (residuals - k + length - 1) / length);
}

/// Where the decoder's table row of a magnitude context starts, after a token in magnitude context c:
/// the row of context 3 class(token) + class(previous), with class(previous) = c / 3 (the level class's
/// rows are added apart). Indexed by c * 128 + token.
inline constexpr auto ans_next_row = [] {
  std::array<std::uint16_t, ans_magnitude_contexts * ans_token_count> next{};
  for (std::uint32_t c = 0; c < ans_magnitude_contexts; ++c) {
    for (std::uint32_t t = 0; t < ans_token_count; ++t) {
      next[c * ans_token_count + t] = static_cast<std::uint16_t>((3 * ans_class(t) + c / 3) << ans_scale_bits);
    }
  }
  return next;
}();

/// The level classes of a chunk's residuals, one byte each (0..ans_level_classes - 1), or empty: all 0.
using ans_level_span = std::span<const std::uint8_t>;

/// argument_error unless `levels` is empty or holds a class below ans_level_classes for each of `count`
/// residuals: a class indexes the coder's tables.
inline void check_ans_levels(ans_level_span levels, std::size_t count) {
  if (levels.empty()) return;
  if (levels.size() != count) {
    throw argument_error("ContextAns: levels holds " + std::to_string(levels.size()) + " classes for " +
                         std::to_string(count) + " residuals; expected one a residual, or none");
  }
  const std::uint8_t highest = *std::max_element(levels.begin(), levels.end());
  if (highest >= ans_level_classes) {
    throw argument_error("ContextAns: levels holds a class of " + std::to_string(highest) + "; expected 0.." +
                         std::to_string(ans_level_classes - 1));
  }
}

}  // namespace zcoll::encode::detail
