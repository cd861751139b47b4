// HighRatio<N> = Pipeline<Linear, Interpolation<N>, ContextAns, Zstd> and LorenzoHuffman<N> = Pipeline<Linear,
// Lorenzo<N>, Huffman>: the grid (and the interpolation predictor's walk) travel in the parameter section.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "support/codec_checks.hpp"
#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

/// A smooth 3-D field with a little noise: what the 2-D and 3-D predictors are for.
template <class T>
std::vector<T> smooth_field(std::size_t nz, std::size_t ny, std::size_t nx, std::uint64_t offset = 0) {
  std::mt19937_64 rng(seed + offset);
  std::normal_distribution<double> noise(0.0, 1e-4);
  std::vector<T> field(nz * ny * nx);
  for (std::size_t z = 0; z < nz; ++z) {
    for (std::size_t y = 0; y < ny; ++y) {
      for (std::size_t x = 0; x < nx; ++x) {
        const double v = std::sin(0.05 * static_cast<double>(x)) * std::cos(0.07 * static_cast<double>(y)) +
                         0.3 * std::sin(0.2 * static_cast<double>(z)) + noise(rng);
        field[(z * ny + y) * nx + x] = static_cast<T>(100.0 * v);
      }
    }
  }
  return field;
}

zcoll::codec_config grid_config(double rel, std::vector<std::size_t> shape, std::uint32_t chunk_values = 0) {
  return {.error_bound = zcoll::relative(rel), .chunk_values = chunk_values, .shape = std::move(shape)};
}

}  // namespace

TEMPLATE_TEST_CASE("HighRatio round trips keep the bound on every element", "[codec][high-ratio]", float, double) {
  using T = TestType;
  // Extents that are not multiples of a block, chunks that start mid-row and mid-plane.
  const auto field = smooth_field<T>(5, 37, 45);
  const std::vector<std::size_t> shape = {5, 37, 45};
  for (double rel : {1e-2, 1e-4}) {
    for (std::uint32_t chunk : {0u, 4096u, 160u}) {
      INFO("rel " << rel << ", chunk " << chunk);
      check_round_trip(zcoll::HighRatio<1>{grid_config(rel, shape, chunk)}, std::span<const T>(field));
      check_round_trip(zcoll::HighRatio<2>{grid_config(rel, shape, chunk)}, std::span<const T>(field));
      check_round_trip(zcoll::HighRatio<3>{grid_config(rel, shape, chunk)}, std::span<const T>(field));
      check_round_trip(zcoll::LorenzoHuffman<2>{grid_config(rel, shape, chunk)}, std::span<const T>(field));
      check_round_trip(zcoll::LorenzoHuffman<3>{grid_config(rel, shape, chunk)}, std::span<const T>(field));
    }
    // Default chunks of 25 whole planes: a field of two chunks, the second shorter.
    const auto planes = smooth_field<T>(40, 40, 64);
    REQUIRE(zcoll::HighRatio<2>{grid_config(rel, {40, 40, 64})}.config().chunk_values == 25 * 40 * 64);
    check_round_trip(zcoll::HighRatio<2>{grid_config(rel, {40, 40, 64})}, std::span<const T>(planes));
    check_round_trip(zcoll::HighRatio<3>{grid_config(rel, {40, 40, 64})}, std::span<const T>(planes));
  }
}

TEMPLATE_TEST_CASE("HighRatio: adversarial values, empty and short inputs, with and without a shape",
                   "[codec][high-ratio]", float, double) {
  using T = TestType;
  const T fill = T(-1e10);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{4097}}) {
    const auto data = mixed_input<T>(n, fill);
    INFO(n << " values");
    for (auto shape : {std::vector<std::size_t>{}, std::vector<std::size_t>{n}, std::vector<std::size_t>{1, 1, n}}) {
      zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .fill_value = static_cast<double>(fill),
                                 .shape = shape};
      check_round_trip(zcoll::HighRatio<1>{config}, std::span<const T>(data), bits(fill));
      check_round_trip(zcoll::HighRatio<2>{config}, std::span<const T>(data), bits(fill));
      check_round_trip(zcoll::HighRatio<3>{config}, std::span<const T>(data), bits(fill));
      check_round_trip(zcoll::LorenzoHuffman<2>{config}, std::span<const T>(data), bits(fill));
      config.tuning = zcoll::tuning_target::rate_distortion;
      check_round_trip(zcoll::HighRatio<2>{config}, std::span<const T>(data), bits(fill));
      check_round_trip(zcoll::HighRatio<3>{config}, std::span<const T>(data), bits(fill));
    }
    if (n == 4097) {  // 17 rows of 241
      zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .fill_value = static_cast<double>(fill),
                                 .shape = {17, 241}};
      check_round_trip(zcoll::HighRatio<2>{config}, std::span<const T>(data), bits(fill));
      check_round_trip(zcoll::HighRatio<3>{config}, std::span<const T>(data), bits(fill));
    }
  }
}

