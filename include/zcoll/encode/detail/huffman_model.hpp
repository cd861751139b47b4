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
#include "zcoll/core/config.hpp"
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

/// Why a stored model does not parse (huffman_model_fault_text words it).
enum class huffman_model_fault : std::uint8_t {
  none = 0,
  truncated,        // the model ends early
  bad_coding,       // the coding byte is neither 0 nor 1
  bad_alphabet,     // n not in 1..4095
  run_width,        // a zero run's count field wider than 12 bits
  run_past_escape,  // a zero run past the escape symbol
  bad_length,       // a code length outside 1..12
  padding,          // non-zero bits after the lengths
  no_escape,        // the escape symbol has no codeword
  incomplete,       // the lengths' Kraft sum is not 1
};

/// What parse_huffman_model found: the coding, n, the model's bytes, and where a fault was.
struct huffman_parsed_model {
  bool bitplane = false;
  std::uint32_t n = 0;           ///< the escape symbol; lengths[0..n] were written
  std::size_t bytes = 0;         ///< bytes the model takes
  std::size_t symbol = 0;        ///< the symbol a length fault is at
  std::uint64_t detail = 0;      ///< the field's value (coding, n, run width or length, Kraft sum)
};

/// The bits of the code-length stream, least significant first, from `size` bytes at `in`.
class huffman_model_bits {
 public:
  ZCOLL_HOST_DEVICE huffman_model_bits(const std::byte* in, std::size_t size) : in_(in), size_(size) {}

  /// The next `width` bits; false when the model ends first.
  ZCOLL_HOST_DEVICE bool read(unsigned width, std::uint32_t& value) {
    value = 0;
    for (unsigned b = 0; b < width; ++b) {
      if (available_ == 0) {
        if (used_ == size_) return false;
        byte_ = std::to_integer<unsigned>(in_[used_++]);
        available_ = 8;
      }
      value |= static_cast<std::uint32_t>(byte_ & 1u) << b;
      byte_ >>= 1;
      --available_;
    }
    return true;
  }
  ZCOLL_HOST_DEVICE std::size_t used() const { return used_; }
  /// The padding bits of the last byte read are zero.
  ZCOLL_HOST_DEVICE bool padding_is_zero() const { return byte_ == 0; }

 private:
  const std::byte* in_;
  std::size_t size_;
  std::size_t used_ = 0;
  unsigned byte_ = 0;
  unsigned available_ = 0;
};

/// Parses and validates a model from the front of the `size` bytes at `in`, as the host reader and the
/// CUDA decoder both do: under the Huffman coding the lengths of symbols 0..n go to `lengths` (room for
/// huffman_table_entries), each within 1..12 or unused, the escape used, together a complete prefix code.
ZCOLL_HOST_DEVICE inline huffman_model_fault parse_huffman_model(const std::byte* in, std::size_t size, std::uint8_t* lengths,
                                                                 huffman_parsed_model& parsed) {
  using T = huffman_length_token;
  if (size < 1) return huffman_model_fault::truncated;
  const auto coding = std::to_integer<std::uint8_t>(in[0]);
  parsed.detail = coding;
  parsed.bytes = 1;
  if (coding == static_cast<std::uint8_t>(huffman_coding::bitplane)) {
    parsed.bitplane = true;
    return huffman_model_fault::none;
  }
  if (coding != static_cast<std::uint8_t>(huffman_coding::huffman)) return huffman_model_fault::bad_coding;
  if (size < 3) return huffman_model_fault::truncated;
  const std::uint32_t n = std::to_integer<std::uint32_t>(in[1]) | std::to_integer<std::uint32_t>(in[2]) << 8;
  parsed.n = n;
  parsed.detail = n;
  if (n == 0 || n > huffman_alphabet_cap) return huffman_model_fault::bad_alphabet;
  for (std::uint32_t i = 0; i <= n; ++i) lengths[i] = 0;
  huffman_model_bits bits(in + 3, size - 3);
  unsigned previous = 0;
  for (std::uint32_t i = 0; i <= n;) {
    parsed.symbol = i;
    std::uint32_t bit = 0, length = 0;
    if (!bits.read(1, bit)) return huffman_model_fault::truncated;
    if (bit == T::repeat) {
      length = previous;
    } else {
      if (!bits.read(1, bit)) return huffman_model_fault::truncated;
      if (bit == 0) {
        if (!bits.read(1, bit)) return huffman_model_fault::truncated;
        length = bit == 0 ? previous + 1 : previous - 1;
      } else {
        if (!bits.read(1, bit)) return huffman_model_fault::truncated;
        if (bit == 0) {
          if (!bits.read(4, length)) return huffman_model_fault::truncated;
        } else {
          std::uint32_t width = 0, run = 0;
          if (!bits.read(4, width)) return huffman_model_fault::truncated;
          parsed.detail = width;
          if (width > huffman_max_code_length) return huffman_model_fault::run_width;
          if (!bits.read(width, run)) return huffman_model_fault::truncated;
          parsed.detail = std::uint64_t{run} + 1;
          if (run + 1 > n + 1 - i) return huffman_model_fault::run_past_escape;
          i += run + 1;
          continue;
        }
      }
    }
    parsed.detail = length;
    if (length == 0 || length > huffman_max_code_length) return huffman_model_fault::bad_length;
    lengths[i++] = static_cast<std::uint8_t>(length);
    previous = length;
  }
  parsed.bytes = 3 + bits.used();
  if (!bits.padding_is_zero()) return huffman_model_fault::padding;
  if (lengths[n] == 0) return huffman_model_fault::no_escape;
  std::uint64_t kraft = 0;
  for (std::uint32_t i = 0; i <= n; ++i) {
    if (lengths[i] != 0) kraft += std::uint64_t{1} << (huffman_max_code_length - lengths[i]);
  }
  parsed.detail = kraft;
  if (kraft != huffman_table_entries) return huffman_model_fault::incomplete;
  return huffman_model_fault::none;
}

