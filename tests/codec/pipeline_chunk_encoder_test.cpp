// The pipeline's contract with chunk encoders (encode/concepts.hpp): statistics over every chunk, a model in
// the parameter section, chunk-at-a-time coding, verbatim fallback, exceptions. Exercised with a small
// fixed-width encoder defined here, so the pipeline's side is tested apart from Huffman and vector-LZ.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "support/codec_checks.hpp"
#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/core/bit_io.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

/// Every residual of the stream in the same number of bits: the widest zigzag code of any chunk, which
/// only statistics over the whole input can give.
struct FixedWidth {
  static constexpr std::uint8_t id = 3;
  static constexpr const char* name = "fixed-width";
  static constexpr bool needs_statistics = true;
  static constexpr std::size_t max_model_bytes = 1;

  struct statistics {
    std::uint32_t widest = 0;
    void add(std::span<const std::int32_t> residuals) {
      for (std::int32_t r : residuals) widest = std::max(widest, static_cast<std::uint32_t>(std::bit_width(zigzag(r))));
    }
    void merge(const statistics& other) { widest = std::max(widest, other.widest); }
  };
  struct model {
    std::uint8_t width = 0;
  };

  static std::uint32_t zigzag(std::int32_t r) {
    return (static_cast<std::uint32_t>(r) << 1) ^ static_cast<std::uint32_t>(r >> 31);
  }
  static std::uint32_t unzigzag(std::uint32_t z) { return (z >> 1) ^ (0u - (z & 1)); }

  static model make_model(const statistics& s, const zcoll::encode::no_settings&, const zcoll::encode::chunk_layout&) {
    return {static_cast<std::uint8_t>(s.widest)};
  }
  static std::size_t model_size_bytes(const model&) { return 1; }
  static void write_model(const model& m, zcoll::byte_writer& out) { out.write(m.width); }
  static model read_model(zcoll::byte_reader& in) {
    const auto width = in.read<std::uint8_t>("fixed-width model");
    if (width > 32) throw zcoll::format_error("fixed-width: width > 32");
    return {width};
  }
  static std::optional<std::size_t> encode_chunk(const model& m, std::span<const std::int32_t> residuals,
                                                 std::span<std::byte> out) {
    const std::size_t bytes = (residuals.size() * m.width + 7) / 8;
    if (bytes > out.size()) return std::nullopt;
    zcoll::bit_writer bits(out);
    for (std::int32_t r : residuals) bits.write(zigzag(r), m.width);
    return bits.flush();
  }
  static std::size_t decode_chunk(const model& m, std::span<const std::byte> in, std::span<std::uint32_t> residuals) {
    zcoll::bit_reader bits(in);
    for (auto& r : residuals) r = unzigzag(static_cast<std::uint32_t>(bits.read(m.width)));
    return bits.bytes_consumed();
  }
};
static_assert(zcoll::encode::chunk_encoder<FixedWidth>);

using FixedWidthCodec = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, FixedWidth>;
static_assert(zcoll::codec<FixedWidthCodec>);
static_assert(FixedWidthCodec::codes_chunks && !zcoll::FZLight::codes_chunks);

}  // namespace

TEMPLATE_TEST_CASE("Chunk encoder: round trips within the bound, adversarial inputs included", "[codec][chunk_encoder]",
                   float, double) {
  using T = TestType;
  const T fill = T(-1e10);
  for (std::uint32_t chunk_values : {32u, 96u, 4096u}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{5000}}) {
      const FixedWidthCodec codec{
          {.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk_values, .fill_value = static_cast<double>(fill)}};
      const auto data = mixed_input<T>(n, fill);
      INFO("chunk " << chunk_values << ", " << n << " values");
      check_round_trip(codec, std::span<const T>(data), bits(fill));
    }
  }
}

TEST_CASE("Chunk encoder: the model comes from every chunk and sits in the parameter section", "[codec][chunk_encoder]") {
  // Chunk 0 is flat (width 1 would do), chunk 2 needs wide residuals: the model must be the widest.
  std::vector<float> data(3 * 256, 1.0f);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f);
  for (std::size_t i = 512; i < data.size(); ++i) data[i] = wide(rng);
  const FixedWidthCodec codec{{.error_bound = zcoll::absolute(0.01), .chunk_values = 256}};
  std::vector<std::byte> first;
  for (unsigned threads : {1u, 2u, 3u}) {
    std::vector<std::byte> stream(codec.max_compressed_size<float>(data.size()));
    const auto written = codec.compress(zcoll::exec::Host{.threads = threads}, data, std::span<std::byte>(stream));
    const auto layout = zcoll::read_stream_layout(written, true);
    REQUIRE(layout.parameters.size() == 1);
    const auto width = std::to_integer<unsigned>(layout.parameters[0]);
    // |residual| up to 200 / 0.02 = 10^4 codes: 15 bits with the zigzag sign.
    CHECK(width >= 14);
    CHECK(width <= 16);
    CHECK(layout.first_chunk_offset == zcoll::stream_prefix_size_bytes(3) + 4 + 1);
    std::vector<float> restored(data.size());
    codec.decompress(zcoll::exec::Host{.threads = threads}, written, restored);
    require_bound_on_every_element(std::span<const float>(data), std::span<const float>(restored), 0.01);
    // The bytes do not depend on the thread count.
    if (threads == 1) first.assign(written.begin(), written.end());
    CHECK(std::equal(written.begin(), written.end(), first.begin(), first.end()));
  }
}

