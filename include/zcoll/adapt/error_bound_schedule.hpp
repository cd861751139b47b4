#pragma once
/// Iteration-wise error bounds: the DLRM compression paper's OnlineDecay (§III-C, Algorithm 1). Training
/// starts from a looser bound, which decays over an initial phase (while the loss falls fast) to the
/// configured one, and keeps that bound for the rest of training.
///
///     zcoll::adapt::error_bound_schedule decay{.shape = zcoll::adapt::decay_shape::step, .initial_factor = 3,
///                                              .decay_iterations = 3000, .steps = 3};
///     const double eb = decay.factor(iteration) * table_bound;   // 3x, 2.33x, 1.67x, then 1x from 3000 on
///
/// The factor multiplies a table's bound (adapt/adaptive_config.hpp): it is initial_factor at iteration
/// 0 and 1 from decay_iterations on, for every shape:
///
/// | shape       | factor during the initial phase [0, D), f0 = initial_factor                              |
/// |-------------|------------------------------------------------------------------------------------------|
/// | constant    | 1 (no decay)                                                                             |
/// | step        | f0 - (f0 - 1) * floor(i * steps / D) / steps: `steps` equal stairs (the paper's choice)   |
/// | logarithmic | f0 - (f0 - 1) * ln(1 + i) / ln(1 + D): fast at first, then slower                        |

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "zcoll/core/error.hpp"

namespace zcoll::adapt {

enum class decay_shape : std::uint8_t { constant = 0, step = 1, logarithmic = 2 };

inline const char* to_string(decay_shape shape) {
  switch (shape) {
    case decay_shape::constant: return "constant";
    case decay_shape::step: return "step";
    case decay_shape::logarithmic: return "logarithmic";
  }
  return "unknown";
}

struct error_bound_schedule {
  decay_shape shape = decay_shape::constant;
  /// The factor at iteration 0, >= 1 (the paper starts from 2x or 3x the conservative bound).
  double initial_factor = 1.0;
  /// D: the length of the initial phase; the factor is 1 from iteration D on.
  std::uint64_t decay_iterations = 0;
  /// Stairs of the step shape, >= 1.
  unsigned steps = 1;

  friend bool operator==(const error_bound_schedule&, const error_bound_schedule&) = default;

  /// argument_error naming the field that is out of range.
  void validate() const {
    if (shape != decay_shape::constant && shape != decay_shape::step && shape != decay_shape::logarithmic) {
      throw argument_error("error_bound_schedule: shape " + std::to_string(static_cast<unsigned>(shape)) +
                           " is none of constant, step, logarithmic");
    }
    if (!(initial_factor >= 1.0) || !std::isfinite(initial_factor)) {
      throw argument_error("error_bound_schedule: initial_factor " + std::to_string(initial_factor) +
                           " must be finite and >= 1 (the bound decays to the table's, never below)");
    }
    if (steps == 0) throw argument_error("error_bound_schedule: steps must be >= 1");
  }

  /// What the table's bound is multiplied by at `iteration`.
  double factor(std::uint64_t iteration) const {
    validate();
    if (shape == decay_shape::constant || iteration >= decay_iterations) return 1.0;
    const double excess = initial_factor - 1.0;
    const auto i = static_cast<double>(iteration), d = static_cast<double>(decay_iterations);
    if (shape == decay_shape::step) {
      // The stair in integers, so that stair k starts exactly at iteration ceil(k * D / steps) (in long
      // double only past 2^64 / steps iterations).
      const std::uint64_t stair =
          iteration <= std::numeric_limits<std::uint64_t>::max() / steps
              ? iteration * steps / decay_iterations
              : static_cast<std::uint64_t>(static_cast<long double>(iteration) * steps / decay_iterations);
      return initial_factor - excess * static_cast<double>(stair) / steps;
    }
    return initial_factor - excess * std::log1p(i) / std::log1p(d);
  }
};

}  // namespace zcoll::adapt
