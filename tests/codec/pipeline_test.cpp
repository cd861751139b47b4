#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/codec_checks.hpp"
#include "support/reference_decoder.hpp"
#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

static_assert(zcoll::codec<zcoll::FZLight>);
static_assert(zcoll::codec<zcoll::Identity>);

/// The bounds every codec test sweeps; "lossless" is absolute(0).
struct bound_case {
  const char* name;
  zcoll::bound bound;
};

const std::vector<bound_case>& swept_bounds() {
  static const std::vector<bound_case> cases{{"absolute 1e-3", zcoll::absolute(1e-3)},
                                             {"absolute 0.5", zcoll::absolute(0.5)},
                                             {"relative 1e-2", zcoll::relative(1e-2)},
                                             {"relative 1e-4", zcoll::relative(1e-4)},
                                             {"lossless", zcoll::absolute(0.0)}};
  return cases;
}

/// An adversarial input of length n.
template <class T>
struct input_kind {
  const char* name;
  std::function<std::vector<T>(std::size_t n, std::mt19937_64& rng)> make;
};

template <class T>
std::vector<input_kind<T>> input_kinds() {
  using lim = std::numeric_limits<T>;
  auto generate = [](std::size_t n, auto&& f) {
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = f(i);
    return v;
  };
  return {
      {"smooth sine",
       [=](std::size_t n, std::mt19937_64&) {
         return generate(n, [](std::size_t i) {
           const double t = static_cast<double>(i);
           return static_cast<T>(10.0 * std::sin(0.01 * t) + 0.5 * std::sin(0.37 * t));
         });
       }},
      {"uniform random",
       [=](std::size_t n, std::mt19937_64& rng) {
         std::uniform_real_distribution<double> u(-100.0, 100.0);
         return generate(n, [&](std::size_t) { return static_cast<T>(u(rng)); });
       }},
      {"constant", [=](std::size_t n, std::mt19937_64&) { return std::vector<T>(n, T(3.14159)); }},
      {"zeros", [=](std::size_t n, std::mt19937_64&) { return std::vector<T>(n, T(0)); }},
      {"alternating signs",
       [=](std::size_t n, std::mt19937_64&) {
         return generate(n, [](std::size_t i) {
           return static_cast<T>((i % 2 ? -1.0 : 1.0) * (1.0 + 1e-3 * static_cast<double>(i)));
         });
       }},
      {"NaN sprinkled",
       [=](std::size_t n, std::mt19937_64& rng) {
         const T payload_nan = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(bits(lim::quiet_NaN()) | 0x2A));
         return generate(n, [&](std::size_t i) {
           if (i % 17 == 3) return lim::quiet_NaN();
           if (i % 23 == 5) return -lim::quiet_NaN();
           if (i % 29 == 7) return payload_nan;
           if (i >= 100 && i < 140) return lim::quiet_NaN();  // a run across a block edge
           return static_cast<T>(std::sin(0.05 * static_cast<double>(i)) + 1e-4 * static_cast<double>(rng() % 100));
         });
       }},
      {"plus and minus Inf",
       [=](std::size_t n, std::mt19937_64&) {
         return generate(n, [](std::size_t i) {
           if (i % 13 == 0) return lim::infinity();
           if (i % 13 == 6) return -lim::infinity();
           if (i >= 64 && i < 128) return lim::infinity();  // a whole block
           return static_cast<T>(5.0 * std::cos(0.02 * static_cast<double>(i)));
         });
       }},
      {"denormals",
       [=](std::size_t n, std::mt19937_64& rng) {
         return generate(n, [&](std::size_t) {
           return static_cast<T>(static_cast<int>(rng() % 2001) - 1000) * lim::denorm_min();
         });
       }},
      {"plus and minus max",
       [=](std::size_t n, std::mt19937_64&) {
         return generate(n, [](std::size_t i) {
           switch (i % 5) {
             case 0: return lim::max();
             case 1: return lim::lowest();
             case 2: return std::nextafter(lim::max(), T(0));
             default: return static_cast<T>(static_cast<double>(i % 100));
           }
         });
       }},
      {"huge range beyond the code range",
       [=](std::size_t n, std::mt19937_64& rng) {
         return generate(n, [&](std::size_t i) {
           if (i % 7 == 0) return static_cast<T>(1e30);
           if (i % 11 == 0) return static_cast<T>(-1e30);
           return static_cast<T>(1e-3 * static_cast<double>(rng() % 1000));
         });
       }},
      {"random bit patterns",
       [=](std::size_t n, std::mt19937_64& rng) {
         return generate(n, [&](std::size_t) { return std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(rng())); });
       }},
      {"mixed with a fill value undeclared",
       [=](std::size_t n, std::mt19937_64&) { return mixed_input<T>(n, T(-1e10)); }},
  };
}

}  // namespace

