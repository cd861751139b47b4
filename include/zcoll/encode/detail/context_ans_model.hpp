#pragma once
/// The context-modelled rANS coder's alphabet, contexts, statistics and stream model (format in
/// encode/context_ans.hpp): what a residual's token is, which of the nine contexts codes it, and the
/// normalized frequency tables the stream's chunks share.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/byte_io.hpp"
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
/// 0): 32 independent chains of table lookups, which an AVX-512 decoder runs as the lanes of two vectors
/// (encode/detail/context_ans_avx512.hpp) and a scalar one overlaps in a core. The coder visits them round
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

/// Each residual's context and token as one index into the model's tables (context * 128 + token),
/// segment by segment (ans_segment_length). A residual's context depends on its level class and the two
/// residuals before it, not on a running state, so the loop is elementwise and compilers vectorize it.
inline void context_ans_symbols(std::span<const std::int32_t> residuals, ans_level_span levels,
                                std::span<std::uint16_t> symbols) {
  const std::size_t count = residuals.size(), length = ans_segment_length(count);
  const std::int32_t* const r = residuals.data();
  const std::uint8_t* const level = levels.empty() ? nullptr : levels.data();
  std::uint16_t* const out = symbols.data();
  for (std::size_t first = 0; first < count; first += length) {
    const std::size_t end = std::min(count, first + length);
    // The symbol of residual i after the zigzag symbols `previous` and `before_previous`.
    const auto symbol_at = [&](std::size_t i, std::uint32_t previous, std::uint32_t before_previous) {
      const std::uint32_t level_rows = level != nullptr ? ans_magnitude_contexts * level[i] : 0u;
      return static_cast<std::uint16_t>((level_rows + ans_context(previous, before_previous)) * ans_token_count +
                                        ans_token_of(zigzag(r[i])).token);
    };
    if (first < end) out[first] = symbol_at(first, 0, 0);
    if (first + 1 < end) out[first + 1] = symbol_at(first + 1, zigzag(r[first]), 0);
    for (std::size_t i = first + 2; i < end; ++i) out[i] = symbol_at(i, zigzag(r[i - 1]), zigzag(r[i - 2]));
  }
}

/// Token counts per context over the residuals of every chunk of a stream.
class context_ans_statistics {
 public:
  /// Adds one chunk's residuals, of the given level classes (empty: all 0; else one a residual, each
  /// below ans_level_classes: argument_error otherwise).
  void add(std::span<const std::int32_t> residuals, ans_level_span levels = {}) {
    check_ans_levels(levels, residuals.size());
    const auto symbol_room = std::make_unique_for_overwrite<std::uint16_t[]>(residuals.size());  // all written
    const std::span<std::uint16_t> symbols(symbol_room.get(), residuals.size());
    context_ans_symbols(residuals, levels, symbols);
    // Four tables of counts, taking turns: consecutive residuals often share a symbol (the zeros of a
    // coarse bound), and one table would chain each increment to the store of the one before. (32-bit
    // counts: a chunk holds at most 2^20 residuals.)
    std::vector<std::uint32_t> partial(4 * counts_.size(), 0);
    const std::size_t quads = symbols.size() / 4 * 4;
    for (std::size_t i = 0; i < quads; i += 4) {
      ++partial[symbols[i]];
      ++partial[counts_.size() + symbols[i + 1]];
      ++partial[2 * counts_.size() + symbols[i + 2]];
      ++partial[3 * counts_.size() + symbols[i + 3]];
    }
    for (std::size_t i = quads; i < symbols.size(); ++i) ++partial[symbols[i]];
    for (std::size_t k = 0; k < counts_.size(); ++k) {
      counts_[k] += std::uint64_t{partial[k]} + partial[counts_.size() + k] + partial[2 * counts_.size() + k] +
                    partial[3 * counts_.size() + k];
    }
  }

  void merge(const context_ans_statistics& other) {
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  }

  std::uint64_t count(std::uint32_t context, std::uint32_t token) const {
    return counts_[context * ans_token_count + token];
  }

