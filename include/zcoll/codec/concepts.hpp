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

/// A codec is a value (immutable, copyable, safe to share between threads) that compresses float and
/// double spans into caller buffers sized by max_compressed_size and decompresses them back. What a
/// collective asks of it beyond that: its configuration (the bound, fill value and shape it was made
/// with) and a copy with another error bound for the reduction hops.
template <class C>
concept codec = std::copy_constructible<C> &&
                requires(const C c, std::span<const float> in, std::span<float> out, std::span<std::byte> bytes,
                         std::span<const std::byte> stream, const bound& error_bound) {
                  { C::id } -> std::convertible_to<codec_id>;
                  { C::name() } -> std::convertible_to<std::string>;
                  { C::uses_error_bound } -> std::convertible_to<bool>;
                  { c.config() } -> std::convertible_to<const codec_config&>;
                  { c.with_error_bound(error_bound) } -> std::same_as<C>;
                  { c.template max_compressed_size<float>(std::size_t{}) } -> std::same_as<std::size_t>;
                  { c.compress(exec::Host{}, in, bytes) } -> std::same_as<std::span<std::byte>>;
                  c.decompress(exec::Host{}, stream, out);
                };

/// Whether codec_config::tuning changes what a codec writes: C::uses_tuning (a pipeline whose chunk
/// predictor picks its settings on a sample, HighRatio), false for a codec without the member.
template <class C>
inline constexpr bool uses_tuning = requires { requires C::uses_tuning; };

}  // namespace zcoll