TEST_CASE("HighRatio: on a smooth 2-D field, 2-D prediction beats 1-D", "[codec][high-ratio]") {
  const auto field = smooth_field<float>(1, 300, 300);
  const auto config = grid_config(1e-3, {300, 300});
  const auto one = zcoll::HighRatio<1>{config}.compress(field).size();
  const auto two = zcoll::HighRatio<2>{config}.compress(field).size();
  CHECK(two * 5 < one * 4);  // at least 20 % smaller
  const auto lorenzo_one = zcoll::LorenzoHuffman<1>{config}.compress(field).size();
  const auto lorenzo_two = zcoll::LorenzoHuffman<2>{config}.compress(field).size();
  CHECK(lorenzo_two * 5 < lorenzo_one * 4);
}

TEST_CASE("HighRatio: the zstd back end and the interpolation walk beat Lorenzo + Huffman at coarse bounds",
          "[codec][high-ratio]") {
  // Huffman spends at least a bit on each value; at relative 1e-2 on a smooth field most residuals are
  // 0 and zstd packs their bits. The 2-D sine has 12-value features, which interpolation predicts.
  const auto field = smooth_field<float>(1, 400, 400);
  const auto config = grid_config(1e-2, {400, 400});
  const auto high = zcoll::HighRatio<2>{config}.compress(field).size();
  const auto lorenzo = zcoll::LorenzoHuffman<2>{config}.compress(field).size();
  INFO("HighRatio-2d " << high << " bytes, Lorenzo-2d + Huffman " << lorenzo);
  CHECK(high * 3 < lorenzo * 2);
  CHECK(field.size() * sizeof(float) > 40 * high);  // below a bit a value
}

TEST_CASE("HighRatio: chunk length defaults and shape checks", "[codec][high-ratio]") {
  CHECK(zcoll::HighRatio<1>{}.config().chunk_values == 65536);
  CHECK(zcoll::LorenzoHuffman<1>{}.config().chunk_values == 4096);
  CHECK(zcoll::HighRatio<2>{}.config().chunk_values == 65536);
  CHECK(zcoll::HighRatio<3>{{.chunk_values = 1024}}.config().chunk_values == 1024);
  // Whole planes where the shape has them (predict::Interpolation::default_chunk_values), unless set.
  CHECK(zcoll::HighRatio<2>{grid_config(1e-2, {17, 96, 192})}.config().chunk_values == 55296);
  CHECK(zcoll::HighRatio<3>{grid_config(1e-2, {17, 96, 192}, 1024)}.config().chunk_values == 1024);
  CHECK(zcoll::LorenzoHuffman<3>{grid_config(1e-2, {17, 96, 192})}.config().chunk_values == 65536);
  // A 2-D field is one chunk where it fits in the context coder's 2^20 values; a Huffman pipeline's chunks
  // stop at 65536.
  CHECK(zcoll::HighRatio<2>{grid_config(1e-2, {601, 1501})}.config().chunk_values == 902112);
  CHECK(zcoll::HighRatio<3>{grid_config(1e-2, {2000, 1000})}.config().chunk_values == (1u << 20));
  CHECK(zcoll::LorenzoHuffman<2>{grid_config(1e-2, {601, 1501})}.config().chunk_values == 65536);
  CHECK(zcoll::HighRatio<2>::longest_chunk_values == (1u << 20));
  CHECK(zcoll::LorenzoHuffman<2>::longest_chunk_values == 65536);
  CHECK(zcoll::FZLight::longest_chunk_values == 65536);
  CHECK_NOTHROW(zcoll::HighRatio<1>{{.chunk_values = 1u << 20}});
  CHECK_THROWS_WITH(zcoll::HighRatio<1>{{.chunk_values = (1u << 20) + 32}},
                    Catch::Contains("chunk_values 1048608 must be a multiple of 32 in [32, 1048576]"));
  CHECK_THROWS_WITH(zcoll::LorenzoHuffman<2>{{.chunk_values = 65568}},
                    Catch::Contains("chunk_values 65568 must be a multiple of 32 in [32, 65536]"));
  CHECK_THROWS_AS(zcoll::FZLight{{.chunk_values = 131072}}, zcoll::argument_error);
  const std::vector<float> data(100, 1.0f);
  CHECK_THROWS_WITH(zcoll::HighRatio<3>{grid_config(1e-3, {10, 11})}.compress(data),
                    Catch::Contains("shape {10, 11} does not hold the input's 100 values"));
}

