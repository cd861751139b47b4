#pragma once
/// The Huffman model a stream shares across its chunks: built from the statistics, written to and read
/// from the stream's parameter section. Format in encode/huffman.hpp.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/core/bit_io.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"
#include "zcoll/encode/detail/huffman_statistics.hpp"

namespace zcoll::encode::detail {

/// Either a Huffman code (lengths and their tables) or the bit-plane fallback.
struct huffman_model {
  /// Every chunk is coded with the bit-plane blocks of encode/bitshuffle.hpp instead of the code.
  bool bitplane_fallback = true;
  /// Code lengths of the direct symbols 0..n-1 and of the escape (last); empty under the fallback.
  std::vector<std::uint8_t> lengths;
  huffman_tables tables;
  /// The model as write_model writes it (for a model read from a stream: its canonical form).
  std::vector<std::byte> serialized = {std::byte{1}};
};

enum class huffman_coding : std::uint8_t { huffman = 0, bitplane = 1 };

/// The largest model: the coding byte, n, and at most 7 bits per code length (a literal, or a zero run
/// of r lengths in 7 + bit_width(r - 1) <= 7r bits) for 4096 lengths.
inline constexpr std::size_t huffman_max_model_bytes = 3 + (7 * huffman_table_entries + 7) / 8;

/// Tokens of the code-length stream: prefix bits (read lowest first) and their count.
struct huffman_length_token {
  static constexpr std::uint32_t repeat = 0b0;   ///< the previous non-zero length
  static constexpr std::uint32_t up = 0b001;     ///< the previous + 1
  static constexpr std::uint32_t down = 0b101;   ///< the previous - 1
  static constexpr std::uint32_t literal = 0b011;  ///< then 4 bits: the length, 1..12
  static constexpr std::uint32_t zeros = 0b111;  ///< then 4 bits b and b bits: run - 1
  static constexpr unsigned repeat_bits = 1, step_bits = 3, literal_bits = 3, zeros_bits = 3;
};

/// The code lengths as the stream stores them (after the coding byte and n).
inline void write_code_lengths(std::span<const std::uint8_t> lengths, bit_writer& out) {
  using T = huffman_length_token;
  unsigned previous = 0;
  for (std::size_t i = 0; i < lengths.size();) {
    const unsigned length = lengths[i];
    if (length == 0) {
      std::size_t run = 1;
      while (i + run < lengths.size() && lengths[i + run] == 0) ++run;
      const auto width = static_cast<unsigned>(std::bit_width(run - 1));
      out.write(T::zeros, T::zeros_bits);
      out.write(width, 4);
      out.write(run - 1, width);
      i += run;
      continue;
    }
    if (length == previous) {
      out.write(T::repeat, T::repeat_bits);
    } else if (length == previous + 1) {
      out.write(T::up, T::step_bits);
    } else if (length + 1 == previous) {
      out.write(T::down, T::step_bits);
    } else {
      out.write(T::literal, T::literal_bits);
      out.write(length, 4);
    }
    previous = length;
    ++i;
  }
}

inline std::vector<std::byte> serialize_huffman_model(std::span<const std::uint8_t> lengths) {
  std::vector<std::byte> bytes(3 + lengths.size() + 8);  // 7 bits per length at most
  bytes[0] = static_cast<std::byte>(huffman_coding::huffman);
  const auto n = static_cast<std::uint16_t>(lengths.size() - 1);
  bytes[1] = static_cast<std::byte>(n & 0xFF);
  bytes[2] = static_cast<std::byte>(n >> 8);
  bit_writer out(std::span<std::byte>(bytes).subspan(3));
  write_code_lengths(lengths, out);
  bytes.resize(3 + out.flush());
  return bytes;
}

/// A model from checked code lengths (n + 1 of them, a complete code within the limit).
inline huffman_model huffman_model_from_lengths(std::vector<std::uint8_t> lengths) {
  huffman_model m;
  m.bitplane_fallback = false;
  m.tables = make_huffman_tables(lengths);
  m.serialized = serialize_huffman_model(lengths);
  m.lengths = std::move(lengths);
  return m;
}

/// The model for `stats`: the optimal length-limited code of its histogram, unless the bit-plane blocks
/// would be no larger (or there is nothing to judge by), in which case the fallback.
inline huffman_model make_huffman_model(const huffman_statistics& stats) {
  if (stats.value_count() == 0) return {};
  const std::vector<std::uint64_t> counts = stats.histogram();
  const std::uint64_t escapes = counts[huffman_alphabet_cap];
  // Direct symbols 0..n-1 up to the largest one seen; the escape always has a codeword (weight >= 1)
  // so that any residual can be coded, and with it the code always has two symbols and is complete.
  std::uint32_t n = huffman_alphabet_cap;
  while (n > 1 && counts[n - 1] == 0) --n;
  std::vector<std::uint64_t> weights(counts.begin(), counts.begin() + n + 1);
  if (weights[0] == 0 && n == 1) weights[0] = 1;  // only escapes: symbol 0 keeps the code complete
  weights[n] = std::max<std::uint64_t>(escapes, 1);
  std::vector<std::uint8_t> lengths(n + 1);
  limited_code_lengths(weights, huffman_max_code_length, lengths);

  std::uint64_t coded_bits = escapes * lengths[n] + stats.escape_payload_bits() + stats.chunk_overhead_bits();
  for (std::uint32_t s = 0; s < n; ++s) coded_bits += counts[s] * lengths[s];
  huffman_model m = huffman_model_from_lengths(std::move(lengths));
  const std::uint64_t huffman_bytes = (coded_bits + 7) / 8 + m.serialized.size();
  const std::uint64_t bitplane_bytes = stats.bitplane_bytes() + 1;
  if (huffman_bytes >= bitplane_bytes) return {};
  return m;
}

/// Pulls the bits of the code-length stream from a byte_reader, one byte at a time.
class huffman_model_bits {
 public:
  explicit huffman_model_bits(byte_reader& in) : in_(in) {}

