#pragma once
/// What a quantizer is: values to integer codes per 32-value block, with the lanes it cannot bound.

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "zcoll/core/lanes.hpp"

namespace zcoll::quantize {

/// Q::block_quantizer<T>(eb) maps blocks of 32 values to codes and back. quantize() returns the lanes
/// whose reconstruction would break the bound; the pipeline stores those values exactly. usable() is
/// false when the quantizer cannot honour the bound at all (the pipeline then stores chunks verbatim).
template <class Q>
concept quantizer = requires(const typename Q::template block_quantizer<float> qf,
                             const typename Q::template block_quantizer<double> qd, const float* xf,
                             const double* xd, float* of, double* od, std::int32_t* codes,
                             const std::uint32_t* decoded) {
  { Q::id } -> std::convertible_to<std::uint8_t>;
  { Q::name } -> std::convertible_to<const char*>;
  { Q::uses_error_bound } -> std::convertible_to<bool>;
  { qf.usable() } -> std::same_as<bool>;
  { qf.guaranteed_bound() } -> std::same_as<double>;
  { qf.quantize(xf, codes) } -> std::same_as<block_mask>;
  { qd.quantize(xd, codes) } -> std::same_as<block_mask>;
  qf.dequantize(decoded, of, std::size_t{});
  qd.dequantize(decoded, od, std::size_t{});
};

}  // namespace zcoll::quantize
