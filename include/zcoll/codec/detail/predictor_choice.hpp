#pragma once
/// How a pipeline picks its chunk predictor's parameters (the interpolation predictor's method, cubic
/// levels and bin widths): each of P::candidates() predicts a sample of the input, and the one whose
/// residuals have the lowest entropy wins; tuned for rate and distortion, the winner and each of
/// P::width_candidates() beside it then predict the sample again, and the lowest entropy plus squared
/// error (weighed by the bound's λ) wins. SZ3 samples the same way to choose between interpolation and
/// Lorenzo and among its level-wise bounds. The sample, and so the choice and the stream, do not depend
/// on the number of threads.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "zcoll/core/lanes.hpp"

namespace zcoll::detail {

/// The bits an ideal code of the residuals' own statistics spends on them (their order-0 entropy, times
/// their number); residuals beyond ±1023 count 32 bits each, as an escape would.
inline double residual_cost_bits(std::span<const std::int32_t> residuals) {
  constexpr std::int32_t limit = 1023;
  std::vector<std::uint32_t> histogram(2 * limit + 1, 0);
  double escaped = 0.0;
  for (const std::int32_t r : residuals) {
    if (r < -limit || r > limit) {
      escaped += 32.0;
    } else {
      ++histogram[static_cast<std::size_t>(r + limit)];
    }
  }
  const double n = static_cast<double>(residuals.size());
  double bits = escaped;
  for (const std::uint32_t c : histogram) {
    if (c != 0) bits -= c * std::log2(c / n);
  }
  return bits;
}

/// The samples of an input of `count` values: up to 16 pieces of at most 16384 values, evenly spread,
/// about one value in 16 of a large input; as [first, length) pairs.
inline std::vector<std::pair<std::size_t, std::size_t>> predictor_sample(std::size_t count) {
  constexpr std::size_t piece = 16384;
  constexpr std::size_t max_pieces = 16;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  if (count == 0) return pieces;
  const std::size_t n = std::clamp<std::size_t>(count / (16 * piece), 1, max_pieces);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t first = k * count / n;
    pieces.emplace_back(first, std::min(piece, count - first));
  }
  return pieces;
}

/// The candidate (of a non-empty range) that costs least over `sample` (predictor_sample), the first of
/// equals. `trial(candidate, first, length, out)` writes the residuals of values [first, first + length)
/// predicted with `candidate` to `out` (room for length rounded up to a block) and returns their squared
/// error (which an error_weight of 0 ignores); a candidate costs the bits of its residuals (residual_cost_bits)
/// plus error_weight times that error.
template <class Candidates, class Trial, class Parameters = typename Candidates::value_type>
Parameters choose_predictor_parameters(const Candidates& candidates,
                                       std::span<const std::pair<std::size_t, std::size_t>> sample,
                                       double error_weight, const Trial& trial) {
  if (candidates.size() == 1 || sample.empty()) return candidates[0];
  std::vector<std::int32_t> residuals;
  std::size_t best = 0;
  double best_cost = 0.0;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    double cost = 0.0;
    for (const auto& [first, length] : sample) {
      residuals.assign(padded_to_blocks(length), 0);
      const double squared_error = trial(candidates[k], first, length, residuals.data());
      cost += residual_cost_bits(std::span<const std::int32_t>(residuals.data(), length)) + error_weight * squared_error;
    }
    if (k == 0 || cost < best_cost) {
      best = k;
      best_cost = cost;
    }
  }
  return candidates[best];
}

}  // namespace zcoll::detail
