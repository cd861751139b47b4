#pragma once
/// 1-D Lorenzo prediction in integer space: r_i = q_i - q_{i-1}, restarting at each chunk.

#include <cstddef>
#include <cstdint>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"

namespace zcoll::predict {

/// Predicting on codes, not values ("dual quantization"), keeps chunks independent and exact: the
/// decoder's prefix sum reproduces the encoder's codes bit for bit. Arithmetic wraps modulo 2^32, so
/// a corrupted stream decodes to garbage values, never to undefined behaviour.
struct Lorenzo1D {
  static constexpr std::uint8_t id = 1;
  static constexpr const char* name = "lorenzo1d";

  /// The last code of the previous block; a chunk starts from 0.
  struct state {
    std::uint32_t previous = 0;
  };

  ZCOLL_ALWAYS_INLINE static void forward(state& s, const std::int32_t* ZCOLL_RESTRICT codes,
                                          std::int32_t* ZCOLL_RESTRICT residuals) {
    residuals[0] = static_cast<std::int32_t>(static_cast<std::uint32_t>(codes[0]) - s.previous);
    for (std::size_t j = 1; j < block_values; ++j) {
      residuals[j] = static_cast<std::int32_t>(static_cast<std::uint32_t>(codes[j]) -
                                               static_cast<std::uint32_t>(codes[j - 1]));
    }
    s.previous = static_cast<std::uint32_t>(codes[block_values - 1]);
  }

  /// Codes from residuals, in place.
  ZCOLL_ALWAYS_INLINE static void inverse(state& s, std::uint32_t* values) {
    std::uint32_t running = s.previous;
    for (std::size_t j = 0; j < block_values; ++j) {
      running += values[j];
      values[j] = running;
    }
    s.previous = running;
  }
};

}  // namespace zcoll::predict
