// The stream format as documented (core/stream_header.hpp, codec/pipeline.hpp, the bit-plane block format in
// encode/detail/bitshuffle_block.hpp): streams decode identically with tests/support/reference_decoder.hpp.
// Also compiled into the ISA variant executables, so every code path writes the documented format.
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "support/codec_checks.hpp"
#include "support/reference_decoder.hpp"
#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

TEMPLATE_TEST_CASE("FZLight stream decodes identically with a decoder written from the format documentation",
                   "[codec][pipeline][format]", float, double) {
  using T = TestType;
  const std::uint32_t chunk_values = GENERATE(64u, 256u, 4096u);
  const T fill = T(-1e10);
  const auto data = mixed_input<T>(20011, fill);
  const zcoll::FZLight codec{
      {.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk_values, .fill_value = static_cast<double>(fill)}};
  const auto r = check_round_trip(codec, std::span<const T>(data), bits(fill));
  const auto ref = reference_decode<T>(r.stream, reference_predictor::lorenzo, reference_encoder::bitshuffle);
  require_bit_identical(std::span<const T>(ref.values), std::span<const T>(r.restored));
  // The stream holds what the input was built to produce.
  CHECK(ref.census.verbatim_chunks > 0);
  CHECK(ref.census.exception_chunks > 0);
  CHECK(ref.census.fill_runs > 0);
  CHECK(ref.census.masked_blocks > 0);
  CHECK(ref.census.outliers > 0);
  CHECK(ref.census.fill_lanes > 0);
  // "A run of fill values costs one byte per 32 values in the encoded blocks."
  CHECK(ref.census.fill_run_blocks > 0);
  CHECK(ref.census.fill_run_blocks_over_one_byte == 0);
}

TEMPLATE_TEST_CASE("Pipelines of every stage combination round-trip", "[codec][pipeline][format]", float, double) {
  using T = TestType;
  using namespace zcoll;
  const T fill = T(-1e10);
  const auto data = mixed_input<T>(5003, fill);
  const codec_config config{.error_bound = absolute(1e-2), .chunk_values = 512, .fill_value = static_cast<double>(fill)};
  auto run = [&](const auto& codec, reference_predictor p, reference_encoder e) {
    INFO(std::remove_cvref_t<decltype(codec)>::name());
    const auto r = check_round_trip(codec, std::span<const T>(data), bits(fill));
    const auto ref = reference_decode<T>(r.stream, p, e);
    require_bit_identical(std::span<const T>(ref.values), std::span<const T>(r.restored));
  };
  run(Pipeline<quantize::Linear, predict::Lorenzo1D, encode::BitShuffle>(config), reference_predictor::lorenzo,
      reference_encoder::bitshuffle);
  run(Pipeline<quantize::Linear, predict::None, encode::BitShuffle>(config), reference_predictor::none,
      reference_encoder::bitshuffle);
  run(Pipeline<quantize::Linear, predict::Lorenzo1D, encode::Raw>(config), reference_predictor::lorenzo,
      reference_encoder::raw);
  run(Pipeline<quantize::Linear, predict::None, encode::Raw>(config), reference_predictor::none,
      reference_encoder::raw);
  // Codec ids differ between combinations, and follow codec/codec_id.hpp.
  CHECK(FZLight::id == pipeline_codec_id<quantize::Linear, predict::Lorenzo1D, encode::BitShuffle>());
  CHECK(Identity::id == pipeline_codec_id<quantize::Exact, predict::None, encode::Raw>());
  CHECK(FZLight::id != Identity::id);
  CHECK(Pipeline<quantize::Linear, predict::None, encode::Raw>::id != FZLight::id);
}

TEST_CASE("A fill run costs one byte per block", "[codec][pipeline][format][fill]") {
  std::vector<float> data(8192, -1e10f);
  for (std::size_t i = 0; i < 32; ++i) data[i] = static_cast<float>(i);
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096, .fill_value = -1e10}};
  const auto r = check_round_trip(codec, std::span<const float>(data), bits(-1e10f));
  // Chunk 0: kind, a 1-block code, 127 one-byte blocks, a one-entry section; chunk 1: a whole fill run.
  const auto ref = reference_decode<float>(r.stream, reference_predictor::lorenzo, reference_encoder::bitshuffle);
  CHECK(ref.census.fill_runs == 2);
  CHECK(ref.census.fill_run_blocks == 127 + 128);
  CHECK(ref.census.fill_run_blocks_over_one_byte == 0);
  // Header and index, chunk 0 (kind, block 0 at most max_block_bytes, 127 one-byte blocks, a one-entry
  // section), chunk 1 (kind, 128 one-byte blocks, a one-entry section).
  CHECK(r.stream.size() <= 48 + (1 + zcoll::encode::BitShuffle::max_block_bytes + 127 + 2 + 5) + (1 + 128 + 2 + 5));
}

