#pragma once
/// The stream header and chunk size index: the contract between every producer and consumer of a zcoll stream.
///
/// A stream is `header | chunk size index | chunk 0 | chunk 1 | ...`, all little-endian. Format version 2:
///
/// | offset | bytes | field                                                                          |
/// |-------:|------:|--------------------------------------------------------------------------------|
/// |      0 |     4 | magic "ZCOL" (0x5A 0x43 0x4F 0x4C)                                             |
/// |      4 |     1 | format version (2)                                                             |
/// |      5 |     1 | codec kind: 0x80 = a pipeline of the stages in bytes 8-11; below 0x80 a codec  |
/// |        |       | with a layout of its own (codec/codec_id.hpp lists them)                       |
/// |      6 |     1 | value type: 1 = f32, 2 = f64                                                   |
/// |      7 |     1 | flags: bit 0 = a fill value is declared; bits 1-7 are zero                     |
/// |      8 |     1 | quantizer id (pipelines; 0 otherwise)                                          |
/// |      9 |     1 | predictor id (pipelines; 0 otherwise)                                          |
/// |     10 |     1 | encoder id (pipelines; 0 otherwise)                                            |
/// |     11 |     1 | lossless back-end id: 0 = none, 1 = zstd (backend/zstd.hpp)                     |
/// |     12 |     4 | reserved, zero                                                                 |
/// |     16 |     8 | value count (u64)                                                              |
/// |     24 |     8 | absolute error bound actually guaranteed (f64; 0 = lossless, +inf = none)      |
/// |     32 |     8 | fill value: the bit pattern of the value type, zero-extended (0 if undeclared) |
/// |     40 |     4 | chunk length: values per chunk (u32, a multiple of 32, 32..65536)              |
/// |     44 |     4 | chunk count (u32) = ceil(value count / chunk length)                           |
/// |     48 | 4 × chunk count | chunk size index: the byte size of each chunk (u32)                  |
///
/// Version 1 (zcoll before API 1.0) had a 40-byte header whose byte 5 packed the three stage ids into
/// 2 and 3 bits; it is refused with a message that says so: the format is pre-1.0 and not kept.
///
/// Pipelines whose stages carry parameters (a Huffman code, the vector length of vector-LZ, the extents
/// of a 2-D or 3-D Lorenzo predictor) follow the index with a parameter section: its byte count (u32),
/// then the bytes, which the stages define: the predictor's first (Lorenzo<2>: nx; Lorenzo<3>: nx, ny;
/// u64 each), then the encoder's model. Whether a codec has one is fixed by its stages.
///
/// Codecs with a fixed-size layout of their own (casts, row-wise quantizers, sparsifiers) write chunk
/// length 0 and chunk count 0: the header is followed by the body their header file documents.
///
/// The index lets a reader find any chunk at once, so chunks decode in parallel or pipelined with
/// communication (the PIPE-fZ-light layout of the ZCCL paper, §3.5.2). The stream is exactly as long as
/// header + index + the sum of the chunk sizes; read_stream_layout checks every field against the buffer.
///
/// parse_stream_header is the one reader of the fixed header: the host decoders call it through
/// read_stream_header (which turns its fault into a format_error message), the CUDA decoders call it in
/// their kernels.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
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
inline constexpr std::uint8_t stream_format_version = 2;
inline constexpr std::size_t stream_header_size_bytes = 48;
inline constexpr std::uint32_t min_chunk_values = 32;
/// The longest chunk of the format: 2^20 values, so that a chunk's blocks (32768) are named by the u16
/// block numbers of its exception section. Each pipeline allows what its encoder codes
/// (encode::max_chunk_values_of): the context coder's chunk sections have 32-bit sizes and take all of
/// it; the others stop at common_max_chunk_values.
inline constexpr std::uint32_t max_chunk_values = 1u << 20;
/// The longest chunk every encoder codes: Huffman's four streams have 16-bit sizes.
inline constexpr std::uint32_t common_max_chunk_values = 65536;

/// Byte 5 of a pipeline's stream: the stages follow in bytes 8-11.
inline constexpr std::uint8_t pipeline_codec_kind = 0x80;
/// The lossless back-end ids of byte 11 this version knows.
inline constexpr std::uint8_t backend_none = 0;
inline constexpr std::uint8_t backend_zstd = 1;

/// Which codec wrote a stream: header bytes 5 and 8-11.
struct codec_id {
  std::uint8_t kind = 0;       ///< pipeline_codec_kind, or the id of a codec with a layout of its own
  std::uint8_t quantizer = 0;  ///< the stages of a pipeline; 0 for other codecs
  std::uint8_t predictor = 0;
  std::uint8_t encoder = 0;
  std::uint8_t backend = backend_none;

  ZCOLL_HOST_DEVICE friend constexpr bool operator==(const codec_id& a, const codec_id& b) {
    return a.kind == b.kind && a.quantizer == b.quantizer && a.predictor == b.predictor && a.encoder == b.encoder &&
           a.backend == b.backend;
  }
  ZCOLL_HOST_DEVICE constexpr bool is_pipeline() const { return kind == pipeline_codec_kind; }
};

