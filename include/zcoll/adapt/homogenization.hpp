#pragma once
/// The homogenization index of the DLRM compression paper (§III-C, equation 1): how many distinct
/// embedding vectors of a sampled batch become equal once quantized at an error bound,
///
///     index = (N_original - N_quantized) / N_original,
///
/// N_original the distinct vectors of the batch, N_quantized the distinct vectors after quantization.
/// 0: quantization merges no two vectors; near 1: it collapses the batch towards one vector. Tables whose
/// index is high lose the most vector identity and get a smaller bound (adapt/table_classifier.hpp).
///
///     const auto h = zcoll::adapt::homogenization_of<float>(batch, dim, 0.01);
///     h.index();   // Table III of the paper lists N_quantized / N_original, which is 1 - index
///
/// Quantization here is the one the codecs apply: zcoll::quantize::Linear at the bound (values it cannot
/// code within the bound, NaN and ±Inf among them, are kept exactly, as the pipeline stores them).
/// Vectors are compared bit for bit.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/linear.hpp"

namespace zcoll::adapt {

struct homogenization {
  std::size_t vectors = 0;           ///< vectors in the batch
  std::size_t original_unique = 0;   ///< N_original
  std::size_t quantized_unique = 0;  ///< N_quantized

  /// (N_original - N_quantized) / N_original; 0 for an empty batch.
  double index() const {
    if (original_unique == 0) return 0.0;
    return static_cast<double>(original_unique - quantized_unique) / static_cast<double>(original_unique);
  }
};

namespace detail {

/// Distinct rows of `dim` values in `rows` (row-major), compared bit for bit.
template <floating_value T>
std::size_t distinct_rows(std::span<const T> rows, std::size_t dim) {
  std::unordered_set<std::string_view> seen;
  const auto* bytes = reinterpret_cast<const char*>(rows.data());
  for (std::size_t r = 0; r < rows.size() / dim; ++r) seen.emplace(bytes + r * dim * sizeof(T), dim * sizeof(T));
  return seen.size();
}

/// The values as the Linear quantizer at `error_bound` reconstructs them (exactly where it cannot code).
template <floating_value T>
std::vector<T> quantized(std::span<const T> values, double error_bound) {
  const quantize::Linear::block_quantizer<T> quantizer(error_bound);
  std::vector<T> out(values.begin(), values.end());
  if (!quantizer.usable()) return out;
  for (std::size_t first = 0; first < values.size(); first += block_values) {
    const std::size_t lanes = std::min(block_values, values.size() - first);
    std::int32_t codes[block_values];
    // The pipeline's own step: a short last block padded, the lanes it cannot code reported.
    const block_mask exact =
        zcoll::detail::quantize_block<T>(quantizer, false, 0, values.data() + first, lanes, codes).outliers;
    T restored[block_values];
    quantizer.dequantize(reinterpret_cast<const std::uint32_t*>(codes), restored, lanes);
    for (std::size_t j = 0; j < lanes; ++j) {
      if (((exact >> j) & 1u) == 0) out[first + j] = restored[j];
    }
  }
  return out;
}

}  // namespace detail

/// The homogenization of a sampled batch of `batch.size() / dim` vectors at `error_bound` (absolute).
template <floating_value T>
homogenization homogenization_of(std::span<const T> batch, std::size_t dim, double error_bound) {
  if (dim == 0 || batch.size() % dim != 0) {
    throw argument_error("homogenization_of: batch of " + std::to_string(batch.size()) +
                         " values is not a whole number of vectors of dim " + std::to_string(dim) + " (dim >= 1)");
  }
  if (!(error_bound >= 0.0) || !std::isfinite(error_bound)) {
    throw argument_error("homogenization_of: error_bound " + std::to_string(error_bound) + " must be finite and >= 0");
  }
  const std::vector<T> after = detail::quantized(batch, error_bound);
  return {batch.size() / dim, detail::distinct_rows(batch, dim), detail::distinct_rows(std::span<const T>(after), dim)};
}

}  // namespace zcoll::adapt