 private:
  std::array<std::uint64_t, ans_context_count * ans_token_count> counts_{};
};

/// x / f for every x < 2^31 as (x m) >> (31 + l), with l = ceil(log2 f) and m = ceil(2^(31 + l) / f)
/// (Granlund and Montgomery 1994, theorem 4.2: m f - 2^(31 + l) < f <= 2^l makes it exact): a
/// multiplication instead of a division on the encoder's state chain.
struct ans_divisor {
  std::uint64_t multiplier = 0;
  unsigned shift = 0;

  ans_divisor() = default;
  explicit ans_divisor(std::uint32_t f)
      : multiplier(((std::uint64_t{1} << (31 + ceil_log2(f))) + f - 1) / f), shift(31 + ceil_log2(f)) {}

  std::uint32_t quotient(std::uint32_t x) const { return static_cast<std::uint32_t>((x * multiplier) >> shift); }

 private:
  static unsigned ceil_log2(std::uint32_t f) { return static_cast<unsigned>(std::bit_width(f - 1)); }
};

/// Bytes past the decoder's table of tokens by slot (context_ans_model::slot_token).
inline constexpr std::size_t ans_slot_token_padding = 3;

/// The stream's model: per context, the normalized frequencies of tokens 0..tokens-1 (all zero for a
/// context that never occurred), and the tables the chunk coder reads.
struct context_ans_model {
  std::uint32_t tokens = 1;
  std::array<std::array<std::uint16_t, ans_token_count>, ans_context_count> frequency{};
  /// Per context and token, frequency | cumulative frequency << 16 (0: the token cannot be coded).
  std::vector<std::uint32_t> frequency_table;
  /// The encoder's division by each frequency, as a multiplication (ans_divisor).
  std::vector<ans_divisor> divisors;
  /// Decoder: per context (rows of 2^12) and slot, the token whose cumulative range holds the slot, and
  /// with it the token's frequency_table entry. 108 KiB for the 27 contexts; the nine of the finest level,
  /// which most residuals take, 36 KiB, so that most lookups stay in a core's first-level cache: they are
  /// the critical path of its state chains. A context that never occurred
  /// has token 0 in every slot and no frequency for it, which the decoder rejects.
  /// ans_slot_token_padding zero bytes follow the last row, so that a vector gather may load four bytes at
  /// every slot.
  std::vector<std::uint8_t> slot_token;
  std::vector<std::byte> serialized;
  /// Whether a context of level class 1 or 2 has a table: only then do the chunks' residuals take their
  /// level classes' contexts (make_context_ans_model's choice); else every residual's context is one of
  /// the nine of class 0, whatever levels the caller gives.
  bool uses_levels = false;
};

/// The level classes' contexts are kept where they save at least this share of the tokens' bits: they
/// slow the decoder (its table of 27 contexts outgrows the first-level cache; HighRatio decompression
/// 0.8x at relative 1e-2), which a saving of 2-4 % at 1e-3 and 1e-4 does not pay for, and one of 5-20 % at
/// 1e-2 and coarser does (docs/performance.md, issue 21).
inline constexpr double ans_level_contexts_saving = 0.05;

/// The largest model: tokens (u8), the context mask (u32), and per context at most two bytes a token.
inline constexpr std::size_t context_ans_max_model_bytes = 5 + ans_context_count * ans_token_count * 2;

