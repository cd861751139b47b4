#pragma once
/// What a codec is, for the layers above (collectives, benchmarks).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll {

/// A codec compresses float and double spans into caller buffers sized by max_compressed_size and
/// decompresses them back.
template <class C>
concept codec = std::constructible_from<C, codec_config> &&
                requires(const C c, std::span<const float> in, std::span<float> out, std::span<std::byte> bytes,
                         std::span<const std::byte> stream) {
                  { C::id } -> std::convertible_to<codec_id>;
                  { C::name() } -> std::convertible_to<std::string>;
                  { c.template max_compressed_size<float>(std::size_t{}) } -> std::same_as<std::size_t>;
                  { c.compress(exec::Host{}, in, bytes) } -> std::same_as<std::span<std::byte>>;
                  c.decompress(exec::Host{}, stream, out);
                };

}  // namespace zcoll
