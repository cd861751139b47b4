#pragma once
/// The streams of one device launch of a codec without a chunk index (the casts, the row-wise
/// quantizers): where each stream's values and bytes are. The layout travels as kernel parameters, so a
/// launch needs no copy to the device first.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/codec/compress.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll::detail {

/// Streams in one batch launch (kernel parameters carry the layout: 4 KiB of them at most).
inline constexpr std::uint32_t max_batch_streams = 64;

/// Stream s holds values [first_value[s], first_value[s + 1]) and bytes [offset[s], offset[s] + bytes[s])
/// of the batch's buffer.
struct stream_batch {
  std::uint32_t streams = 0;
  std::uint64_t first_value[max_batch_streams + 1] = {};
  std::uint64_t offset[max_batch_streams] = {};
  std::uint64_t bytes[max_batch_streams] = {};

  ZCOLL_HOST_DEVICE std::uint64_t count(std::uint32_t s) const { return first_value[s + 1] - first_value[s]; }
};

/// Where a compression launch leaves each stream's offset and size and the batch's total (device
/// memory: cuda::results_of's words).
struct batch_result_slots {
  std::uint64_t* offset = nullptr;
  std::uint64_t* bytes = nullptr;
  std::uint64_t* total = nullptr;
};

/// Stream s's results, written by the thread that finishes it (the last stream's also writes the total).
ZCOLL_HOST_DEVICE inline void write_results(const stream_batch& batch, std::uint32_t s, const batch_result_slots& slots) {
  slots.offset[s] = batch.offset[s];
  slots.bytes[s] = batch.bytes[s];
  if (s + 1 == batch.streams) *slots.total = batch.offset[s] + batch.bytes[s];
}

/// The values of `counts` as a batch's first_value, checked at the API boundary.
inline stream_batch batch_of_counts(const char* caller, std::span<const std::size_t> counts, std::size_t values) {
  if (counts.size() == 0 || counts.size() > max_batch_streams) {
    throw argument_error(std::string(caller) + ": counts holds " + std::to_string(counts.size()) +
                         " streams; a batch takes 1 to " + std::to_string(max_batch_streams));
  }
  batch_values(caller, counts, values);
  stream_batch batch;
  batch.streams = static_cast<std::uint32_t>(counts.size());
  for (std::uint32_t s = 0; s < batch.streams; ++s) batch.first_value[s + 1] = batch.first_value[s] + counts[s];
  return batch;
}

/// A compression batch of codec `codec` on values of type T: stream s is written right after stream
/// s - 1, each exactly max_compressed_size bytes (the codecs here write no more and no less).
template <floating_value T, class C>
stream_batch compression_batch(const char* caller, const C& codec, std::span<const std::size_t> counts, std::size_t values,
                               std::size_t out_bytes) {
  stream_batch batch = batch_of_counts(caller, counts, values);
  std::uint64_t at = 0;
  for (std::uint32_t s = 0; s < batch.streams; ++s) {
    batch.offset[s] = at;
    batch.bytes[s] = codec.template max_compressed_size<T>(counts[s]);
    at = checked_add(at, batch.bytes[s], caller, "the batch's stream bytes");
  }
  if (out_bytes < at) {
    throw argument_error(std::string(caller) + ": out has " + std::to_string(out_bytes) +
                         " bytes, batch_max_compressed_size() = " + std::to_string(at) + " are needed");
  }
  return batch;
}

/// A decompression batch: stream s at stream_offset[s], stream_bytes[s] bytes, inside `in` (host arrays,
/// as a size exchange delivers them).
inline stream_batch decompression_batch(const char* caller, std::span<const std::size_t> counts, std::size_t values,
                                        std::size_t in_bytes, std::span<const std::uint64_t> stream_offset,
                                        std::span<const std::uint64_t> stream_bytes) {
  stream_batch batch = batch_of_counts(caller, counts, values);
  check_batch_streams(in_bytes, stream_offset, stream_bytes, counts.size());
  for (std::uint32_t s = 0; s < batch.streams; ++s) {
    batch.offset[s] = stream_offset[s];
    batch.bytes[s] = stream_bytes[s];
  }
  return batch;
}

}  // namespace zcoll::detail
