#pragma once
/// The CUDA driver's algorithm for Cast<Format> (codec/cast.cuh), written as what one thread of a grid
/// does, so that the same functions run in the kernels and, for the tests, in plain loops on the host
/// (tests/codec/detail/cast_tile_test.cpp). The per-value math is the host driver's
/// (small_float::encode_bits / decode_bits, quantize::rounding_error_bound_of_magnitude), so the streams
/// are the host's bytes.
///
/// Compression: thread t of n encodes values t, t + n, t + 2n, ... of a stream (consecutive threads
/// touch consecutive values: coalesced on a GPU) and returns the largest finite magnitude it saw; once
/// every thread is done (the kernel reduces the magnitudes into one word per stream), one thread per
/// stream writes the header, whose error bound follows from that magnitude, and the stream's size.
/// Decompression: every thread checks the header as the host decoder does, and decodes its values only
/// when it passes; the thread that holds value 0 (or any thread, for an empty stream) reports the fault.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/codec/detail/stream_batch.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/cast.hpp"

namespace zcoll::detail {

/// A compression launch. `largest` holds one word per stream, the largest finite magnitude's bits, zero
/// before the launch; `results` are cuda::results_of's words.
template <floating_value T>
struct cast_compress_job {
  stream_batch batch;
  const T* values = nullptr;
  std::byte* out = nullptr;
  unsigned long long* largest = nullptr;
  batch_result_slots results;
};

/// Thread `thread` of `threads` encodes its values of stream s; returns the bits of the largest finite
/// |x| among them (0 for none).
template <class Format, floating_value T>
ZCOLL_HOST_DEVICE bits_of<T> cast_encode_part(const cast_compress_job<T>& job, std::uint32_t s, std::uint64_t thread,
                                              std::uint64_t threads) {
  using bits = bits_of<T>;
  using storage = typename Format::storage;
  constexpr bits magnitude_mask = ~(bits{1} << (8 * sizeof(T) - 1));
  constexpr bits max_finite = std::bit_cast<bits>(std::numeric_limits<T>::max());
  const T* values = job.values + job.batch.first_value[s];
  std::byte* codes = job.out + job.batch.offset[s] + stream_header_size_bytes;
  const std::uint64_t count = job.batch.count(s);
  bits largest = 0;
  for (std::uint64_t i = thread; i < count; i += threads) {
    const bits x = std::bit_cast<bits>(values[i]);
    const storage code = small_float::encode_bits<Format, T>(x);
    std::memcpy(codes + i * sizeof(storage), &code, sizeof(storage));
    const bits magnitude = x & magnitude_mask;
    largest = magnitude <= max_finite && magnitude > largest ? magnitude : largest;
  }
  return largest;
}

/// Writes stream s's header, whose bound follows from `largest` (the bits of the largest finite |x| of
/// all its values), and its results.
template <class Format, floating_value T>
ZCOLL_HOST_DEVICE void cast_finish_stream(const cast_compress_job<T>& job, std::uint32_t s, bits_of<T> largest) {
  stream_header header;
  header.codec = cast_codec_id<Format>();
  header.type = value_type_of<T>;
  header.count = job.batch.count(s);
  header.error_bound = quantize::rounding_error_bound_of_magnitude<Format>(std::bit_cast<T>(largest));
  store_stream_header(header, job.out + job.batch.offset[s]);
  write_results(job.batch, s, job.results);
}

/// A decompression launch.
template <floating_value T>
struct cast_decompress_job {
  stream_batch batch;
  const std::byte* in = nullptr;
  T* values = nullptr;
};

/// Checks a Cast<Format> stream of `length` bytes against what the host decoder checks (codec and type,
/// the unchunked form without a fill value, the count asked for, a body of exactly count codes).
template <class Format, floating_value T>
ZCOLL_HOST_DEVICE decode_fault cast_stream_fault(const std::byte* stream, std::uint64_t length, std::uint64_t count,
                                                 std::uint32_t s) {
  using storage = typename Format::storage;
  const decode_fault fault{0, s, 0, 0};
  const auto fail = [s](decode_fault_code code, std::uint64_t detail) { return stream_fault(s, code, detail); };
  stream_header h;
  if (length < stream_header_size_bytes) return fail(decode_fault_code::short_stream, length);
  const header_fault parsed = parse_stream_header(stream, length, h);
  if (parsed != header_fault::none) return fail(decode_fault_code::bad_header, static_cast<std::uint64_t>(parsed));
  if (!(h.codec == cast_codec_id<Format>()) || h.type != value_type_of<T>) return fail(decode_fault_code::wrong_codec, 0);
  if (h.chunk_values != 0 || h.chunk_count != 0 || h.has_fill_value) return fail(decode_fault_code::not_unchunked, 0);
  if (h.count != count) return fail(decode_fault_code::wrong_count, 0);
  const std::uint64_t body = length - stream_header_size_bytes;
  if (body / sizeof(storage) != count || body % sizeof(storage) != 0) return fail(decode_fault_code::wrong_body_length, body);
  return fault;
}

/// Thread `thread` of `threads` decodes its values of stream s when the stream checks out; returns the
/// stream's fault (the same for every thread).
template <class Format, floating_value T>
ZCOLL_HOST_DEVICE decode_fault cast_decode_part(const cast_decompress_job<T>& job, std::uint32_t s, std::uint64_t thread,
                                                std::uint64_t threads) {
  using storage = typename Format::storage;
  const std::byte* stream = job.in + job.batch.offset[s];
  const std::uint64_t count = job.batch.count(s);
  const decode_fault fault = cast_stream_fault<Format, T>(stream, job.batch.bytes[s], count, s);
  if (fault.code != 0) return fault;
  const std::byte* codes = stream + stream_header_size_bytes;
  T* values = job.values + job.batch.first_value[s];
  for (std::uint64_t i = thread; i < count; i += threads) {
    storage code;
    std::memcpy(&code, codes + i * sizeof(storage), sizeof(storage));
    values[i] = static_cast<T>(quantize::decode<Format>(code));  // f64 widens the float, as the host does
  }
  return fault;
}

}  // namespace zcoll::detail
