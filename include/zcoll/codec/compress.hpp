#pragma once
/// zcoll::compress and zcoll::decompress: the one call for every codec. The execution space is the first
/// argument and picks the driver, as CUB's algorithms are picked by their arguments: exec::Host here, for
/// any codec; exec::Cuda in <zcoll/codec/pipeline.cuh>, for the pipelines the CUDA driver runs, with the
/// same argument order and a device workspace.
///
///     const zcoll::FZLight fz{{.error_bound = zcoll::relative(1e-4)}};
///     std::vector<std::byte> out(fz.max_compressed_size<float>(in.size()));
///     const auto stream = zcoll::compress(zcoll::exec::Host{.threads = 2}, fz, in, out);  // written prefix
///     zcoll::decompress(zcoll::exec::Host{}, fz, stream, back);                           // back.size() values
///
/// A batch is several streams written one after another into one buffer (the per-destination blocks of
/// an all-to-all): compress_batch writes stream s, the next counts[s] values, right after stream s - 1
/// and says each stream's size; decompress_batch reads them back from their offsets and sizes.

#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/half_value.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

template <class R>
concept floating_range = std::ranges::contiguous_range<R> && floating_value<std::ranges::range_value_t<R>>;

/// Compresses `in` into `out` (at least codec.max_compressed_size<T>(in.size()) bytes); returns the bytes
/// written, a prefix of `out`. The bytes do not depend on exec.threads. A codec that keeps state
/// (ErrorFeedback, TopK, Hybrid) compresses as from a fresh state.
template <codec C, floating_range R>
std::span<std::byte> compress(const exec::Host& exec, const C& codec, const R& in, std::span<std::byte> out) {
  return codec.compress(exec, in, out);
}

/// The same with the caller's state for this tensor or table (codec/keyed_state.hpp), which the call
/// reads and updates; for a codec that keeps no state, `state` is a no_state and the call is the above.
template <codec C, floating_range R>
std::span<std::byte> compress(const exec::Host& exec, const C& codec, state_of<C>& state, const R& in,
                              std::span<std::byte> out) {
  if constexpr (stateful_codec<C>) {
    return codec.compress(exec, state, in, out);
  } else {
    (void)state;
    return codec.compress(exec, in, out);
  }
}

/// Decompresses a whole stream into `out`, which holds exactly the stream's value count. A malformed
/// stream, or one of another codec or value type, raises format_error.
template <codec C, floating_range R>
void decompress(const exec::Host& exec, const C& codec, std::span<const std::byte> in, R&& out) {
  codec.decompress(exec, in, std::forward<R>(out));
}

template <class R>
concept half_range = std::ranges::contiguous_range<R> && half_value<std::ranges::range_value_t<R>>;

/// 16-bit values (zcoll::float16, zcoll::bfloat16): compressed as the floats they are exactly, into an f32
/// stream at the codec's bound (size `out` with codec.max_compressed_size<float>(in.size())); with the
/// caller's state as above.
template <codec C, half_range R>
std::span<std::byte> compress(const exec::Host& exec, const C& codec, state_of<C>& state, const R& in,
                              std::span<std::byte> out) {
  using H = std::ranges::range_value_t<R>;
  const std::span<const H> values(std::ranges::data(in), std::ranges::size(in));
  std::vector<float> wide(values.size());
  widen<H>(values, wide);
  return compress(exec, codec, state, wide, out);
}
template <codec C, half_range R>
std::span<std::byte> compress(const exec::Host& exec, const C& codec, const R& in, std::span<std::byte> out) {
  state_of<C> fresh;
  return compress(exec, codec, fresh, in, out);
}

/// Decompresses an f32 stream into 16-bit values: each decoded within the stream's stated bound as a
/// float, then rounded once to the 16-bit type. Returns the largest error that rounding added (+Inf when
/// a finite value overflowed the type), so every value is within the stated bound plus the returned
/// number of the original.
template <codec C, half_range R>
double decompress(const exec::Host& exec, const C& codec, std::span<const std::byte> in, R&& out) {
  using H = std::ranges::range_value_t<R>;
  const std::span<H> values(std::ranges::data(out), std::ranges::size(out));
  std::vector<float> wide(values.size());
  codec.decompress(exec, in, std::span<float>(wide));
  return narrow<H>(wide, values);
}

/// Convenience: a new vector holding the stream, one thread; with the caller's state, or from a fresh one.
template <codec C, floating_range R>
std::vector<std::byte> compress(const C& codec, state_of<C>& state, const R& in) {
  std::vector<std::byte> stream(codec.template max_compressed_size<std::ranges::range_value_t<R>>(std::ranges::size(in)));
  stream.resize(compress(exec::Host{}, codec, state, in, std::span<std::byte>(stream)).size());
  return stream;
}
template <codec C, floating_range R>
std::vector<std::byte> compress(const C& codec, const R& in) {
  state_of<C> fresh;
  return compress(codec, fresh, in);
}