TEMPLATE_TEST_CASE("FZLight round trip keeps the bound on every element", "[codec][pipeline]", float, double) {
  using T = TestType;
  const std::uint32_t chunk_values = GENERATE(32u, 64u, 4096u);
  const std::size_t bound_index = GENERATE(range<std::size_t>(0, 5));
  const auto& bc = swept_bounds()[bound_index];
  const zcoll::FZLight codec{{.error_bound = bc.bound, .chunk_values = chunk_values}};
  std::mt19937_64 rng(seed);
  for (const auto& kind : input_kinds<T>()) {
    for (std::size_t n : {0, 1, 31, 33, 4095, 4097, 10007}) {
      const auto data = kind.make(n, rng);
      INFO(type_name<T>() << ", chunk " << chunk_values << ", " << bc.name << ", " << kind.name << ", n = " << n);
      const auto r = check_round_trip(codec, std::span<const T>(data));
      REQUIRE(r.header.error_bound == expected_header_bound(bc.bound, std::span<const T>(data)));
      if (bc.bound.value == 0.0) REQUIRE(r.header.error_bound == 0.0);
      // The documented format decodes to the same values.
      const auto ref = reference_decode<T>(r.stream, reference_predictor::lorenzo, reference_encoder::bitshuffle);
      require_bit_identical(std::span<const T>(ref.values), std::span<const T>(r.restored));
    }
  }
}

TEST_CASE("FZLight compresses a smooth signal", "[codec][pipeline]") {
  std::vector<float> data(10000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 10.0f * std::sin(0.01f * static_cast<float>(i));
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3)}};
  const auto report = zcoll::evaluate(codec, zcoll::exec::Host{}, std::span<const float>(data));
  CHECK(report.error.bound_held());
  CHECK(report.error.max_abs_error <= 1e-3);
  CHECK(report.error_bound == 1e-3);
  CHECK(report.error.compared_values == data.size());
  CHECK(report.input_bytes == data.size() * sizeof(float));
  CHECK(report.ratio > 4.0);
  CHECK(report.ratio == Approx(static_cast<double>(report.input_bytes) / static_cast<double>(report.compressed_bytes)));
  CHECK(report.codec == "linear+lorenzo1d+bitshuffle");
}

TEMPLATE_TEST_CASE("Bounds no quantizer step honours fall back to lossless", "[codec][pipeline]", float, double) {
  using T = TestType;
  const auto data = mixed_input<T>(3000, T(0), /*extremes=*/false);
  // 2eb underflows T, or 0.5 / eb overflows it, or 2eb overflows it.
  const double eb = GENERATE(1e-320, std::is_same_v<T, float> ? 1e-40 : 1e-310, std::is_same_v<T, float> ? 1e39 : 1e308);
  INFO("absolute " << eb);
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb), .chunk_values = 256}};
  const auto r = check_round_trip(codec, std::span<const T>(data));
  CHECK(r.header.error_bound == 0.0);
  require_bit_identical(std::span<const T>(data), std::span<const T>(r.restored));
  SECTION("relative bounds over ranges that overflow or vanish") {
    const T max = std::numeric_limits<T>::max();
    const std::vector<T> extremes{max, -max, T(1), T(2)};
    const auto e = check_round_trip(zcoll::FZLight{{.error_bound = zcoll::relative(1.0), .chunk_values = 32}},
                                    std::span<const T>(extremes));
    CHECK(e.header.error_bound == expected_header_bound(zcoll::relative(1.0), std::span<const T>(extremes)));
    const std::vector<T> subnormal{std::numeric_limits<T>::denorm_min(), T(0), 3 * std::numeric_limits<T>::denorm_min()};
    const auto s = check_round_trip(zcoll::FZLight{{.error_bound = zcoll::relative(1e-2), .chunk_values = 32}},
                                    std::span<const T>(subnormal));
    CHECK(s.header.error_bound == 0.0);
  }
}

