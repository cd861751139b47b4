#pragma once
/// Table-wise error bounds: the DLRM compression paper's classifier (§III-C, Algorithm 1's
/// EMBClassification). A table's homogenization index (adapt/homogenization.hpp) puts it in one of three
/// classes, each with its bound:
///
/// | class  | when                          | bound                 |
/// |--------|-------------------------------|-----------------------|
/// | small  | index > small_above           | global_bound / beta   |
/// | large  | index < large_below           | global_bound * alpha  |
/// | medium | otherwise                     | global_bound          |
///
/// The paper's evaluated choice is 0.05 / 0.03 / 0.01: global_bound 0.03, alpha 5/3, beta 3. The thresholds
/// have no default: they depend on the model and the batch the index is measured on.

#include <cmath>
#include <cstdint>
#include <string>

#include "zcoll/core/error.hpp"

namespace zcoll::adapt {

enum class bound_class : std::uint8_t { large = 0, medium = 1, small = 2 };

inline const char* to_string(bound_class c) {
  switch (c) {
    case bound_class::large: return "large";
    case bound_class::medium: return "medium";
    case bound_class::small: return "small";
  }
  return "unknown";
}

struct table_classifier {
  double global_bound = 0.0;  ///< the medium bound (absolute), > 0
  double alpha = 1.0;         ///< large = global_bound * alpha, alpha >= 1
  double beta = 1.0;          ///< small = global_bound / beta, beta >= 1
  double large_below = 0.0;   ///< L_EMB_hindex: an index below it is large
  double small_above = 1.0;   ///< S_EMB_hindex: an index above it is small

  friend bool operator==(const table_classifier&, const table_classifier&) = default;

  /// argument_error naming the field that is out of range.
  void validate() const {
    const auto require = [](bool ok, const std::string& what) {
      if (!ok) throw argument_error("table_classifier: " + what);
    };
    require(global_bound > 0.0 && std::isfinite(global_bound),
            "global_bound " + std::to_string(global_bound) + " must be finite and > 0");
    require(alpha >= 1.0 && std::isfinite(alpha), "alpha " + std::to_string(alpha) + " must be finite and >= 1");
    require(beta >= 1.0 && std::isfinite(beta), "beta " + std::to_string(beta) + " must be finite and >= 1");
    require(large_below >= 0.0 && small_above <= 1.0 && large_below <= small_above,
            "thresholds large_below " + std::to_string(large_below) + " and small_above " +
                std::to_string(small_above) + " must satisfy 0 <= large_below <= small_above <= 1");
  }

  bound_class classify(double index) const {
    validate();
    if (!(index >= 0.0 && index <= 1.0)) {
      throw argument_error("table_classifier::classify: index " + std::to_string(index) + " is not in [0, 1]");
    }
    if (index > small_above) return bound_class::small;
    if (index < large_below) return bound_class::large;
    return bound_class::medium;
  }

  double bound_of(bound_class c) const {
    validate();
    switch (c) {
      case bound_class::large: return global_bound * alpha;
      case bound_class::small: return global_bound / beta;
      case bound_class::medium: break;
    }
    return global_bound;
  }
};

}  // namespace zcoll::adapt