/// Counts scaled to frequencies summing to exactly 2^12, every counted token at least 1.
inline std::array<std::uint16_t, ans_token_count> normalize_frequencies(std::span<const std::uint64_t> counts) {
  std::array<std::uint16_t, ans_token_count> frequency{};
  std::uint64_t total = 0;
  for (const std::uint64_t c : counts) total += c;
  if (total == 0) return frequency;
  std::int64_t sum = 0;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    if (counts[t] == 0) continue;
    // In double: the rounding can move a frequency by one, which the settling below absorbs, and IEEE
    // arithmetic (a product and a quotient, nothing fused) gives every machine the same tables.
    const double scaled = static_cast<double>(counts[t]) * ans_scale / static_cast<double>(total);
    frequency[t] = static_cast<std::uint16_t>(std::max(1.0, std::min<double>(ans_scale, scaled + 0.5)));
    sum += frequency[t];
  }
  // Settle the difference on the largest frequencies, where a change of one costs the fewest bits (each
  // keeps at least 1).
  while (sum != ans_scale) {
    const auto largest = static_cast<std::size_t>(
        std::max_element(frequency.begin(), frequency.end()) - frequency.begin());
    const std::int64_t change = std::max<std::int64_t>(std::int64_t{ans_scale} - sum, 1 - frequency[largest]);
    frequency[largest] = static_cast<std::uint16_t>(frequency[largest] + change);
    sum += change;
  }
  return frequency;
}

/// Fills the coder tables of a model whose frequencies are set (and valid: each context zero or summing
/// to 2^12).
inline void build_context_ans_tables(context_ans_model& m) {
  m.frequency_table.assign(ans_context_count * ans_token_count, 0);
  m.divisors.assign(ans_context_count * ans_token_count, ans_divisor{});
  m.slot_token.assign(ans_context_count * ans_scale + ans_slot_token_padding, 0);
  for (std::uint32_t c = 0; c < ans_context_count; ++c) {
    std::uint32_t cumulative = 0;
    for (std::uint32_t t = 0; t < ans_token_count; ++t) {
      const std::uint32_t f = m.frequency[c][t];
      if (f == 0) continue;
      m.frequency_table[c * ans_token_count + t] = f | cumulative << 16;
      m.divisors[c * ans_token_count + t] = ans_divisor(f);
      std::fill_n(m.slot_token.begin() + c * ans_scale + cumulative, f, static_cast<std::uint8_t>(t));
      cumulative += f;
    }
  }
}

/// Model format: u8 tokens (1..128), u32 mask of the contexts that have a table, then for each such
/// context in order the frequencies of tokens 0..tokens-1: a frequency f in 1..127 is one byte f; 128..4096
/// two bytes, 0x80 | (f & 0x7F) then f >> 7; a run of r zeros (1..256) is the byte 0 then r - 1. Each
/// table sums to 2^12.
inline void serialize_context_ans_model(context_ans_model& m) {
  m.serialized.clear();
  const auto put = [&](std::uint32_t byte) { m.serialized.push_back(static_cast<std::byte>(byte)); };
  std::uint32_t mask = 0;
  for (std::uint32_t c = 0; c < ans_context_count; ++c) {
    if (std::any_of(m.frequency[c].begin(), m.frequency[c].end(), [](auto f) { return f != 0; })) mask |= 1u << c;
  }
  put(m.tokens);
  for (unsigned shift = 0; shift < 32; shift += 8) put(mask >> shift & 0xFF);
  for (std::uint32_t c = 0; c < ans_context_count; ++c) {
    if ((mask >> c & 1) == 0) continue;
    for (std::uint32_t t = 0; t < m.tokens;) {
      const std::uint32_t f = m.frequency[c][t];
      if (f == 0) {
        std::uint32_t run = 1;
        while (t + run < m.tokens && run < 256 && m.frequency[c][t + run] == 0) ++run;
        put(0);
        put(run - 1);
        t += run;
      } else {
        if (f < 128) {
          put(f);
        } else {
          put(0x80 | (f & 0x7F));
          put(f >> 7);
        }
        ++t;
      }
    }
  }
}

/// The bits of coding `counts` with their own frequencies: the empirical entropy times their number.
inline double ans_coded_bits(std::span<const std::uint64_t> counts) {
  double total = 0.0, bits = 0.0;
  for (const std::uint64_t c : counts) total += static_cast<double>(c);
  for (const std::uint64_t c : counts) {
    if (c != 0) bits += static_cast<double>(c) * std::log2(total / static_cast<double>(c));
  }
  return bits;
}

