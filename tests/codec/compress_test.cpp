// zcoll::compress / decompress (codec/compress.hpp), the one call for every codec: on the host they give
// each codec's own bytes and values, the batch forms pack streams as the CUDA driver does, and a bad
// batch is refused naming the argument (the device forms are checked in pipeline_cuda_test.cu and, on
// the host team, in detail/pipeline_tile_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/registry.hpp"

using Catch::Matchers::Contains;

namespace {

std::vector<float> field(std::size_t n, double phase = 0.0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.05 * static_cast<double>(i) + phase) * 3.0);
  return v;
}

}  // namespace

TEST_CASE("zcoll::compress and decompress give every registered codec's own bytes and values", "[codec][compress]") {
  const auto data = field(1024);
  zcoll::for_each_registered_codec([&]<class Entry>() {
    using Codec = typename Entry::type;
    INFO("codec " << Entry::name);
    const Codec codec{{.error_bound = zcoll::absolute(1e-2), .chunk_values = 256, .shape = {64, 16}}};
    std::vector<std::byte> out(codec.template max_compressed_size<float>(data.size()));
    const auto written = zcoll::compress(zcoll::exec::Host{.threads = 2}, codec, data, std::span<std::byte>(out));
    const auto expected = codec.compress(data);
    REQUIRE(std::vector<std::byte>(written.begin(), written.end()) == expected);
    CHECK(zcoll::compress(codec, data) == expected);
    std::vector<float> back(data.size());
    zcoll::decompress(zcoll::exec::Host{}, codec, written, back);
    CHECK(back == codec.template decompress<float>(expected));
    CHECK(zcoll::decompress<float>(codec, written) == back);
    // The state form serves every codec: a stateless one takes a no_state.
    zcoll::state_of<Codec> state;
    CHECK(zcoll::compress(codec, state, data) == expected);
  });
}

TEST_CASE("zcoll::compress with a state carries it from call to call", "[codec][compress]") {
  const zcoll::ErrorFeedback<zcoll::FZLight> codec{{.error_bound = zcoll::absolute(0.5)}};
  zcoll::codec_state<decltype(codec)> state;
  const auto x = field(500);
  const auto first = zcoll::compress(codec, state.at(7), x);
  CHECK(first == zcoll::compress(codec, x));  // a fresh state: the plain call's bytes
  const auto second = zcoll::compress(codec, state.at(7), x);
  CHECK(second != first);  // the residual of the first step is added to the second
  CHECK(state.at(7).residual_values<float>().size() == x.size());
}

TEST_CASE("compress_batch packs streams one after another, as the CUDA driver does", "[codec][compress][batch]") {
  const zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-3), .chunk_values = 512}};
  std::vector<float> values;
  std::vector<std::size_t> counts = {1000, 0, 1, 4097, 33};
  for (std::size_t s = 0; s < counts.size(); ++s) {
    const auto block = field(counts[s], static_cast<double>(s));
    values.insert(values.end(), block.begin(), block.end());
  }
  std::size_t room = 0;
  for (const auto count : counts) room += codec.max_compressed_size<float>(count);
  CHECK(zcoll::batch_max_compressed_size<float>(codec, std::span<const std::size_t>(counts)) == room);
  std::vector<std::byte> out(room);
  std::vector<std::uint64_t> bytes(counts.size()), offset(counts.size());
  const auto written = zcoll::compress_batch(zcoll::exec::Host{.threads = 2}, codec, std::span<const float>(values),
                                             std::span<const std::size_t>(counts), std::span<std::byte>(out),
                                             std::span<std::uint64_t>(bytes));
  std::size_t first = 0, at = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    INFO("stream " << s);
    const auto alone = codec.compress(std::span<const float>(values).subspan(first, counts[s]));
    REQUIRE(bytes[s] == alone.size());
    CHECK(std::vector<std::byte>(out.begin() + static_cast<std::ptrdiff_t>(at),
                                 out.begin() + static_cast<std::ptrdiff_t>(at + alone.size())) == alone);
    offset[s] = at;
    first += counts[s];
    at += alone.size();
  }
  CHECK(written.size() == at);
  std::vector<float> back(values.size());
  zcoll::decompress_batch(zcoll::exec::Host{}, codec, std::span<const std::byte>(written),
                          std::span<const std::uint64_t>(offset), std::span<const std::uint64_t>(bytes),
                          std::span<float>(back), std::span<const std::size_t>(counts));
  for (std::size_t i = 0; i < values.size(); ++i) REQUIRE(std::fabs(back[i] - values[i]) <= 6.0f * 1e-3f + 1e-6f);

  SECTION("a batch that does not add up is refused, naming the argument") {
    const std::vector<std::size_t> more = {1000, 0, 1, 4097, 34};
    CHECK_THROWS_WITH(zcoll::compress_batch(zcoll::exec::Host{}, codec, std::span<const float>(values),
                                            std::span<const std::size_t>(more), std::span<std::byte>(out),
                                            std::span<std::uint64_t>(bytes)),
                      Contains("values holds 5131 values, counts add up to 5132"));
    CHECK_THROWS_WITH(zcoll::compress_batch(zcoll::exec::Host{}, codec, std::span<const float>(values),
                                            std::span<const std::size_t>(counts), std::span<std::byte>(out).first(room - 1),
                                            std::span<std::uint64_t>(bytes)),
                      Contains("out has " + std::to_string(room - 1) + " bytes"));
    CHECK_THROWS_WITH(zcoll::compress_batch(zcoll::exec::Host{}, codec, std::span<const float>(values),
                                            std::span<const std::size_t>(counts), std::span<std::byte>(out),
                                            std::span<std::uint64_t>(bytes).first(4)),
                      Contains("stream_bytes holds 4 entries, counts 5"));
    auto far = offset;
    far[4] = written.size();
    CHECK_THROWS_WITH(zcoll::decompress_batch(zcoll::exec::Host{}, codec, std::span<const std::byte>(written),
                                              std::span<const std::uint64_t>(far), std::span<const std::uint64_t>(bytes),
                                              std::span<float>(back), std::span<const std::size_t>(counts)),
                      Contains("stream 4 at [" + std::to_string(written.size()) + ", +"));
  }
  SECTION("a damaged stream is a format_error that names it") {
    std::vector<std::byte> damaged(written.begin(), written.end());
    damaged[offset[3] + 5] = std::byte{0x55};  // stream 3's codec kind
    CHECK_THROWS_AS(zcoll::decompress_batch(zcoll::exec::Host{}, codec, std::span<const std::byte>(damaged),
                                            std::span<const std::uint64_t>(offset), std::span<const std::uint64_t>(bytes),
                                            std::span<float>(back), std::span<const std::size_t>(counts)),
                    zcoll::format_error);
    CHECK_THROWS_WITH(zcoll::decompress_batch(zcoll::exec::Host{}, codec, std::span<const std::byte>(damaged),
                                              std::span<const std::uint64_t>(offset), std::span<const std::uint64_t>(bytes),
                                              std::span<float>(back), std::span<const std::size_t>(counts)),
                      Contains("decompress_batch: stream 3: "));
  }
}

