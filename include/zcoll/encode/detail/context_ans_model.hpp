#pragma once
/// The context-modelled rANS coder's statistics and stream model (format in encode/context_ans.hpp): the
/// token counts per context, and the normalized frequency tables the stream's chunks share.

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
#include "zcoll/encode/detail/context_ans_alphabet.hpp"
#include "zcoll/encode/detail/context_ans_symbols.hpp"

namespace zcoll::encode::detail {

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
