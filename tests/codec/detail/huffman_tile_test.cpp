// The CUDA decoder of Huffman pipelines (codec/detail/huffman_tile.hpp inside pipeline_tile.hpp's
// decompress_tile) run on a host team (fibers): the stream's model read as the device reads it,
// then every chunk decoded by the team, one thread per Huffman stream. Its values must be the host
// decoder's bit for bit (EmbeddingHuffman and Lorenzo1D + Huffman, f32 and f64, chunks for both team
// sizes, fill values and exceptions, the bit-plane fallback), and it must refuse exactly the streams
// the host decoder refuses (every truncation, damaged bytes, hostile models), within its buffers (ASan).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "support/host_team.hpp"
#include "support/huffman_inputs.hpp"
#include "support/team_decoding.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll_test::same_bits;
using zcoll_test::team_decoded;
namespace detail = zcoll::detail;

template <class Codec, class T>
void check_against_host(zcoll::codec_config config) {
  const Codec codec(config);
  int fallbacks = 0;
  for (const auto& x : zcoll_test::huffman_inputs<T>()) {
    INFO(codec.name() << " on " << zcoll_test::type_name<T>() << ", chunk " << config.chunk_values << ", n = " << x.size());
    const auto stream = zcoll::compress_to_vector(codec, std::span<const T>(x));
    const std::vector<T> host = codec.template decompress<T>(std::span<const std::byte>(stream));
    for (const bool staged : {true, false}) {
      detail::decode_fault fault{};
      const auto team = team_decoded<Codec, T>(codec, stream, x.size(), staged, fault);
      INFO("fault " << fault.code << " detail " << fault.detail);
      REQUIRE(team.has_value());
      REQUIRE(same_bits(*team, host));
    }
    const auto layout = zcoll::read_stream_layout(stream, true);
    fallbacks += !layout.parameters.empty() && layout.parameters[0] == std::byte{1};
  }
  CHECK(fallbacks >= 1);  // the bit-plane fallback was decoded too
}

}  // namespace

TEMPLATE_TEST_CASE("Huffman pipelines decode on a host team as on the host", "[pipeline][cuda-tile][huffman]", float, double) {
  zcoll_test::for_each_huffman_config([]<class Codec>(const zcoll::codec_config& config) { check_against_host<Codec, TestType>(config); });
}

TEST_CASE("Damaged Huffman streams are refused on a host team exactly when the host refuses them",
          "[pipeline][cuda-tile][huffman][corruption]") {
  std::mt19937_64 rng(zcoll_test::seed);
  zcoll_test::refusal_counts counts;
  for (const std::uint32_t chunk : {512u, 4096u}) {
    const zcoll::EmbeddingHuffman codec({.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk, .fill_value = -999.0});
    for (const auto& x : zcoll_test::huffman_inputs<float>()) {
      if (x.size() >= 100 && x.size() <= 6000) zcoll_test::check_damaged_streams_on_team(codec, x, rng, counts);
    }
  }
  CHECK(counts.refused > 500);
  CHECK(counts.decoded > 10);
}

TEST_CASE("A stream of another codec is wrong_codec to the Huffman device decoder, not a model fault",
          "[pipeline][cuda-tile][huffman][corruption]") {
  const zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096};
  const auto x = zcoll_test::mixed_input<float>(10000, -999.0f);
  const auto fzlight = zcoll::compress_to_vector(zcoll::FZLight(config), std::span<const float>(x));
  detail::decode_fault fault{};
  CHECK_FALSE(team_decoded<zcoll::EmbeddingHuffman, float>(zcoll::EmbeddingHuffman(config), fzlight, x.size(), true, fault));
  CHECK(fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::wrong_codec));
  const auto f64 = zcoll::compress_to_vector(zcoll::EmbeddingHuffman(config), std::span<const double>(std::vector<double>(x.begin(), x.end())));
  CHECK_FALSE(team_decoded<zcoll::EmbeddingHuffman, float>(zcoll::EmbeddingHuffman(config), f64, x.size(), true, fault));
  CHECK(fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::wrong_codec));
}
