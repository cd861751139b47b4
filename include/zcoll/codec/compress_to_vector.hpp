#pragma once
/// The one body of every codec's `compress(in) -> std::vector<std::byte>` convenience.

#include <cstddef>
#include <ranges>
#include <span>
#include <vector>

#include "zcoll/core/exec.hpp"

namespace zcoll {

/// Compresses `in` with `codec` on one thread into a vector sized by max_compressed_size and trimmed to
/// the stream.
template <class Codec, std::ranges::contiguous_range R>
std::vector<std::byte> compress_to_vector(const Codec& codec, const R& in) {
  using T = std::ranges::range_value_t<R>;
  std::vector<std::byte> stream(codec.template max_compressed_size<T>(std::ranges::size(in)));
  stream.resize(codec.compress(exec::Host{}, in, std::span<std::byte>(stream)).size());
  return stream;
}

}  // namespace zcoll