TEMPLATE_TEST_CASE("Declared fill values survive bit-exactly and leave the relative range", "[codec][pipeline][fill]",
                   float, double) {
  using T = TestType;
  const double fraction = GENERATE(1e-2, 1e-4);
  const std::uint32_t chunk_values = GENERATE(64u, 4096u);

  auto check_fill = [&](const std::vector<T>& data, double fill_value) {
    const T fill = static_cast<T>(fill_value);
    const zcoll::FZLight codec{
        {.error_bound = zcoll::relative(fraction), .chunk_values = chunk_values, .fill_value = fill_value}};
    const auto r = check_round_trip(codec, std::span<const T>(data), bits(fill));
    // The header bound is fraction * range of the values that are not fill, rounded down.
    const double range = reference_range(std::span<const T>(data), bits(fill));
    REQUIRE(range > 0.0);
    CHECK(r.header.error_bound == zcoll::absolute_bound(zcoll::relative(fraction), range));
    CHECK_FALSE(std::signbit(std::fma(fraction, range, -r.header.error_bound)));
    CHECK(r.header.error_bound > 0.0);
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (bits(data[i]) == bits(fill)) REQUIRE(bits(r.restored[i]) == bits(fill));
    }
    return r;
  };

  SECTION("-1e10 in runs and isolated points") {
    const auto data = mixed_input<T>(10007, T(-1e10), /*extremes=*/false);
    const auto r = check_fill(data, -1e10);
    CHECK(r.header.error_bound < 50 * fraction);  // the range is about 46, not 1e10
  }
  SECTION("a NaN fill value; other NaN payloads are outliers") {
    std::vector<T> data = mixed_input<T>(5000, T(0), /*extremes=*/false);
    const T fill = static_cast<T>(std::numeric_limits<double>::quiet_NaN());
    const T other_nan = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(bits(fill) | 3));
    for (std::size_t i = 300; i < 700; ++i) data[i] = fill;
    for (std::size_t i = 2; i < data.size(); i += 37) data[i] = fill;
    for (std::size_t i = 11; i < data.size(); i += 101) data[i] = other_nan;
    for (std::size_t i = 13; i < data.size(); i += 103) data[i] = -fill;
    const auto r = check_fill(data, std::numeric_limits<double>::quiet_NaN());
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (std::isnan(data[i])) REQUIRE(bits(r.restored[i]) == bits(data[i]));
    }
  }
  SECTION("0.0 as the fill value, which is also an ordinary value; -0.0 is not fill") {
    std::vector<T> data(6000);
    for (std::size_t i = 0; i < data.size(); ++i) {
      data[i] = static_cast<T>(std::round(4.0 * std::sin(0.01 * static_cast<double>(i))) / 4.0);  // many exact zeros
    }
    for (std::size_t i = 7; i < data.size(); i += 50) data[i] = T(-0.0);
    const auto r = check_fill(data, 0.0);
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < data.size(); ++i) {
      if (bits(data[i]) == bits(T(0))) ++zeros;
      if (bits(data[i]) == bits(T(-0.0))) REQUIRE(r.restored[i] == T(0));  // within the bound; the sign may go
    }
    CHECK(zeros > 100);
  }
  SECTION("-0.0 as the fill value survives with its sign") {
    std::vector<T> data = mixed_input<T>(3000, T(-0.0), /*extremes=*/false);
    for (std::size_t i = 1; i < data.size(); i += 9) data[i] = T(0.0);
    check_fill(data, -0.0);
  }
  SECTION("a declared fill value absent from the data") {
    const auto data = mixed_input<T>(4000, T(1.5), /*extremes=*/false);
    std::vector<T> without(data);
    for (auto& x : without) {
      if (x == T(1.5)) x = T(1.25);
    }
    check_fill(without, -1e10);
  }
  SECTION("only fill values") {
    const std::vector<T> data(3000, T(-1e10));
    const zcoll::FZLight codec{
        {.error_bound = zcoll::relative(fraction), .chunk_values = chunk_values, .fill_value = -1e10}};
    const auto r = check_round_trip(codec, std::span<const T>(data), bits(T(-1e10)));
    CHECK(r.header.error_bound == 0.0);  // no range: lossless
  }
}

