#pragma once
/// The per-block math of the bit-shuffle encoder, written once for every driver.
///
/// Block format (32 residuals, fZ-light / cuSZp layout):
///
/// | bytes   | field                                                                                  |
/// |---------|----------------------------------------------------------------------------------------|
/// | 1       | L: bit planes, 0..32 = bit width of the largest magnitude. L = 0: all residuals are 0, |
/// |         | nothing follows (a constant block costs one byte)                                      |
/// | 4       | sign mask (u32): bit j set when residual j < 0                                         |
/// | 4 × L   | bit planes, least significant first: bit j of plane p = bit p of |residual j|          |

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"

namespace zcoll::encode::detail {

inline constexpr std::size_t bitshuffle_max_block_bytes = 1 + 4 + 4 * block_values;

/// Bytes of an encoded block with `planes` bit planes.
constexpr std::size_t bitshuffle_block_bytes(unsigned planes) { return planes == 0 ? 1 : 5 + 4 * std::size_t{planes}; }

/// Encodes 32 residuals at `out` (which has room for bitshuffle_max_block_bytes); returns bytes written.
ZCOLL_ALWAYS_INLINE std::size_t bitshuffle_encode_block(const std::int32_t* ZCOLL_RESTRICT residuals,
                                                        std::byte* ZCOLL_RESTRICT out) {
  alignas(64) std::uint32_t magnitude[block_values];
  std::uint32_t any = 0;
  for (std::size_t j = 0; j < block_values; ++j) {
    const auto r = static_cast<std::uint32_t>(residuals[j]);
    // |r| in unsigned arithmetic, so INT32_MIN gives 2^31 instead of overflowing.
    magnitude[j] = static_cast<std::int32_t>(r) < 0 ? 0u - r : r;
    any |= magnitude[j];
  }
  const unsigned planes = 32 - static_cast<unsigned>(std::countl_zero(any));
  out[0] = static_cast<std::byte>(planes);
  if (planes == 0) return 1;
  const block_mask sign = lanes_with_bit(reinterpret_cast<const std::uint32_t*>(residuals), 31);
  std::memcpy(out + 1, &sign, 4);
  for (unsigned p = 0; p < planes; ++p) {
    const block_mask plane = lanes_with_bit(magnitude, p);
    std::memcpy(out + 5 + 4 * p, &plane, 4);
  }
  return bitshuffle_block_bytes(planes);
}

/// Decodes the block whose planes byte is `planes` (<= 32) from `in`, which holds the whole block.
/// Residuals come back as unsigned words (two's complement): a corrupted stream then wraps instead of
/// overflowing a signed integer.
ZCOLL_ALWAYS_INLINE void bitshuffle_decode_block(unsigned planes, const std::byte* ZCOLL_RESTRICT in,
                                                 std::uint32_t* ZCOLL_RESTRICT residuals) {
  for (std::size_t j = 0; j < block_values; ++j) residuals[j] = 0;
  if (planes == 0) return;
  block_mask sign;
  std::memcpy(&sign, in + 1, 4);
  for (unsigned p = 0; p < planes; ++p) {
    block_mask plane;
    std::memcpy(&plane, in + 5 + 4 * p, 4);
    set_bit_in_lanes(residuals, plane, p);
  }
  for (std::size_t j = 0; j < block_values; ++j) {
    const std::uint32_t negate = 0u - ((sign >> j) & 1u);  // all ones where the sign bit is set
    residuals[j] = (residuals[j] ^ negate) - negate;
  }
}

}  // namespace zcoll::encode::detail
