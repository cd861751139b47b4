#pragma once
/// The stream header and chunk size index: the contract between every producer and consumer of a zcoll stream.
///
/// A stream is `header | chunk size index | chunk 0 | chunk 1 | ...`, all little-endian:
///
/// | offset | bytes | field                                                                          |
/// |-------:|------:|--------------------------------------------------------------------------------|
/// |      0 |     4 | magic "ZCOL" (0x5A 0x43 0x4F 0x4C)                                             |
/// |      4 |     1 | format version (1)                                                             |
/// |      5 |     1 | codec id (codec/codec_id.hpp): which pipeline wrote the chunks                 |
/// |      6 |     1 | value type: 1 = f32, 2 = f64                                                   |
/// |      7 |     1 | flags: bit 0 = a fill value is declared; bits 1-7 are zero                     |
/// |      8 |     8 | value count (u64)                                                              |
/// |     16 |     8 | absolute error bound actually guaranteed (f64; 0 = lossless, +inf = none)      |
/// |     24 |     8 | fill value: the bit pattern of the value type, zero-extended (0 if undeclared) |
/// |     32 |     4 | chunk length: values per chunk (u32, a multiple of 32, 32..65536)              |
/// |     36 |     4 | chunk count (u32) = ceil(value count / chunk length)                           |
/// |     40 | 4 × chunk count | chunk size index: the byte size of each chunk (u32)                  |
///
/// Pipelines whose stages carry parameters (a Huffman code, the vector length of vector-LZ, the extents
/// of a 2-D or 3-D Lorenzo predictor) follow the index with a parameter section: its byte count (u32),
/// then the bytes, which the stages define: the predictor's first (Lorenzo<2>: nx; Lorenzo<3>: nx, ny;
/// u64 each), then the encoder's model. Whether a codec has one is fixed by its codec id.
///
/// Codecs with a fixed-size layout of their own (casts, row-wise quantizers, sparsifiers) write chunk
/// length 0 and chunk count 0: the header is followed by the body their header file documents.
///
/// The index lets a reader find any chunk at once, so chunks decode in parallel or pipelined with
/// communication (the PIPE-fZ-light layout of the ZCCL paper, §3.5.2). The stream is exactly as long as
/// header + index + the sum of the chunk sizes; read_stream_layout checks every field against the buffer.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

inline constexpr std::uint8_t stream_magic[4] = {0x5A, 0x43, 0x4F, 0x4C};
/// The magic as the little-endian word it reads as (device code cannot index a host array).
inline constexpr std::uint32_t stream_magic_word = 0x4C4F435A;
inline constexpr std::uint8_t stream_format_version = 1;
inline constexpr std::size_t stream_header_size_bytes = 40;
inline constexpr std::uint32_t min_chunk_values = 32;
inline constexpr std::uint32_t max_chunk_values = 65536;

/// The fixed-size part of a stream, as read or to be written.
struct stream_header {
  std::uint8_t codec_id = 0;
  value_type type = value_type::f32;
  bool has_fill_value = false;
  std::uint64_t count = 0;
  double error_bound = 0.0;
  std::uint64_t fill_bits = 0;
  std::uint32_t chunk_values = 0;
  std::uint32_t chunk_count = 0;
};

/// Chunks needed for `count` values of `chunk_values` each.
ZCOLL_HOST_DEVICE constexpr std::uint64_t chunk_count_for(std::uint64_t count, std::uint32_t chunk_values) {
  return count / chunk_values + (count % chunk_values != 0);  // no wrap-around near 2^64
}

/// Bytes of header plus chunk size index.
ZCOLL_HOST_DEVICE constexpr std::size_t stream_prefix_size_bytes(std::uint32_t chunk_count) {
  return stream_header_size_bytes + std::size_t{4} * chunk_count;
}

/// Stores the header's stream_header_size_bytes bytes at `out` (host and CUDA drivers alike).
ZCOLL_HOST_DEVICE inline void store_stream_header(const stream_header& h, std::byte* out) {
  const auto put = [&](std::size_t offset, const auto& value) { std::memcpy(out + offset, &value, sizeof value); };
  const std::uint32_t magic = stream_magic_word;  // a copy: device code cannot take a host constant's address
  put(0, magic);
  out[4] = static_cast<std::byte>(stream_format_version);
  out[5] = static_cast<std::byte>(h.codec_id);
  out[6] = static_cast<std::byte>(h.type);
  out[7] = static_cast<std::byte>(h.has_fill_value ? 1 : 0);
  put(8, h.count);
  put(16, h.error_bound);
  put(24, h.fill_bits);
  put(32, h.chunk_values);
  put(36, h.chunk_count);
}

inline void write_stream_header(byte_writer& out, const stream_header& h) {
  store_stream_header(h, out.claim(stream_header_size_bytes).data());
}

