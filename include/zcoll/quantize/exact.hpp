#pragma once
/// No quantization: every value is kept exactly (the Identity codec, the uncompressed baseline).

#include <cstddef>
#include <cstdint>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::quantize {

/// A quantizer that is never usable, so the pipeline stores every chunk verbatim with a bound of 0.
struct Exact {
  static constexpr std::uint8_t id = 0;
  static constexpr const char* name = "exact";
  static constexpr bool uses_error_bound = false;

  template <floating_value T>
  class block_quantizer {
   public:
    ZCOLL_HOST_DEVICE explicit block_quantizer(double) {}
    ZCOLL_HOST_DEVICE bool usable() const { return false; }
    ZCOLL_HOST_DEVICE double guaranteed_bound() const { return 0.0; }
    ZCOLL_HOST_DEVICE block_mask quantize(const T*, std::int32_t* codes) const {
      for (std::size_t j = 0; j < block_values; ++j) codes[j] = 0;
      return ~block_mask{0};
    }
    ZCOLL_HOST_DEVICE void dequantize(const std::uint32_t*, T* out, std::size_t lanes) const {
      for (std::size_t j = 0; j < lanes; ++j) out[j] = T(0);
    }
  };
};

}  // namespace zcoll::quantize