TEST_CASE("Chunk encoder: a chunk the encoder cannot fit is stored verbatim", "[codec][chunk_encoder]") {
  // Random data at a tiny bound: 32-bit-wide codes do not beat 4-byte floats.
  std::vector<float> data(1000);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  for (auto& v : data) v = u(rng);
  const FixedWidthCodec codec{{.error_bound = zcoll::absolute(1e-9), .chunk_values = 256}};
  const auto stream = codec.compress(data);
  CHECK(stream.size() <= codec.max_compressed_size<float>(data.size()));
  const auto restored = codec.decompress<float>(stream);
  require_bit_identical(std::span<const float>(data), std::span<const float>(restored));
}

TEST_CASE("Chunk encoder: truncated streams and damaged parameter sections are format errors", "[codec][chunk_encoder]") {
  std::vector<double> data(700);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.05 * static_cast<double>(i));
  const FixedWidthCodec codec{{.error_bound = zcoll::absolute(1e-4), .chunk_values = 256}};
  const auto stream = codec.compress(data);
  for (std::size_t n = 0; n < stream.size(); ++n) {
    INFO("truncated to " << n);
    CHECK_THROWS_AS(codec.decompress<double>(std::span<const std::byte>(stream).first(n)), zcoll::format_error);
  }
  const std::size_t section = zcoll::stream_prefix_size_bytes(3);
  SECTION("section size larger than the stream") {
    auto damaged = stream;
    poke(damaged, section, std::uint32_t{1} << 30);
    CHECK_THROWS_AS(codec.decompress<double>(damaged), zcoll::format_error);
  }
  SECTION("section with a byte the model does not read") {
    auto damaged = stream;
    poke(damaged, section, std::uint32_t{2});
    damaged.insert(damaged.begin() + static_cast<std::ptrdiff_t>(section + 5), std::byte{0});
    CHECK_THROWS_AS(codec.decompress<double>(damaged), zcoll::format_error);
  }
  SECTION("a model the encoder rejects") {
    auto damaged = stream;
    damaged[section + 4] = std::byte{33};
    CHECK_THROWS_AS(codec.decompress<double>(damaged), zcoll::format_error);
  }
}

TEMPLATE_TEST_CASE("Chunk encoder: residuals wait in the output buffer, whatever its alignment and the thread count",
                   "[codec][chunk_encoder]", float, double) {
  // The statistics pass keeps every chunk's residuals in `out` (Pipeline::chunk_residuals), where the
  // coding pass then writes the chunks: chunks that code well and chunks stored verbatim in turn make the
  // writes both stay clear of and reach into the residuals still to be read. A buffer of exactly
  // max_compressed_size that ends at a guard page, starting at each of four alignments, must give the
  // 1-thread stream on every thread count.
  using T = TestType;
  if (!guarded_buffer<>::available) {
    WARN("no guard pages on this platform: test skipped");
    return;
  }
  std::mt19937_64 rng(seed + 11);
  std::uniform_real_distribution<double> noise(-1e6, 1e6);
  for (std::uint32_t chunk_values : {32u, 96u, 256u}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{2000}, std::size_t{4133}}) {
      std::vector<T> data(n);
      for (std::size_t i = 0; i < n; ++i) {
        const bool noisy = (i / chunk_values) % 3 == 1;
        data[i] = static_cast<T>(noisy ? noise(rng) : std::sin(0.01 * static_cast<double>(i)));
      }
      const auto check = [&](const auto& codec) {
        INFO(codec.name() << ", chunk " << chunk_values << ", " << n << " values");
        const auto reference = codec.compress(data);
        const std::size_t max = codec.template max_compressed_size<T>(n);
        for (unsigned threads : {1u, 2u, 3u, 5u}) {
          for (std::size_t shift = 0; shift < 4; ++shift) {
            INFO(threads << " threads, output shifted by " << shift << " bytes");
            guarded_buffer<> out(max + shift);
            const auto written = codec.compress(zcoll::exec::Host{.threads = threads}, std::span<const T>(data),
                                                out.span().subspan(shift));
            CHECK(std::equal(written.begin(), written.end(), reference.begin(), reference.end()));
          }
        }
        std::vector<T> restored(n);
        codec.decompress(zcoll::exec::Host{}, reference, restored);
        require_bound_on_every_element(std::span<const T>(data), std::span<const T>(restored), 1e-3);
      };
      check(FixedWidthCodec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk_values}});
      check(zcoll::HighRatio<1>{{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk_values}});
    }
  }
}
