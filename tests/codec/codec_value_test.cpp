// Codecs are values: a copy with another error bound keeps every other setting, for every registered codec.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/registry.hpp"

namespace {

std::vector<float> field() {
  std::vector<float> v(4 * 16 * 16);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.05 * static_cast<double>(i)) * 3.0);
  return v;
}

}  // namespace

TEST_CASE("with_error_bound: the same codec at another bound, every other setting kept", "[codec][value]") {
  const auto data = field();
  zcoll::for_each_registered_codec([&]<class Entry>() {
    using Codec = typename Entry::type;
    INFO("codec " << Entry::name);
    const zcoll::codec_config made{.error_bound = zcoll::absolute(1e-3), .chunk_values = 256, .shape = {4, 16, 16}};
    const Codec codec{made};
    const Codec coarser = codec.with_error_bound(zcoll::absolute(0.25));
    CHECK(coarser.config().error_bound == zcoll::absolute(0.25));
    CHECK(coarser.config().chunk_values == codec.config().chunk_values);
    CHECK(coarser.config().shape == codec.config().shape);
    CHECK(coarser.config().fill_value == codec.config().fill_value);
    CHECK(codec.config().error_bound == zcoll::absolute(1e-3));  // the original is unchanged
    // Its streams are those of the codec made at that bound.
    zcoll::codec_config at_bound = made;
    at_bound.error_bound = zcoll::absolute(0.25);
    CHECK(coarser.compress(data) == Codec{at_bound}.compress(data));
    if constexpr (Codec::uses_error_bound) {
      const auto restored = coarser.template decompress<float>(coarser.compress(data));
      for (std::size_t i = 0; i < data.size(); ++i) REQUIRE(std::fabs(restored[i] - data[i]) <= 0.25f);
    }
  });
}

TEST_CASE("with_error_bound keeps the settings a codec has beyond codec_config", "[codec][value]") {
  const auto data = field();
  const zcoll::TopK sparse{{}, {.keep_fraction = 0.5, .threshold_life_span = 7}};
  CHECK(sparse.with_error_bound(zcoll::absolute(1.0)).sparsity().keep_fraction == 0.5);
  CHECK(sparse.with_error_bound(zcoll::absolute(1.0)).sparsity().threshold_life_span == 7u);
  const zcoll::EmbeddingHybrid hybrid{{.shape = {64, 16}}, {.link_bytes_per_second = 1e8, .speeds = {{1e9, 2e9}, {3e9, 4e9}}}};
  const auto moved = hybrid.with_error_bound(zcoll::absolute(0.1));
  CHECK(moved.hybrid().link_bytes_per_second == 1e8);
  REQUIRE(moved.hybrid().speeds.size() == 2);
  CHECK(moved.hybrid().speeds[1].decompress_bytes_per_second == 4e9);
  const zcoll::ErrorFeedback<zcoll::TopK> feedback{sparse};
  CHECK(feedback.with_error_bound(zcoll::absolute(1.0)).inner().sparsity().keep_fraction == 0.5);
}
