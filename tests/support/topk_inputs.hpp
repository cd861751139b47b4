#pragma once
// The inputs the TopK drivers are compared on, host and device alike.

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace zcoll_test {

/// Inputs with every kind of entry: empty, one value, lengths around a word, zeros, ties, NaN, ±Inf,
/// -0, denormals, huge and tiny magnitudes, a long random gradient.
template <class T>
std::vector<std::vector<T>> topk_inputs() {
  using limits = std::numeric_limits<T>;
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  const auto random = [&](std::size_t n) {
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(normal(rng));
    return v;
  };
  std::vector<std::vector<T>> inputs;
  inputs.push_back({});
  inputs.push_back({T(3)});
  inputs.push_back({T(-0.0)});
  inputs.push_back(random(31));
  inputs.push_back(random(33));
  inputs.push_back(std::vector<T>(100, T(0)));
  inputs.push_back(std::vector<T>(77, T(2.5)));  // all ties
  auto special = random(1000);
  special[3] = limits::quiet_NaN();
  special[500] = limits::infinity();
  special[501] = -limits::infinity();
  special[7] = -T(0);
  special[8] = limits::denorm_min();
  special[9] = -limits::denorm_min() * T(3);
  special[10] = limits::max();
  special[999] = limits::lowest();
  inputs.push_back(special);
  std::vector<T> nans(64, limits::quiet_NaN());
  nans[5] = T(1);
  inputs.push_back(nans);  // fewer non-NaN entries than K
  std::vector<T> denormals(200);
  for (std::size_t i = 0; i < denormals.size(); ++i) denormals[i] = limits::denorm_min() * static_cast<T>(i % 17);
  inputs.push_back(denormals);
  auto sparse = std::vector<T>(5000, T(0));
  for (std::size_t i = 0; i < sparse.size(); i += 97) sparse[i] = static_cast<T>(normal(rng));
  inputs.push_back(sparse);
  // At the form's boundary, 800 values (a 100-byte bitmap): 98 kept entries 8 apart take 98 one-byte gaps
  // and a one-byte tail, 99 bytes, so gaps; 99 kept entries make kept + 1 = 100, so the bitmap.
  for (const std::size_t kept : {98, 99}) {
    std::vector<T> boundary(800, T(0));
    for (std::size_t i = 0; i < kept; ++i) boundary[8 * i] = T(1) + static_cast<T>(i);
    inputs.push_back(boundary);
  }
  inputs.push_back(random(100003));
  return inputs;
}

}  // namespace zcoll_test
