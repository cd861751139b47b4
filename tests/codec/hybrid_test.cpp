#include <catch2/catch.hpp>

#include <cmath>
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
  const FieldHybrid slow{{.error_bound = zcoll::absolute(1e-3)}, {.link_bytes_per_second = 1e6}};
  const auto stream = slow.compress(data, 5);
  REQUIRE(slow.choice(5) == 0u);  // FZLight: ratio > 10 here, Identity 1
  CHECK(zcoll::read_stream_header(stream).codec == zcoll::FZLight::id);
  const auto restored = slow.decompress<float>(stream);
  require_bound_on_every_element(std::span<const float>(data), std::span<const float>(restored), 1e-3);
}

TEST_CASE("Hybrid: a choice is recorded per table and can be set", "[codec][hybrid]") {
  const FieldHybrid codec{{.error_bound = zcoll::absolute(1e-3)}, {.link_bytes_per_second = 1e6}};
  CHECK_FALSE(codec.choice(1).has_value());
  codec.choose(2, 1);
  const auto data = smooth(4096);
  const auto by_identity = codec.compress(data, 2);
  CHECK(zcoll::read_stream_header(by_identity).codec == zcoll::Identity::id);
  CHECK(codec.decompress<float>(by_identity) == data);
  (void)codec.compress(data, 1);
  CHECK(codec.choice(1) == 0u);
  codec.forget(1);
  CHECK_FALSE(codec.choice(1).has_value());
  CHECK_THROWS_AS(codec.choose(1, 2), zcoll::argument_error);
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
  // A link of one byte per second: the speed-up model is the ratio alone, whatever the measured speeds
  // (1e6 B/s let a sanitizer build's slow Huffman coder tip the choice between two close ratios).
  const zcoll::EmbeddingHybrid codec{config, {.link_bytes_per_second = 1.0}};
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

  const auto lz_stream = codec.compress(repeating, 1);
  const auto huffman_stream = codec.compress(fresh, 2);
  CHECK(codec.choice(1) == 1u);  // EmbeddingLZ
  CHECK(codec.choice(2) == 0u);  // EmbeddingHuffman
  CHECK(zcoll::read_stream_header(lz_stream).codec == zcoll::EmbeddingLZ::id);
  CHECK(zcoll::read_stream_header(huffman_stream).codec == zcoll::EmbeddingHuffman::id);
  const auto a = codec.decompress<float>(lz_stream);
  const auto b = codec.decompress<float>(huffman_stream);
  require_bound_on_every_element(std::span<const float>(repeating), std::span<const float>(a), 0.01);
  require_bound_on_every_element(std::span<const float>(fresh), std::span<const float>(b), 0.01);
}
