#pragma once
/// The CUDA driver's algorithm for RowwiseQuantized<Bits> (codec/rowwise.cuh), written as what one thread
/// of a grid does, so that the same functions run in the kernels and, for the tests, in plain loops on the
/// host (tests/codec/detail/rowwise_tile_test.cpp). One thread takes one row at a time — rows of
/// embedding tables are 32 to 512 values, and FBGEMM's CUDA quantizer also gives narrow rows a thread
/// each — and computes it with the host driver's per-row math (quantize/detail/rowwise_*.hpp: the extent,
/// the exact scale and bias choice, the codes, the bound), so the streams are the host's bytes.
///
/// Compression: thread t of n quantizes rows t, t + n, ... of a stream and returns the largest row bound
/// it saw (as the bits of a double >= 0, which order as the values do); once every thread is done (the
/// kernel reduces them into one word per stream), one thread per stream writes the header with the
/// largest bound, the row length and the stream's size. A row the layout cannot hold (NaN, ±Inf, a range
/// beyond f16 or f32) is the host's argument_error: here it is recorded (cuda::check_quantized raises it).
/// Decompression: every thread checks the header and row length as the host decoder does, then checks
/// and dequantizes its rows; the stream's largest row bound is compared with the header's at the end.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/codec/detail/stream_batch.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/rowwise.hpp"

namespace zcoll::detail {

/// A compression launch. `largest_bound` holds one word per stream (zero before the launch);
/// `results` are cuda::results_of's words.
template <floating_value T>
struct rowwise_compress_job {
  stream_batch batch;
  std::uint32_t dim = 1;
  const T* values = nullptr;
  std::byte* out = nullptr;
  unsigned long long* largest_bound = nullptr;
  batch_result_slots results;
};

/// What one thread's part of a launch found: the bits of the largest row bound of its rows, and the first
/// fault among them (code 0: none).
struct row_part {
  unsigned long long largest_bound = 0;
  decode_fault fault{};
};

/// Thread `thread` of `threads` quantizes its rows of stream s. A row the layout cannot hold is skipped
/// and reported (unrepresentable_row: detail the row, chunk the quantize::detail::row_fault).
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE row_part rowwise_encode_part(const rowwise_compress_job<T>& job, std::uint32_t s, std::uint64_t thread,
                                               std::uint64_t threads) {
  const std::size_t dim = job.dim;
  const std::size_t row_bytes = quantize::rowwise_layout<Bits>::row_bytes(dim);
  const T* values = job.values + job.batch.first_value[s];
  std::byte* rows = job.out + job.batch.offset[s] + RowwiseQuantized<Bits>::prefix_size_bytes;
  const std::uint64_t count = job.batch.count(s) / dim;
  row_part part;
  for (std::uint64_t r = thread; r < count; r += threads) {
    const T* x = values + r * dim;
    quantize::detail::row_scale_bias sb;
    const quantize::detail::row_fault fault = quantize::detail::find_scale_bias<Bits, T>(x, dim, sb);
    if (fault != quantize::detail::row_fault::none) {
      if (part.fault.code == 0) {
        part.fault = {static_cast<std::uint32_t>(decode_fault_code::unrepresentable_row), s,
                      static_cast<std::uint64_t>(fault), r};
      }
      continue;
    }
    quantize::detail::code_row<Bits, T>(x, dim, sb, rows + r * row_bytes);
    const auto bound = std::bit_cast<unsigned long long>(quantize::row_error_bound<Bits>(sb.scale, sb.bias));
    part.largest_bound = bound > part.largest_bound ? bound : part.largest_bound;
  }
  return part;
}

/// Writes stream s's header (its bound: the largest row bound, given as bits) and row length, and its results.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE void rowwise_finish_stream(const rowwise_compress_job<T>& job, std::uint32_t s,
                                             unsigned long long largest_bound) {
  stream_header header;
  header.codec = rowwise_codec_id<Bits>();
  header.type = value_type_of<T>;
  header.count = job.batch.count(s);
  header.error_bound = std::bit_cast<double>(largest_bound);
  std::byte* stream = job.out + job.batch.offset[s];
  store_stream_header(header, stream);
  std::memcpy(stream + stream_header_size_bytes, &job.dim, 4);
  write_results(job.batch, s, job.results);
}

/// A decompression launch; `largest_bound` as in compression, one word per stream, zero before.
template <floating_value T>
struct rowwise_decompress_job {
  stream_batch batch;
  const std::byte* in = nullptr;
  T* values = nullptr;
  unsigned long long* largest_bound = nullptr;
};

/// A checked stream: its header and row length (valid when fault.code is 0).
struct rowwise_stream {
  stream_header header;
  std::uint32_t dim = 0;
  std::uint64_t rows = 0;
  decode_fault fault{};
};

