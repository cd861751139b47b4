#pragma once
/// Row-wise min-max integer quantization to 8, 4 or 2 bits (the DLRM quantized-collectives paper, §3.1),
/// written in FBGEMM's fused row-wise layout so buffers interoperate with FBGEMM and TorchRec's quantized
/// comms.
///
///     std::vector<std::byte> fused(rows * zcoll::quantize::rowwise_layout<4>::row_bytes(dim));
///     const double bound = zcoll::quantize::quantize_rows<4>(std::span<const float>(values), dim, fused);
///     zcoll::quantize::dequantize_rows<4>(std::span<const std::byte>(fused), dim, std::span<float>(restored));
///
/// Layout (FBGEMM's FloatToFused8BitRowwiseQuantizedSBFloat / FloatToFusedNBitRowwiseQuantizedSBHalf and
/// their dequantizers Fused8BitRowwiseQuantizedSBFloatToFloat / FusedNBitRowwiseQuantizedSBHalfToFloat),
/// rows back to back, no header, little-endian:
///
/// | Bits | per row                                                                       | row bytes          |
/// |-----:|-------------------------------------------------------------------------------|--------------------|
/// |    8 | dim u8 codes, then scale (f32), bias (f32)                                    | dim + 8            |
/// |  4,2 | ceil(dim × Bits / 8) bytes of packed codes, then scale (f16), bias (f16)      | ceil(dim×Bits/8)+4 |
///
/// Packed codes: element j sits in byte j / (8 / Bits) at bit (j % (8 / Bits)) × Bits, element 0 in the
/// low bits of byte 0, as FBGEMM packs them; the unused high bits of a row's last byte are zero. Element j
/// decodes to x'_j = code_j × scale + bias in float, as FBGEMM's dequantizers compute it.
///
/// The codes follow the paper: s = (max - min) / (2^q - 1), z = -min / s, code = rndint(x / s + z) with
/// ties to even, clamped to [0, 2^q - 1]. Because the decoder sees the stored scale S and bias B, not s
/// and min, the codes are computed from them: code = RNE((x - B) / S), which is x / S + z with z = -B / S
/// evaluated as one quotient (x - B and the quotient in double), so exact ties stay ties.
///
/// S and B are chosen so that [B, B + (2^q - 1) S] covers the row: B is the largest stored-format value
/// (f16 for 4 and 2 bits, f32 for 8 bits) <= min, S the smallest stored-format value with
/// B + (2^q - 1) S >= max exactly. The 8-bit scale is an f32 with at most 16 significant bits, so that
/// code × S (8 + 16 bits) is exact in float: FBGEMM's reference (multiply, then add) and AVX2 (FMA)
/// dequantizers then give the same, once-rounded value. A row whose values all equal B gets S = 0 and
/// codes 0, and is restored exactly (FBGEMM's constant-row scale 0 for 8 bits).
///
/// The bound (row_error_bound): every value of a row is within
///     e(S, B) = S/2 + 2^-42 S + 2^-24 max(|B|, |B + (2^q - 1) S|) + 2^-149   (rounded up; 0 when S = 0)
/// of its restored value: S/2 is the rounding to the nearest code in exact arithmetic; 2^-42 S covers
/// computing (x - B) / S in double; 2^-24 max(...) + 2^-149 is the float rounding of code × S + B in the
/// dequantizer (half an ulp of the result, or half the subnormal spacing). quantize_rows returns the largest
/// e over the rows.
///
/// Not representable, raising argument_error that names the row: NaN or ±Inf anywhere in a row; for 4 and
/// 2 bits a minimum below -65504 (no finite f16 bias <= it) or a row whose scale would exceed 65504 (the
/// largest finite f16); for 8 bits a minimum below -FLT_MAX (double input) or a scale with
/// (2^8 - 1) S + max(B, 0) > FLT_MAX (the dequantizer would overflow). Range computations are in double.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/detail/rowwise_codes.hpp"
#include "zcoll/quantize/detail/rowwise_dequantize.hpp"
#include "zcoll/quantize/detail/rowwise_scale_bias.hpp"
#include "zcoll/quantize/rowwise_layout.hpp"