/// Reads and validates the fixed header (not the index).
inline stream_header read_stream_header(std::span<const std::byte> stream) {
  byte_reader in(stream);
  for (auto expected : stream_magic) {
    if (in.read<std::uint8_t>("header magic") != expected) throw format_error("bad magic: not a zcoll stream");
  }
  const auto version = in.read<std::uint8_t>("header version");
  if (version != stream_format_version) {
    throw format_error("format version " + std::to_string(version) + " is not supported (expected " +
                       std::to_string(stream_format_version) + ")");
  }
  stream_header h;
  h.codec_id = in.read<std::uint8_t>("header codec id");
  const auto type = in.read<std::uint8_t>("header value type");
  if (type != static_cast<std::uint8_t>(value_type::f32) && type != static_cast<std::uint8_t>(value_type::f64)) {
    throw format_error("value type tag " + std::to_string(type) + " is neither 1 (f32) nor 2 (f64)");
  }
  h.type = static_cast<value_type>(type);
  const auto flags = in.read<std::uint8_t>("header flags");
  if (flags > 1) throw format_error("header flags " + std::to_string(flags) + " has reserved bits set");
  h.has_fill_value = flags == 1;
  h.count = in.read<std::uint64_t>("header value count");
  h.error_bound = in.read<double>("header error bound");
  if (!(h.error_bound >= 0.0)) {  // +inf is allowed: a cast that overflowed states no bound
    throw format_error("error bound " + std::to_string(h.error_bound) + " is not >= 0");
  }
  h.fill_bits = in.read<std::uint64_t>("header fill value");
  if (h.type == value_type::f32 && (h.fill_bits >> 32) != 0) {
    throw format_error("f32 fill value has bits set above bit 31");
  }
  if (!h.has_fill_value && h.fill_bits != 0) throw format_error("fill value set without the fill flag");
  h.chunk_values = in.read<std::uint32_t>("header chunk length");
  h.chunk_count = in.read<std::uint32_t>("header chunk count");
  if (h.chunk_values == 0) {  // an unchunked body: the codec's own layout follows the header
    if (h.chunk_count != 0) {
      throw format_error("unchunked stream (chunk length 0) with a chunk count of " + std::to_string(h.chunk_count));
    }
    return h;
  }
  if (h.chunk_values < min_chunk_values || h.chunk_values > max_chunk_values || h.chunk_values % 32 != 0) {
    throw format_error("chunk length " + std::to_string(h.chunk_values) +
                       " is not a multiple of 32 in [32, 65536]");
  }
  if (h.chunk_count != chunk_count_for(h.count, h.chunk_values)) {
    throw format_error("chunk count " + std::to_string(h.chunk_count) + " does not match value count " +
                       std::to_string(h.count) + " in chunks of " + std::to_string(h.chunk_values));
  }
  return h;
}

/// A validated stream: its header and its chunk size index, read in place (no allocation).
struct stream_layout {
  stream_header header;
  std::span<const std::byte> index;       ///< 4 bytes per chunk
  std::span<const std::byte> parameters;  ///< the parameter section's bytes (empty without one)
  std::size_t first_chunk_offset = 0;

  std::uint32_t chunk_size_bytes(std::uint32_t chunk) const {
    std::uint32_t size;
    std::memcpy(&size, index.data() + std::size_t{4} * chunk, 4);
    return size;
  }
  /// Offset of `chunk` in the stream: header, index, parameter section and the chunks before it.
  std::size_t chunk_offset(std::uint32_t chunk) const {
    std::size_t offset = first_chunk_offset;
    for (std::uint32_t c = 0; c < chunk; ++c) offset += chunk_size_bytes(c);
    return offset;
  }
};

/// format_error unless `header` was written by the codec `id` (called `name` in the message) for values of
/// type `type`: what every decoder checks first.
inline void require_codec_and_type(const stream_header& header, std::uint8_t id, const std::string& name,
                                   value_type type) {
  if (header.codec_id != id) {
    throw format_error("stream was written by codec id " + std::to_string(header.codec_id) + ", this is " + name +
                       " (id " + std::to_string(id) + ")");
  }
  if (header.type != type) {
    throw format_error(std::string("stream holds ") + to_string(header.type) + " values, not " + to_string(type));
  }
}

/// format_error unless the header is in the unchunked form (chunk length and count 0) of a codec with a
/// layout of its own, and declares no fill value.
inline void require_unchunked_without_fill(const stream_header& header, const std::string& name) {
  if (header.chunk_values != 0 || header.chunk_count != 0) {
    throw format_error("a " + name + " stream is unchunked (chunk length and count 0), not chunk length " +
                       std::to_string(header.chunk_values));
  }
  if (header.has_fill_value) throw format_error("a " + name + " stream declares no fill value");
}

/// Reads header, chunk size index and (when `with_parameters`) the parameter section, and checks that the
/// chunks exactly fill `stream`.
inline stream_layout read_stream_layout(std::span<const std::byte> stream, bool with_parameters = false) {
  const stream_header header = read_stream_header(stream);
  if (header.chunk_values == 0) throw format_error("stream is unchunked; this codec writes chunked streams");
  const auto chunks = header.chunk_count;
  if (stream.size() - stream_header_size_bytes < std::uint64_t{4} * chunks) {
    throw format_error("chunk size index of " + std::to_string(chunks) + " entries is truncated");
  }
  stream_layout layout{header, stream.subspan(stream_header_size_bytes, std::size_t{4} * chunks), {}, 0};
  std::size_t offset = stream_prefix_size_bytes(chunks);
  if (with_parameters) {
    byte_reader section(stream.subspan(offset));
    const auto bytes = section.read<std::uint32_t>("parameter section size");
    if (bytes > stream.size() - offset - 4) {
      throw format_error("parameter section of " + std::to_string(bytes) + " bytes does not fit in the stream");
    }
    layout.parameters = stream.subspan(offset + 4, bytes);
    offset += 4 + std::size_t{bytes};
  }
  layout.first_chunk_offset = offset;
  for (std::uint32_t c = 0; c < chunks; ++c) {
    const auto size = layout.chunk_size_bytes(c);
    if (size == 0 || size > stream.size() - offset) {
      throw format_error("chunk " + std::to_string(c) + " of " + std::to_string(size) +
                         " bytes does not fit in the stream of " + std::to_string(stream.size()) + " bytes");
    }
    offset += size;
  }
  if (offset != stream.size()) {
    throw format_error("stream is " + std::to_string(stream.size()) + " bytes but its chunks end at byte " +
                       std::to_string(offset));
  }
  return layout;
}

}  // namespace zcoll
