#pragma once
/// FBGEMM's fused row-wise layout (quantize/rowwise.hpp describes it): the byte sizes of a row, a row's
/// stored scale and bias, and the bound every value of a row is within.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll::quantize {

/// Byte sizes of FBGEMM's fused row-wise layout for `Bits`-bit codes.
template <int Bits>
struct rowwise_layout {
  static_assert(Bits == 8 || Bits == 4 || Bits == 2,
                "rowwise_layout<Bits>: Bits must be 8, 4 or 2 (FBGEMM's fused row-wise bit rates)");
  static constexpr int bits = Bits;
  /// Largest code, 2^Bits - 1.
  static constexpr std::uint32_t max_code = (1u << Bits) - 1;
  /// Codes per byte.
  static constexpr std::size_t codes_per_byte = 8 / Bits;
  /// Scale and bias after the codes: two f32 for 8 bits, two f16 below.
  static constexpr std::size_t scale_bias_bytes = Bits == 8 ? 8 : 4;

  /// Bytes of a row's codes: ceil(dim × Bits / 8).
  static constexpr std::size_t code_bytes(std::size_t dim) {
    return dim / codes_per_byte + (dim % codes_per_byte != 0 ? 1 : 0);
  }
  /// Bytes of one row: codes, then scale and bias (FBGEMM's output_columns).
  static constexpr std::size_t row_bytes(std::size_t dim) { return code_bytes(dim) + scale_bias_bytes; }
  /// Bytes of `rows` rows; argument_error when that does not fit in size_t.
  static std::size_t fused_bytes(std::size_t rows, std::size_t dim) {
    const std::size_t per_row = row_bytes(dim);
    if (dim > std::numeric_limits<std::size_t>::max() - scale_bias_bytes ||
        (rows != 0 && per_row > std::numeric_limits<std::size_t>::max() / rows)) {
      throw argument_error("rowwise_layout: " + std::to_string(rows) + " rows of dim " + std::to_string(dim) +
                           " exceed the addressable size");
    }
    return rows * per_row;
  }
};

/// A row's stored scale and bias, as the dequantizer reads them (f16 widened to float for 4 and 2 bits).
struct rowwise_parameters {
  float scale = 0.0f;
  float bias = 0.0f;
};

/// e(S, B) of the header comment: the bound every value of a row quantized by quantize_rows to scale S and
/// bias B is within, after FBGEMM's (or dequantize_rows') float dequantization. 0 for S = 0, which
/// quantize_rows writes only for rows whose every value equals B.
template <int Bits>
ZCOLL_HOST_DEVICE double row_error_bound(float scale, float bias) {
  if (scale == 0.0f) return 0.0;
  const double s = scale, b = bias;
  const double top = b + s * rowwise_layout<Bits>::max_code;  // s × max_code is exact in double
  const double largest = std::max(std::abs(b), std::abs(top));
  const double e = 0.5 * s + 0x1p-42 * s + 0x1p-24 * largest + 0x1p-149;
  // Three roundings above lose at most 2^-51 relative; adding 2^-50 e rounds the sum up past the exact value.
  return e + 0x1p-50 * e;
}

namespace detail {

/// The stored form of a row's scale and bias: `scale_bits`/`bias_bits` as written (f16 in the low 16 bits
/// for 4 and 2 bits), `scale`/`bias` as the dequantizer reads them.
struct row_scale_bias {
  std::uint32_t scale_bits = 0;
  std::uint32_t bias_bits = 0;
  float scale = 0.0f;
  float bias = 0.0f;
};

}  // namespace detail

}  // namespace zcoll::quantize