namespace zcoll::quantize {

namespace detail {

/// Quantizes rows [first, end) of `values` (rows of dim) into their places in `fused`; returns the largest
/// row bound. Row indices in error messages are absolute; rows are checked in order, so the first
/// offending row is the one reported.
template <int Bits, floating_value T>
double quantize_row_range(const T* values, std::size_t dim, std::size_t first, std::size_t end, std::byte* fused) {
  const std::size_t row_bytes = rowwise_layout<Bits>::row_bytes(dim);
  double largest = 0.0;
  row_scale_bias group[row_group];
  for (std::size_t g = first; g < end; g += row_group) {
    const std::size_t n = std::min(row_group, end - g);
    for (std::size_t i = 0; i < n; ++i) group[i] = scale_bias_of_row<Bits, T>(values + (g + i) * dim, dim, g + i);
    for (std::size_t i = 0; i < n; ++i) {
      code_row<Bits, T>(values + (g + i) * dim, dim, group[i], fused + (g + i) * row_bytes);
      largest = std::max(largest, row_error_bound<Bits>(group[i].scale, group[i].bias));
    }
  }
  return largest;
}

/// Dequantizes rows [first, end) of `fused` into their places in `out`.
template <int Bits, floating_value T>
void dequantize_row_range(const std::byte* fused, std::size_t dim, std::size_t first, std::size_t end, T* out) {
  const std::size_t row_bytes = rowwise_layout<Bits>::row_bytes(dim);
  const std::size_t code_bytes = rowwise_layout<Bits>::code_bytes(dim);
  for (std::size_t r = first; r < end; ++r) {
    const std::byte* row = fused + r * row_bytes;
    dequantize_row<Bits, T>(row, dim, load_scale_bias<Bits>(row + code_bytes), out + r * dim);
  }
}

template <int Bits>
void check_dim(const char* function, std::size_t dim, std::size_t count) {
  if (dim == 0) throw argument_error(std::string(function) + ": dim 0; a row holds at least one value");
  if (count % dim != 0) {
    throw argument_error(std::string(function) + ": " + std::to_string(count) + " values are not a whole number of rows of dim " +
                         std::to_string(dim));
  }
  if (dim > std::numeric_limits<std::size_t>::max() / 16) {
    throw argument_error(std::string(function) + ": dim " + std::to_string(dim) + " is too large");
  }
}

}  // namespace detail

/// Quantizes rows values[r × dim, (r + 1) × dim) into `fused` (at least rowwise_layout<Bits>::fused_bytes
/// bytes; exactly those are written) in FBGEMM's fused layout, one row after another; returns the largest
/// row bound e(S, B) (0 for no rows). argument_error for dim 0, a count that is not a multiple of dim, too
/// small an output, or a row the layout cannot hold (NaN/±Inf, ranges beyond f16 or f32: header comment);
/// rows before the offending one may be written then, nothing past the output ever is.
///
///     const double bound = zcoll::quantize::quantize_rows<8>(std::span<const float>(x), 64, fused);
template <int Bits, floating_value T>
double quantize_rows(std::span<const T> values, std::size_t dim, std::span<std::byte> fused) {
  using layout = rowwise_layout<Bits>;
  detail::check_dim<Bits>("quantize_rows", dim, values.size());
  const std::size_t rows = values.size() / dim;
  const std::size_t needed = layout::fused_bytes(rows, dim);
  if (fused.size() < needed) {
    throw argument_error("quantize_rows: fused has " + std::to_string(fused.size()) + " bytes, " +
                         std::to_string(rows) + " rows of dim " + std::to_string(dim) + " need " +
                         std::to_string(needed));
  }
  return detail::quantize_row_range<Bits, T>(values.data(), dim, 0, rows, fused.data());
}

/// Dequantizes FBGEMM fused rows (exactly fused_bytes(out.size() / dim, dim) bytes) into `out`:
/// out[r × dim + j] = code × scale + bias rounded once to float (header comment), widened to T. Any bytes
/// decode without reading or writing outside the spans; whether they are a valid stream is the codec's
/// check (codec/rowwise.hpp).
template <int Bits, floating_value T>
void dequantize_rows(std::span<const std::byte> fused, std::size_t dim, std::span<T> out) {
  using layout = rowwise_layout<Bits>;
  detail::check_dim<Bits>("dequantize_rows", dim, out.size());
  const std::size_t rows = out.size() / dim;
  const std::size_t needed = layout::fused_bytes(rows, dim);
  if (fused.size() != needed) {
    throw argument_error("dequantize_rows: fused has " + std::to_string(fused.size()) + " bytes, " +
                         std::to_string(rows) + " rows of dim " + std::to_string(dim) + " are " +
                         std::to_string(needed));
  }
  detail::dequantize_row_range<Bits, T>(fused.data(), dim, 0, rows, out.data());
}

/// Scale and bias of row `row` of a fused buffer, as the dequantizer reads them.
template <int Bits>
rowwise_parameters row_parameters(std::span<const std::byte> fused, std::size_t dim, std::size_t row) {
  using layout = rowwise_layout<Bits>;
  if (dim == 0 || row >= fused.size() / layout::row_bytes(dim)) {
    throw argument_error("row_parameters: row " + std::to_string(row) + " is not in a buffer of " +
                         std::to_string(fused.size()) + " bytes with rows of dim " + std::to_string(dim));
  }
  const auto p = detail::load_scale_bias<Bits>(fused.data() + row * layout::row_bytes(dim) + layout::code_bytes(dim));
  return {p.scale, p.bias};
}

}  // namespace zcoll::quantize
