#pragma once
/// What an encoder is: a pair of block functions over 32 integer residuals.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace zcoll::encode {

/// An encoder packs blocks of 32 residuals into bytes and back. encode_block is given room for
/// max_block_bytes and returns the size of the block; it may use the room past that size as scratch
/// (the next block overwrites it). decode_block validates what it reads, raises format_error on a
/// malformed block, and reads nothing past the block.
template <class E>
concept encoder = requires(const std::int32_t* residuals, std::byte* out, std::span<const std::byte> in,
                           std::uint32_t* decoded) {
  { E::id } -> std::convertible_to<std::uint8_t>;
  { E::name } -> std::convertible_to<const char*>;
  { E::max_block_bytes } -> std::convertible_to<std::size_t>;
  { E::encode_block(residuals, out) } -> std::same_as<std::size_t>;
  { E::decode_block(in, decoded) } -> std::same_as<std::size_t>;
};

}  // namespace zcoll::encode
