#pragma once
/// No prediction: residuals are the codes (embedding vectors and other data with no order to exploit).

#include <cstddef>
#include <cstdint>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"

namespace zcoll::predict {

struct None {
  static constexpr std::uint8_t id = 0;
  static constexpr const char* name = "none";

  struct state {};

  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static void forward(state&, const std::int32_t* ZCOLL_RESTRICT codes,
                                          std::int32_t* ZCOLL_RESTRICT residuals) {
    for (std::size_t j = 0; j < block_values; ++j) residuals[j] = codes[j];
  }

  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static void inverse(state&, std::uint32_t*) {}
};

}  // namespace zcoll::predict
