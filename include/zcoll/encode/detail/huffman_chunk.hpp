#pragma once
/// The per-chunk math of the Huffman encoder, written once for every driver.
///
/// Chunk format (N residuals coded with the stream's model; K = 4 streams when N >= 1024, else K = 1):
///
/// | bytes        | field                                                                          |
/// |--------------|--------------------------------------------------------------------------------|
/// | 2 × (K - 1)  | byte sizes of streams 0..K-2 (u16 each); stream K-1 ends where its symbols end |
/// | sizes        | streams 0..K-1, back to back                                                   |
///
/// Stream s holds residuals [s·Q, min((s+1)·Q, N)) with Q = ceil(N / K), as a bit stream, least
/// significant bit first within each byte: per residual the codeword of its zigzag symbol (canonical,
/// bit-reversed), or the escape codeword, a 5-bit field w - 1 and the w low bits of the symbol (w = its
/// bit width, at least 1). Each stream ends with zero bits up to a whole byte.
///
/// Four streams let the decoder follow four independent bit positions at once, hiding the latency of
/// the table lookup that one stream pays per codeword (Huff0's layout): 0.93-1.09 G residuals/s against
/// 0.34 with one stream (one Zen 3 core). Contiguous quarters rather than interleaved residuals let the
/// encoder compute the symbols of 32 consecutive residuals with vector instructions. Chunks under 1024
/// values use one stream: there the 6 bytes of sizes and the padding of three more streams would cost
/// over 1% (at 4096 values, 0.35% at 3 bits a residual).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"

namespace zcoll::encode::detail {

inline constexpr std::size_t huffman_four_streams_min_values = 1024;

// Four codewords per refill of the decoder (56 bits or more) and per flush of the encoder (7 bits left).
static_assert(4 * huffman_max_code_length <= 56 && 7 + 4 * huffman_max_code_length <= 63,
              "huffman: four codewords must fit a 64-bit bit buffer");
// Every one of four streams of ceil(n / 4) residuals holds at least one (so the last is not negative).
static_assert(huffman_four_streams_min_values >= 12, "huffman: four streams need at least 12 residuals");

constexpr unsigned huffman_stream_count(std::size_t values) {
  return values >= huffman_four_streams_min_values ? 4u : 1u;
}
constexpr std::size_t huffman_stream_table_bytes(unsigned streams) { return 2 * std::size_t{streams - 1}; }

/// Expected framing of a chunk of `values` residuals: the stream sizes, and 3.5 bits of padding per
/// stream (rounded up to 4).
constexpr std::uint64_t huffman_chunk_overhead_bits(std::size_t values) {
  const unsigned streams = huffman_stream_count(values);
  return 8 * huffman_stream_table_bytes(streams) + 4 * std::uint64_t{streams};
}

// ---------------------------------------------------------------------------------------------------
// Encoding

/// The state of a bit sink after a flush near the end of its room.
struct huffman_flushed {
  std::size_t position;
  std::uint64_t buffer;
  bool fits;
};

/// Writes the whole pending bytes one at a time, checked against `end`. Takes and returns values, so the
/// sink that calls it keeps its state in registers.
[[gnu::noinline]] inline huffman_flushed huffman_flush_near_end(std::byte* out, std::size_t position,
                                                                std::size_t end, std::uint64_t buffer,
                                                                unsigned pending) {
  const unsigned bytes = pending >> 3;
  if (bytes > end - position) return {position, buffer, false};
  for (unsigned k = 0; k < bytes; ++k) out[position++] = static_cast<std::byte>((buffer >> (8 * k)) & 0xFF);
  return {position, bytes == 8 ? 0 : buffer >> (8 * bytes), true};
}

/// A bit stream being written into out[position, end): whole bytes leave the 64-bit buffer with one
/// unaligned 8-byte store while 8 bytes of room remain, and one checked byte at a time near the end.
class huffman_bit_sink {
 public:
  huffman_bit_sink(std::byte* out, std::size_t position, std::size_t end) : out_(out), position_(position), end_(end) {}

  /// Appends `width` bits; at most 63 bits may be pending afterwards.
  ZCOLL_ALWAYS_INLINE void put(std::uint64_t bits, unsigned width) {
    buffer_ |= bits << pending_;
    pending_ += width;
  }