// pipeline.hpp: "A chunk whose coded form would not be smaller than its values is stored verbatim." The
// encoder gives up as soon as less than E::max_block_bytes (133) of the verbatim size remains, so f32 chunks
// of 32 values (129 bytes verbatim) and short last chunks are verbatim however well they would code.
TEST_CASE("A chunk whose coded form is smaller than its values is coded, not stored verbatim",
          "[codec][pipeline]") {
  SECTION("chunks of 32 f32 values") {
    const std::vector<float> zeros(4096, 0.0f);
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 32}};
    const auto r = check_round_trip(codec, std::span<const float>(zeros));
    const auto ref = reference_decode<float>(r.stream, reference_predictor::lorenzo, reference_encoder::bitshuffle);
    CHECK(ref.census.verbatim_chunks == 0);  // each chunk codes in 2 bytes, verbatim takes 129
  }
  SECTION("a last chunk of 33 f32 values") {
    const std::vector<float> zeros(4096 + 33, 0.0f);
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096}};
    const auto r = check_round_trip(codec, std::span<const float>(zeros));
    const auto ref = reference_decode<float>(r.stream, reference_predictor::lorenzo, reference_encoder::bitshuffle);
    CHECK(ref.census.verbatim_chunks == 0);  // the last chunk codes in 3 bytes, verbatim takes 133
  }
}

// error_bound.hpp: a relative bound is "rounded down so the stated guarantee holds exactly", the guarantee
// being |x - x'| <= fraction * (max - min). For f64 data value_extent::range() rounds max - min to nearest
// first, so when that subtraction rounds up the stated bound can exceed fraction * (max - min).
TEST_CASE("A relative bound on f64 data is at most fraction * (max - min) in exact arithmetic",
          "[codec][pipeline]") {
  __extension__ typedef __float128 quad;  // 113-bit significand: max - min is exact in it here
  std::mt19937_64 rng(seed + 11);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::size_t over = 0, checked = 0;
  double worst_hi = 0, worst_lo = 0, worst_fraction = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const double hi = std::ldexp(mantissa(rng), static_cast<int>(rng() % 8));
    const double lo = -std::ldexp(mantissa(rng), -static_cast<int>(rng() % 50));
    const double fraction = std::ldexp(mantissa(rng), -static_cast<int>(rng() % 20));
    const std::vector<double> data{lo, 0.5 * hi, hi};
    const zcoll::FZLight codec{{.error_bound = zcoll::relative(fraction), .chunk_values = 32}};
    const double eb = zcoll::read_stream_header(codec.compress(data)).error_bound;
    const quad exact = static_cast<quad>(fraction) * (static_cast<quad>(hi) - static_cast<quad>(lo));
    ++checked;
    // The product in quad is within 2^-112 of the exact one: a margin of 2^-100 leaves no doubt.
    if (static_cast<quad>(eb) > exact * (1 + static_cast<quad>(std::ldexp(1.0, -100)))) {
      if (over++ == 0) {
        worst_hi = hi;
        worst_lo = lo;
        worst_fraction = fraction;
      }
    }
  }
  INFO(over << " of " << checked << " streams state a bound above fraction * (max - min); first: data {" << std::hexfloat
            << worst_lo << ", " << worst_hi << "}, relative(" << worst_fraction << ")");
  CHECK(over == 0);
}

TEST_CASE("A fill value means the nearest value of the data's type", "[codec][pipeline][fill]") {
  // A decimal that f32 cannot hold, as NetCDF data declare it (COADS: _FillValue = -1e34f).
  for (double typed : {-1e34, 0.1, 1.0 + 1e-12, 1e-50, -3.4028235e38}) {
    INFO("fill value " << typed);
    const float fill = static_cast<float>(typed);
    std::vector<float> data(1000);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = i % 7 == 3 ? fill : std::sin(0.01f * static_cast<float>(i));
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .fill_value = typed}};
    const auto report = zcoll::evaluate(codec, zcoll::exec::Host{}, std::span<const float>(data));
    REQUIRE(report.fill_value.has_value());
    CHECK(*report.fill_value == static_cast<double>(fill));  // the report says which value it was
    CHECK(report.error.exact_mismatches == 0);                // fill points restored bit for bit
    CHECK(report.error.bound_held());
    std::vector<std::byte> out(codec.max_compressed_size<float>(data.size()));
    const auto header = zcoll::read_stream_header(codec.compress(zcoll::exec::Host{}, data, std::span<std::byte>(out)));
    CHECK(header.fill_bits == std::bit_cast<std::uint32_t>(fill));
  }
  // f64 data holds every double exactly.
  const std::vector<double> d(100, 1.0);
  const zcoll::FZLight codec_d{{.error_bound = zcoll::absolute(1e-3), .fill_value = 0.1}};
  CHECK(zcoll::evaluate(codec_d, zcoll::exec::Host{}, std::span<const double>(d)).fill_value == 0.1);
}

