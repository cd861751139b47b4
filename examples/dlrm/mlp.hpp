#pragma once
// A multilayer perceptron with ReLU between layers and a manual backward pass, its parameters and
// gradients in two flat vectors so that data-parallel training allreduces them in one call.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <span>
#include <vector>

namespace dlrm {

/// Row-major matrices: x is batch x in, y is batch x out.
class mlp {
 public:
  /// widths = {in, hidden..., out}; He-uniform weights from `seed` (every data-parallel replica passes the
  /// same seed and starts equal), zero biases. The last layer has no ReLU when `last_relu` is false.
  mlp(std::vector<std::size_t> widths, unsigned long long seed, bool last_relu) : widths_(std::move(widths)), last_relu_(last_relu) {
    std::size_t total = 0;
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      offsets_.push_back(total);
      total += widths_[l] * widths_[l + 1] + widths_[l + 1];
    }
    parameters_.assign(total, 0.0f);
    gradients_.assign(total, 0.0f);
    std::mt19937_64 rng(seed);
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      const double limit = std::sqrt(6.0 / static_cast<double>(widths_[l]));
      std::uniform_real_distribution<double> u(-limit, limit);
      for (std::size_t i = 0; i < widths_[l] * widths_[l + 1]; ++i) parameters_[offsets_[l] + i] = static_cast<float>(u(rng));
    }
  }

  std::size_t in() const { return widths_.front(); }
  std::size_t out() const { return widths_.back(); }
  std::span<float> parameters() { return parameters_; }
  std::span<float> gradients() { return gradients_; }

  /// Keeps every layer's output for backward; returns the last.
  const std::vector<float>& forward(std::span<const float> x, std::size_t batch) {
    activations_.assign(1, std::vector<float>(x.begin(), x.end()));
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      const std::size_t n_in = widths_[l], n_out = widths_[l + 1];
      const float* w = parameters_.data() + offsets_[l];
      const float* b = w + n_in * n_out;
      const auto& a = activations_.back();
      std::vector<float> y(batch * n_out);
      for (std::size_t s = 0; s < batch; ++s) {
        for (std::size_t o = 0; o < n_out; ++o) {
          float sum = b[o];
          const float* row = w + o * n_in;
          const float* input = a.data() + s * n_in;
          for (std::size_t i = 0; i < n_in; ++i) sum += row[i] * input[i];
          y[s * n_out + o] = relu_after(l) ? std::max(sum, 0.0f) : sum;
        }
      }
      activations_.push_back(std::move(y));
    }
    return activations_.back();
  }

  /// dy: the loss gradient of forward's output. Adds to gradients() and returns the input's gradient.
  std::vector<float> backward(std::span<const float> dy, std::size_t batch) {
    std::vector<float> delta(dy.begin(), dy.end());
    for (std::size_t l = widths_.size() - 1; l-- > 0;) {
      const std::size_t n_in = widths_[l], n_out = widths_[l + 1];
      const float* w = parameters_.data() + offsets_[l];
      float* dw = gradients_.data() + offsets_[l];
      float* db = dw + n_in * n_out;
      const auto& a = activations_[l];
      const auto& y = activations_[l + 1];
      if (relu_after(l)) {
        for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = y[i] > 0.0f ? delta[i] : 0.0f;
      }
      std::vector<float> previous(batch * n_in, 0.0f);
      for (std::size_t s = 0; s < batch; ++s) {
        const float* input = a.data() + s * n_in;
        float* back = previous.data() + s * n_in;
        for (std::size_t o = 0; o < n_out; ++o) {
          const float d = delta[s * n_out + o];
          if (d == 0.0f) continue;
          db[o] += d;
          float* dw_row = dw + o * n_in;
          const float* row = w + o * n_in;
          for (std::size_t i = 0; i < n_in; ++i) {
            dw_row[i] += d * input[i];
            back[i] += d * row[i];
          }
        }
      }
      delta = std::move(previous);
    }
    return delta;
  }

 private:
  bool relu_after(std::size_t layer) const { return layer + 2 < widths_.size() || last_relu_; }

  std::vector<std::size_t> widths_;
  bool last_relu_;
  std::vector<std::size_t> offsets_;
  std::vector<float> parameters_, gradients_;
  std::vector<std::vector<float>> activations_;
};

/// DLRM's dot interaction over F = 1 + tables vectors of `dim` values per sample (the bottom MLP's output
/// first): the output is that first vector followed by the F(F-1)/2 pairwise dot products (i < j).
struct dot_interaction {
  std::size_t features = 0, dim = 0;

  std::size_t out() const { return dim + features * (features - 1) / 2; }

  /// vectors: batch x features x dim.
  std::vector<float> forward(std::span<const float> vectors, std::size_t batch) const {
    std::vector<float> y(batch * out());
    for (std::size_t s = 0; s < batch; ++s) {
      const float* v = vectors.data() + s * features * dim;
      float* o = y.data() + s * out();
      for (std::size_t k = 0; k < dim; ++k) o[k] = v[k];
      std::size_t at = dim;
      for (std::size_t i = 0; i < features; ++i) {
        for (std::size_t j = i + 1; j < features; ++j) {
          float dot = 0.0f;
          for (std::size_t k = 0; k < dim; ++k) dot += v[i * dim + k] * v[j * dim + k];
          o[at++] = dot;
        }
      }
    }
    return y;
  }

  /// The gradient of the vectors from the output's gradient dy.
  std::vector<float> backward(std::span<const float> vectors, std::span<const float> dy, std::size_t batch) const {
    std::vector<float> dv(batch * features * dim, 0.0f);
    for (std::size_t s = 0; s < batch; ++s) {
      const float* v = vectors.data() + s * features * dim;
      const float* g = dy.data() + s * out();
      float* d = dv.data() + s * features * dim;
      for (std::size_t k = 0; k < dim; ++k) d[k] += g[k];
      std::size_t at = dim;
      for (std::size_t i = 0; i < features; ++i) {
        for (std::size_t j = i + 1; j < features; ++j) {
          const float gij = g[at++];
          for (std::size_t k = 0; k < dim; ++k) {
            d[i * dim + k] += gij * v[j * dim + k];
            d[j * dim + k] += gij * v[i * dim + k];
          }
        }
      }
    }
    return dv;
  }
};

}  // namespace dlrm