  std::uint32_t read(unsigned width) {
    std::uint32_t value = 0;
    for (unsigned b = 0; b < width; ++b) {
      if (available_ == 0) {
        byte_ = in_.read<std::uint8_t>("huffman model code lengths");
        available_ = 8;
      }
      value |= static_cast<std::uint32_t>(byte_ & 1u) << b;
      byte_ >>= 1;
      --available_;
    }
    return value;
  }
  /// The padding bits of the last byte read are zero.
  bool padding_is_zero() const { return byte_ == 0; }

 private:
  byte_reader& in_;
  unsigned byte_ = 0;
  unsigned available_ = 0;
};

/// Reads and validates the code lengths of symbols 0..n: each within 1..12 or unused, the escape used,
/// and together a complete prefix code.
inline std::vector<std::uint8_t> read_code_lengths(byte_reader& in, std::uint32_t n) {
  using T = huffman_length_token;
  huffman_model_bits bits(in);
  std::vector<std::uint8_t> lengths(n + 1, 0);
  unsigned previous = 0;
  const auto bad = [&](const std::string& what, std::size_t i) {
    return format_error("huffman model: code length of symbol " + std::to_string(i) + ": " + what);
  };
  for (std::size_t i = 0; i <= n;) {
    unsigned length = 0;
    if (bits.read(1) == T::repeat) {
      length = previous;
    } else if (bits.read(1) == 0) {
      length = bits.read(1) == 0 ? previous + 1 : previous - 1;
    } else if (bits.read(1) == 0) {
      length = bits.read(4);
    } else {
      const unsigned width = bits.read(4);
      if (width > huffman_max_code_length) throw bad("zero run of a " + std::to_string(width) + "-bit count", i);
      const std::size_t run = std::size_t{bits.read(width)} + 1;
      if (run > n + 1 - i) throw bad("zero run of " + std::to_string(run) + " passes the escape symbol " + std::to_string(n), i);
      i += run;
      continue;
    }
    if (length == 0 || length > huffman_max_code_length) {
      throw bad(std::to_string(static_cast<int>(length)) + " is not in 1.." + std::to_string(huffman_max_code_length), i);
    }
    lengths[i++] = static_cast<std::uint8_t>(length);
    previous = length;
  }
  if (!bits.padding_is_zero()) throw format_error("huffman model: non-zero padding after the code lengths");
  if (lengths[n] == 0) throw format_error("huffman model: the escape symbol has no codeword");
  const std::uint64_t kraft = scaled_kraft_sum(lengths, huffman_max_code_length);
  if (kraft != huffman_table_entries) {
    throw format_error("huffman model: code lengths have Kraft sum " + std::to_string(kraft) + "/" +
                       std::to_string(huffman_table_entries) + ", not a complete prefix code");
  }
  return lengths;
}

inline huffman_model read_huffman_model(byte_reader& in) {
  const auto coding = in.read<std::uint8_t>("huffman model coding");
  if (coding == static_cast<std::uint8_t>(huffman_coding::bitplane)) return {};
  if (coding != static_cast<std::uint8_t>(huffman_coding::huffman)) {
    throw format_error("huffman model: coding " + std::to_string(coding) + " is not 0 (Huffman) or 1 (bit planes)");
  }
  const auto n = in.read<std::uint16_t>("huffman model alphabet size");
  if (n == 0 || n > huffman_alphabet_cap) {
    throw format_error("huffman model: escape symbol " + std::to_string(n) + " is not in 1.." +
                       std::to_string(huffman_alphabet_cap));
  }
  return huffman_model_from_lengths(read_code_lengths(in, n));
}

}  // namespace zcoll::encode::detail
