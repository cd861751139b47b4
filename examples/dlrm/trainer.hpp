#pragma once
// Hybrid-parallel DLRM training on zcoll (the setting of all three DLRM papers): embedding tables sharded
// table-wise over the ranks (model parallel: table t lives on rank t mod N), bottom MLP, dot interaction
// and top MLP replicated (data parallel). One step on rank r, global batch B, local batch b = B / N:
//
//   1. every rank reads the global batch's ids of its own tables, and the dense features and labels of
//      its b samples;
//   2. it looks up its tables for all B samples (one id per feature: Criteo's features are one-hot, so the
//      pooled embedding is the row) and the forward all-to-all gives each rank its b samples' embeddings
//      of every table;
//   3. bottom MLP, interaction, top MLP, binary cross-entropy averaged over the global batch, and the
//      manual backward pass;
//   4. the backward all-to-all returns each table's embedding gradients to its owner, which applies SGD
//      to the rows (sample by sample, in global sample order);
//   5. the dense gradients are allreduced (a sum: each rank's share is already divided by B) and every
//      replica applies the same SGD step.
//
// Evaluation runs the same forward with exact all-to-alls over the task's test set.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "communication.hpp"
#include "mlp.hpp"
#include "tasks.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/exchange.hpp"

namespace dlrm {

struct train_options {
  std::size_t global_batch = 256;  ///< a multiple of the rank count
  std::size_t steps = 1000;
  std::size_t dim = 16;
  double dense_learning_rate = 0.1;
  double embedding_learning_rate = 0.1;
  /// Rows start uniform in [-scale, scale]; 0 takes the DLRM reference's 1 / sqrt(rows) per table, so
  /// the rows of large tables start near 0 (and those of rare ids stay there).
  double embedding_init_scale = 0.0;
  std::uint64_t model_seed = 7;
  std::size_t loss_every = 10;  ///< record the global training loss every this many steps
};

/// What a run measured, the same on every rank but for the per-rank traffic.
struct train_result {
  std::vector<double> losses;  ///< global mean training loss of steps 0, loss_every, 2 loss_every, ...
  double test_accuracy = 0, test_auc = 0, test_log_loss = 0;
  std::size_t test_samples = 0;
  traffic forward, backward, allreduce;  ///< this rank's, summed over the run
  double step_s = 0;                     ///< wall time of the training steps
};

/// Area under the ROC curve (the rank statistic, ties counted half).
inline double auc(std::span<const double> scores, std::span<const float> labels) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  double positives = 0, negatives = 0, rank_sum = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double mid_rank = 0.5 * static_cast<double>(i + j + 1);  // 1-based ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k) {
      if (labels[order[k]] > 0.5f) {
        rank_sum += mid_rank;
        positives += 1;
      } else {
        negatives += 1;
      }
    }
    i = j;
  }
  if (positives == 0 || negatives == 0) return 0.5;
  return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