TEST_CASE("A fill value beyond the data type's range is an argument error naming it", "[codec][pipeline][fill]") {
  const std::vector<float> f(100, 1.0f);
  for (double fill : {1e300, -3.5e38, 1e39}) {
    INFO("fill value " << fill);
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .fill_value = fill}};
    std::vector<std::byte> out(codec.max_compressed_size<float>(f.size()));
    CHECK_THROWS_WITH(codec.compress(zcoll::exec::Host{}, f, std::span<std::byte>(out)),
                      Catch::Contains("fill_value") && Catch::Contains("beyond the range of f32"));
    // f64 holds it.
    const std::vector<double> d(100, 1.0);
    std::vector<std::byte> out_d(codec.max_compressed_size<double>(d.size()));
    CHECK_NOTHROW(codec.compress(zcoll::exec::Host{}, d, std::span<std::byte>(out_d)));
  }
}

TEST_CASE("Invalid chunk lengths are argument errors", "[codec][pipeline]") {
  for (std::uint32_t c : {1u, 16u, 31u, 33u, 100u, 4095u, 65535u, 65537u, 65568u, 1u << 20}) {
    INFO("chunk_values " << c);
    CHECK_THROWS_AS(zcoll::FZLight({.chunk_values = c}), zcoll::argument_error);
    CHECK_THROWS_AS(zcoll::Identity({.chunk_values = c}), zcoll::argument_error);
  }
  // 0 asks for the default: 4096 values, 65536 with a 2-D or 3-D predictor.
  CHECK(zcoll::FZLight({.chunk_values = 0}).config().chunk_values == 4096);
  CHECK(zcoll::Identity({.chunk_values = 0}).config().chunk_values == 4096);
  CHECK_NOTHROW(zcoll::FZLight({.chunk_values = 32}));
  CHECK_NOTHROW(zcoll::FZLight({.chunk_values = 65536}));
}

TEMPLATE_TEST_CASE("Buffers of the wrong size are argument errors", "[codec][pipeline]", float, double) {
  using T = TestType;
  const auto data = mixed_input<T>(1000, T(-1e10));
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 128}};
  const std::size_t max = codec.max_compressed_size<T>(data.size());
  SECTION("an out buffer smaller than max_compressed_size, even if the stream would fit") {
    std::vector<std::byte> out(max);
    const auto written = codec.compress(zcoll::exec::Host{}, data, std::span<std::byte>(out));
    REQUIRE(written.size() < max);
    for (std::size_t size : {std::size_t{0}, std::size_t{39}, written.size(), max - 1}) {
      INFO("out of " << size << " bytes");
      CHECK_THROWS_AS(codec.compress(zcoll::exec::Host{}, data, std::span<std::byte>(out).first(size)),
                      zcoll::argument_error);
    }
  }
  SECTION("decompressing into a span of the wrong size") {
    const auto stream = codec.compress(data);
    for (std::size_t size : {std::size_t{0}, data.size() - 1, data.size() + 1}) {
      std::vector<T> out(size);
      INFO("span of " << size << " values");
      CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, stream, std::span<T>(out)), zcoll::argument_error);
    }
  }
}