TEMPLATE_TEST_CASE("HighRatio: chunks past 65536 values keep the bound, with exceptions in blocks past 2048",
                   "[codec][high-ratio]", float, double) {
  using T = TestType;
  const T fill = T(-1e10);
  // 97 rows of 1531 (148507 values): fills, NaN and +-Inf all along, so blocks past the 2048 of a
  // 65536-value chunk hold exceptions; the default chunk of a 2-D field is all of it.
  const auto data = mixed_input<T>(97 * 1531, fill, false);
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .fill_value = static_cast<double>(fill),
                             .shape = {97, 1531}};
  const zcoll::HighRatio<2> whole{config};
  REQUIRE(whole.config().chunk_values == 148512);
  const auto r = check_round_trip(whole, std::span<const T>(data), bits(fill));
  const auto layout = zcoll::read_stream_layout(r.stream, true);
  REQUIRE(layout.header.chunk_count == 1);
  const auto kind = std::to_integer<unsigned>(r.stream[layout.chunk_offset(0)]) & 0x7Fu;
  CHECK(kind == 2);  // coded, with an exception section

  // Explicit long chunks: two of 2^17 values and a short third, on 1, 2 and 3 threads alike.
  config.chunk_values = 1u << 17;
  config.shape = {};
  const auto longer = mixed_input<T>((1u << 18) + 4097, fill, false, 1);
  for (double rel : {1e-2, 1e-5}) {
    config.error_bound = zcoll::relative(rel);
    INFO("relative " << rel);
    check_round_trip(zcoll::HighRatio<1>{config}, std::span<const T>(longer), bits(fill));
    const zcoll::HighRatio<1> codec{config};
    const auto stream = codec.compress(longer);
    for (unsigned threads : {2u, 3u}) {
      std::vector<std::byte> other(codec.template max_compressed_size<T>(longer.size()));
      const auto written = codec.compress(zcoll::exec::Host{.threads = threads}, longer, std::span<std::byte>(other));
      CHECK(std::equal(written.begin(), written.end(), stream.begin(), stream.end()));
    }
  }
  // The longest chunk the format has: one of 2^20 values and a short second.
  const auto longest = mixed_input<T>((1u << 20) + 33, fill, true, 2);
  config.chunk_values = 1u << 20;
  config.error_bound = zcoll::absolute(1e-2);
  check_round_trip(zcoll::HighRatio<1>{config}, std::span<const T>(longest), bits(fill));
}