/// Convenience: a new vector of the stream's values, one thread. The codec validates the stream before
/// it allocates.
template <floating_value T, codec C>
std::vector<T> decompress(const C& codec, std::span<const std::byte> in) {
  return codec.template decompress<T>(in);
}

namespace detail {

/// The values a batch of `counts` holds, checked against `values` (the caller's span of them).
inline std::size_t batch_values(const char* caller, std::span<const std::size_t> counts, std::size_t values) {
  std::size_t total = 0;
  for (const std::size_t count : counts) total = checked_add(total, count, caller, "the batch's value count");
  if (total != values) {
    throw argument_error(std::string(caller) + ": values holds " + std::to_string(values) + " values, counts add up to " +
                         std::to_string(total));
  }
  return total;
}

/// decompress_batch's streams: an offset and a size each, inside `in`.
inline void check_batch_streams(std::size_t in_bytes, std::span<const std::uint64_t> stream_offset,
                                std::span<const std::uint64_t> stream_bytes, std::size_t streams) {
  if (stream_offset.size() != streams || stream_bytes.size() != streams) {
    throw argument_error("decompress_batch: stream_offset and stream_bytes hold " + std::to_string(stream_offset.size()) +
                         " and " + std::to_string(stream_bytes.size()) + " entries, counts " + std::to_string(streams));
  }
  for (std::size_t s = 0; s < streams; ++s) {
    if (stream_offset[s] > in_bytes || stream_bytes[s] > in_bytes - stream_offset[s]) {
      throw argument_error("decompress_batch: stream " + std::to_string(s) + " at [" + std::to_string(stream_offset[s]) +
                           ", +" + std::to_string(stream_bytes[s]) + ") is outside `in` of " + std::to_string(in_bytes) +
                           " bytes");
    }
  }
}

}  // namespace detail

/// Output bytes a batch of streams of `counts` values may take (compress_batch's `out`, on either side):
/// the codec's max_compressed_size, stream by stream.
template <floating_value T, codec C>
std::size_t batch_max_compressed_size(const C& codec, std::span<const std::size_t> counts) {
  std::size_t bytes = 0;
  for (const std::size_t count : counts) {
    bytes = checked_add(bytes, codec.template max_compressed_size<T>(count), "batch_max_compressed_size", "stream bytes");
  }
  return bytes;
}

/// Compresses a batch: stream s holds the counts[s] values after those of streams 0..s-1 and is written
/// right after stream s - 1 in `out`; stream_bytes[s] receives its size. `out` needs the sum of the
/// streams' max_compressed_size. Returns the bytes written (all streams), a prefix of `out`.
template <codec C, floating_value T>
std::span<std::byte> compress_batch(const exec::Host& exec, const C& codec, std::span<const T> values,
                                    std::span<const std::size_t> counts, std::span<std::byte> out,
                                    std::span<std::uint64_t> stream_bytes) {
  detail::batch_values("compress_batch", counts, values.size());
  if (stream_bytes.size() != counts.size()) {
    throw argument_error("compress_batch: stream_bytes holds " + std::to_string(stream_bytes.size()) +
                         " entries, counts " + std::to_string(counts.size()));
  }
  const std::size_t needed = batch_max_compressed_size<T>(codec, counts);
  if (out.size() < needed) {
    throw argument_error("compress_batch: out has " + std::to_string(out.size()) + " bytes, batch_max_compressed_size() = " +
                         std::to_string(needed) + " are needed");
  }
  std::size_t first = 0, written = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    stream_bytes[s] = codec.compress(exec, values.subspan(first, counts[s]), out.subspan(written)).size();
    first += counts[s];
    written += stream_bytes[s];
  }
  return out.first(written);
}

/// Decompresses a batch: stream s, the stream_bytes[s] bytes at `in` + stream_offset[s], into the
/// counts[s] values of `values` after those of streams 0..s-1. A stream that does not decode raises
/// format_error naming it; one whose value count is not counts[s], argument_error.
template <codec C, floating_value T>
void decompress_batch(const exec::Host& exec, const C& codec, std::span<const std::byte> in,
                      std::span<const std::uint64_t> stream_offset, std::span<const std::uint64_t> stream_bytes,
                      std::span<T> values, std::span<const std::size_t> counts) {
  detail::batch_values("decompress_batch", counts, values.size());
  detail::check_batch_streams(in.size(), stream_offset, stream_bytes, counts.size());
  std::size_t first = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    // Which stream failed is the caller's clue: the message names it, the exception keeps its type.
    const std::string which = "decompress_batch: stream " + std::to_string(s) + ": ";
    try {
      codec.decompress(exec, in.subspan(stream_offset[s], stream_bytes[s]), values.subspan(first, counts[s]));
    } catch (const format_error& e) {
      throw format_error(which + e.what());
    } catch (const argument_error& e) {
      throw argument_error(which + e.what());
    }
    first += counts[s];
  }
}

}  // namespace zcoll