/// What a model fault is, without the field values (the CUDA decoder reports only the fault).
inline const char* to_string(huffman_model_fault fault) {
  switch (fault) {
    case huffman_model_fault::none: return "none";
    case huffman_model_fault::truncated: return "the parameter section ends inside the model";
    case huffman_model_fault::bad_coding: return "the model's coding is not 0 (Huffman) or 1 (bit planes)";
    case huffman_model_fault::bad_alphabet: return "the model's escape symbol is not in 1..4095";
    case huffman_model_fault::run_width: return "a zero run of the code lengths has a count wider than 12 bits";
    case huffman_model_fault::run_past_escape: return "a zero run of the code lengths passes the escape symbol";
    case huffman_model_fault::bad_length: return "a code length is not in 1..12";
    case huffman_model_fault::padding: return "non-zero padding after the code lengths";
    case huffman_model_fault::no_escape: return "the escape symbol has no codeword";
    case huffman_model_fault::incomplete: return "the code lengths are not a complete prefix code";
  }
  return "unknown model fault";
}

/// The host reader's message for a model fault.
inline std::string huffman_model_fault_text(huffman_model_fault fault, const huffman_parsed_model& parsed) {
  const auto at = [&](const std::string& what) {
    return "huffman model: code length of symbol " + std::to_string(parsed.symbol) + ": " + what;
  };
  switch (fault) {
    case huffman_model_fault::none: return "";
    case huffman_model_fault::truncated: return "huffman model: the parameter section ends inside the model";
    case huffman_model_fault::bad_coding:
      return "huffman model: coding " + std::to_string(parsed.detail) + " is not 0 (Huffman) or 1 (bit planes)";
    case huffman_model_fault::bad_alphabet:
      return "huffman model: escape symbol " + std::to_string(parsed.detail) + " is not in 1.." + std::to_string(huffman_alphabet_cap);
    case huffman_model_fault::run_width: return at("zero run of a " + std::to_string(parsed.detail) + "-bit count");
    case huffman_model_fault::run_past_escape:
      return at("zero run of " + std::to_string(parsed.detail) + " passes the escape symbol " + std::to_string(parsed.n));
    case huffman_model_fault::bad_length:
      return at(std::to_string(parsed.detail) + " is not in 1.." + std::to_string(huffman_max_code_length));
    case huffman_model_fault::padding: return "huffman model: non-zero padding after the code lengths";
    case huffman_model_fault::no_escape: return "huffman model: the escape symbol has no codeword";
    case huffman_model_fault::incomplete:
      return "huffman model: code lengths have Kraft sum " + std::to_string(parsed.detail) + "/" +
             std::to_string(huffman_table_entries) + ", not a complete prefix code";
  }
  return "huffman model: unknown fault";
}

/// Reads and validates a model from the front of `in` (format_error on anything malformed).
inline huffman_model read_huffman_model(byte_reader& in) {
  const std::span<const std::byte> rest = in.rest();
  std::vector<std::uint8_t> lengths(huffman_table_entries);
  huffman_parsed_model parsed;
  const huffman_model_fault fault = parse_huffman_model(rest.data(), rest.size(), lengths.data(), parsed);
  if (fault != huffman_model_fault::none) throw format_error(huffman_model_fault_text(fault, parsed));
  in.take(parsed.bytes, "huffman model");
  if (parsed.bitplane) return {};
  lengths.resize(parsed.n + 1);
  return huffman_model_from_lengths(std::move(lengths));
}

}  // namespace zcoll::encode::detail