  /// Moves the whole pending bytes out, leaving at most 7 bits; false when they do not fit.
  ZCOLL_ALWAYS_INLINE bool flush() {
    if (position_ + 8 <= end_) [[likely]] {
      std::memcpy(out_ + position_, &buffer_, 8);
      position_ += pending_ >> 3;
      buffer_ >>= pending_ & ~7u;
      pending_ &= 7;
      return true;
    }
    const huffman_flushed f = huffman_flush_near_end(out_, position_, end_, buffer_, pending_);
    position_ = f.position;
    buffer_ = f.buffer;
    pending_ &= 7;
    return f.fits;
  }

  /// Writes the last partial byte, zero-padded; false when it does not fit.
  bool finish() {
    if (!flush()) return false;
    if (pending_ == 0) return true;
    if (position_ >= end_) return false;
    out_[position_++] = static_cast<std::byte>(buffer_ & 0xFF);
    buffer_ = 0;
    pending_ = 0;
    return true;
  }

  std::size_t position() const { return position_; }

 private:
  std::byte* out_;
  std::size_t position_;
  std::size_t end_;
  std::uint64_t buffer_ = 0;
  unsigned pending_ = 0;
};

/// The escape codeword and payload of `symbol`, flushing around them; leaves at most 7 bits pending.
ZCOLL_ALWAYS_INLINE bool huffman_put_escape(std::uint32_t escape_entry, std::uint32_t symbol, huffman_bit_sink& sink) {
  const unsigned width = huffman_escape_value_bits(symbol);
  if (!sink.flush()) return false;
  sink.put(escape_entry >> 5, escape_entry & 31);
  sink.put(width - 1, huffman_escape_width_bits);
  if (!sink.flush()) return false;
  sink.put(symbol, width);
  return sink.flush();
}

/// Table indices of 32 residuals: min(zigzag(r), n), where n (the escape's slot) also takes every
/// symbol beyond the direct ones. A loop the compiler turns into a few AVX2 instructions per 8 residuals.
ZCOLL_ALWAYS_INLINE void huffman_symbol_slots(const std::int32_t* ZCOLL_RESTRICT residuals, std::uint32_t escape_symbol,
                                              std::uint32_t* ZCOLL_RESTRICT slots, std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) slots[j] = std::min(zigzag(residuals[j]), escape_symbol);
}

/// Codes `count` consecutive residuals as one stream at out[position, end); the end of the stream, or
/// nothing when it does not fit.
inline std::optional<std::size_t> huffman_encode_stream(const huffman_tables& tables,
                                                        const std::int32_t* ZCOLL_RESTRICT residuals,
                                                        std::size_t count, std::byte* out, std::size_t position,
                                                        std::size_t end) {
  const std::uint32_t* ZCOLL_RESTRICT encode = tables.encode.data();
  const std::uint32_t escape_symbol = tables.escape_symbol;
  const std::uint32_t escape_entry = tables.escape_entry;
  huffman_bit_sink sink(out, position, end);
  // One codeword: a lookup, the escape test, a shift and an or. Entry 0 marks a symbol to escape.
  const auto put = [&](std::uint32_t slot, std::int32_t residual) ZCOLL_LAMBDA_ALWAYS_INLINE {
    const std::uint32_t entry = encode[slot];
    if (entry == 0) [[unlikely]] return huffman_put_escape(escape_entry, zigzag(residual), sink);
    sink.put(entry >> 5, entry & 31);
    return true;
  };
  alignas(32) std::uint32_t slots[block_values];
  for (std::size_t first = 0; first < count; first += block_values) {
    const std::size_t tile = std::min(block_values, count - first);
    const std::int32_t* r = residuals + first;
    if (tile == block_values) {
      huffman_symbol_slots(r, escape_symbol, slots, block_values);
    } else {
      huffman_symbol_slots(r, escape_symbol, slots, tile);
    }
    // Four codewords of at most 12 bits fit the buffer after a flush leaves at most 7 bits.
    std::size_t j = 0;
    for (; j + 4 <= tile; j += 4) {
      const bool fits = put(slots[j], r[j]) && put(slots[j + 1], r[j + 1]) && put(slots[j + 2], r[j + 2]) &&
                        put(slots[j + 3], r[j + 3]);
      if (!fits || !sink.flush()) return std::nullopt;
    }
    for (; j < tile; ++j) {
      if (!put(slots[j], r[j]) || !sink.flush()) return std::nullopt;
    }
  }
  if (!sink.finish()) return std::nullopt;
  return sink.position();
}

