#pragma once
/// Raw encoder: residuals stored as 32-bit little-endian words, no packing. The reference point that
/// shows what quantization and prediction alone give, and the encoder of codecs whose codes are dense.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"

namespace zcoll::encode {

struct Raw {
  static constexpr std::uint8_t id = 0;
  static constexpr const char* name = "raw";
  static constexpr std::size_t max_block_bytes = 4 * block_values;

  ZCOLL_HOST_DEVICE static std::size_t encode_block(const std::int32_t* residuals, std::byte* out) {
    std::memcpy(out, residuals, max_block_bytes);
    return max_block_bytes;
  }

  /// Every block is max_block_bytes long.
  ZCOLL_HOST_DEVICE static constexpr std::size_t block_bytes(std::byte) { return max_block_bytes; }

  /// Decodes the block at `in`, whose max_block_bytes the caller has checked are there.
  ZCOLL_HOST_DEVICE static void decode_checked_block(const std::byte* in, std::uint32_t* residuals) {
    std::memcpy(residuals, in, max_block_bytes);
  }

  static std::size_t decode_block(std::span<const std::byte> in, std::uint32_t* residuals) {
    if (in.size() < max_block_bytes) {
      throw format_error("raw: block of 128 bytes truncated to " + std::to_string(in.size()));
    }
    std::memcpy(residuals, in.data(), max_block_bytes);
    return max_block_bytes;
  }
};

}  // namespace zcoll::encode