TEST_CASE("HighRatio: a long chunk's damaged streams are format errors", "[codec][high-ratio]") {
  const auto data = mixed_input<float>(7 * 10001, -1e10f, false);
  const zcoll::HighRatio<2> codec{{.error_bound = zcoll::absolute(1e-3), .fill_value = -1e10, .shape = {7, 10000 + 1}}};
  REQUIRE(codec.config().chunk_values == 70016);
  const auto stream = codec.compress(data);
  std::vector<float> out(data.size());
  // Truncations at a stride (every length would take minutes): each is a format error.
  for (std::size_t n = 0; n < stream.size(); n += 1 + n / 64) {
    INFO("truncated to " << n);
    CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(stream).first(n),
                                     std::span<float>(out)),
                    zcoll::format_error);
  }
  std::mt19937_64 rng(seed);
  std::size_t rejected = 0;
  for (int trial = 0; trial < 300; ++trial) {
    auto damaged = stream;
    damaged[rng() % damaged.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    try {
      (void)codec.decompress<float>(damaged);
    } catch (const zcoll::format_error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 0);
  // A Huffman pipeline refuses a stream that claims chunks longer than its 65536 values: one chunk of
  // 65536 values whose header says the chunk could hold 70016 (still one chunk, the index unchanged).
  const zcoll::LorenzoHuffman<2> huffman{{.error_bound = zcoll::absolute(1e-3), .shape = {64, 1024}}};
  auto claimed = huffman.compress(std::span<const float>(data).first(65536));
  REQUIRE(zcoll::read_stream_header(claimed).chunk_values == 65536);
  const std::uint32_t longer = 70016;
  std::memcpy(claimed.data() + 40, &longer, 4);  // the header's chunk_values
  REQUIRE(zcoll::read_stream_header(claimed).chunk_count == 1);
  CHECK_THROWS_WITH(huffman.decompress<float>(claimed), Catch::Contains("chunks of at most 65536 values, not 70016"));
}

TEMPLATE_TEST_CASE("HighRatio: damaged streams are format errors, bytes do not depend on threads",
                   "[codec][high-ratio]", zcoll::HighRatio<2>, zcoll::HighRatio<3>, zcoll::LorenzoHuffman<2>,
                   zcoll::LorenzoHuffman<3>) {
  using Codec = TestType;
  const Codec codec{grid_config(1e-3, {3, 20, 50}, 1024)};
  const auto data = smooth_field<float>(3, 20, 50);
  check_threads_and_damage(codec, data, 2000);
  const auto stream = codec.compress(data);
  // The grid's extents: 0 is refused; another row length decodes to other values or, where its walk's
  // levels reach a context the model has no table for, is a format error; never out of bounds.
  const auto layout = zcoll::read_stream_layout(stream, true);
  const auto extents_at = static_cast<std::size_t>(layout.parameters.data() - stream.data());
  auto zero_row = stream;
  std::memset(zero_row.data() + extents_at, 0, 8);
  CHECK_THROWS_AS(codec.template decompress<float>(zero_row), zcoll::format_error);
  auto other_row = stream;
  other_row[extents_at] = std::byte{7};
  std::vector<float> restored;
  try {
    restored = codec.template decompress<float>(other_row);
  } catch (const zcoll::format_error&) {
    restored = data;  // refused: as good as decoded here, which is all this checks
  }
  CHECK(restored.size() == data.size());
}

TEST_CASE("HighRatio: every prediction method in the stream decodes; an unknown one is a format error",
          "[codec][high-ratio]") {
  const zcoll::HighRatio<2> codec{grid_config(1e-3, {20, 150}, 1024)};
  const auto data = smooth_field<float>(1, 20, 150);
  const auto stream = codec.compress(data);
  const auto layout = zcoll::read_stream_layout(stream, true);
  const auto method_at = static_cast<std::size_t>(layout.parameters.data() - stream.data()) + 16;
  for (std::uint8_t method = 0; method < 4; ++method) {
    auto other = stream;
    other[method_at] = std::byte{method};
    INFO("method " << int{method});
    if (method <= 2) {
      // Another walk than the encoder's: other values, or a format error where its levels give the coder
      // other contexts than the encoder's; never an out-of-bounds read (ASan) or a fault.
      const bool own = other == stream;
      std::vector<float> restored;
      try {
        restored = codec.decompress<float>(other);
      } catch (const zcoll::format_error&) {
        CHECK_FALSE(own);  // the encoder's own walk always decodes
        continue;
      }
      CHECK(restored.size() == data.size());
    } else {
      CHECK_THROWS_WITH(codec.decompress<float>(other), Catch::Contains("prediction method 3"));
    }
  }
}

TEST_CASE("HighRatio: the compressor picks the walk that codes a field best", "[codec][high-ratio]") {
  // Rows offset by noise, smooth along x: Lorenzo's p = left + up - up-left cancels the offsets exactly,
  // interpolation along y cannot. Smooth in both: interpolation wins at a coarse bound. The stream
  // records the choice (the method byte).
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<float> striped(128 * 512);
  for (std::size_t y = 0; y < 128; ++y) {
    const double row = 50.0 * noise(rng);
    for (std::size_t x = 0; x < 512; ++x) striped[y * 512 + x] = static_cast<float>(row + std::sin(0.01 * static_cast<double>(x)));
  }
  const auto method_of = [](const std::vector<std::byte>& stream) {
    const auto layout = zcoll::read_stream_layout(stream, true);
    return static_cast<zcoll::predict::prediction_method>(layout.parameters[16]);
  };
  const zcoll::HighRatio<2> codec{grid_config(1e-3, {128, 512})};
  CHECK(method_of(codec.compress(striped)) == zcoll::predict::prediction_method::lorenzo);
  const auto smooth = smooth_field<float>(1, 256, 256);
  CHECK(method_of(zcoll::HighRatio<2>{grid_config(1e-2, {256, 256})}.compress(smooth)) !=
        zcoll::predict::prediction_method::lorenzo);
}

TEST_CASE("HighRatio: the sample's cheapest candidate is chosen", "[codec][high-ratio]") {
  // Candidate k predicts residuals spread over 4^k values: the cost grows with k, except that the
  // candidate at place 2 is made the cheapest (all zeros). Its error: 10^6 for the spread 0.
  const std::array<int, 4> candidates = {3, 1, 0, 2};
  std::vector<std::pair<std::size_t, std::size_t>> asked;
  const auto trial = [&](int spread, std::size_t first, std::size_t length, std::int32_t* out) {
    asked.emplace_back(first, length);
    std::mt19937_64 rng(first);
    for (std::size_t i = 0; i < length; ++i) out[i] = spread == 0 ? 0 : static_cast<std::int32_t>(rng() % (1u << (2 * spread)));
    return spread == 0 ? 1e6 : 0.0;
  };
  const auto choose = [&](std::size_t count, double error_weight) {
    return zcoll::detail::choose_predictor_parameters(candidates, zcoll::detail::predictor_sample(count), error_weight, trial);
  };
  CHECK(choose(10'000'000, 0.0) == 0);
  // The sample: 16 pieces of 16384 values spread over the input, the same for every candidate.
  REQUIRE(asked.size() == 4 * 16);
  CHECK(asked.front() == std::pair<std::size_t, std::size_t>{0, 16384});
  CHECK(asked[15].first == 15 * 10'000'000 / 16);
  // A short input is its own sample.
  asked.clear();
  CHECK(choose(1000, 0.0) == 0);
  CHECK(asked.front() == std::pair<std::size_t, std::size_t>{0, 1000});
  // Weighed with its error, the spread 0 costs more than the spread 1's two bits a value (2000 bits in
  // all, about), and less when an error costs less than a bit.
  CHECK(choose(1000, 1.0) == 1);
  CHECK(choose(1000, 1e-4) == 0);
  CHECK(zcoll::detail::residual_cost_bits(std::vector<std::int32_t>(100, 7)) == 0.0);
  CHECK(zcoll::detail::residual_cost_bits(std::vector<std::int32_t>{0, 1, 0, 1}) == 4.0);
  CHECK(zcoll::detail::residual_cost_bits(std::vector<std::int32_t>{1 << 20}) == 32.0);
}

TEST_CASE("HighRatio: tuned for rate and distortion, a coarse bound narrows the coarse levels' bins",
          "[codec][high-ratio]") {
  // A smooth 2-D field at relative 1e-2: most residuals are 0, and the reconstruction's error comes from
  // the predictions; narrower bins on the coarse levels make them better, for a few more bits there.
  STATIC_REQUIRE(zcoll::uses_tuning<zcoll::HighRatio<2>>);
  STATIC_REQUIRE_FALSE(zcoll::uses_tuning<zcoll::FZLight>);
  STATIC_REQUIRE_FALSE(zcoll::uses_tuning<zcoll::LorenzoHuffman<2>>);
  STATIC_REQUIRE_FALSE(zcoll::uses_tuning<zcoll::TopK>);
  const auto field = smooth_field<float>(1, 384, 384);
  zcoll::codec_config config = grid_config(1e-2, {384, 384});
  const zcoll::HighRatio<2> for_ratio{config};
  config.tuning = zcoll::tuning_target::rate_distortion;
  const zcoll::HighRatio<2> for_quality{config};
  const auto widths_of = [](const std::vector<std::byte>& stream) {
    const auto layout = zcoll::read_stream_layout(stream, true);
    zcoll::predict::level_width_table widths{};
    for (std::size_t l = 0; l < widths.size(); ++l) widths[l] = std::to_integer<std::uint8_t>(layout.parameters[21 + l]);
    return widths;
  };
  const auto squared_error = [&](const std::vector<float>& restored) {
    double sum = 0.0;
    for (std::size_t i = 0; i < field.size(); ++i) sum += std::pow(static_cast<double>(field[i]) - restored[i], 2.0);
    return sum;
  };
  const auto plain = check_round_trip(for_ratio, std::span<const float>(field));
  const auto tuned = check_round_trip(for_quality, std::span<const float>(field));
  CHECK(widths_of(plain.stream) == zcoll::predict::uniform_widths);
  const auto narrowed = widths_of(tuned.stream);
  INFO("level widths " << int{narrowed[0]} << ", " << int{narrowed[1]} << ", " << int{narrowed[2]} << ", " << int{narrowed[3]});
  CHECK(narrowed != zcoll::predict::uniform_widths);
  // Less error, the same bound. (Not necessarily more bytes: the coder codes each level's residuals in
  // contexts of their own, so the coarse levels' narrower bins cost less than the finer levels' better
  // predictions save on this field.)
  CHECK(squared_error(tuned.restored) < 0.8 * squared_error(plain.restored));
  CHECK(tuned.header.error_bound == plain.header.error_bound);
  // The tuning is the compressor's: any HighRatio<2> decodes either stream, to the same values.
  CHECK(for_ratio.decompress<float>(tuned.stream) == tuned.restored);
  // At a fine bound the predictions are good to within a bin already: uniform bins again.
  config.error_bound = zcoll::relative(1e-5);
  CHECK(widths_of(zcoll::HighRatio<2>{config}.compress(field)) == zcoll::predict::uniform_widths);
  // Threads, truncations and bit flips, on the narrowed walk.
  check_threads_and_damage(for_quality, field, 200);
}

TEST_CASE("HighRatio: values exactly the bound from their reconstruction are coded, not stored exactly",
          "[codec][high-ratio]") {
  // Integer rows, their first half zeros (a seismic section's dead traces): the walk's rounding leaves
  // every zero whose prediction lies half a bin away exactly the bound from its reconstruction. At
  // 457.23, eb / 8 rounds up in f32, so the stream states the bound of the f32 code step just below it
  // (8 x 57.1537476 = 457.229980...), and those zeros keep it exactly.
  const std::size_t rows = 64, cols = 256;
  std::vector<float> field(rows * cols, 0.0f);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> noise(-300, 300);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = cols / 2; c < cols; ++c) {
      field[r * cols + c] = std::round(3000.0f * std::sin(0.05f * static_cast<float>(r + c))) + static_cast<float>(noise(rng));
    }
  }
  using Coder = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Interpolation<2>, zcoll::encode::ContextAns>;
  const Coder codec({.error_bound = zcoll::absolute(457.23), .shape = {rows, cols}});
  REQUIRE(static_cast<double>(static_cast<float>(457.23 / 8)) * 8 > 457.23);  // the case this test is about
  const auto result = check_round_trip(codec, std::span<const float>(field));
  CHECK(result.header.error_bound == 8.0 * static_cast<double>(std::nextafter(static_cast<float>(457.23 / 8), 0.0f)));
  const auto stream = codec.compress(std::span<const float>(field));
  const auto layout = zcoll::read_stream_layout(stream, true);
  REQUIRE(layout.header.chunk_count == 1);
  CHECK(stream[layout.chunk_offset(0)] == static_cast<std::byte>(zcoll::detail::chunk_kind::coded));
  // On f64 the code step 457.23 / 8 is exact: the stated bound is the requested one.
  const std::vector<double> wide(field.begin(), field.end());
  CHECK(check_round_trip(codec, std::span<const double>(wide)).header.error_bound == 457.23);
}
