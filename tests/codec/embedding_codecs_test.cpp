// The embedding presets end to end: Zipf-distributed lookups of Gaussian rows, the DLRM all-to-all payload.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "support/codec_checks.hpp"
#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using Catch::Matchers::Contains;

using namespace zcoll_test;

namespace {

using NoMatching = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::None, zcoll::encode::BitShuffle>;

/// `lookups` vectors of `dim` values, each a row of a `rows`-row Gaussian table picked with Zipf(1.05).
template <class T>
std::vector<T> zipf_lookups(std::size_t rows, std::size_t dim, std::size_t lookups, std::uint64_t offset = 0) {
  std::mt19937_64 rng(seed + offset);
  std::normal_distribution<double> gaussian(0.0, 1.0 / std::sqrt(static_cast<double>(dim)));
  std::vector<T> table(rows * dim);
  for (auto& v : table) v = static_cast<T>(gaussian(rng));
  std::vector<double> cumulative(rows);
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) cumulative[r] = total += std::pow(static_cast<double>(r + 1), -1.05);
  std::uniform_real_distribution<double> u(0.0, total);
  std::vector<T> out;
  out.reserve(lookups * dim);
  for (std::size_t l = 0; l < lookups; ++l) {
    const auto row = static_cast<std::size_t>(std::lower_bound(cumulative.begin(), cumulative.end(), u(rng)) -
                                              cumulative.begin());
    out.insert(out.end(), table.begin() + static_cast<std::ptrdiff_t>(row * dim),
               table.begin() + static_cast<std::ptrdiff_t>((row + 1) * dim));
  }
  return out;
}

zcoll::codec_config embedding_config(double eb, std::size_t dim, std::uint32_t chunk_values) {
  return {.error_bound = zcoll::absolute(eb), .chunk_values = chunk_values, .shape = {0, dim}};
}

}  // namespace

TEMPLATE_TEST_CASE("Embedding codecs: Zipf lookups round trip within the bound on every element", "[codec][embedding]",
                   zcoll::EmbeddingLZ, zcoll::EmbeddingHuffman) {
  using Codec = TestType;
  for (std::size_t dim : {std::size_t{1}, std::size_t{32}, std::size_t{1024}}) {
    for (double eb : {0.01, 0.05}) {
      const std::uint32_t chunk_values = dim == 1024 ? 65536 : 4096;
      const Codec codec{embedding_config(eb, dim, chunk_values)};
      const auto f = zipf_lookups<float>(500, dim, dim == 1024 ? 200 : 3000);
      const auto d = zipf_lookups<double>(500, dim, dim == 1024 ? 100 : 1000, 1);
      INFO("dim " << dim << ", eb " << eb);
      check_round_trip(codec, std::span<const float>(f));
      check_round_trip(codec, std::span<const double>(d));
    }
  }
}

TEMPLATE_TEST_CASE("Embedding codecs: adversarial values and partial last vectors", "[codec][embedding]",
                   zcoll::EmbeddingLZ, zcoll::EmbeddingHuffman) {
  using Codec = TestType;
  const float fill = -1e10f;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{4097}}) {
    zcoll::codec_config config = embedding_config(1e-3, 32, 4096);
    config.fill_value = static_cast<double>(fill);
    const Codec codec{config};
    const auto data = mixed_input<float>(n, fill);
    INFO(n << " values");
    check_round_trip(codec, std::span<const float>(data), bits(fill));
  }
}

TEST_CASE("EmbeddingLZ: repeated vectors cost a token, far less than coding them again", "[codec][embedding]") {
  const auto data = zipf_lookups<float>(200, 32, 8192);
  const zcoll::EmbeddingLZ lz{embedding_config(0.01, 32, 65536)};
  const NoMatching plain{embedding_config(0.01, 32, 65536)};
  const auto lz_bytes = lz.compress(data).size();
  const auto plain_bytes = plain.compress(data).size();
  INFO("vector-LZ " << lz_bytes << " bytes, bit-plane coding alone " << plain_bytes);
  CHECK(lz_bytes * 3 < plain_bytes);  // 200 distinct rows in 8192 lookups: most vectors repeat in the window
}

TEST_CASE("EmbeddingLZ: the config must give the vector length and whole vectors per chunk", "[codec][embedding]") {
  const std::vector<float> data(4096, 1.0f);
  CHECK_THROWS_AS(zcoll::EmbeddingLZ({.error_bound = zcoll::absolute(0.01)}).compress(data), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::EmbeddingLZ(embedding_config(0.01, 100, 4096)).compress(data), zcoll::argument_error);
  // A window outside 1..255 is refused when the codec is built, naming the setting.
  const auto config = embedding_config(0.01, 32, 4096);
  CHECK_THROWS_WITH(zcoll::EmbeddingLZ(config, {.match_window = 0}), Contains("match_window 0 must be in 1..255"));
  CHECK_THROWS_AS(zcoll::EmbeddingLZ(config, {.match_window = 256}), zcoll::argument_error);
}

TEST_CASE("EmbeddingLZ: the match window reaches the stream and survives with_error_bound", "[codec][embedding]") {
  // Rows 0..99 then the same rows again: a window of 100 finds every second-half row, one of 50 none.
  std::vector<float> data;
  for (int pass = 0; pass < 2; ++pass) {
    for (int row = 0; row < 100; ++row) {
      for (int d = 0; d < 32; ++d) data.push_back(std::sin(0.37f * static_cast<float>(row * 32 + d)));
    }
  }
  const auto config = embedding_config(0.01, 32, 6400);
  const zcoll::EmbeddingLZ wide(config, {.match_window = 100}), narrow(config, {.match_window = 50});
  CHECK(narrow.encoder_config().match_window == 50);
  CHECK(wide.compress(data).size() * 3 / 2 < narrow.compress(data).size());
  const auto looser = narrow.with_error_bound(zcoll::absolute(0.02));
  CHECK(looser.encoder_config().match_window == 50);
  CHECK(looser.compress(data) == zcoll::EmbeddingLZ(embedding_config(0.02, 32, 6400), {.match_window = 50}).compress(data));
}

TEMPLATE_TEST_CASE("Embedding codecs: damaged streams are format errors, bytes do not depend on threads",
                   "[codec][embedding]", zcoll::EmbeddingLZ, zcoll::EmbeddingHuffman) {
  using Codec = TestType;
  const Codec codec{embedding_config(0.02, 32, 2048)};
  const auto data = zipf_lookups<float>(300, 32, 600);
  check_threads_and_damage(codec, data, 3000);
}
