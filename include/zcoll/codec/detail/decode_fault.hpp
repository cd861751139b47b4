#pragma once
/// What a device driver records when a stream does not decode (or, for the row-wise quantizers, a row
/// cannot be quantized): it cannot throw, so the first fault of a launch is written to the workspace and
/// raised on the host by cuda::check_decoded as a format_error (cuda::check_quantized as an argument_error;
/// codec/pipeline.cuh words the messages). Shared by every device driver.

#include <cstdint>

#include "zcoll/core/config.hpp"

namespace zcoll::detail {

/// Why a device decoder refused a stream.
enum class decode_fault_code : std::uint32_t {
  none = 0,
  short_stream,        // shorter than its header and index
  bad_header,          // the header does not parse (detail: the header_fault)
  wrong_codec,         // codec id or value type
  wrong_count,         // value count is not the output's
  wrong_chunking,      // chunk length or count is not the codec's
  bad_error_bound,     // not finite, or no quantizer step while chunks are coded
  wrong_length,        // header + index + chunks is not the stream's length
  bad_chunk_kind,
  bad_verbatim_chunk,  // size is not 1 + the chunk's values
  bad_block,           // a block header no encoder writes, or a block past the chunk's end
  bad_exceptions,      // an exception section that does not parse (detail: exception_fault_detail)
  bytes_left,          // bytes after the last block or exception entry
  streams_differ,      // zcoll::add: the two streams differ in a setting (detail: streams_differ_in)
  not_unchunked,       // a codec with a layout of its own: chunk length/count not 0, or a fill value declared
  wrong_body_length,   // a fixed-size body (casts, row-wise): detail is the bytes the stream has after its prefix
  bad_row,             // row-wise: a row's scale, bias or padding bits (detail: the row; chunk: stored_row_fault)
  wrong_row_bound,     // row-wise: the header's bound is not the rows' largest bound
  unrepresentable_row, // row-wise compression, an input fault: a row the layout cannot hold (detail: the row; chunk: row_fault)
  bad_parameters,      // a pipeline's parameter section: does not fit, a model that does not parse (detail: the model fault), or bytes left
  bad_sparse_index,    // TopK: the form, kept count or index section (detail: topk_index_fault, codec/detail/topk_tile.hpp)
  bad_vector_token,    // VectorLZ: a token past the window or the chunk's start, or a partial last vector's not 0 (detail: the vector)
};

/// What a streams_differ fault's detail names. (2 named the fill value, which streams no longer need to
/// share: the sum declares the sum of the two, codec/detail/pipeline_add_tile.hpp's addition_fills.)
enum class streams_differ_in : std::uint64_t { error_bound = 1 };

/// The first fault of a launch, as reported: which stream and chunk, and a detail (a byte count or tag).
struct decode_fault {
  std::uint32_t code = 0;
  std::uint32_t stream = 0;
  std::uint64_t chunk = 0;
  std::uint64_t detail = 0;
};

/// Stream s's fault: what a device decoder's checks return.
ZCOLL_HOST_DEVICE constexpr decode_fault stream_fault(std::uint32_t s, decode_fault_code code, std::uint64_t detail) {
  return {static_cast<std::uint32_t>(code), s, 0, detail};
}

}  // namespace zcoll::detail
