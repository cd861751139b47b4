#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/hybrid.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {
using FieldHybrid = zcoll::Hybrid<zcoll::FZLight, zcoll::Identity>;
static_assert(zcoll::codec<FieldHybrid>);

std::vector<float> smooth(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i)));
  return v;
}
}  // namespace

TEST_CASE("Hybrid: on a slow link the high ratio wins", "[codec][hybrid]") {
  const auto data = smooth(1 << 16);
  // Identity ten times faster than FZLight: on a slow link the ratio still decides.
  const std::vector<zcoll::codec_speed> speeds{{1e9, 2e9}, {1e10, 2e10}};
  const FieldHybrid slow{{.error_bound = zcoll::absolute(1e-3)}, {.link_bytes_per_second = 1e6, .speeds = speeds}};
  FieldHybrid::state table;
  const auto stream = zcoll::compress(slow, table, data);
  REQUIRE(table.choice == 0u);  // FZLight: ratio > 10 here, Identity 1
  CHECK(zcoll::read_stream_header(stream).codec == zcoll::FZLight::id);
  const auto restored = slow.decompress<float>(stream);
  require_bound_on_every_element(std::span<const float>(data), std::span<const float>(restored), 1e-3);
}

TEST_CASE("Hybrid: on a fast link the faster candidate wins, by the configured speeds", "[codec][hybrid]") {
  const auto data = smooth(1 << 16);
  // 100 Gbit/s: FZLight at 1 GB/s costs far more time than its ratio saves; Identity at 100 GB/s wins.
  const FieldHybrid fast{{.error_bound = zcoll::absolute(1e-3)},
                         {.link_bytes_per_second = 12.5e9, .speeds = {{1e9, 1e9}, {1e11, 1e11}}}};
  CHECK(fast.choose(zcoll::exec::Host{}, std::span<const float>(data)) == 1u);
  // Without speeds the ratio decides, on any link.
  const FieldHybrid unmeasured{{.error_bound = zcoll::absolute(1e-3)}, {.link_bytes_per_second = 12.5e9}};
  CHECK(unmeasured.choose(zcoll::exec::Host{}, std::span<const float>(data)) == 0u);
  // measure_speeds times each candidate once: speeds to configure.
  const auto measured = unmeasured.measure_speeds(zcoll::exec::Host{}, std::span<const float>(data));
  REQUIRE(measured.size() == 2);
  for (const auto& m : measured) CHECK((m.compress_bytes_per_second > 0 && m.decompress_bytes_per_second > 0));
  CHECK_THROWS_AS(FieldHybrid({}, {.speeds = {{1e9, 1e9}}}), zcoll::argument_error);  // one speed, two candidates
  CHECK_THROWS_AS(FieldHybrid({}, {.speeds = {{1e9, 0.0}, {1e9, 1e9}}}), zcoll::argument_error);
}

TEST_CASE("Hybrid: a choice is recorded per table, in the caller's state, and can be set", "[codec][hybrid]") {
  const FieldHybrid codec{{.error_bound = zcoll::absolute(1e-3)}, {.link_bytes_per_second = 1e6}};
  zcoll::codec_state<FieldHybrid> tables;
  CHECK_FALSE(tables.at(1).choice.has_value());
  tables.at(2).choice = 1;  // a saved choice, or a caller's own policy
  const auto data = smooth(4096);
  const auto by_identity = zcoll::compress(codec, tables.at(2), data);
  CHECK(zcoll::read_stream_header(by_identity).codec == zcoll::Identity::id);
  CHECK(codec.decompress<float>(by_identity) == data);
  (void)zcoll::compress(codec, tables.at(1), data);
  CHECK(tables.at(1).choice == 0u);
  tables.erase(1);
  CHECK(tables.find(1) == nullptr);
  tables.at(3).choice = 2;
  CHECK_THROWS_AS(zcoll::compress(codec, tables.at(3), data), zcoll::argument_error);
  CHECK(FieldHybrid::candidate_name(1) == zcoll::Identity::name());
  CHECK_THROWS_AS(zcoll::Hybrid<zcoll::FZLight>({}, {.link_bytes_per_second = 0.0}), zcoll::argument_error);
}