/// Residuals per stream: Q = ceil(n / streams) (the last stream holds the rest).
constexpr std::size_t huffman_stream_values(std::size_t values, unsigned streams) {
  return (values + streams - 1) / streams;
}

/// Writes a chunk into `out`; its size, or nothing when it does not fit. Writes nothing past `out`.
inline std::optional<std::size_t> huffman_encode_chunk(const huffman_tables& tables,
                                                       std::span<const std::int32_t> residuals,
                                                       std::span<std::byte> out) {
  const std::size_t n = residuals.size();
  const unsigned streams = huffman_stream_count(n);
  const std::size_t quarter = huffman_stream_values(n, streams);
  const std::size_t table_bytes = huffman_stream_table_bytes(streams);
  if (out.size() < table_bytes) return std::nullopt;
  std::size_t position = table_bytes;
  for (unsigned s = 0; s < streams; ++s) {
    const std::size_t first = std::min(n, s * quarter);
    const std::size_t count = std::min(n, first + quarter) - first;
    const auto stream_end =
        huffman_encode_stream(tables, residuals.data() + first, count, out.data(), position, out.size());
    if (!stream_end) return std::nullopt;
    if (s + 1 < streams) {
      const std::size_t size = *stream_end - position;
      if (size > 0xFFFF) return std::nullopt;  // over 32 bits per residual: the verbatim chunk is smaller
      const auto size16 = static_cast<std::uint16_t>(size);
      std::memcpy(out.data() + 2 * s, &size16, 2);
    }
    position = *stream_end;
  }
  return position;
}

// ---------------------------------------------------------------------------------------------------
// Decoding

/// The bytes of in[position, position + 8) that lie inside `in`, the rest read as zeros.
[[gnu::noinline]] ZCOLL_HOST_DEVICE inline std::uint64_t huffman_load_near_end(const std::byte* in, std::size_t size,
                                                                               std::size_t position) {
  std::uint64_t word = 0;
  for (std::size_t k = 0; k < 8 && position + k < size; ++k) {
    word |= std::to_integer<std::uint64_t>(in[position + k]) << (8 * k);
  }
  return word;
}

/// A bit stream read from in[position, ...): refills load 8 bytes at once while 8 remain in `in` and
/// read the bytes past the end of `in` as zeros near it, so nothing past `in` is ever read. The
/// position may run past the end; the caller compares the bits consumed with the stream's size.
///
/// The buffer holds the unread bits from bit 0 up, then a 1 (the sentinel) above them, so the bits left
/// are 63 - countl_zero(buffer): consuming a codeword is one shift, with no bit count to update (zstd's
/// fast Huffman loop does the same, reading backwards). The streams of a chunk share `in`, which is
/// passed to refill() rather than kept per stream, so a decoder's four sources (8 registers) stay in
/// registers.
class huffman_bit_source {
 public:
  ZCOLL_HOST_DEVICE huffman_bit_source() {}
  ZCOLL_HOST_DEVICE explicit huffman_bit_source(std::size_t position) : position_(position) {}

  /// Tops the buffer up to 56..63 bits.
  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void refill(std::span<const std::byte> in) {
    const std::size_t bit_position = 8 * position_ + static_cast<std::size_t>(zcoll::countl_zero(buffer_));
    position_ = bit_position >> 3;
    const unsigned skip = bit_position & 7;
    std::uint64_t word;
    if (position_ + 8 <= in.size()) [[likely]] {
      std::memcpy(&word, in.data() + position_, 8);
    } else {
      word = huffman_load_near_end(in.data(), in.size(), position_);
    }
    buffer_ = (word >> skip) | (sentinel >> skip);
  }

  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::uint64_t peek() const { return buffer_; }
  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void consume(unsigned bits) { buffer_ >>= bits; }

  /// Bits consumed since byte `begin`.
  ZCOLL_HOST_DEVICE std::uint64_t consumed_bits(std::size_t begin) const {
    return 8 * (position_ - begin) + static_cast<std::size_t>(zcoll::countl_zero(buffer_));
  }

 private:
  static constexpr std::uint64_t sentinel = std::uint64_t{1} << 63;
  std::size_t position_ = 0;         // the byte the buffer was loaded from
  std::uint64_t buffer_ = sentinel;  // nothing read yet
};

