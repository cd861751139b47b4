#pragma once
// The inputs the Huffman pipelines' device decoder is held against the host's on, host team and GPU alike.

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/presets.hpp"

namespace zcoll_test {

/// Embedding-like rows, smooth fields, specials and fill values, lengths that are not multiples of 32.
template <class T>
std::vector<std::vector<T>> huffman_inputs() {
  using lim = std::numeric_limits<T>;
  std::mt19937_64 rng(zcoll_test::seed);
  std::normal_distribution<double> normal(0.0, 0.05);
  std::vector<std::vector<T>> all;
  all.push_back({});
  all.push_back({T(0.5)});
  all.push_back(std::vector<T>(100, T(3.25)));
  std::vector<T> rows(64 * 333);
  for (auto& v : rows) v = static_cast<T>(normal(rng));
  all.push_back(rows);
  std::vector<T> smooth(40001);
  for (std::size_t i = 0; i < smooth.size(); ++i) smooth[i] = static_cast<T>(std::sin(0.001 * static_cast<double>(i)));
  all.push_back(smooth);
  std::vector<T> specials(3000);
  for (std::size_t i = 0; i < specials.size(); ++i) {
    const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
    specials[i] = i % 7 == 0 ? special[(i / 7) % 6] : static_cast<T>(normal(rng));
  }
  all.push_back(specials);
  all.push_back(zcoll_test::mixed_input<T>(4001, T(-999)));
  std::vector<T> wide(5000);  // residuals of every size: the code would not beat the bit planes
  for (auto& v : wide) v = static_cast<T>(std::ldexp(normal(rng), static_cast<int>(rng() % 40)));
  all.push_back(wide);
  return all;
}

/// Calls check.template operator()<Codec>(config) for each Huffman pipeline and configuration the
/// device decoder is held to: chunks for both team sizes (one and four streams a chunk), EmbeddingHuffman
/// and Lorenzo1D + Huffman, with and without a fill value.
template <class Check>
void for_each_huffman_config(Check&& check) {
  using LorenzoHuffman1D = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, zcoll::encode::Huffman>;
  for (const std::uint32_t chunk : {512u, 4096u, 32768u}) {
    zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk};
    check.template operator()<zcoll::EmbeddingHuffman>(config);
    check.template operator()<LorenzoHuffman1D>(config);
    config.fill_value = -999.0;
    check.template operator()<zcoll::EmbeddingHuffman>(config);
  }
}

}  // namespace zcoll_test
