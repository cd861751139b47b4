// The CUDA decoder of VectorLZ pipelines (codec/detail/vector_lz_tile.hpp inside pipeline_tile.hpp's
// decompress_tile) run on a host team (fibers): the stream's model read as the device reads it,
// then every chunk's tokens checked, its literals decoded (a Huffman chunk, or bit-plane blocks under
// the model's fallback) and its vectors placed by the team. Its values must be the host decoder's bit
// for bit (EmbeddingLZ, f32 and f64, vectors of 1, 16 and 64 codes, chunks for both team sizes, partial
// last vectors, fill values and exceptions), and it must refuse exactly the streams the host decoder
// refuses (every truncation, damaged bytes, tokens out of range), within its buffers (ASan).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "support/team_decoding.hpp"
#include "support/test_support.hpp"
#include "support/vector_lz_inputs.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll_test::lookups;
using zcoll_test::lz_config;
using zcoll_test::same_bits;
using zcoll_test::team_decoded;
using zcoll_test::vector_lz_inputs;
namespace detail = zcoll::detail;

template <class T>
void check_against_host(const zcoll::codec_config& config) {
  const zcoll::EmbeddingLZ codec(config);
  int fallbacks = 0, coded = 0;
  for (const auto& x : vector_lz_inputs<T>(config.shape.back())) {
    INFO("embedding-lz on " << zcoll_test::type_name<T>() << ", chunk " << config.chunk_values << ", dim "
                            << config.shape.back() << ", n = " << x.size());
    const auto stream = zcoll::compress_to_vector(codec, std::span<const T>(x));
    const std::vector<T> host = codec.template decompress<T>(std::span<const std::byte>(stream));
    for (const bool staged : {true, false}) {
      detail::decode_fault fault{};
      const auto team = team_decoded<zcoll::EmbeddingLZ, T>(codec, stream, x.size(), staged, fault);
      INFO("fault " << fault.code << " detail " << fault.detail);
      REQUIRE(team.has_value());
      REQUIRE(same_bits(*team, host));
    }
    const auto layout = zcoll::read_stream_layout(stream, true);
    const bool fallback = layout.parameters.size() > 5 && layout.parameters[5] == std::byte{1};  // after dim, window
    fallbacks += fallback;
    coded += !layout.parameters.empty() && !fallback;
  }
  CHECK(fallbacks >= 1);  // the bit-plane literals were decoded
  CHECK(coded >= 1);      // and the Huffman-coded ones
}

}  // namespace

TEMPLATE_TEST_CASE("VectorLZ pipelines decode on a host team as on the host", "[pipeline][cuda-tile][vector-lz]", float, double) {
  zcoll_test::for_each_vector_lz_config([](const zcoll::codec_config& config) { check_against_host<TestType>(config); });
}

TEST_CASE("Damaged VectorLZ streams are refused on a host team exactly when the host refuses them",
          "[pipeline][cuda-tile][vector-lz][corruption]") {
  std::mt19937_64 rng(zcoll_test::seed);
  zcoll_test::refusal_counts counts;
  for (const std::uint32_t chunk : {512u, 4096u}) {
    for (const std::size_t dim : {std::size_t{4}, std::size_t{32}}) {
      const zcoll::EmbeddingLZ codec(lz_config(chunk, dim, true));
      for (const auto& x : vector_lz_inputs<float>(dim)) {
        if (x.size() >= 100 && x.size() <= 9000) zcoll_test::check_damaged_streams_on_team(codec, x, rng, counts);
      }
    }
  }
  CHECK(counts.refused > 500);
  CHECK(counts.decoded > 10);
}

TEST_CASE("A VectorLZ token past the window or the chunk's start is bad_vector_token on a host team",
          "[pipeline][cuda-tile][vector-lz][corruption]") {
  const zcoll::EmbeddingLZ codec(lz_config(4096, 16, false));
  std::mt19937_64 rng(zcoll_test::seed);
  const auto x = lookups<float>(16, 600, 20, 0, 0.05, rng);
  auto stream = zcoll::compress_to_vector(codec, std::span<const float>(x));
  const auto layout = zcoll::read_stream_layout(stream, true);
  const std::size_t first_token = layout.first_chunk_offset + 1;  // after the chunk's kind byte
  REQUIRE(stream[layout.first_chunk_offset] == std::byte{0});  // a coded chunk (kind 0), not a verbatim one
  stream[first_token + 2] = std::byte{3};  // vector 2 copies the vector 3 back: before the chunk's start
  detail::decode_fault fault{};
  CHECK_FALSE(team_decoded<zcoll::EmbeddingLZ, float>(codec, stream, x.size(), true, fault));
  CHECK(fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::bad_vector_token));
  CHECK(fault.detail == 2);
  CHECK_THROWS_AS(codec.decompress<float>(std::span<const std::byte>(stream)), zcoll::format_error);
}