/// "kind 0x20" for a codec of its own layout, "pipeline (quantizer 1, predictor 1, encoder 1)" otherwise.
inline std::string to_string(const codec_id& id) {
  if (!id.is_pipeline()) return "kind " + std::to_string(id.kind);
  return "pipeline (quantizer " + std::to_string(id.quantizer) + ", predictor " + std::to_string(id.predictor) +
         ", encoder " + std::to_string(id.encoder) + ", back-end " + std::to_string(id.backend) + ")";
}

/// The fixed-size part of a stream, as read or to be written.
struct stream_header {
  codec_id codec;
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
  const std::uint32_t reserved = 0;
  put(0, magic);
  out[4] = static_cast<std::byte>(stream_format_version);
  out[5] = static_cast<std::byte>(h.codec.kind);
  out[6] = static_cast<std::byte>(h.type);
  out[7] = static_cast<std::byte>(h.has_fill_value ? 1 : 0);
  out[8] = static_cast<std::byte>(h.codec.quantizer);
  out[9] = static_cast<std::byte>(h.codec.predictor);
  out[10] = static_cast<std::byte>(h.codec.encoder);
  out[11] = static_cast<std::byte>(h.codec.backend);
  put(12, reserved);
  put(16, h.count);
  put(24, h.error_bound);
  put(32, h.fill_bits);
  put(40, h.chunk_values);
  put(44, h.chunk_count);
}

inline void write_stream_header(byte_writer& out, const stream_header& h) {
  store_stream_header(h, out.claim(stream_header_size_bytes).data());
}

/// Why parse_stream_header refused a header: the first field found wrong.
enum class header_fault : std::uint8_t {
  none = 0,
  truncated,         // fewer than stream_header_size_bytes bytes
  bad_magic,         // not a zcoll stream
  version_1,         // a stream of zcoll before API 1.0
  unknown_version,   // a version this build does not know
  bad_value_type,    // neither f32 nor f64
  reserved_flags,    // flag bits 1-7 set
  stage_ids_set,     // stage bytes on a codec of its own layout
  unknown_backend,   // a lossless back-end id other than none and zstd
  reserved_bytes,    // bytes 12-15 not zero
  bad_error_bound,   // negative or NaN
  wide_fill,         // an f32 fill value with bits above bit 31
  fill_without_flag, // fill bits but no fill flag
  chunk_count_unchunked,  // chunk length 0 with a chunk count
  bad_chunk_length,  // not a multiple of 32 in [32, 65536]
  bad_chunk_count,   // not ceil(count / chunk length)
};

/// Reads and validates the fixed header (not the index) of the `size` bytes at `bytes` into `h`; the
/// fields read before the fault are set. Host and device decoders call it alike.
ZCOLL_HOST_DEVICE inline header_fault parse_stream_header(const std::byte* bytes, std::size_t size, stream_header& h) {
  if (size < 5) return header_fault::truncated;  // magic and version first: a v1 stream is named as such
  std::uint32_t magic = 0;
  std::memcpy(&magic, bytes, 4);
  if (magic != stream_magic_word) return header_fault::bad_magic;
  const auto version = std::to_integer<std::uint8_t>(bytes[4]);
  if (version == 1) return header_fault::version_1;
  if (version != stream_format_version) return header_fault::unknown_version;
  if (size < stream_header_size_bytes) return header_fault::truncated;
  const auto get = [&](std::size_t offset, auto& value) { std::memcpy(&value, bytes + offset, sizeof value); };
  h.codec.kind = std::to_integer<std::uint8_t>(bytes[5]);
  h.codec.quantizer = std::to_integer<std::uint8_t>(bytes[8]);
  h.codec.predictor = std::to_integer<std::uint8_t>(bytes[9]);
  h.codec.encoder = std::to_integer<std::uint8_t>(bytes[10]);
  h.codec.backend = std::to_integer<std::uint8_t>(bytes[11]);
  const auto type = std::to_integer<std::uint8_t>(bytes[6]);
  if (type != static_cast<std::uint8_t>(value_type::f32) && type != static_cast<std::uint8_t>(value_type::f64)) {
    return header_fault::bad_value_type;
  }
  h.type = static_cast<value_type>(type);
  const auto flags = std::to_integer<std::uint8_t>(bytes[7]);
  if (flags > 1) return header_fault::reserved_flags;
  h.has_fill_value = flags == 1;
  if (!h.codec.is_pipeline() && (h.codec.quantizer | h.codec.predictor | h.codec.encoder | h.codec.backend) != 0) {
    return header_fault::stage_ids_set;
  }
  if (h.codec.backend > backend_zstd) return header_fault::unknown_backend;
  std::uint32_t reserved = 0;
  get(12, reserved);
  if (reserved != 0) return header_fault::reserved_bytes;
  get(16, h.count);
  get(24, h.error_bound);
  if (!(h.error_bound >= 0.0)) return header_fault::bad_error_bound;  // +inf is allowed: an overflowed cast
  get(32, h.fill_bits);
  if (h.type == value_type::f32 && (h.fill_bits >> 32) != 0) return header_fault::wide_fill;
  if (!h.has_fill_value && h.fill_bits != 0) return header_fault::fill_without_flag;
  get(40, h.chunk_values);
  get(44, h.chunk_count);
  if (h.chunk_values == 0) {  // an unchunked body: the codec's own layout follows the header
    return h.chunk_count == 0 ? header_fault::none : header_fault::chunk_count_unchunked;
  }
  if (h.chunk_values < min_chunk_values || h.chunk_values > max_chunk_values || h.chunk_values % 32 != 0) {
    return header_fault::bad_chunk_length;
  }
  if (h.chunk_count != chunk_count_for(h.count, h.chunk_values)) return header_fault::bad_chunk_count;
  return header_fault::none;
}