TEST_CASE("Hybrid: a stream of a codec that is not a candidate is a format error", "[codec][hybrid]") {
  const zcoll::Hybrid<zcoll::Identity> only_identity{};
  const auto stream = zcoll::FZLight{{.error_bound = zcoll::absolute(1e-3)}}.compress(smooth(100));
  CHECK_THROWS_AS(only_identity.decompress<float>(stream), zcoll::format_error);
  std::vector<float> out(100);
  CHECK_THROWS_AS(only_identity.decompress(zcoll::exec::Host{}, stream, out), zcoll::format_error);
  CHECK_THROWS_AS(only_identity.decompress<float>(std::span<const std::byte>(stream).first(10)), zcoll::format_error);
}

TEST_CASE("EmbeddingHybrid: vector-LZ where rows repeat, Huffman where every row is new", "[codec][hybrid]") {
  const std::size_t dim = 32, lookups = 4096;
  const zcoll::codec_config config{.error_bound = zcoll::absolute(0.01), .chunk_values = 32768, .shape = {0, dim}};
  // No speeds: the ratio decides (the choice no longer depends on a timing, on any build).
  const zcoll::EmbeddingHybrid codec{config};
  std::mt19937_64 rng(seed);

  // 20 distinct rows of widely spread values, looked up in random order: repeats everywhere.
  std::uniform_real_distribution<float> wide(-10.0f, 10.0f);
  std::vector<float> rows(20 * dim);
  for (auto& v : rows) v = wide(rng);
  std::vector<float> repeating;
  for (std::size_t l = 0; l < lookups; ++l) {
    const std::size_t r = rng() % 20;
    repeating.insert(repeating.end(), rows.begin() + static_cast<std::ptrdiff_t>(r * dim),
                     rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * dim));
  }
  // Every row new, values concentrated in a few quantization bins: nothing to match, low entropy.
  std::normal_distribution<float> narrow(0.0f, 0.04f);
  std::vector<float> fresh(lookups * dim);
  for (auto& v : fresh) v = narrow(rng);

  zcoll::codec_state<zcoll::EmbeddingHybrid> tables;
  const auto lz_stream = zcoll::compress(codec, tables.at(1), repeating);
  const auto huffman_stream = zcoll::compress(codec, tables.at(2), fresh);
  CHECK(tables.at(1).choice == 1u);  // EmbeddingLZ
  CHECK(tables.at(2).choice == 0u);  // EmbeddingHuffman
  CHECK(zcoll::read_stream_header(lz_stream).codec == zcoll::EmbeddingLZ::id);
  CHECK(zcoll::read_stream_header(huffman_stream).codec == zcoll::EmbeddingHuffman::id);
  const auto a = codec.decompress<float>(lz_stream);
  const auto b = codec.decompress<float>(huffman_stream);
  require_bound_on_every_element(std::span<const float>(repeating), std::span<const float>(a), 0.01);
  require_bound_on_every_element(std::span<const float>(fresh), std::span<const float>(b), 0.01);
}

TEST_CASE("Hybrid: the same data and state give the same stream, run after run", "[codec][hybrid]") {
  const std::size_t dim = 16;
  const zcoll::codec_config config{.error_bound = zcoll::absolute(0.01), .chunk_values = 4096, .shape = {0, dim}};
  // Speeds that make the two candidates' modelled speed-ups close: the choice rests on the ratios, which
  // come from the data, never on a timing.
  const zcoll::EmbeddingHybrid codec{config, {.link_bytes_per_second = 1e9, .speeds = {{3e8, 6e8}, {9e8, 1.2e9}}}};
  std::mt19937_64 rng(seed + 5);
  std::normal_distribution<float> values(0.0f, 0.05f);
  std::vector<float> table(2048 * dim);
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = i % (7 * dim) < dim ? 0.0f : values(rng);
  std::vector<std::byte> first;
  std::optional<std::size_t> first_choice;
  for (int run = 0; run < 20; ++run) {
    zcoll::EmbeddingHybrid::state state;  // the same (fresh) state every run
    const auto stream = zcoll::compress(codec, state, table);
    INFO("run " << run);
    if (run == 0) {
      first = stream;
      first_choice = state.choice;
    }
    REQUIRE(stream == first);
    REQUIRE(state.choice == first_choice);
    REQUIRE(codec.compress(table) == first);  // the stateless call chooses alike
  }
}