class trainer {
 public:
  trainer(zcoll::transport::AnyTransport& t, task& data, train_options options, std::unique_ptr<embedding_exchange> exchange,
          std::unique_ptr<gradient_allreduce> reduction)
      : t_(t),
        data_(data),
        o_(options),
        ranks_(static_cast<std::size_t>(t.size())),
        me_(static_cast<std::size_t>(t.rank())),
        tables_(data.table_rows().size()),
        bottom_({data.dense_features(), 64, options.dim}, options.model_seed, true),
        interaction_{tables_ + 1, options.dim},
        top_({interaction_.out(), 64, 1}, options.model_seed + 1, false),
        exchange_(std::move(exchange)),
        reduction_(std::move(reduction)) {
    if (o_.loss_every == 0) throw std::invalid_argument("train_options: loss_every must be at least 1");
    if (o_.global_batch == 0 || o_.global_batch % ranks_ != 0) {
      throw std::invalid_argument("train_options: global_batch " + std::to_string(o_.global_batch) +
                                  " must be a positive multiple of the " + std::to_string(ranks_) + " ranks");
    }
    local_ = o_.global_batch / ranks_;
    // This rank's tables, rows uniform from a seed per table (the same whichever rank owns it).
    for (std::size_t table = me_; table < tables_; table += ranks_) {
      owned_.push_back(table);
      std::mt19937_64 rng(zcoll::embedding::mix64(o_.model_seed ^ (0x7ab1e + table)));
      const double scale = o_.embedding_init_scale > 0.0 ? o_.embedding_init_scale
                                                         : 1.0 / std::sqrt(static_cast<double>(data.table_rows()[table]));
      std::uniform_real_distribution<float> u(static_cast<float>(-scale), static_cast<float>(scale));
      std::vector<float> rows(data.table_rows()[table] * o_.dim);
      for (auto& v : rows) v = u(rng);
      tables_rows_.push_back(std::move(rows));
    }
    // Segments of the two all-to-alls: to each rank my tables for its b samples; from each rank its tables.
    for (std::size_t peer = 0; peer < ranks_; ++peer) {
      for (std::size_t table : owned_) send_.push_back({static_cast<int>(peer), static_cast<std::uint32_t>(table), local_ * o_.dim});
      for (std::size_t table = peer; table < tables_; table += ranks_) {
        recv_.push_back({static_cast<int>(peer), static_cast<std::uint32_t>(table), local_ * o_.dim});
      }
    }
    // The flat dense gradient, padded so that row-wise codecs get whole rows on every rank.
    const std::size_t quantum = ranks_ * 256;
    const std::size_t dense = bottom_.parameters().size() + top_.parameters().size();
    flat_.assign((dense + quantum - 1) / quantum * quantum, 0.0f);
  }