/// The payload after an escape codeword. Refills first (the escape may end a group of four codewords
/// that used 48 of the 56 bits) and after (the rest of the group needs up to 36 bits).
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::uint32_t huffman_get_escape(std::span<const std::byte> in, huffman_bit_source& source) {
  source.refill(in);
  const unsigned width = static_cast<unsigned>(source.peek() & 31) + 1;
  source.consume(huffman_escape_width_bits);
  const std::uint64_t symbol = source.peek() & ((std::uint64_t{1} << width) - 1);
  source.consume(width);
  source.refill(in);
  return unzigzag(static_cast<std::uint32_t>(symbol));
}

/// One residual: a single lookup of the next 12 bits gives its value and codeword length.
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE std::uint32_t huffman_get_residual(const std::int32_t* ZCOLL_RESTRICT table,
                                                       std::span<const std::byte> in, huffman_bit_source& source) {
  const std::int32_t entry = table[source.peek() & (huffman_table_entries - 1)];
  source.consume(static_cast<unsigned>(entry) & 63u);
  if (entry < huffman_decode_escape_below) [[unlikely]] return huffman_get_escape(in, source);
  return static_cast<std::uint32_t>(entry >> huffman_decode_length_bits);
}

/// Decodes the streams of `in` into residuals[s·quarter, ...): `count` residuals in all. After one
/// refill per stream (56 bits or more), four codewords of each, the streams' lookups independent of one
/// another. The folds over the stream index keep every index a constant, so the sources stay in
/// registers.
template <std::size_t Streams>
void huffman_decode_streams(const std::int32_t* ZCOLL_RESTRICT table, std::span<const std::byte> in,
                            huffman_bit_source* sources, std::uint32_t* ZCOLL_RESTRICT residuals, std::size_t count) {
  constexpr auto streams = std::make_index_sequence<Streams>{};
  const std::size_t quarter = huffman_stream_values(count, Streams);
  const std::size_t last_count = count - (Streams - 1) * quarter;  // the shortest stream
  huffman_bit_source source[Streams];
  [&]<std::size_t... S>(std::index_sequence<S...>) ZCOLL_LAMBDA_ALWAYS_INLINE { ((source[S] = sources[S]), ...); }(streams);
  std::size_t j = 0;
  for (; j + 4 <= last_count; j += 4) {
    [&]<std::size_t... S>(std::index_sequence<S...>) ZCOLL_LAMBDA_ALWAYS_INLINE {
      (source[S].refill(in), ...);
      for (std::size_t u = 0; u < 4; ++u) {
        ((residuals[S * quarter + j + u] = huffman_get_residual(table, in, source[S])), ...);
      }
    }(streams);
  }
  // The rest of each stream, one codeword per refill.
  [&]<std::size_t... S>(std::index_sequence<S...>) ZCOLL_LAMBDA_ALWAYS_INLINE {
    ((
         [&]() ZCOLL_LAMBDA_ALWAYS_INLINE {
           const std::size_t stream_count = S + 1 == Streams ? last_count : quarter;
           for (std::size_t k = j; k < stream_count; ++k) {
             source[S].refill(in);
             residuals[S * quarter + k] = huffman_get_residual(table, in, source[S]);
           }
         }()),
     ...);
    ((sources[S] = source[S]), ...);
  }(streams);
}

/// Decodes one stream of a chunk alone: `count` residuals from byte `begin` of `in`; returns the bits
/// consumed. What a CUDA thread runs for its stream (the host decodes the four interleaved instead).
ZCOLL_HOST_DEVICE inline std::uint64_t huffman_decode_one_stream(const std::int32_t* table, std::span<const std::byte> in,
                                                                 std::size_t begin, std::uint32_t* residuals,
                                                                 std::size_t count) {
  huffman_bit_source source(begin);
  std::size_t k = 0;
  for (; k + 4 <= count; k += 4) {
    source.refill(in);
    for (std::size_t u = 0; u < 4; ++u) residuals[k + u] = huffman_get_residual(table, in, source);
  }
  for (; k < count; ++k) {
    source.refill(in);
    residuals[k] = huffman_get_residual(table, in, source);
  }
  return source.consumed_bits(begin);
}

/// Why a Huffman chunk does not decode (the detail the CUDA decoder reports).
enum class huffman_chunk_fault : std::uint8_t {
  none = 0,
  short_table,      // shorter than its stream size table
  stream_past_end,  // a stream's size runs past the chunk
  stream_length,    // a stream's codewords do not end where its size says
  padding,          // non-zero padding bits after a stream's codewords
};

