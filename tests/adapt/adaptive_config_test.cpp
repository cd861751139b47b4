#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "zcoll/adapt/adaptive_config.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/presets.hpp"

namespace adapt = zcoll::adapt;

namespace {

const adapt::table_classifier classifier{
    .global_bound = 0.03, .alpha = 5.0 / 3.0, .beta = 3.0, .large_below = 0.2, .small_above = 0.6};
const adapt::error_bound_schedule schedule{
    .shape = adapt::decay_shape::step, .initial_factor = 3.0, .decay_iterations = 3000, .steps = 3};

/// Three tables of 64 vectors of dim 8 whose index at 0.03 is known: far-apart vectors (index 0), two
/// tight clusters (64 vectors become 2: 62/64), and half of the vectors in one cluster (64 become 33: 31/64).
struct samples {
  std::vector<float> spread, clustered, half;
  std::vector<adapt::table_sample<float>> list;
  samples() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> jitter(-0.001f, 0.001f);
    for (int v = 0; v < 64; ++v) {
      for (int j = 0; j < 8; ++j) {
        spread.push_back(static_cast<float>(v) + 0.1f * static_cast<float>(j));
        clustered.push_back((v % 2 ? 1.0f : -1.0f) + jitter(rng));
        half.push_back(v < 32 ? 0.5f + jitter(rng) : static_cast<float>(v) + static_cast<float>(j));
      }
    }
    list = {{10, spread, 8}, {11, clustered, 8}, {12, half, 8}};
  }
};

}  // namespace

TEST_CASE("Offline analysis: each table's index, class and bound (Algorithm 1)", "[adapt][config]") {
  const samples s;
  const auto config = adapt::offline_analysis<float>(std::span<const adapt::table_sample<float>>(s.list), classifier, schedule);
  REQUIRE(config.tables.size() == 3);
  CHECK(config.table(10).homogenization_index == 0.0);
  CHECK(config.table(10).bound_class_of_table == adapt::bound_class::large);
  CHECK(config.table(10).error_bound == Approx(0.05));
  CHECK(config.table(11).homogenization_index == Approx(62.0 / 64.0));
  CHECK(config.table(11).bound_class_of_table == adapt::bound_class::small);
  CHECK(config.table(11).error_bound == Approx(0.01));
  CHECK(config.table(12).homogenization_index == Approx(31.0 / 64.0));
  CHECK(config.table(12).bound_class_of_table == adapt::bound_class::medium);
  CHECK(config.table(12).encoder.empty());
  // OnlineDecay on top: 3x the table's bound in the first stair, the table's bound after the phase.
  CHECK(config.error_bound(11, 0) == Approx(0.03));
  CHECK(config.error_bound(11, 2999) == Approx(0.01 * (3.0 - 4.0 / 3.0)));
  CHECK(config.error_bound(11, 3000) == Approx(0.01));
  CHECK_THROWS_WITH(config.table(99), Catch::Contains("table 99"));
  const std::vector<adapt::table_sample<float>> twice{s.list[0], s.list[0]};
  CHECK_THROWS_WITH(adapt::offline_analysis<float>(std::span<const adapt::table_sample<float>>(twice), classifier, schedule),
                    Catch::Contains("sampled twice"));
}

TEST_CASE("Offline analysis: each table's encoder by the speed-up model (Algorithm 2)", "[adapt][config]") {
  const samples s;
  // On a slow link the ratio decides: the candidate with the smaller stream at the table's bound wins.
  const auto config = adapt::offline_analysis<float, zcoll::EmbeddingHuffman, zcoll::EmbeddingLZ>(
      std::span<const adapt::table_sample<float>>(s.list), classifier, schedule, {.link_bytes_per_second = 1e3});
  for (const auto& sample : s.list) {
    const auto& t = config.table(sample.table);
    const zcoll::codec_config at{.error_bound = zcoll::absolute(t.error_bound), .shape = {sample.vectors.size() / 8, 8}};
    const auto huffman = zcoll::compress_to_vector(zcoll::EmbeddingHuffman(at), sample.vectors).size();
    const auto lz = zcoll::compress_to_vector(zcoll::EmbeddingLZ(at), sample.vectors).size();
    INFO("table " << sample.table << ": huffman " << huffman << " bytes, lz " << lz);
    if (huffman != lz) CHECK(t.encoder == (huffman < lz ? zcoll::EmbeddingHuffman::name() : zcoll::EmbeddingLZ::name()));
  }
}

TEST_CASE("Adaptive configuration: saved and loaded back equal, bit for bit", "[adapt][config]") {
  const samples s;
  auto config = adapt::offline_analysis<float, zcoll::EmbeddingHuffman, zcoll::EmbeddingLZ>(
      std::span<const adapt::table_sample<float>>(s.list), classifier, schedule);
  config.tables.push_back({1ull << 40, 0.1 + 0.2, adapt::bound_class::medium, 1.0 / 3.0, ""});
  std::stringstream file;
  config.save(file);
  const auto loaded = adapt::adaptive_config::load(file);
  CHECK(loaded == config);
  CHECK(loaded.table(1ull << 40).homogenization_index == 0.1 + 0.2);  // the exact double, not a decimal rounding
  CHECK(loaded.table(1ull << 40).encoder.empty());
}

TEST_CASE("Adaptive configuration: a damaged file is a format error naming the line", "[adapt][config]") {
  adapt::adaptive_config config{classifier, schedule, {{3, 0.5, adapt::bound_class::medium, 0.03, "linear+none+huffman"}}};
  std::stringstream good;
  config.save(good);
  const std::string text = good.str();
  const auto load = [](const std::string& t) {
    std::istringstream in(t);
    return adapt::adaptive_config::load(in);
  };
  CHECK(load(text) == config);
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK_THROWS_WITH(load(""), Catch::Contains("line 1"));
  CHECK_THROWS_WITH(load(replaced("config 1", "config 2")), Catch::Contains("version"));
  CHECK_THROWS_WITH(load(replaced("alpha=", "alfa=")), Catch::Contains("line 2") && Catch::Contains("alpha"));
  CHECK_THROWS_WITH(load(replaced("shape=step", "shape=cosine")), Catch::Contains("line 3"));
  CHECK_THROWS_WITH(load(replaced("steps=3", "steps=0")), Catch::Contains("steps"));
  CHECK_THROWS_WITH(load(replaced("decay_iterations=3000", "decay_iterations=-1")), Catch::Contains("decay_iterations"));
  CHECK_THROWS_WITH(load(replaced("tables 1", "tables 2")), Catch::Contains("line 6"));
  CHECK_THROWS_WITH(load(replaced("class=medium", "class=huge")), Catch::Contains("class"));
  CHECK_THROWS_WITH(load(replaced("index=", "index=x")), Catch::Contains("index"));
  CHECK_THROWS_WITH(load(text + "table id=3 index=0x0p+0 class=large bound=0x1p-4 encoder=-\n"),
                    Catch::Contains("after the last table"));
  const std::string two = replaced("tables 1", "tables 2") + text.substr(text.rfind("table id"));
  CHECK_THROWS_WITH(load(two), Catch::Contains("listed twice"));
  CHECK_THROWS_WITH(load(text.substr(0, text.find(" encoder="))), Catch::Contains("encoder missing"));
}
