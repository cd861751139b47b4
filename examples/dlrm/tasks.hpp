#pragma once
// The two click-prediction tasks the DLRM example trains on.
//
// criteo_like: a synthetic stand-in for Criteo with a known answer. 13 dense features (log of heavy-tailed
// counts, as DLRM preprocesses Criteo's), 26 categorical features whose tables range from 10 to 10^5 rows
// (log-spaced) with Zipf-skewed ids, and labels from a fixed random "teacher" DLRM of the same shape:
// p(click) = sigmoid(temperature * standardized teacher logit), so there is signal to learn and an
// accuracy ceiling below 1. Sample i is a pure function of (seed, i): any rank generates any sample, the
// training stream is endless (one pass, as on Criteo), the test set is a disjoint range of indices.
//
// movielens: the MovieLens ml-latest-small ratings (100,836 ratings, 610 users, 9,742 movies), click =
// rating >= 4; sparse features user, movie, hour of day and weekday (UTC) of the rating; dense features
// log(1 + the user's and the movie's number of training ratings) and the rating's time, scaled to [0, 1].
// Shuffled by the seed and split 90 / 10 into training (cycled) and test.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp.hpp"
#include "zcoll/embedding/embedding_shard.hpp"
#include "zcoll/embedding/key_hash.hpp"

namespace dlrm {

/// A task: its shape and its samples. Not shared between threads (the teacher keeps activations).
class task {
 public:
  virtual ~task() = default;
  virtual std::size_t dense_features() const = 0;
  virtual const std::vector<std::size_t>& table_rows() const = 0;
  /// Training sample i (any i >= 0); `label` may be null when the caller needs only the features.
  virtual void train_sample(std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) = 0;
  virtual std::size_t test_size() const = 0;
  virtual void test_sample(std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) = 0;
};

class criteo_like final : public task {
 public:
  struct options {
    std::uint64_t seed = 1;
    std::size_t tables = 26;
    std::size_t dense = 13;
    double min_rows = 10, max_rows = 1e5;
    double zipf_exponent = 1.2;
    double temperature = 3.0;
    std::size_t test_samples = 16384;
  };

  explicit criteo_like(options o)
      : o_(o),
        teacher_bottom_({o.dense, 64, 16}, zcoll::embedding::mix64(o.seed ^ 0xb0), true),
        interaction_{o.tables + 1, 16},
        teacher_top_({interaction_.out(), 64, 1}, zcoll::embedding::mix64(o.seed ^ 0x70), false) {
    for (std::size_t t = 0; t < o.tables; ++t) {
      const double f = o.tables == 1 ? 0.0 : static_cast<double>(t) / static_cast<double>(o.tables - 1);
      rows_.push_back(static_cast<std::size_t>(std::round(o.min_rows * std::pow(o.max_rows / o.min_rows, f))));
    }
    teacher_rows_ = {.dim = 16, .initializer = {.scale = 1.0, .seed = zcoll::embedding::mix64(o.seed ^ 0xe)}};
    // Standardize the teacher's logits on a calibration range of samples.
    std::vector<double> logits;
    std::vector<float> dense(o.dense);
    std::vector<std::uint64_t> ids(o.tables);
    for (std::uint64_t i = 0; i < 2048; ++i) {
      features(calibration_base + i, dense, ids);
      logits.push_back(teacher_logit(dense, ids));
    }
    const double mean = std::accumulate(logits.begin(), logits.end(), 0.0) / static_cast<double>(logits.size());
    double var = 0.0;
    for (double l : logits) var += (l - mean) * (l - mean);
    mean_ = mean;
    scale_ = o.temperature / std::sqrt(var / static_cast<double>(logits.size()) + 1e-12);
  }

  std::size_t dense_features() const override { return o_.dense; }
  const std::vector<std::size_t>& table_rows() const override { return rows_; }
  std::size_t test_size() const override { return o_.test_samples; }

  void train_sample(std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) override {
    sample(i, dense, ids, label);
  }
  void test_sample(std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) override {
    sample(test_base + i, dense, ids, label);
  }

  /// The click probability the teacher gives sample i of the training stream (for the Bayes accuracy).
  double teacher_probability(std::uint64_t index, std::span<float> dense, std::span<std::uint64_t> ids) {
    features(index, dense, ids);
    return 1.0 / (1.0 + std::exp(-scale_ * (teacher_logit(dense, ids) - mean_)));
  }

 private:
  static constexpr std::uint64_t test_base = std::uint64_t{1} << 48;
  static constexpr std::uint64_t calibration_base = std::uint64_t{1} << 50;

  void sample(std::uint64_t index, std::span<float> dense, std::span<std::uint64_t> ids, float* label) {
    if (label == nullptr) {
      features(index, dense, ids);
      return;
    }
    const double p = teacher_probability(index, dense, ids);
    std::mt19937_64 rng(zcoll::embedding::mix64(o_.seed ^ zcoll::embedding::mix64(index ^ 0x1abe1)));
    *label = std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p ? 1.0f : 0.0f;
  }