/// Where a chunk of n residuals keeps its streams: begin[s], end[s] within `size` bytes.
struct huffman_chunk_streams {
  unsigned streams = 1;
  std::size_t begin[4] = {};
  std::size_t end[4] = {};
};

/// Locates the streams of a chunk of n residuals in `in` (host and device decoders alike).
ZCOLL_HOST_DEVICE inline huffman_chunk_fault locate_huffman_streams(std::span<const std::byte> in, std::size_t n,
                                                                    huffman_chunk_streams& where, unsigned& at_stream) {
  where.streams = huffman_stream_count(n);
  const std::size_t table_bytes = huffman_stream_table_bytes(where.streams);
  if (in.size() < table_bytes) return huffman_chunk_fault::short_table;
  std::size_t position = table_bytes;
  for (unsigned s = 0; s < where.streams; ++s) {
    at_stream = s;
    where.begin[s] = position;
    if (s + 1 < where.streams) {
      std::uint16_t size;
      std::memcpy(&size, in.data() + 2 * s, 2);
      position += size;
    } else {
      position = in.size();
    }
    where.end[s] = position;  // set before the check: the host's message names the stream's size
    if (position > in.size()) return huffman_chunk_fault::stream_past_end;
  }
  return huffman_chunk_fault::none;
}

/// Checks that stream s, having consumed `consumed` bits, ends where its size says (the last within
/// `in`), zero-padded.
ZCOLL_HOST_DEVICE inline huffman_chunk_fault check_huffman_stream_end(std::span<const std::byte> in,
                                                                      const huffman_chunk_streams& where, unsigned s,
                                                                      std::uint64_t consumed) {
  const std::uint64_t used = (consumed + 7) / 8;
  const std::uint64_t size = where.end[s] - where.begin[s];
  if (used > size || (s + 1 < where.streams && used != size)) return huffman_chunk_fault::stream_length;
  if (const unsigned tail_bits = static_cast<unsigned>(consumed % 8); tail_bits != 0) {
    if ((std::to_integer<unsigned>(in[where.begin[s] + used - 1]) >> tail_bits) != 0) return huffman_chunk_fault::padding;
  }
  return huffman_chunk_fault::none;
}

/// Reads a chunk from the front of `in` into `residuals`; returns the bytes read. Raises format_error
/// on stream sizes that do not match the codewords, a truncated chunk or non-zero padding bits.
inline std::size_t huffman_decode_chunk(const huffman_tables& tables, std::span<const std::byte> in,
                                        std::span<std::uint32_t> residuals) {
  const std::size_t n = residuals.size();
  huffman_chunk_streams where;
  unsigned at = 0;
  switch (locate_huffman_streams(in, n, where, at)) {
    case huffman_chunk_fault::short_table:
      throw format_error("huffman: chunk of " + std::to_string(in.size()) + " bytes is shorter than its " +
                         std::to_string(huffman_stream_table_bytes(where.streams)) + "-byte stream size table");
    case huffman_chunk_fault::stream_past_end:
      throw format_error("huffman: stream " + std::to_string(at) + " of " + std::to_string(where.end[at] - where.begin[at]) +
                         " bytes runs past the chunk's " + std::to_string(in.size()) + " bytes");
    default: break;
  }
  huffman_bit_source sources[4];
  for (unsigned s = 0; s < where.streams; ++s) sources[s] = huffman_bit_source(where.begin[s]);
  if (where.streams == 1) {
    huffman_decode_streams<1>(tables.decode.data(), in, sources, residuals.data(), n);
  } else {
    huffman_decode_streams<4>(tables.decode.data(), in, sources, residuals.data(), n);
  }
  for (unsigned s = 0; s < where.streams; ++s) {
    const std::uint64_t consumed = sources[s].consumed_bits(where.begin[s]);
    switch (check_huffman_stream_end(in, where, s, consumed)) {
      case huffman_chunk_fault::stream_length:
        throw format_error("huffman: stream " + std::to_string(s) + " of " + std::to_string(where.end[s] - where.begin[s]) +
                           " bytes holds codewords of " + std::to_string(consumed) + " bits");
      case huffman_chunk_fault::padding:
        throw format_error("huffman: stream " + std::to_string(s) + " has non-zero padding bits");
      default: break;
    }
  }
  const unsigned last = where.streams - 1;
  return where.begin[last] + (sources[last].consumed_bits(where.begin[last]) + 7) / 8;
}

}  // namespace zcoll::encode::detail