namespace {

/// 16-bit inputs of every kind: smooth values, ±largest finite, ±Inf, NaN, subnormals, zeros; `n` values.
template <class H>
std::vector<H> adversarial_halves(std::size_t n) {
  std::vector<H> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = H(static_cast<float>(std::sin(0.05 * static_cast<double>(i)) * 3.0));
  const float largest = static_cast<float>(H::from_bits(static_cast<std::uint16_t>(H::format::max_finite_code)));
  const float specials[] = {largest, -largest, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), static_cast<float>(H::from_bits(1)),
                            -static_cast<float>(H::from_bits(3)), 0.0f, -0.0f};
  for (std::size_t k = 0; k < std::size(specials) && k * 37 < n; ++k) v[k * 37] = H(specials[k]);
  return v;
}

template <class H, class Codec>
void check_half_round_trip(const Codec& codec, std::size_t n) {
  INFO(Codec::name() << (std::is_same_v<H, zcoll::bfloat16> ? " bf16" : " f16") << " n=" << n);
  const auto in = adversarial_halves<H>(n);
  std::vector<std::byte> out(codec.template max_compressed_size<float>(n));
  const auto written = zcoll::compress(zcoll::exec::Host{.threads = 2}, codec, in, std::span<std::byte>(out));
  // The stream is the float stream of the same values.
  std::vector<float> wide(n);
  zcoll::widen<H>(in, wide);
  REQUIRE(std::vector<std::byte>(written.begin(), written.end()) == zcoll::compress(codec, wide));
  std::vector<H> back(n);
  const double rounding = zcoll::decompress(zcoll::exec::Host{}, codec, written, back);
  const double stated = zcoll::read_stream_header(written).error_bound + rounding;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<float>(in[i]), y = static_cast<float>(back[i]);
    if (std::isnan(x)) {
      REQUIRE(std::isnan(y));
    } else if (std::isinf(x)) {
      REQUIRE(y == x);
    } else if (!(std::abs(x - y) <= stated)) {
      FAIL("element " << i << ": " << y << " for " << x << ", stated bound " << stated);
    }
  }
}

}  // namespace

TEST_CASE("16-bit values: compressed as their floats, decompressed within the stated bound plus the final rounding",
          "[codec][compress][half]") {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{4099}}) {
    const zcoll::FZLight fz{{.error_bound = zcoll::absolute(1e-2)}};
    check_half_round_trip<zcoll::bfloat16>(fz, n);
    check_half_round_trip<zcoll::float16>(fz, n);
    const zcoll::HighRatio<1> high{{.error_bound = zcoll::relative(1e-3)}};
    check_half_round_trip<zcoll::bfloat16>(high, n);
    check_half_round_trip<zcoll::float16>(high, n);
    check_half_round_trip<zcoll::float16>(zcoll::Identity{}, n);
  }
  // A decoded value that rounds past the type's largest finite value: 65504 on the grid of 2 x 64 decodes
  // to 65536, which is +Inf in f16; the returned rounding says so.
  const zcoll::FZLight coarse{{.error_bound = zcoll::absolute(64.0)}};
  const auto stream = zcoll::compress(coarse, std::vector<float>(64, 65504.0f));
  std::vector<zcoll::float16> back(64);
  const double rounding = zcoll::decompress(zcoll::exec::Host{}, coarse, stream, back);
  REQUIRE(std::isinf(static_cast<float>(back[0])));
  CHECK(rounding == std::numeric_limits<double>::infinity());
}