  void features(std::uint64_t index, std::span<float> dense, std::span<std::uint64_t> ids) const {
    std::mt19937_64 rng(zcoll::embedding::mix64(o_.seed ^ zcoll::embedding::mix64(index)));
    std::normal_distribution<double> normal(0.0, 1.0);
    for (std::size_t j = 0; j < o_.dense; ++j) {
      const double count = std::floor(std::exp(0.5 + 0.15 * static_cast<double>(j) + 1.2 * normal(rng)));
      dense[j] = static_cast<float>(std::log1p(count));
    }
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const double a = 1.0 - o_.zipf_exponent;
    for (std::size_t t = 0; t < o_.tables; ++t) {
      // Inverse CDF of the continuous power law x^-s on [1, rows + 1), floored: id 0 is the most frequent.
      const double n = static_cast<double>(rows_[t]);
      const double x = std::pow((std::pow(n + 1.0, a) - 1.0) * unit(rng) + 1.0, 1.0 / a);
      ids[t] = std::min<std::uint64_t>(static_cast<std::uint64_t>(x) - 1, rows_[t] - 1);
    }
  }

  double teacher_logit(std::span<const float> dense, std::span<const std::uint64_t> ids) {
    const std::size_t dim = 16, features = o_.tables + 1;
    std::vector<float> vectors(features * dim);
    const auto& z = teacher_bottom_.forward(dense, 1);
    std::copy(z.begin(), z.end(), vectors.begin());
    for (std::size_t t = 0; t < o_.tables; ++t) {
      for (std::size_t k = 0; k < dim; ++k) {
        vectors[(t + 1) * dim + k] = zcoll::embedding::initial_value(teacher_rows_, t, ids[t], k) * 0.25f;
      }
    }
    const auto x = interaction_.forward(vectors, 1);
    return teacher_top_.forward(x, 1)[0];
  }

  options o_;
  std::vector<std::size_t> rows_;
  mlp teacher_bottom_;
  dot_interaction interaction_;
  mlp teacher_top_;
  zcoll::embedding::embedding_spec teacher_rows_;
  double mean_ = 0.0, scale_ = 1.0;
};

class movielens final : public task {
 public:
  /// Reads `ratings_csv` (userId,movieId,rating,timestamp with a header line).
  movielens(const std::string& ratings_csv, std::uint64_t seed) {
    std::ifstream in(ratings_csv);
    if (!in) throw std::runtime_error("movielens: cannot open " + ratings_csv);
    std::string line;
    std::getline(in, line);
    std::map<std::uint64_t, std::uint64_t> users, movies;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string user, movie, rating, time;
      if (!std::getline(fields, user, ',') || !std::getline(fields, movie, ',') || !std::getline(fields, rating, ',') ||
          !std::getline(fields, time)) {
        throw std::runtime_error("movielens: malformed line '" + line + "' in " + ratings_csv);
      }
      record r;
      r.user = users.try_emplace(std::stoull(user), users.size()).first->second;
      r.movie = movies.try_emplace(std::stoull(movie), movies.size()).first->second;
      r.click = std::stod(rating) >= 4.0 ? 1.0f : 0.0f;
      r.time = std::stoll(time);
      records_.push_back(r);
    }
    if (records_.size() < 10) throw std::runtime_error("movielens: fewer than 10 ratings in " + ratings_csv);
    rows_ = {users.size(), movies.size(), 24, 7};
    std::mt19937_64 rng(seed);
    std::shuffle(records_.begin(), records_.end(), rng);
    train_ = records_.size() * 9 / 10;
    std::vector<double> user_count(users.size(), 0.0), movie_count(movies.size(), 0.0);
    for (std::size_t i = 0; i < train_; ++i) {
      user_count[records_[i].user] += 1.0;
      movie_count[records_[i].movie] += 1.0;
    }
    const auto [first, last] = std::minmax_element(records_.begin(), records_.end(),
                                                   [](const record& a, const record& b) { return a.time < b.time; });
    const double t0 = static_cast<double>(first->time), span = std::max(1.0, static_cast<double>(last->time) - t0);
    for (auto& r : records_) {
      r.dense = {static_cast<float>(std::log1p(user_count[r.user]) / 8.0), static_cast<float>(std::log1p(movie_count[r.movie]) / 6.0),
                 static_cast<float>((static_cast<double>(r.time) - t0) / span)};
    }
  }

  std::size_t dense_features() const override { return 3; }
  const std::vector<std::size_t>& table_rows() const override { return rows_; }
  std::size_t test_size() const override { return records_.size() - train_; }

  void train_sample(std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) override {
    fill(records_[i % train_], dense, ids, label);
  }
  void test_sample(std::uint64_t i, std::span<float> dense, std::span<std::uint64_t> ids, float* label) override {
    fill(records_[train_ + i], dense, ids, label);
  }

 private:
  struct record {
    std::uint64_t user = 0, movie = 0;
    std::int64_t time = 0;
    float click = 0.0f;
    std::array<float, 3> dense{};
  };

  static void fill(const record& r, std::span<float> dense, std::span<std::uint64_t> ids, float* label) {
    std::copy(r.dense.begin(), r.dense.end(), dense.begin());
    const std::int64_t seconds = r.time;
    ids[0] = r.user;
    ids[1] = r.movie;
    ids[2] = static_cast<std::uint64_t>((seconds / 3600) % 24);
    ids[3] = static_cast<std::uint64_t>((seconds / 86400 + 4) % 7);  // 1970-01-01 was a Thursday (weekday 4, Sunday 0)
    if (label != nullptr) *label = r.click;
  }

  std::vector<record> records_;
  std::vector<std::size_t> rows_;
  std::size_t train_ = 0;
};

}  // namespace dlrm
