#pragma once
/// embedding_shard: the rows of every category that one rank owns (routing.hpp decides which), keyed by
/// (category, id), created on first lookup from the category's initializer (a dynamic embedding table in
/// the manner of TFRA, which FusedRec builds on: no table size is declared, any 64-bit id is a row), and
/// updated by the category's optimizer.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/error.hpp"
#include "zcoll/embedding/embedding_spec.hpp"
#include "zcoll/embedding/key_hash.hpp"
#include "zcoll/embedding/key_table.hpp"

namespace zcoll::embedding {

/// Value `column` of row (category, id) before any update: uniform in [-scale, scale], from a hash, so
/// every rank count and every owner computes the same row.
inline float initial_value(const embedding_spec& spec, std::size_t category, std::uint64_t id, std::size_t column) {
  const std::uint64_t h = mix64(spec.initializer.seed ^ mix64(key_hash(static_cast<std::uint32_t>(category), id) + column));
  const double unit = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  return static_cast<float>(spec.initializer.scale * (2.0 * unit - 1.0));
}

/// One optimizer step on a row: `row` and its accumulator (row-wise AdaGrad's one value) from `gradient`.
inline void apply_update(const optimizer_spec& opt, std::span<float> row, float& accumulator, std::span<const float> gradient) {
  const auto lr = static_cast<float>(opt.learning_rate);
  if (opt.kind == optimizer_kind::sgd) {
    for (std::size_t j = 0; j < row.size(); ++j) row[j] -= lr * gradient[j];
    return;
  }
  float squares = 0.0f;
  for (float g : gradient) squares += g * g;
  accumulator += squares / static_cast<float>(gradient.size());
  const float step = lr / (std::sqrt(accumulator) + static_cast<float>(opt.epsilon));
  for (std::size_t j = 0; j < row.size(); ++j) row[j] -= step * gradient[j];
}

class embedding_shard {
 public:
  explicit embedding_shard(std::vector<embedding_spec> specs) : specs_(std::move(specs)), categories_(specs_.size()) {
    for (std::size_t c = 0; c < specs_.size(); ++c) specs_[c].validate(c);
  }

  std::size_t categories() const { return specs_.size(); }
  const embedding_spec& spec(std::size_t category) const { return specs_.at(category); }
  /// Rows this shard holds for `category`.
  std::size_t rows(std::size_t category) const { return categories_.at(category).index.size(); }

  /// The row index of (category, id), creating the row from the initializer when it is new.
  std::size_t find_or_create(std::size_t category, std::uint64_t id) {
    check_category("find_or_create", category);
    auto& c = categories_[category];
    const std::size_t dim = specs_[category].dim;
    const auto [row, inserted] = c.index.insert(static_cast<std::uint32_t>(category), id);
    if (inserted) {
      for (std::size_t j = 0; j < dim; ++j) c.values.push_back(initial_value(specs_[category], category, id, j));
      c.accumulators.push_back(0.0f);
    }
    return row;
  }

  /// The row index of (category, id), or key_table::none when this shard has not created it.
  std::size_t find(std::size_t category, std::uint64_t id) const {
    check_category("find", category);
    return categories_[category].index.find(static_cast<std::uint32_t>(category), id);
  }

  std::span<const float> row(std::size_t category, std::size_t row) const {
    check_row("row", category, row);
    const std::size_t dim = specs_[category].dim;
    return std::span<const float>(categories_[category].values).subspan(row * dim, dim);
  }

  /// The category's optimizer step on one row.
  void update(std::size_t category, std::size_t row, std::span<const float> gradient) {
    check_row("update", category, row);
    const std::size_t dim = specs_[category].dim;
    if (gradient.size() != dim) {
      throw argument_error("embedding_shard::update: gradient has " + std::to_string(gradient.size()) +
                           " values, category " + std::to_string(category) + " has dim " + std::to_string(dim));
    }
    auto& c = categories_[category];
    apply_update(specs_[category].optimizer, std::span<float>(c.values).subspan(row * dim, dim), c.accumulators[row],
                 gradient);
  }

 private:
  struct category_rows {
    key_table index;
    std::vector<float> values;        // row after row
    std::vector<float> accumulators;  // row-wise AdaGrad's, one per row
  };

  void check_category(const char* call, std::size_t category) const {
    if (category >= specs_.size()) {
      throw argument_error(std::string("embedding_shard::") + call + ": category " + std::to_string(category) +
                           " is not below the " + std::to_string(specs_.size()) + " categories");
    }
  }

  void check_row(const char* call, std::size_t category, std::size_t row) const {
    check_category(call, category);
    if (row >= rows(category)) {
      throw argument_error(std::string("embedding_shard::") + call + ": row " + std::to_string(row) + " of category " +
                           std::to_string(category) + " is not below its " + std::to_string(rows(category)) + " rows");
    }
  }

  std::vector<embedding_spec> specs_;
  std::vector<category_rows> categories_;
};

}  // namespace zcoll::embedding