TEMPLATE_TEST_CASE("Compressed size never exceeds max_compressed_size", "[codec][pipeline]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(seed + 7);
  for (std::uint32_t chunk_values : {32u, 96u, 4096u}) {
    for (std::size_t n : {0, 1, 32, 33, 1000, 9999}) {
      std::vector<T> noise(n);
      for (auto& x : noise) x = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(rng()));
      std::vector<T> uniform(n);
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      for (auto& x : uniform) x = static_cast<T>(u(rng));
      for (const auto& b : {zcoll::absolute(1e-3), zcoll::absolute(1e-30), zcoll::relative(1e-6), zcoll::absolute(0)}) {
        const zcoll::FZLight codec{{.error_bound = b, .chunk_values = chunk_values}};
        const std::size_t max = codec.template max_compressed_size<T>(n);
        CHECK(max == zcoll::FZLight::max_compressed_size<T>(n, chunk_values));
        CHECK(max == zcoll::stream_header_size_bytes + 5 * zcoll::chunk_count_for(n, chunk_values) + n * sizeof(T));
        for (const auto* data : {&noise, &uniform}) {
          INFO("chunk " << chunk_values << ", n " << n << ", " << zcoll::to_string(b));
          const auto r = check_round_trip(codec, std::span<const T>(*data));
          CHECK(r.stream.size() <= max);
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("Identity round-trips bit-exactly with bound 0", "[codec][identity]", float, double) {
  using T = TestType;
  const std::uint32_t chunk_values = GENERATE(32u, 4096u);
  std::mt19937_64 rng(seed);
  for (const auto& kind : input_kinds<T>()) {
    for (std::size_t n : {0, 1, 33, 4097}) {
      const auto data = kind.make(n, rng);
      INFO(kind.name << ", n " << n);
      // A bound in the config does not make Identity lossy.
      const zcoll::Identity codec{{.error_bound = zcoll::absolute(0.5), .chunk_values = chunk_values}};
      const auto r = round_trip(codec, std::span<const T>(data));
      CHECK(r.header.codec == zcoll::Identity::id);
      CHECK(r.header.error_bound == 0.0);
      require_bit_identical(std::span<const T>(data), std::span<const T>(r.restored));
      // Every chunk is verbatim: the stream is exactly max_compressed_size.
      CHECK(r.stream.size() == codec.template max_compressed_size<T>(n));
      const auto ref = reference_decode<T>(r.stream, reference_predictor::none, reference_encoder::raw);
      CHECK(ref.census.verbatim_chunks == r.header.chunk_count);
      CHECK(zcoll::Identity::name() == "exact+none+raw");
    }
  }
}

TEMPLATE_TEST_CASE("Stream bytes do not depend on the thread count", "[codec][pipeline][determinism]", float, double) {
  using T = TestType;
  const T fill = T(-1e10);
  struct scenario {
    const char* name;
    std::size_t n;
    std::uint32_t chunk_values;
    zcoll::bound bound;
    bool extremes;
  };
  // Over three parts of 65536 values, so the value range is found by several workers too.
  const scenario s = GENERATE(values<scenario>({{"relative 1e-3, 49 chunks", 3 * 65536 + 1234, 4096, zcoll::relative(1e-3), false},
                                                {"absolute 1e-3, 40 chunks", 10007, 256, zcoll::absolute(1e-3), true},
                                                {"relative 1e-2, 2 chunks", 5000, 4096, zcoll::relative(1e-2), true}}));
  INFO(type_name<T>() << ", " << s.name);
  const auto data = mixed_input<T>(s.n, fill, s.extremes);
  const zcoll::FZLight codec{
      {.error_bound = s.bound, .chunk_values = s.chunk_values, .fill_value = static_cast<double>(fill)}};

  std::vector<std::vector<std::byte>> streams;
  for (unsigned threads = 1; threads <= 4; ++threads) {
    streams.push_back(check_round_trip(codec, std::span<const T>(data), bits(fill), zcoll::exec::Host{threads}).stream);
    INFO(threads << " threads");
    REQUIRE(streams.back() == streams.front());
  }
  // More threads than chunks.
  REQUIRE(check_round_trip(codec, std::span<const T>(data), bits(fill), zcoll::exec::Host{64}).stream == streams.front());

  std::vector<T> first(data.size());
  codec.decompress(zcoll::exec::Host{1}, streams.front(), std::span<T>(first));
  for (std::size_t k = 0; k < streams.size(); ++k) {
    for (unsigned threads = 1; threads <= 4; ++threads) {
      std::vector<T> restored(data.size());
      codec.decompress(zcoll::exec::Host{threads}, streams[k], std::span<T>(restored));
      INFO("stream of " << k + 1 << " threads decoded by " << threads);
      require_bit_identical(std::span<const T>(first), std::span<const T>(restored));
    }
  }
}

TEMPLATE_TEST_CASE("The convenience overloads agree with the span overloads", "[codec][pipeline]", float, double) {
  using T = TestType;
  const auto data = mixed_input<T>(7777, T(-1e10));
  const zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-3), .chunk_values = 1024}};
  const auto stream = codec.compress(data);
  const auto r = round_trip(codec, std::span<const T>(data));
  CHECK(stream == r.stream);
  const auto values = codec.template decompress<T>(stream);
  require_bit_identical(std::span<const T>(values), std::span<const T>(r.restored));
}