  train_result train() {
    train_result result;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t step = 0; step < o_.steps; ++step) {
      const double loss = train_step(step);
      if (step % o_.loss_every == 0) result.losses.push_back(global_sum(loss));
    }
    result.step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    evaluate(result);
    result.forward = exchange_->forward_traffic;
    result.backward = exchange_->backward_traffic;
    result.allreduce = reduction_->allreduce_traffic;
    return result;
  }

  /// The rows of this rank's tables for the first `samples` test samples (table after table, sample after
  /// sample, `dim` values each): the sampled batches of the offline analysis.
  std::vector<float> owned_lookup_sample(std::size_t samples) {
    std::vector<float> out;
    std::vector<float> dense(data_.dense_features());
    std::vector<std::uint64_t> ids(tables_);
    std::vector<std::vector<std::uint64_t>> per_table(owned_.size());
    for (std::size_t i = 0; i < samples; ++i) {
      data_.test_sample(i, dense, ids, nullptr);
      for (std::size_t k = 0; k < owned_.size(); ++k) per_table[k].push_back(ids[owned_[k]]);
    }
    for (std::size_t k = 0; k < owned_.size(); ++k) {
      for (std::uint64_t id : per_table[k]) {
        const float* row = tables_rows_[k].data() + id * o_.dim;
        out.insert(out.end(), row, row + o_.dim);
      }
    }
    return out;
  }

 private:
  /// One training step; returns this rank's share of the global mean loss.
  double train_step(std::size_t step) {
    const std::uint64_t first = static_cast<std::uint64_t>(step) * o_.global_batch;
    read_batch([&](std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) {
      data_.train_sample(first + i, dense, ids, label);
    });
    std::vector<float> embeddings(recv_total());
    exchange_->forward(lookup(), send_, embeddings, recv_, step);

    const std::vector<float> vectors = assemble(embeddings);
    const auto x = interaction_.forward(vectors, local_);
    const auto& logits = top_.forward(x, local_);
    double loss = 0.0;
    std::vector<float> d_logits(local_);
    const auto scale = static_cast<float>(1.0 / static_cast<double>(o_.global_batch));
    for (std::size_t s = 0; s < local_; ++s) {
      const double z = logits[s], y = labels_[s];
      loss += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)));  // BCE with logits, stable
      d_logits[s] = static_cast<float>(1.0 / (1.0 + std::exp(-z)) - y) * scale;
    }
    std::fill(bottom_.gradients().begin(), bottom_.gradients().end(), 0.0f);
    std::fill(top_.gradients().begin(), top_.gradients().end(), 0.0f);
    const auto d_x = top_.backward(d_logits, local_);
    const auto d_vectors = interaction_.backward(vectors, d_x, local_);
    std::vector<float> d_bottom(local_ * o_.dim), d_embeddings(recv_total());
    disassemble(d_vectors, d_bottom, d_embeddings);
    bottom_.backward(d_bottom, local_);

    std::vector<float> row_gradients(send_total());
    exchange_->backward(d_embeddings, recv_, row_gradients, send_, step);
    update_tables(row_gradients);
    reduce_and_update();
    return loss / static_cast<double>(o_.global_batch);
  }

  /// Reads the global batch: ids of this rank's tables for all samples, dense and labels for its own.
  template <class Read>
  void read_batch(Read read) {
    ids_.assign(o_.global_batch * owned_.size(), 0);
    dense_.assign(local_ * data_.dense_features(), 0.0f);
    labels_.assign(local_, 0.0f);
    std::vector<float> dense(data_.dense_features());
    std::vector<std::uint64_t> ids(tables_);
    for (std::size_t i = 0; i < o_.global_batch; ++i) {
      const bool mine = i / local_ == me_;
      read(i, dense, ids, mine ? &labels_[i % local_] : nullptr);
      for (std::size_t k = 0; k < owned_.size(); ++k) ids_[i * owned_.size() + k] = ids[owned_[k]];
      if (mine) std::copy(dense.begin(), dense.end(), dense_.begin() + static_cast<std::ptrdiff_t>((i % local_) * dense.size()));
    }
  }

  /// The send buffer of the forward all-to-all: for each rank, for each of my tables, its b samples' rows.
  std::vector<float> lookup() const {
    std::vector<float> out;
    out.reserve(send_total());
    for (std::size_t peer = 0; peer < ranks_; ++peer) {
      for (std::size_t k = 0; k < owned_.size(); ++k) {
        for (std::size_t s = peer * local_; s < (peer + 1) * local_; ++s) {
          const auto id = ids_[s * owned_.size() + k];
          const float* row = tables_rows_[k].data() + id * o_.dim;
          out.insert(out.end(), row, row + o_.dim);
        }
      }
    }
    return out;
  }

  /// Per sample: the bottom MLP's output, then the embeddings in table order.
  std::vector<float> assemble(std::span<const float> embeddings) {
    const auto& z = bottom_.forward(dense_, local_);
    const std::size_t features = tables_ + 1, dim = o_.dim;
    std::vector<float> vectors(local_ * features * dim);
    for (std::size_t s = 0; s < local_; ++s) std::copy_n(z.begin() + static_cast<std::ptrdiff_t>(s * dim), dim, vectors.begin() + static_cast<std::ptrdiff_t>(s * features * dim));
    std::size_t at = 0;
    for (const auto& seg : recv_) {
      for (std::size_t s = 0; s < local_; ++s, at += dim) {
        std::copy_n(embeddings.begin() + static_cast<std::ptrdiff_t>(at), dim,
                    vectors.begin() + static_cast<std::ptrdiff_t>((s * features + seg.table + 1) * dim));
      }
    }
    return vectors;
  }

  /// assemble's inverse, for gradients.
  void disassemble(std::span<const float> vectors, std::span<float> bottom, std::span<float> embeddings) const {
    const std::size_t features = tables_ + 1, dim = o_.dim;
    for (std::size_t s = 0; s < local_; ++s) std::copy_n(vectors.begin() + static_cast<std::ptrdiff_t>(s * features * dim), dim, bottom.begin() + static_cast<std::ptrdiff_t>(s * dim));
    std::size_t at = 0;
    for (const auto& seg : recv_) {
      for (std::size_t s = 0; s < local_; ++s, at += dim) {
        std::copy_n(vectors.begin() + static_cast<std::ptrdiff_t>((s * features + seg.table + 1) * dim), dim,
                    embeddings.begin() + static_cast<std::ptrdiff_t>(at));
      }
    }
  }

  /// SGD on the rows of my tables, sample by sample in global order (send_'s layout).
  void update_tables(std::span<const float> gradients) {
    const auto lr = static_cast<float>(o_.embedding_learning_rate);
    std::size_t at = 0;
    for (std::size_t peer = 0; peer < ranks_; ++peer) {
      for (std::size_t k = 0; k < owned_.size(); ++k) {
        for (std::size_t s = peer * local_; s < (peer + 1) * local_; ++s, at += o_.dim) {
          float* row = tables_rows_[k].data() + ids_[s * owned_.size() + k] * o_.dim;
          for (std::size_t j = 0; j < o_.dim; ++j) row[j] -= lr * gradients[at + j];
        }
      }
    }
  }

  void reduce_and_update() {
    auto bottom = bottom_.gradients(), top = top_.gradients();
    std::fill(flat_.begin(), flat_.end(), 0.0f);
    std::copy(bottom.begin(), bottom.end(), flat_.begin());
    std::copy(top.begin(), top.end(), flat_.begin() + static_cast<std::ptrdiff_t>(bottom.size()));
    reduction_->allreduce(flat_);
    const auto lr = static_cast<float>(o_.dense_learning_rate);
    auto p = bottom_.parameters();
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * flat_[i];
    auto q = top_.parameters();
    for (std::size_t i = 0; i < q.size(); ++i) q[i] -= lr * flat_[bottom.size() + i];
  }

  /// The sum over ranks of one double each (exact, rank order).
  double global_sum(double mine) { return sum_over_ranks(t_, std::span<const double>(&mine, 1), metric_tag)[0]; }

  /// Test accuracy, AUC and log loss over the test set (samples beyond a multiple of the global batch
  /// are left out), forward only, exact all-to-alls.
  void evaluate(train_result& result) {
    const std::size_t batches = data_.test_size() / o_.global_batch;
    std::vector<double> scores;
    std::vector<float> labels;
    for (std::size_t batch = 0; batch < batches; ++batch) {
      read_batch([&](std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) {
        data_.test_sample(batch * o_.global_batch + i, dense, ids, label);
      });
      const auto send = lookup();
      std::vector<float> embeddings(recv_total());
      zcoll::transport::alltoallv_exact<float>(t_, send, per_peer(send_, t_.size()), embeddings, per_peer(recv_, t_.size()), metric_tag);
      const auto vectors = assemble(embeddings);
      const auto& logits = top_.forward(interaction_.forward(vectors, local_), local_);
      for (std::size_t s = 0; s < local_; ++s) {
        scores.push_back(logits[s]);
        labels.push_back(labels_[s]);
      }
    }
    // Gather every rank's scores and labels everywhere (exact), then the metrics over all of them.
    std::vector<double> mine(scores.size() * 2);
    for (std::size_t i = 0; i < scores.size(); ++i) {
      mine[2 * i] = scores[i];
      mine[2 * i + 1] = labels[i];
    }
    std::vector<double> all(mine.size() * ranks_);
    zcoll::transport::allgather_exact<double>(t_, mine, all, metric_tag);
    std::vector<double> all_scores;
    std::vector<float> all_labels;
    double correct = 0, log_loss = 0;
    for (std::size_t i = 0; i < all.size(); i += 2) {
      const double z = all[i], y = all[i + 1];
      all_scores.push_back(z);
      all_labels.push_back(static_cast<float>(y));
      correct += (z > 0.0) == (y > 0.5) ? 1.0 : 0.0;
      log_loss += std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)));
    }
    result.test_samples = all_scores.size();
    const auto n = static_cast<double>(std::max<std::size_t>(1, all_scores.size()));
    result.test_accuracy = correct / n;
    result.test_log_loss = log_loss / n;
    result.test_auc = auc(all_scores, all_labels);
  }

  std::size_t send_total() const { return local_ * o_.dim * owned_.size() * ranks_; }
  std::size_t recv_total() const { return local_ * o_.dim * tables_; }

  static constexpr int metric_tag = 0x4d01;

  zcoll::transport::AnyTransport& t_;
  task& data_;
  train_options o_;
  std::size_t ranks_, me_, tables_, local_ = 0;
  mlp bottom_;
  dot_interaction interaction_;
  mlp top_;
  std::unique_ptr<embedding_exchange> exchange_;
  std::unique_ptr<gradient_allreduce> reduction_;
  std::vector<std::size_t> owned_;
  std::vector<std::vector<float>> tables_rows_;
  std::vector<table_segment> send_, recv_;
  std::vector<std::uint64_t> ids_;
  std::vector<float> dense_, labels_, flat_;
};

}  // namespace dlrm
