#pragma once
/// What an embedding category (a sparse feature and its table) is made of, and FusedRec's fusion
/// criterion (§3, "Embedding Fusion"): categories whose specs are equal — same dimension, optimizer and
/// initializer — can share one fused group, one lookup, one all-to-all.
///
///     std::vector<zcoll::embedding::embedding_spec> specs(26, {.dim = 16});
///     specs[3].optimizer = {.kind = zcoll::embedding::optimizer_kind::rowwise_adagrad, .learning_rate = 0.05};
///     auto groups = zcoll::embedding::group_by_spec(specs);  // {{0, 1, 2, 4, ..., 25}, {3}}

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/error.hpp"

namespace zcoll::embedding {

/// How a table's rows are updated from their gradients.
enum class optimizer_kind : std::uint8_t {
  sgd,              ///< row -= learning_rate * gradient
  rowwise_adagrad,  ///< FBGEMM/TorchRec's row-wise AdaGrad: one accumulator per row, the mean squared gradient
};

struct optimizer_spec {
  optimizer_kind kind = optimizer_kind::sgd;
  double learning_rate = 0.01;
  double epsilon = 1e-8;  ///< row-wise AdaGrad's denominator floor

  friend bool operator==(const optimizer_spec&, const optimizer_spec&) = default;
};

/// Rows start uniform in [-scale, scale]; each value is a hash of (seed, category, id, column), so a row
/// is the same whichever rank owns it and however many ranks there are (1-rank and N-rank runs agree).
struct initializer_spec {
  double scale = 0.0;
  std::uint64_t seed = 0;

  friend bool operator==(const initializer_spec&, const initializer_spec&) = default;
};

struct embedding_spec {
  std::size_t dim = 0;  ///< values per row, > 0
  optimizer_spec optimizer = {};
  initializer_spec initializer = {};

  friend bool operator==(const embedding_spec&, const embedding_spec&) = default;

  /// argument_error naming the category and the field out of range.
  void validate(std::size_t category) const {
    const auto where = "embedding_spec of category " + std::to_string(category) + ": ";
    if (dim == 0) throw argument_error(where + "dim is 0; it must be at least 1");
    if (!(optimizer.learning_rate >= 0.0 && std::isfinite(optimizer.learning_rate))) {
      throw argument_error(where + "optimizer.learning_rate " + std::to_string(optimizer.learning_rate) +
                           " must be finite and >= 0");
    }
    if (!(optimizer.epsilon > 0.0 && std::isfinite(optimizer.epsilon))) {
      throw argument_error(where + "optimizer.epsilon " + std::to_string(optimizer.epsilon) + " must be finite and > 0");
    }
    if (!(initializer.scale >= 0.0 && std::isfinite(initializer.scale))) {
      throw argument_error(where + "initializer.scale " + std::to_string(initializer.scale) + " must be finite and >= 0");
    }
  }
};

/// The categories grouped by equal spec: one group per distinct spec, in the order the specs first
/// appear, each listing its categories in increasing order.
inline std::vector<std::vector<std::size_t>> group_by_spec(std::span<const embedding_spec> specs) {
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::size_t> leader;  // a category of each group, to compare specs with
  for (std::size_t c = 0; c < specs.size(); ++c) {
    specs[c].validate(c);
    std::size_t g = 0;
    while (g < groups.size() && !(specs[leader[g]] == specs[c])) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      leader.push_back(c);
    }
    groups[g].push_back(c);
  }
  return groups;
}

/// One category per group: the per-category lookup FusedRec compares against (one all-to-all each).
inline std::vector<std::vector<std::size_t>> one_group_per_category(std::span<const embedding_spec> specs) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t c = 0; c < specs.size(); ++c) {
    specs[c].validate(c);
    groups.push_back({c});
  }
  return groups;
}

}  // namespace zcoll::embedding