/// The model of the statistics: the contexts of every level class where they save at least
/// ans_level_contexts_saving of the tokens' bits against the nine of class 0 alone (each class's counts
/// added into them), else those nine.
inline context_ans_model make_context_ans_model(const context_ans_statistics& stats) {
  context_ans_model m;
  std::array<std::array<std::uint64_t, ans_token_count>, ans_context_count> counts{};
  std::array<std::array<std::uint64_t, ans_token_count>, ans_magnitude_contexts> merged{};
  std::uint32_t last_used = 0;
  for (std::uint32_t c = 0; c < ans_context_count; ++c) {
    for (std::uint32_t t = 0; t < ans_token_count; ++t) {
      counts[c][t] = stats.count(c, t);
      merged[c % ans_magnitude_contexts][t] += counts[c][t];
      if (counts[c][t] != 0) last_used = std::max(last_used, t);
    }
  }
  double level_bits = 0.0, merged_bits = 0.0;
  for (const auto& c : counts) level_bits += ans_coded_bits(c);
  for (const auto& c : merged) merged_bits += ans_coded_bits(c);
  m.uses_levels = level_bits < (1.0 - ans_level_contexts_saving) * merged_bits;
  for (std::uint32_t c = 0; c < ans_context_count; ++c) {
    if (m.uses_levels) {
      m.frequency[c] = normalize_frequencies(counts[c]);
    } else if (c < ans_magnitude_contexts) {
      m.frequency[c] = normalize_frequencies(merged[c]);
    }
  }
  m.tokens = last_used + 1;
  build_context_ans_tables(m);
  serialize_context_ans_model(m);
  return m;
}

inline context_ans_model read_context_ans_model(byte_reader& in) {
  context_ans_model m;
  m.tokens = in.read<std::uint8_t>("context-ans model: token count");
  if (m.tokens == 0 || m.tokens > ans_token_count) {
    throw format_error("context-ans model: token count " + std::to_string(m.tokens) + ", expected 1.." +
                       std::to_string(ans_token_count));
  }
  static_assert(ans_context_count < 32, "the context mask is a u32");
  const auto mask = in.read<std::uint32_t>("context-ans model: context mask");
  if (mask >> ans_context_count != 0) {
    throw format_error("context-ans model: context mask " + std::to_string(mask) + " names contexts past the " +
                       std::to_string(ans_context_count));
  }
  for (std::uint32_t c = 0; c < ans_context_count; ++c) {
    if ((mask >> c & 1) == 0) continue;
    std::uint32_t sum = 0;
    for (std::uint32_t t = 0; t < m.tokens;) {
      const auto first = in.read<std::uint8_t>("context-ans model: frequency");
      if (first == 0) {
        const std::uint32_t run = in.read<std::uint8_t>("context-ans model: zero run") + 1u;
        if (t + run > m.tokens) {
          throw format_error("context-ans model: a zero run of " + std::to_string(run) + " passes token " +
                             std::to_string(m.tokens));
        }
        t += run;
        continue;
      }
      std::uint32_t f = first;
      if (first >= 0x80) f = (first & 0x7Fu) | std::uint32_t{in.read<std::uint8_t>("context-ans model: frequency")} << 7;
      if (f < 128 && first >= 0x80) {
        throw format_error("context-ans model: frequency " + std::to_string(f) + " written in two bytes");
      }
      if (f > ans_scale) {
        throw format_error("context-ans model: frequency " + std::to_string(f) + " exceeds " + std::to_string(ans_scale));
      }
      m.frequency[c][t++] = static_cast<std::uint16_t>(f);
      sum += f;
    }
    if (sum != ans_scale) {
      throw format_error("context-ans model: the frequencies of context " + std::to_string(c) + " sum to " +
                         std::to_string(sum) + ", expected " + std::to_string(ans_scale));
    }
  }
  m.uses_levels = (mask >> ans_magnitude_contexts) != 0;
  build_context_ans_tables(m);
  serialize_context_ans_model(m);
  return m;
}

}  // namespace zcoll::encode::detail
