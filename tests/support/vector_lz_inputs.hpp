#pragma once
// The inputs the VectorLZ pipelines' device decoder is held against the host's on, host team and GPU alike.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/codec_config.hpp"

namespace zcoll_test {

/// Embedding lookups: rows of `dim` drawn with a heavy head from a table of `distinct` rows (so most
/// vectors repeat one a few back), with a partial last vector when `extra` > 0.
template <class T>
std::vector<T> lookups(std::size_t dim, std::size_t rows, std::size_t distinct, std::size_t extra, double scale,
                       std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<T> table(distinct * dim);
  for (auto& v : table) v = static_cast<T>(normal(rng));
  std::vector<T> x;
  for (std::size_t r = 0; r < rows; ++r) {
    const double head = std::pow(static_cast<double>(rng() % 10000) / 10000.0, 3.0);  // most draws near row 0
    const std::size_t row = std::min<std::size_t>(distinct - 1, static_cast<std::size_t>(head * static_cast<double>(distinct)));
    x.insert(x.end(), table.begin() + row * dim, table.begin() + (row + 1) * dim);
  }
  for (std::size_t i = 0; i < extra; ++i) x.push_back(static_cast<T>(normal(rng)));
  return x;
}

/// The inputs of one vector length: empty, a lone partial vector, lookups with and without a partial
/// last vector, one row repeated, rows with specials (exceptions), a fill value, and rows of residuals
/// of every size (the Huffman model falls back to bit planes).
template <class T>
std::vector<std::vector<T>> vector_lz_inputs(std::size_t dim) {
  using lim = std::numeric_limits<T>;
  std::mt19937_64 rng(zcoll_test::seed + dim);
  std::vector<std::vector<T>> all;
  all.push_back({});
  if (dim > 1) all.push_back(std::vector<T>(dim / 2, T(0.25)));
  all.push_back(lookups<T>(dim, 700, 40, 0, 0.05, rng));
  if (dim > 1) all.push_back(lookups<T>(dim, 401, 25, dim / 2 + 1, 0.05, rng));
  all.push_back(lookups<T>(dim, 300, 1, 0, 0.05, rng));
  auto specials = lookups<T>(dim, 500, 30, 0, 0.05, rng);
  const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
  for (std::size_t i = 0; i < specials.size(); i += 37) specials[i] = special[(i / 37) % 6];
  all.push_back(specials);
  auto filled = lookups<T>(dim, 500, 30, 0, 0.05, rng);
  for (std::size_t i = 0; i < filled.size(); i += 11) filled[i] = T(-999);
  all.push_back(filled);
  auto wide = lookups<T>(dim, 300, 300, 0, 1.0, rng);
  for (auto& v : wide) v = static_cast<T>(std::ldexp(static_cast<double>(v), static_cast<int>(rng() % 40)));
  all.push_back(wide);
  return all;
}

/// EmbeddingLZ's configuration: chunks of `chunk` values, vectors of `dim`, a fill value or not.
inline zcoll::codec_config lz_config(std::uint32_t chunk, std::size_t dim, bool fill) {
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk, .shape = {dim}};
  if (fill) config.fill_value = -999.0;
  return config;
}

/// Calls check(config) for each configuration the device decoder is held to: chunks for both team
/// sizes, vectors of 1, 16 and 64 codes, and a fill value.
template <class Check>
void for_each_vector_lz_config(Check&& check) {
  for (const std::uint32_t chunk : {512u, 4096u, 32768u}) {
    for (const std::size_t dim : {std::size_t{1}, std::size_t{16}, std::size_t{64}}) check(lz_config(chunk, dim, false));
    check(lz_config(chunk, 16, true));
  }
}

}  // namespace zcoll_test
