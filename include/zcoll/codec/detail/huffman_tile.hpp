#pragma once
/// The CUDA decoder's parts for pipelines whose encoder is encode::Huffman (EmbeddingHuffman, and any
/// Pipeline<Linear, None or Lorenzo1D, Huffman>) — and encode::VectorLZ, whose literals are a Huffman
/// chunk (codec/detail/vector_lz_tile.hpp): the stream's model read into a decode table on the
/// device (one thread a stream, the host reader's parse_huffman_model and fill_huffman_decode_table), and
/// a chunk's residuals decoded by the team: one thread per Huffman stream of the chunk (four for chunks
/// of 1024 values or more), into a buffer the team shares, each stream checked as the host checks it;
/// under the bit-plane fallback, one thread per block. decompress_tile (pipeline_tile.hpp) then takes
/// each block's residuals from the buffer and finishes as for block encoders.
///
/// Encoding stays on the host: the code is built from the whole stream's statistics (a histogram over
/// every chunk, then a length-limited code), so a device encoder would need that pass and the code's
/// construction before any chunk is written; docs/cuda.md says which calls exist.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/detail/huffman_chunk.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"
#include "zcoll/encode/detail/huffman_model.hpp"

namespace zcoll::detail {

/// A stream's model as the tiles use it (device memory on a GPU): the decode table, whether the chunks
/// (a VectorLZ chunk's literals) are bit-plane blocks instead, the parameter section's size (so that the
/// tiles find the chunks), and VectorLZ's vector length and window.
struct huffman_device_model {
  std::uint32_t ready;           ///< 1 once the model was read without a fault
  std::uint32_t bitplane;        ///< every chunk (VectorLZ: every chunk's literal section) is bit-plane blocks
  std::uint64_t section_bytes;   ///< the parameter section: 4 + its size field
  std::uint32_t dim;             ///< VectorLZ: codes per vector (1..65536); 0 for Huffman
  std::uint32_t window;          ///< VectorLZ: how many vectors back a token may reach (1..255)
  std::int32_t decode[encode::detail::huffman_table_entries];
};

/// Reads stream s's parameter section (u32 size, then the model; nothing before it for None and
/// Lorenzo1D) into `model`: a fault for a section that does not fit the stream or a model that does not
/// parse, as the host's read_parameter_section raises them. `vector_lz`: the model is VectorLZ's (vector
/// length u32, window u8, then the literals' Huffman model, checked as VectorLZ::read_model checks them).
/// A header that does not parse, names another codec or value type, or does not state `chunks` chunks
/// leaves the model not ready and is no fault here: the tiles report it. `lengths` is scratch for 4096
/// lengths.
ZCOLL_HOST_DEVICE inline decode_fault read_huffman_device_model(const std::byte* stream, std::uint64_t length,
                                                                std::uint32_t chunks, std::uint32_t s, codec_id codec,
                                                                value_type type, std::uint8_t* lengths,
                                                                huffman_device_model& model, bool vector_lz = false) {
  namespace ed = encode::detail;
  model.ready = 0;
  model.dim = 0;
  model.window = 0;
  const decode_fault fault{0, s, 0, 0};
  const auto fail = [s](decode_fault_code code, std::uint64_t detail) { return stream_fault(s, code, detail); };
  stream_header h;
  const std::uint64_t at = stream_prefix_size_bytes(chunks);
  if (length < at || parse_stream_header(stream, length, h) != header_fault::none || !(h.codec == codec) || h.type != type ||
      h.chunk_count != chunks) {
    return fault;
  }
  if (length < at + 4) return fail(decode_fault_code::bad_parameters, 0);
  std::uint32_t bytes;
  std::memcpy(&bytes, stream + at, 4);
  if (bytes > length - at - 4) return fail(decode_fault_code::bad_parameters, 0);
  const std::byte* model_at = stream + at + 4;
  std::uint32_t model_bytes = bytes;
  if (vector_lz) {
    constexpr std::uint32_t lz_bytes = 5;  // VectorLZ::lz_model_bytes: dim, window
    if (model_bytes < lz_bytes) return fail(decode_fault_code::bad_parameters, 0);
    std::memcpy(&model.dim, model_at, 4);
    model.window = std::to_integer<std::uint32_t>(model_at[4]);
    if (model.dim < 1 || model.dim > common_max_chunk_values || model.window < 1) return fail(decode_fault_code::bad_parameters, 0);
    model_at += lz_bytes;
    model_bytes -= lz_bytes;
  }
  ed::huffman_parsed_model parsed;
  const ed::huffman_model_fault f = ed::parse_huffman_model(model_at, model_bytes, lengths, parsed);
  if (f != ed::huffman_model_fault::none) return fail(decode_fault_code::bad_parameters, static_cast<std::uint64_t>(f));
  if (parsed.bytes != model_bytes) return fail(decode_fault_code::bad_parameters, 0);  // bytes left in the section
  model.bitplane = parsed.bitplane ? 1 : 0;
  model.section_bytes = 4 + std::uint64_t{bytes};
  if (!parsed.bitplane) ed::fill_huffman_decode_table(lengths, parsed.n + 1, model.decode);
  model.ready = 1;
  return fault;
}

/// A thread's part of a chunk's Huffman decoding, combined over the team by a scan: how many threads
/// failed, and where the coded part ends (known to the thread of the last stream).
struct huffman_share {
  std::uint32_t failed;
  std::uint32_t end;
};
struct combine_huffman_shares {
  ZCOLL_HOST_DEVICE huffman_share operator()(const huffman_share& a, const huffman_share& b) const {
    return {a.failed + b.failed, a.end > b.end ? a.end : b.end};
  }
};

/// Thread `rank` of a team decodes stream `rank` of a Huffman-coded chunk (the `size` bytes at `chunk`,
/// kind byte first, n residuals) into `buffer` (n residuals; the streams' quarters, as the host lays them
/// out), and checks that it ends where its size says, zero-padded. A thread past the chunk's streams
/// does nothing; a stream size table that does not fit is thread 0's fault. `fault_detail` is the byte
/// (in the chunk) of the stream that failed.
ZCOLL_HOST_DEVICE inline huffman_share decode_huffman_share(const huffman_device_model& model, const std::byte* chunk,
                                                            std::size_t size, std::size_t n, unsigned rank,
                                                            std::uint32_t* buffer, std::uint64_t& fault_detail) {
  namespace ed = encode::detail;
  const std::span<const std::byte> in(chunk + 1, size - 1);
  ed::huffman_chunk_streams where;
  unsigned at_stream = 0;
  if (ed::locate_huffman_streams(in, n, where, at_stream) != ed::huffman_chunk_fault::none) {
    fault_detail = 1;
    return {rank == 0 ? 1u : 0u, 0};
  }
  if (rank >= where.streams) return {0, 0};
  const std::size_t quarter = ed::huffman_stream_values(n, where.streams);
  const std::size_t first = rank * quarter;
  const std::size_t count = rank + 1 == where.streams ? n - first : quarter;
  const std::uint64_t consumed = ed::huffman_decode_one_stream(model.decode, in, where.begin[rank], buffer + first, count);
  if (ed::check_huffman_stream_end(in, where, rank, consumed) != ed::huffman_chunk_fault::none) {
    fault_detail = 1 + where.begin[rank];
    return {1, 0};
  }
  const std::size_t end = rank + 1 == where.streams ? 1 + where.begin[rank] + (consumed + 7) / 8 : 0;
  return {0, static_cast<std::uint32_t>(end)};
}

}  // namespace zcoll::detail