/// What a header fault means, without the values (the CUDA decoders report this).
inline std::string to_string(header_fault fault) {
  switch (fault) {
    case header_fault::none: return "no fault";
    case header_fault::truncated: return "stream shorter than its header";
    case header_fault::bad_magic: return "bad magic: not a zcoll stream";
    case header_fault::version_1:
      return "stream is format version 1 (zcoll before API 1.0), which this version does not read: the format "
             "was pre-1.0; compress the data again (format version " + std::to_string(stream_format_version) + ")";
    case header_fault::unknown_version: return "format version is not supported";
    case header_fault::bad_value_type: return "value type tag is neither 1 (f32) nor 2 (f64)";
    case header_fault::reserved_flags: return "header flags have reserved bits set";
    case header_fault::stage_ids_set: return "codec kind is not a pipeline but its stage ids are set";
    case header_fault::unknown_backend: return "lossless back-end id is not known (0 = none and 1 = zstd are)";
    case header_fault::reserved_bytes: return "reserved header bytes 12-15 are not zero";
    case header_fault::bad_error_bound: return "error bound is not >= 0";
    case header_fault::wide_fill: return "f32 fill value has bits set above bit 31";
    case header_fault::fill_without_flag: return "fill value set without the fill flag";
    case header_fault::chunk_count_unchunked: return "unchunked stream (chunk length 0) with a chunk count";
    case header_fault::bad_chunk_length: return "chunk length is not a multiple of 32 in [32, 65536]";
    case header_fault::bad_chunk_count: return "chunk count does not match value count and chunk length";
  }
  return "unknown header fault " + std::to_string(static_cast<unsigned>(fault));
}

/// The format_error message of a header fault, with the values `h` holds (what parse_stream_header read
/// from `stream`).
inline std::string describe(header_fault fault, const stream_header& h, std::span<const std::byte> stream) {
  const auto byte_at = [&](std::size_t i) { return std::to_string(std::to_integer<unsigned>(stream[i])); };
  switch (fault) {
    case header_fault::truncated:
      return "stream of " + std::to_string(stream.size()) + " bytes is shorter than the " +
             std::to_string(stream_header_size_bytes) + "-byte header";
    case header_fault::unknown_version:
      return "format version " + byte_at(4) + " is not supported (expected " +
             std::to_string(stream_format_version) + ")";
    case header_fault::bad_value_type: return "value type tag " + byte_at(6) + " is neither 1 (f32) nor 2 (f64)";
    case header_fault::reserved_flags: return "header flags " + byte_at(7) + " has reserved bits set";
    case header_fault::stage_ids_set:
      return "codec kind " + std::to_string(h.codec.kind) + " is not a pipeline but its stage ids are set";
    case header_fault::unknown_backend:
      return "lossless back-end id " + std::to_string(h.codec.backend) + " is not known (0 = none and 1 = zstd are)";
    case header_fault::bad_error_bound: return "error bound " + std::to_string(h.error_bound) + " is not >= 0";
    case header_fault::chunk_count_unchunked:
      return "unchunked stream (chunk length 0) with a chunk count of " + std::to_string(h.chunk_count);
    case header_fault::bad_chunk_length:
      return "chunk length " + std::to_string(h.chunk_values) + " is not a multiple of 32 in [32, 2^20]";
    case header_fault::bad_chunk_count:
      return "chunk count " + std::to_string(h.chunk_count) + " does not match value count " +
             std::to_string(h.count) + " in chunks of " + std::to_string(h.chunk_values);
    default: return to_string(fault);
  }
}

/// Reads and validates the fixed header (not the index); format_error names the first bad field.
inline stream_header read_stream_header(std::span<const std::byte> stream) {
  stream_header h;
  const header_fault fault = parse_stream_header(stream.data(), stream.size(), h);
  if (fault != header_fault::none) throw format_error(describe(fault, h, stream));
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

/// format_error unless `header` was written by the codec `id` for values of type `type`: what every
/// decoder checks first. `name()` names the codec in the message; it runs only on a mismatch, so a
/// decoder builds no string on its hot path.
template <class Name>
void require_codec_and_type(const stream_header& header, const codec_id& id, Name&& name, value_type type) {
  if (!(header.codec == id)) {
    throw format_error("stream was written by codec " + to_string(header.codec) + ", this is " + name() + " (" +
                       to_string(id) + ")");
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