/// Checks a RowwiseQuantized<Bits> stream of `length` bytes as the host decoder does (codec and type, the
/// unchunked form without a fill value, a finite bound, the count asked for, dim >= 1, whole rows, a body
/// of exactly their bytes).
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE rowwise_stream rowwise_stream_of(const std::byte* stream, std::uint64_t length, std::uint64_t count,
                                                   std::uint32_t s) {
  using layout = quantize::rowwise_layout<Bits>;
  constexpr std::size_t prefix = RowwiseQuantized<Bits>::prefix_size_bytes;
  rowwise_stream r;
  r.fault.stream = s;
  const auto fail = [&](decode_fault_code code, std::uint64_t detail) {
    r.fault.code = static_cast<std::uint32_t>(code);
    r.fault.detail = detail;
    return r;
  };
  if (length < prefix) return fail(decode_fault_code::short_stream, length);
  const header_fault parsed = parse_stream_header(stream, length, r.header);
  const stream_header& h = r.header;
  if (parsed != header_fault::none) return fail(decode_fault_code::bad_header, static_cast<std::uint64_t>(parsed));
  if (!(h.codec == rowwise_codec_id<Bits>()) || h.type != value_type_of<T>) return fail(decode_fault_code::wrong_codec, 0);
  if (h.chunk_values != 0 || h.chunk_count != 0 || h.has_fill_value) return fail(decode_fault_code::not_unchunked, 0);
  if (!(h.error_bound <= std::numeric_limits<double>::max())) return fail(decode_fault_code::bad_error_bound, 0);
  if (h.count != count) return fail(decode_fault_code::wrong_count, 0);
  std::memcpy(&r.dim, stream + stream_header_size_bytes, 4);
  const std::uint64_t body = length - prefix;
  if (r.dim == 0 || h.count % r.dim != 0) return fail(decode_fault_code::wrong_body_length, body);
  r.rows = h.count / r.dim;
  const std::uint64_t row_bytes = layout::row_bytes(r.dim);
  if (r.rows > body / row_bytes || r.rows * row_bytes != body) return fail(decode_fault_code::wrong_body_length, body);
  return r;
}

/// Thread `thread` of `threads` checks and dequantizes its rows of stream s when the stream checks out.
/// The stream's fault goes to the thread that holds row 0 (thread 0); a bad row to the thread that reads it.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE row_part rowwise_decode_part(const rowwise_decompress_job<T>& job, std::uint32_t s, std::uint64_t thread,
                                               std::uint64_t threads) {
  using layout = quantize::rowwise_layout<Bits>;
  const std::byte* stream = job.in + job.batch.offset[s];
  const rowwise_stream checked = rowwise_stream_of<Bits, T>(stream, job.batch.bytes[s], job.batch.count(s), s);
  row_part part;
  if (checked.fault.code != 0) {
    if (thread == 0) part.fault = checked.fault;
    return part;
  }
  const std::size_t dim = checked.dim, row_bytes = layout::row_bytes(dim), code_bytes = layout::code_bytes(dim);
  const std::byte* rows = stream + RowwiseQuantized<Bits>::prefix_size_bytes;
  T* values = job.values + job.batch.first_value[s];
  for (std::uint64_t r = thread; r < checked.rows; r += threads) {
    const std::byte* row = rows + r * row_bytes;
    const auto sb = quantize::detail::load_scale_bias<Bits>(row + code_bytes);
    const quantize::detail::stored_row_fault fault = quantize::detail::check_stored_row<Bits>(row, dim, sb);
    if (fault != quantize::detail::stored_row_fault::none) {
      if (part.fault.code == 0) {
        part.fault = {static_cast<std::uint32_t>(decode_fault_code::bad_row), s, static_cast<std::uint64_t>(fault), r};
      }
      continue;
    }
    quantize::detail::dequantize_row<Bits, T>(row, dim, sb, values + r * dim);
    const auto bound = std::bit_cast<unsigned long long>(quantize::row_error_bound<Bits>(sb.scale, sb.bias));
    part.largest_bound = bound > part.largest_bound ? bound : part.largest_bound;
  }
  return part;
}

/// After every row of stream s: its header's bound must be its rows' largest (bit for bit, as the host
/// decoder compares). A stream that failed its check was reported already.
template <int Bits, floating_value T>
ZCOLL_HOST_DEVICE decode_fault rowwise_check_bound(const rowwise_decompress_job<T>& job, std::uint32_t s,
                                                   unsigned long long largest_bound) {
  const rowwise_stream checked =
      rowwise_stream_of<Bits, T>(job.in + job.batch.offset[s], job.batch.bytes[s], job.batch.count(s), s);
  decode_fault fault{0, s, 0, 0};
  if (checked.fault.code == 0 && std::bit_cast<unsigned long long>(checked.header.error_bound) != largest_bound) {
    fault.code = static_cast<std::uint32_t>(decode_fault_code::wrong_row_bound);
  }
  return fault;
}

}  // namespace zcoll::detail
