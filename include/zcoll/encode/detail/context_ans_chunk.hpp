#pragma once
/// One chunk of the context-modelled rANS coder (format in encode/context_ans.hpp): the raw bits of the
/// large residuals, then the tokens through 32 rANS states (Duda's range variant of asymmetric numeral
/// systems, with 32-bit states and 16-bit renormalization), one a segment of the chunk, each token coded
/// with the table of its context. The coder's rounds run on AVX-512 or AVX2 where the build has it
/// (encode/detail/context_ans_avx512.hpp, context_ans_avx2.hpp) and in scalar code otherwise and for the
/// last ones.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/encode/detail/context_ans_avx2.hpp"
#include "zcoll/encode/detail/context_ans_avx512.hpp"
#include "zcoll/encode/detail/context_ans_model.hpp"
#include "zcoll/encode/detail/context_ans_rounds.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"
#include "zcoll/encode/detail/raw_bit_source.hpp"

namespace zcoll::encode::detail {

inline constexpr std::size_t ans_chunk_header_bytes = 8;
inline constexpr std::size_t ans_chunk_states_bytes = 4 * ans_segments;

/// Writes the raw bits of the residuals in the coding order (round k: residual k of each segment of
/// `length`) at `raw`, 32 at a time from a 64-bit accumulator; writes up to four bytes past them.
/// `branch_free`: where many residuals have raw bits, every residual goes through the accumulator
/// (with 0 bits or more); where few have, a branch skips the others, which it then predicts well, and a
/// round whose residuals have none is skipped with one test.
inline void write_raw_bits(std::span<const std::int32_t> residuals, std::span<const std::uint16_t> symbols,
                           std::size_t length, bool branch_free, std::byte* raw) {
  std::uint64_t pending = 0;
  unsigned pending_bits = 0;
  const auto put = [&](std::size_t i) ZCOLL_LAMBDA_ALWAYS_INLINE {
    const unsigned width = ans_token_extra_width[symbols[i] % ans_token_count];
    pending |= std::uint64_t{zigzag(residuals[i]) & ((1u << width) - 1u)} << pending_bits;
    pending_bits += width;
    const auto low = static_cast<std::uint32_t>(pending);
    std::memcpy(raw, &low, 4);
    const unsigned full = pending_bits & 32u;  // below 32 before a put, so below 61 after
    raw += full / 8;
    pending >>= full;
    pending_bits -= full;
  };
  const auto has_raw_bits = [&](std::size_t i) { return branch_free || symbols[i] % ans_token_count >= ans_direct_tokens; };
  // The rounds in which every segment has a residual, then the last ones.
  const std::size_t count = residuals.size();
  const std::size_t full_rounds = count >= (ans_segments - 1) * length ? count - (ans_segments - 1) * length : 0;
  // Which of those rounds have raw bits, marked segment by segment over contiguous symbols (a loop that
  // compilers vectorize): a test of each round's 32 symbols, `length` apart, was a sixth of the chunk
  // pass at relative 1e-2 (Zen 3).
  static_assert(ans_direct_tokens == 16 && ans_token_count == 128, "a token >= 16 has a bit of 0x70");
  std::unique_ptr<std::uint8_t[]> round_has_raw_bits;
  if (!branch_free) {
    round_has_raw_bits = std::make_unique<std::uint8_t[]>(full_rounds);
    for (std::size_t segment = 0; segment < ans_segments; ++segment) {
      const std::uint16_t* const y = symbols.data() + segment * length;
      for (std::size_t k = 0; k < full_rounds; ++k) round_has_raw_bits[k] |= static_cast<std::uint8_t>(y[k] & 0x70u);
    }
  }
  std::size_t k = 0;
  for (; k < full_rounds; ++k) {
    if (!branch_free && round_has_raw_bits[k] == 0) continue;
    for (std::size_t segment = 0; segment < ans_segments; ++segment) {
      if (has_raw_bits(segment * length + k)) put(segment * length + k);
    }
  }
  for (; k < length; ++k) {
    for (std::size_t i = k; i < count; i += length) {
      if (has_raw_bits(i)) put(i);
    }
  }
  for (; pending_bits > 0; pending_bits = pending_bits > 8 ? pending_bits - 8 : 0, pending >>= 8) {
    *raw++ = static_cast<std::byte>(pending);
  }
}

/// Writes the chunk into `out`: its size, or nullopt when it does not fit or a residual's token has no
/// frequency in its context (the model was not built from this chunk's statistics). `levels`: the
/// residuals' level classes, or empty (all 0). Uses the end of `out` as room for the words before
/// moving them after the states. `rounds`: the vector rounds where the build has them (the default), or
/// the scalar ones alone (the tests compare the two: the same bytes).
inline std::optional<std::size_t> context_ans_encode_chunk(const context_ans_model& m,
                                                           std::span<const std::int32_t> residuals,
                                                           ans_level_span levels, std::span<std::byte> out,
                                                           ans_rounds rounds = ans_default_rounds) {
  const std::size_t count = residuals.size(), length = ans_segment_length(count);
  // Not zeroed: all written, and one more symbol, which a vector gather may load past the last.
  const auto symbol_room = std::make_unique_for_overwrite<std::uint16_t[]>(count + 1);
  symbol_room[count] = 0;
  const std::span<std::uint16_t> symbols(symbol_room.get(), count);
  context_ans_symbols(residuals, m.uses_levels ? levels : ans_level_span{}, symbols);
  // From the tokens, not the residuals: no bit width to find again, and a loop that compilers vectorize.
  std::uint64_t extra_bits = 0;
  std::size_t wide = 0;
  for (const std::uint16_t symbol : symbols) {
    const unsigned width = ans_extra_width(symbol % ans_token_count);
    extra_bits += width;
    wide += width != 0;
  }
  const std::uint64_t extra_bytes = (extra_bits + 7) / 8;
  const std::size_t words_floor = ans_chunk_header_bytes + extra_bytes + ans_chunk_states_bytes;
  if (words_floor > out.size()) return std::nullopt;
  write_raw_bits(residuals, symbols, length, 8 * wide >= count, out.data() + ans_chunk_header_bytes);

  // rANS codes last in, first out: the tokens go in in the reverse of the coding order, each word in
  // front of the last, so that the decoder reads them front to back.
  std::uint32_t state[ans_segments];
  std::fill_n(state, ans_segments, ans_state_low);
  std::byte* const words_end = out.data() + out.size();
  std::byte* word = words_end;
  // A symbol the model has no frequency for (the model was not built from this chunk's statistics):
  // found after the loops. Coding it is harmless meanwhile: frequency 0 renormalizes and adds 0.
  bool missing = false;
  // Codes residual i into the state x. `checked`: false when the words would reach the raw bits;
  // unchecked where the caller has made sure that they cannot.
  const auto encode = [&]<bool checked>(std::size_t i, std::uint32_t& x, std::bool_constant<checked>)
                          ZCOLL_LAMBDA_ALWAYS_INLINE {
    const std::size_t symbol = symbols[i];
    const std::uint32_t entry = m.frequency_table[symbol];
    const std::uint32_t frequency = entry & 0xFFFFu;
    missing |= frequency == 0;
    // Out goes a word when coding would leave [2^15, 2^31): stored always, kept when needed, so that
    // no branch depends on the data (a store not kept lands in the states' room, written last).
    const auto renormalize = static_cast<std::uint32_t>(x >= frequency << (31 - ans_scale_bits));
    if constexpr (checked) {
      const bool no_room = static_cast<std::size_t>(word - out.data()) < words_floor + 2;
      if (renormalize != 0 && no_room) return false;
    }
    const auto low = static_cast<std::uint16_t>(x);
    std::memcpy(word - 2, &low, 2);
    word -= 2 * renormalize;
    x >>= 16 * renormalize;
    x += m.divisors[symbol].quotient(x) * (ans_scale - frequency) + (entry >> 16);  // (x / f) 2^12 + x % f + c
    return true;
  };
  constexpr std::true_type checked;
  constexpr std::false_type unchecked;
  // The rounds in blocks, last first: a block that cannot reach the raw bits (a round writes at most a
  // word a segment) runs without a check a symbol. The vector rounds first where the build has them.
  std::size_t k = length;
#if ZCOLL_HAS_AVX512 || ZCOLL_HAS_AVX2
  if (rounds == ans_rounds::vector) {
#if ZCOLL_HAS_AVX512
    const ans_vector_coded done =
        context_ans_encode_rounds_avx512(m, symbols.data(), count, length, state, word, out.data() + words_floor);
#else
    const ans_vector_coded done =
        context_ans_encode_rounds_avx2(m, symbols.data(), count, length, state, word, out.data() + words_floor);
#endif
    k = done.rounds_left;
    word = done.word;
    missing |= done.missing;
  }
#else
  (void)rounds;
#endif
  constexpr std::size_t block_rounds = 64;
  while (k > 0) {
    const std::size_t block_end = k - std::min(k, block_rounds);
    if (static_cast<std::size_t>(word - out.data()) >= words_floor + 2 + 2 * ans_segments * (k - block_end)) {
      for (; k > block_end; --k) {
        for (std::size_t segment = ans_round_segments(count, length, k - 1); segment-- > 0;) {
          encode(segment * length + k - 1, state[segment], unchecked);
        }
      }
    } else {
      for (; k > block_end; --k) {
        for (std::size_t segment = ans_round_segments(count, length, k - 1); segment-- > 0;) {
          if (!encode(segment * length + k - 1, state[segment], checked)) return std::nullopt;
        }
      }
    }
  }
  if (missing) return std::nullopt;

  const auto words_bytes = static_cast<std::size_t>(words_end - word);
  byte_writer header(out);
  header.write(static_cast<std::uint32_t>(extra_bytes));
  header.write(static_cast<std::uint32_t>(words_bytes / 2));
  byte_writer states(out.subspan(ans_chunk_header_bytes + extra_bytes));
  for (const std::uint32_t x : state) states.write(x);
  std::memmove(out.data() + words_floor, word, words_bytes);
  return words_floor + words_bytes;
}

/// context_ans_decode_chunk with (`level`, one class a residual) or without (nullptr) the level classes'
/// contexts: two functions, so that each keeps its rows of the tables apart.
template <bool with_levels>
std::size_t context_ans_decode_chunk_of(const context_ans_model& m, std::span<const std::byte> in,
                                        const std::uint8_t* level, std::span<std::uint32_t> residuals,
                                        ans_rounds rounds) {
  byte_reader reader(in);
  const auto extra_bytes = reader.read<std::uint32_t>("context-ans chunk: raw-bit bytes");
  const auto word_count = reader.read<std::uint32_t>("context-ans chunk: word count");
  raw_bit_source raw(reader.take(extra_bytes, "context-ans chunk: raw bits"));
  std::uint32_t state[ans_segments];
  for (std::uint32_t& x : state) {
    x = reader.read<std::uint32_t>("context-ans chunk: coder state");
    if (x < ans_state_low || x >= ans_state_high) {
      throw format_error("context-ans chunk: a coder state of " + std::to_string(x) + " is outside [2^15, 2^31)");
    }
  }
  const std::span<const std::byte> words = reader.take(std::size_t{word_count} * 2, "context-ans chunk: words");

  const std::uint8_t* const slot_token = m.slot_token.data();
  const std::uint32_t* const frequencies = m.frequency_table.data();
  constexpr unsigned token_bits = std::bit_width(ans_token_count - 1);  // rows of 128 entries there
  static_assert(ans_token_count == 1u << token_bits);
  const std::byte* word = words.data();
  const std::byte* const words_end = word + words.size();
  bool overrun = false;  // a read past the words, raised after the loops
  // One residual of a segment whose state is x and whose magnitude context's table row starts at `row`
  // (the residual's level class adds 9 rows, off the state's chain of lookups). The
  // renormalization shifts by 0 or 16 and masks rather than selects, which compilers turn into a branch
  // that goes either way at the fine bounds. `checked`: the words may end here. `few_raw_bits`: the
  // chunk's tokens rarely have raw bits, so a branch, which then goes one way, skips the raw bits' read
  // (a load, a shift and a mask on the chain of bit positions) for the others.
  const auto decode = [&]<bool checked, bool few_raw_bits>(std::size_t i, std::uint32_t& x, std::uint32_t& row,
                                                          std::bool_constant<checked>,
                                                          std::bool_constant<few_raw_bits>) ZCOLL_LAMBDA_ALWAYS_INLINE {
    const std::uint32_t slot = x & (ans_scale - 1);
    std::uint32_t context_row = row;
    if constexpr (with_levels) context_row += level[i] * (ans_magnitude_contexts << ans_scale_bits);
    const std::uint32_t token = slot_token[context_row + slot];
    const std::uint32_t entry = frequencies[(context_row >> (ans_scale_bits - token_bits)) + token];
    const std::uint32_t frequency = entry & 0xFFFFu;
    if (frequency == 0) [[unlikely]] {
      throw format_error("context-ans chunk: residual " + std::to_string(i) + " is in context " +
                         std::to_string(context_row >> ans_scale_bits) + ", which the stream's model has no table for");
    }
    x = frequency * (x >> ans_scale_bits) + slot - (entry >> 16);
    const auto renormalize = static_cast<std::uint32_t>(x < ans_state_low);
    std::uint16_t low = 0;
    bool past_end = false;
    if constexpr (checked) past_end = word == words_end;
    if (!past_end) std::memcpy(&low, word, 2);
    overrun |= renormalize != 0 && past_end;
    x = x << (16 * renormalize) | (low & (0u - renormalize));
    word += past_end ? 0 : 2 * renormalize;
    if constexpr (few_raw_bits) {
      const unsigned width = ans_token_extra_width[token];
      std::uint32_t symbol = ans_token_base[token];
      if (width != 0) [[unlikely]] symbol |= raw.read(width);
      residuals[i] = unzigzag(symbol);
    } else {
      residuals[i] = unzigzag(ans_token_base[token] | raw.read(ans_token_extra_width[token]));
    }
    row = ans_next_row[(row >> ans_scale_bits) * ans_token_count + token];
  };

  const std::size_t count = residuals.size(), length = ans_segment_length(count);
  std::uint32_t row[ans_segments] = {};
  std::size_t k = 0;
#if ZCOLL_HAS_AVX512 || ZCOLL_HAS_AVX2
  if (rounds == ans_rounds::vector) {
#if ZCOLL_HAS_AVX512
    const ans_vector_rounds done = context_ans_decode_rounds_avx512<with_levels>(
        m, {state, row}, word, words_end, raw, level, residuals.data(), count, length);
#else
    const ans_vector_rounds done = context_ans_decode_rounds_avx2<with_levels>(
        m, {state, row}, word, words_end, raw, level, residuals.data(), count, length);
#endif
    k = done.rounds;
    word = done.word;
  }
#else
  (void)rounds;
#endif
  // Rounds while a word a segment remains need no checks.
  const auto unchecked_rounds_of = [&](auto few_raw_bits) {
    for (; k < length && static_cast<std::size_t>(words_end - word) >= 2 * ans_segments; ++k) {
      const std::size_t segments = ans_round_segments(count, length, k);
      for (std::size_t segment = 0; segment < segments; ++segment) {
        decode(segment * length + k, state[segment], row[segment], std::false_type{}, few_raw_bits);
      }
    }
  };
  // Under a quarter of a raw bit a residual on average (at most one residual in eight with raw bits, each
  // having two or more): the branch pays. On HighRatio's streams of the shared fields at relative 1e-2
  // it made decompression 1.18-1.25x faster; at a bit a residual, 0.85x (docs/performance.md, issue 21).
  if (32 * std::uint64_t{extra_bytes} < count) {
    unchecked_rounds_of(std::true_type{});
  } else {
    unchecked_rounds_of(std::false_type{});
  }
  for (; k < length; ++k) {
    const std::size_t segments = ans_round_segments(count, length, k);
    for (std::size_t segment = 0; segment < segments; ++segment) {
      decode(segment * length + k, state[segment], row[segment], std::true_type{}, std::false_type{});
    }
  }
  if (overrun) throw format_error("context-ans chunk: the coder reads past its words");
  if (std::any_of(state, state + ans_segments, [](std::uint32_t x) { return x != ans_state_low; }) || word != words_end) {
    throw format_error("context-ans chunk: the coder does not end where it began (damaged or truncated words)");
  }
  if (!raw.at_padded_end()) {
    throw format_error("context-ans chunk: " + std::to_string(extra_bytes) +
                       " bytes of raw bits, not all read or not zero-padded");
  }
  return reader.offset();
}

/// Fills `residuals` from the front of `in`, given their level classes (`levels`: as many, or empty for
/// all 0, as the encoder was given; used where the model has their contexts); returns the bytes read.
/// Raises format_error on a chunk that reads past its parts, reaches a context the model has no table
/// for, or does not end with the states it began with and every word and raw bit read.
/// `rounds`: the vector rounds where the build has them (the default), or the scalar ones alone (the
/// tests compare the two).
inline std::size_t context_ans_decode_chunk(const context_ans_model& m, std::span<const std::byte> in,
                                            ans_level_span levels, std::span<std::uint32_t> residuals,
                                            ans_rounds rounds = ans_default_rounds) {
  if (m.uses_levels && !levels.empty()) {
    return context_ans_decode_chunk_of<true>(m, in, levels.data(), residuals, rounds);
  }
  return context_ans_decode_chunk_of<false>(m, in, nullptr, residuals, rounds);
}

}  // namespace zcoll::encode::detail
