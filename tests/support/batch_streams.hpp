#pragma once
// A batch of streams for the device drivers' tests: the values of several streams back to back with
// their counts, and what the host driver makes of them (its bytes and sizes, and each stream's decoded
// values in order) — the reference the device paths are held to byte for byte.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zcoll/codec/compress.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll_test {

template <class T>
struct batch_input {
  std::vector<std::size_t> counts;
  std::vector<T> values;
  explicit batch_input(const std::vector<std::vector<T>>& streams) {
    for (const auto& s : streams) {
      counts.push_back(s.size());
      values.insert(values.end(), s.begin(), s.end());
    }
  }
};

/// A compressed batch: its bytes, each stream's offset and size, and their total.
struct batch_streams {
  std::vector<std::byte> bytes;
  std::vector<std::uint64_t> offset, size;
  std::uint64_t total = 0;
};

/// The host driver's compress_batch of `input`.
template <class C, class T>
batch_streams host_batch(const C& codec, const batch_input<T>& input) {
  batch_streams out;
  out.bytes.resize(zcoll::batch_max_compressed_size<T>(codec, std::span<const std::size_t>(input.counts)));
  out.size.resize(input.counts.size());
  const auto written = zcoll::compress_batch(zcoll::exec::Host{}, codec, std::span<const T>(input.values),
                                             std::span<const std::size_t>(input.counts), std::span<std::byte>(out.bytes),
                                             std::span<std::uint64_t>(out.size));
  out.total = written.size();
  std::uint64_t at = 0;
  for (const std::uint64_t size : out.size) {
    out.offset.push_back(at);
    at += size;
  }
  return out;
}

/// The host decoder's values of every stream of `batch`, in order.
template <class T, class C>
std::vector<T> host_decoded(const C& codec, const batch_streams& batch) {
  std::vector<T> values;
  for (std::size_t s = 0; s < batch.offset.size(); ++s) {
    const auto one = codec.template decompress<T>(std::span<const std::byte>(batch.bytes).subspan(batch.offset[s], batch.size[s]));
    values.insert(values.end(), one.begin(), one.end());
  }
  return values;
}

/// Whether the host decoder refuses `stream` as `count` values of T: a format_error, or the argument_error
/// for a count the stream does not state (which a device decoder reports as a fault too).
template <class T, class C>
bool host_refuses(const C& codec, std::span<const std::byte> stream, std::size_t count) {
  std::vector<T> out(count);
  try {
    codec.decompress(zcoll::exec::Host{}, stream, std::span<T>(out));
  } catch (const zcoll::format_error&) {
    return true;
  } catch (const zcoll::argument_error&) {
    return true;
  }
  return false;
}

}  // namespace zcoll_test
