// The Cast codecs (codec/cast.hpp): the stream layout byte by byte, the stated bound on every element,
// non-finite values, determinism across thread counts, and damaged or foreign streams.
#include "zcoll/codec/cast.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"

using namespace zcoll_test;

namespace {

namespace q = zcoll::quantize;

static_assert(zcoll::codec<zcoll::FP16> && zcoll::codec<zcoll::BF16> && zcoll::codec<zcoll::FP8E4M3> &&
              zcoll::codec<zcoll::FP8E5M2>);

/// The bound the header must state: rounding_error_bound at the largest finite |x|, found by a plain loop.
template <class Codec, class T>
double expected_bound(const std::vector<T>& data) {
  T largest = 0;
  for (const T x : data) {
    if (std::isfinite(x)) largest = std::max(largest, std::abs(x));
  }
  return q::rounding_error_bound<typename Codec::format_type>(largest);
}

/// A round trip with every check of the stream contract; returns the stream.
template <class Codec, class T>
std::vector<std::byte> check_cast_round_trip(const Codec& codec, const std::vector<T>& data,
                                             zcoll::exec::Host compress_exec = {},
                                             zcoll::exec::Host decompress_exec = {}) {
  using F = typename Codec::format_type;
  using code_t = typename F::storage;
  const auto r = round_trip(codec, std::span<const T>(data), compress_exec, decompress_exec);  // canaries
  INFO(Codec::name() << " on " << data.size() << " " << type_name<T>() << " values");

  // Header: the unchunked form, no fill value, the bound of this data.
  const auto& h = r.header;
  REQUIRE(h.codec == Codec::id);
  REQUIRE(h.type == zcoll::value_type_of<T>);
  REQUIRE(h.count == data.size());
  REQUIRE(h.chunk_values == 0);
  REQUIRE(h.chunk_count == 0);
  REQUIRE_FALSE(h.has_fill_value);
  REQUIRE(h.fill_bits == 0);
  REQUIRE(h.error_bound == expected_bound<Codec>(data));
  REQUIRE(r.stream.size() == Codec::template max_compressed_size<T>(data.size()));
  REQUIRE(r.stream.size() == zcoll::stream_header_size_bytes + data.size() * sizeof(code_t));

  // Body: the scalar encoder's codes, little-endian, in value order; the values are their decodes.
  // (Checked with plain conditions and reported at the first failure: a Catch2 assertion per element is
  // too slow for 300000 values.)
  bool overflowed = false;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const T x = data[i], y = r.restored[i];
    const code_t code = q::encode<F>(x);
    const char* broken = nullptr;
    if (peek<code_t>(r.stream, zcoll::stream_header_size_bytes + i * sizeof(code_t)) != code) {
      broken = "the stream's code is not the scalar encoder's";
    } else if (!same_bits(y, static_cast<T>(q::decode<F>(code)))) {
      broken = "the restored value is not the decoded code";
    } else if (std::isnan(x)) {
      if (!std::isnan(y) || std::signbit(y) != std::signbit(x)) broken = "NaN did not stay NaN of its sign";
    } else if (std::isinf(x)) {
      // ±Inf stays ±Inf; E4M3 has no infinities and gives NaN of the same sign.
      const bool kept = F::has_infinity ? same_bits(x, y) : std::isnan(y) && std::signbit(y) == std::signbit(x);
      if (!kept) broken = "Inf did not come back as the format's rule says";
    } else if (std::isinf(y)) {
      overflowed = true;  // a finite value rounded past max finite: the header must say +inf
      if (!std::isinf(h.error_bound)) broken = "a finite value overflowed but the stated bound is finite";
    } else if (!zcoll::exactly_within(x, y, h.error_bound)) {
      broken = "the stated bound does not hold";
    }
    if (broken != nullptr) {
      INFO("element " << i << ": x = " << x << " (bits " << std::hex << bits(x) << "), restored " << y << " (bits "
                      << bits(y) << "), code " << +code << std::dec << ", stated bound " << h.error_bound);
      FAIL(broken);
    }
  }
  // +inf is stated only when a finite value did overflow.
  REQUIRE(std::isinf(h.error_bound) == overflowed);
  return r.stream;
}

template <class T>
std::vector<T> normal_data(std::size_t n, double scale, std::uint64_t seed_offset) {
  std::mt19937_64 rng(seed + seed_offset);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(normal(rng));
  return v;
}

/// Every kind of value a cast must handle, in random order: NaNs (signs, payloads), ±Inf, ±0, denormals
/// of T, subnormals and ties of F, max finite and the halfway point above it, values that overflow.
template <class F, class T>
std::vector<T> adversarial_data(std::size_t n, std::uint64_t seed_offset) {
  const std::vector<T> specials = {
      std::numeric_limits<T>::quiet_NaN(),
      -std::numeric_limits<T>::quiet_NaN(),
      std::numeric_limits<T>::signaling_NaN(),
      std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(~zcoll::bits_of<T>{0})),  // -NaN, full payload
      std::numeric_limits<T>::infinity(),
      -std::numeric_limits<T>::infinity(),
      T(0),
      T(-0.0),
      std::numeric_limits<T>::denorm_min(),
      -std::numeric_limits<T>::denorm_min(),
      std::numeric_limits<T>::min() / 3,
      static_cast<T>(F::min_subnormal),
      static_cast<T>(F::min_subnormal / 2),
      static_cast<T>(1.5 * F::min_subnormal),
      static_cast<T>(F::min_normal),
      static_cast<T>(-F::max_finite),
      static_cast<T>(F::max_finite),
      static_cast<T>(1.0 + F::relative_precision),
      static_cast<T>(-3.0 * F::relative_precision - 1.0)};
  std::mt19937_64 rng(seed + seed_offset);
  std::normal_distribution<double> normal(0.0, 10.0);
  std::vector<T> v(n);
  for (auto& x : v) x = rng() % 3 == 0 ? specials[rng() % specials.size()] : static_cast<T>(normal(rng));
  return v;
}

template <class Codec, class T>
void check_all_data(std::uint64_t seed_offset) {
  using F = typename Codec::format_type;
  const Codec codec;
  // Empty, one element, every length to 100, and lengths across blocks and parallel parts.
  check_cast_round_trip(codec, std::vector<T>{});
  check_cast_round_trip(codec, std::vector<T>{T(1.25)});
  check_cast_round_trip(codec, std::vector<T>{T(-0.0)});
  check_cast_round_trip(codec, std::vector<T>{std::numeric_limits<T>::quiet_NaN()});
  for (std::size_t n = 1; n <= 100; ++n) check_cast_round_trip(codec, normal_data<T>(n, 3.0, seed_offset + n));
  for (const std::size_t n : {std::size_t{4095}, std::size_t{4097}, std::size_t{65537}, std::size_t{70001}}) {
    check_cast_round_trip(codec, normal_data<T>(n, 1.0, seed_offset + n));
  }
  // Scales from deep subnormal to overflow.
  for (const double scale : {1e-7, 1e-3, 1.0, 100.0, 1e4, 1e6, 1e30}) {
    const auto data = normal_data<T>(1000, scale, seed_offset + 7);
    if (std::isfinite(static_cast<T>(scale))) check_cast_round_trip(codec, data);
  }
  // Adversarial values, all lengths through the vector body and tail.
  for (const std::size_t n : {std::size_t{7}, std::size_t{33}, std::size_t{1000}, std::size_t{5000}}) {
    check_cast_round_trip(codec, adversarial_data<F, T>(n, seed_offset + 11 + n));
  }
  // Constant data, all zeros, all non-finite (no finite value: bound 0), and saturation/overflow alone.
  check_cast_round_trip(codec, std::vector<T>(77, T(3.14159)));
  check_cast_round_trip(codec, std::vector<T>(77, T(0)));
  check_cast_round_trip(codec, std::vector<T>(77, std::numeric_limits<T>::infinity()));
  check_cast_round_trip(codec, std::vector<T>(3, std::numeric_limits<T>::quiet_NaN()));
  REQUIRE(
      zcoll::read_stream_header(codec.compress(std::vector<T>(5, std::numeric_limits<T>::infinity()))).error_bound ==
      0.0);
  const auto big = check_cast_round_trip(codec, std::vector<T>{T(1), T(-1000), T(2)});
  if constexpr (F::has_infinity) {
    // A value past max finite overflows to Inf, and the stated bound is +inf.
    const T huge =
        std::is_same_v<F, q::bf16> ? static_cast<T>(std::numeric_limits<float>::max()) * T(2) : static_cast<T>(1e6);
    if (std::isfinite(huge)) {
      const auto s = check_cast_round_trip(codec, std::vector<T>{T(1), huge, T(2)});
      REQUIRE(std::isinf(zcoll::read_stream_header(s).error_bound));
    }
  } else {
    // E4M3 saturates -1000 to -448: the stated bound is the saturation error, 552.
    REQUIRE(zcoll::read_stream_header(big).error_bound == 552.0);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("Cast codecs: ids, names, sizes, presets", "[codec][cast]", zcoll::FP16, zcoll::BF16, zcoll::FP8E4M3,
                   zcoll::FP8E5M2) {
  using Codec = TestType;
  using F = typename Codec::format_type;
  STATIC_REQUIRE_FALSE(Codec::uses_error_bound);
  STATIC_REQUIRE(Codec::relative_precision == F::relative_precision);
  CHECK(Codec::name() == std::string("cast-") + F::name);
  CHECK(Codec::template max_compressed_size<float>(0) == zcoll::stream_header_size_bytes);
  CHECK(Codec::template max_compressed_size<double>(1000) == zcoll::stream_header_size_bytes + 1000 * sizeof(typename F::storage));
  CHECK(Codec{}.config().chunk_values == zcoll::codec_config{}.chunk_values);
}

TEST_CASE("Cast codecs: the presets' ids and names", "[codec][cast]") {
  STATIC_REQUIRE(zcoll::FP16::id.kind == zcoll::codec_ids::cast_fp16);
  STATIC_REQUIRE(zcoll::BF16::id.kind == zcoll::codec_ids::cast_bf16);
  STATIC_REQUIRE(zcoll::FP8E4M3::id.kind == zcoll::codec_ids::cast_fp8_e4m3);
  STATIC_REQUIRE(zcoll::FP8E5M2::id.kind == zcoll::codec_ids::cast_fp8_e5m2);
  CHECK(zcoll::FP16::name() == "cast-fp16");
  CHECK(zcoll::BF16::name() == "cast-bf16");
  CHECK(zcoll::FP8E4M3::name() == "cast-fp8-e4m3");
  CHECK(zcoll::FP8E5M2::name() == "cast-fp8-e5m2");
  STATIC_REQUIRE(zcoll::FP16::relative_precision == 0x1p-11);
  STATIC_REQUIRE(zcoll::BF16::relative_precision == 0x1p-8);
  STATIC_REQUIRE(zcoll::FP8E4M3::relative_precision == 0x1p-4);
  STATIC_REQUIRE(zcoll::FP8E5M2::relative_precision == 0x1p-3);
}

TEMPLATE_TEST_CASE("Cast codecs: round trips state a bound that holds on every element", "[codec][cast]", zcoll::FP16,
                   zcoll::BF16, zcoll::FP8E4M3, zcoll::FP8E5M2) {
  using Codec = TestType;
  check_all_data<Codec, float>(1000);
  check_all_data<Codec, double>(2000);
}

TEMPLATE_TEST_CASE("Cast codecs: normal values are within the relative precision", "[codec][cast]", zcoll::FP16,
                   zcoll::BF16, zcoll::FP8E4M3, zcoll::FP8E5M2) {
  using Codec = TestType;
  using F = typename Codec::format_type;
  const Codec codec;
  std::mt19937_64 rng(seed + 31);
  std::vector<double> data(20000);
  for (auto& x : data) {
    // Uniform in log scale over the normal range (below max finite, so nothing saturates or overflows).
    const double e =
        F::min_exponent + std::ldexp(static_cast<double>(rng() >> 11), -53) * (F::max_exponent - F::min_exponent);
    x = (rng() % 2 ? 1 : -1) * std::exp2(e);
  }
  const auto restored = codec.template decompress<double>(codec.compress(data));
  for (std::size_t i = 0; i < data.size(); ++i) {
    INFO("x = " << data[i] << ", restored " << restored[i]);
    REQUIRE(std::abs(data[i] - restored[i]) <= Codec::relative_precision * std::abs(data[i]));
  }
}

TEMPLATE_TEST_CASE("Cast codecs: the bytes do not depend on the thread count", "[codec][cast]", zcoll::FP16,
                   zcoll::BF16, zcoll::FP8E4M3, zcoll::FP8E5M2) {
  using Codec = TestType;
  const Codec codec;
  // Five parallel parts of 64K values, with the largest magnitude in the last one.
  auto data = adversarial_data<typename Codec::format_type, float>(300000, 41);
  data[299999] = 7.0e3f;
  const auto reference_stream = check_cast_round_trip(codec, data);
  for (const unsigned threads : {1u, 2u, 3u, 4u, 7u}) {
    INFO(threads << " threads");
    const auto stream = check_cast_round_trip(codec, data, zcoll::exec::Host{threads}, zcoll::exec::Host{threads});
    REQUIRE(stream == reference_stream);
  }
  const auto doubles = normal_data<double>(200000, 50.0, 43);
  const auto one = check_cast_round_trip(codec, doubles);
  REQUIRE(check_cast_round_trip(codec, doubles, zcoll::exec::Host{3}, zcoll::exec::Host{2}) == one);
}

TEMPLATE_TEST_CASE("Cast codecs: arguments they refuse", "[codec][cast]", zcoll::FP16, zcoll::BF16, zcoll::FP8E4M3,
                   zcoll::FP8E5M2) {
  using Codec = TestType;
  // A fill value: a cast could keep it exactly only when the format represents it.
  CHECK_THROWS_AS(Codec(zcoll::codec_config{.fill_value = -1e10}), zcoll::argument_error);
  CHECK_THROWS_WITH(Codec(zcoll::codec_config{.fill_value = 0.0}), Catch::Contains("fill_value"));
  // The error bound is ignored: the same bytes whatever it is.
  const std::vector<float> data = normal_data<float>(500, 2.0, 51);
  CHECK(Codec(zcoll::codec_config{.error_bound = zcoll::absolute(1e-9)}).compress(data) == Codec{}.compress(data));
  CHECK(Codec(zcoll::codec_config{.error_bound = zcoll::relative(0.5)}).compress(data) == Codec{}.compress(data));
  // Output buffers of the wrong size.
  const Codec codec;
  std::vector<std::byte> small(Codec::template max_compressed_size<float>(data.size()) - 1);
  CHECK_THROWS_AS(codec.compress(zcoll::exec::Host{}, data, std::span<std::byte>(small)), zcoll::argument_error);
  const auto stream = codec.compress(data);
  std::vector<float> wrong(data.size() + 1);
  CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, stream, std::span<float>(wrong)), zcoll::argument_error);
  std::vector<float> right(data.size());
  codec.decompress(zcoll::exec::Host{2}, stream, std::span<float>(right));
  CHECK(right == codec.template decompress<float>(stream));
}

// --- damaged and foreign streams -------------------------------------------------------------------------

namespace {

enum class outcome { decoded, format_error };

/// Decodes with the convenience overload; anything but format_error fails the test. A decode must give
/// the header's count of values.
template <class T, class Codec>
outcome try_decode(const Codec& codec, std::span<const std::byte> stream) {
  try {
    const auto values = codec.template decompress<T>(stream);
    REQUIRE(values.size() == zcoll::read_stream_header(stream).count);
    return outcome::decoded;
  } catch (const zcoll::format_error&) {
    return outcome::format_error;
  } catch (const std::exception& e) {
    FAIL("decoding a damaged stream threw something other than format_error: " << e.what());
  }
  return outcome::decoded;
}

std::vector<std::byte> replacement_values(std::byte original) {
  std::vector<std::byte> out;
  for (std::byte v :
       {std::byte{0x00}, std::byte{0xFF}, original ^ std::byte{0x01}, original ^ std::byte{0x80},
        static_cast<std::byte>(std::to_integer<unsigned>(original) + 1), std::byte{0x7F}, original ^ std::byte{0x10}}) {
    if (v != original && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

template <class Codec, class T>
void check_damaged_streams() {
  using code_t = typename Codec::format_type::storage;
  const Codec codec;
  const auto data = adversarial_data<typename Codec::format_type, T>(37, 61);
  const auto stream = codec.compress(data);
  const auto restored = codec.template decompress<T>(stream);
  INFO(Codec::name() << ", " << type_name<T>() << " stream of " << stream.size() << " bytes");

  // Every truncation, and one byte too many, at a guard page.
  guarded_buffer<T> out(data.size());
  for (std::size_t n = 0; n <= stream.size() + 1; ++n) {
    std::vector<std::byte> cut(stream.begin(),
                               stream.begin() + static_cast<std::ptrdiff_t>(std::min(n, stream.size())));
    if (n > stream.size()) cut.push_back(std::byte{0});
    auto guarded = guarded_buffer<>::copy_of(std::span<const std::byte>(cut));
    INFO("stream cut to " << n << " bytes");
    if (n == stream.size()) {
      codec.decompress(zcoll::exec::Host{}, guarded.span(), out.span());
      REQUIRE(std::equal(out.span().begin(), out.span().end(), restored.begin(), restored.end(),
                         [](T a, T b) { return same_bits(a, b); }));
    } else {
      CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, guarded.span(), out.span()), zcoll::format_error);
      CHECK(try_decode<T>(codec, guarded.span()) == outcome::format_error);
    }
  }

  // Every byte set to several other values. Header bytes: any change is a format error, except in the
  // error bound, where only a negative or NaN bound is (the bound is information, not needed to decode).
  // Body bytes: every code is valid, so the stream decodes, and only the value of that code changes.
  for (std::size_t at = 0; at < stream.size(); ++at) {
    for (const std::byte value : replacement_values(stream[at])) {
      auto damaged = stream;
      damaged[at] = value;
      INFO("byte " << at << " set to " << std::to_integer<unsigned>(value));
      auto guarded = guarded_buffer<>::copy_of(std::span<const std::byte>(damaged));
      const outcome o = try_decode<T>(codec, guarded.span());
      if (at < offset::error_bound || (at >= offset::fill && at < zcoll::stream_header_size_bytes)) {
        CHECK(o == outcome::format_error);
      } else if (at < offset::fill) {
        const double bound = peek<double>(damaged, offset::error_bound);
        CHECK((o == outcome::format_error) == !(bound >= 0.0));
      } else {
        REQUIRE(o == outcome::decoded);
        const auto values = codec.template decompress<T>(guarded.span());
        const std::size_t changed = (at - zcoll::stream_header_size_bytes) / sizeof(code_t);
        for (std::size_t i = 0; i < values.size(); ++i) {
          if (i != changed) REQUIRE(same_bits(values[i], restored[i]));
        }
      }
    }
  }

  // Another value type.
  using other = std::conditional_t<std::is_same_v<T, float>, double, float>;
  CHECK_THROWS_AS(codec.template decompress<other>(stream), zcoll::format_error);
}

}  // namespace

TEMPLATE_TEST_CASE("Cast codecs: every truncation and every byte change is a format error or a well-formed decode",
                   "[codec][cast]", zcoll::FP16, zcoll::BF16, zcoll::FP8E4M3, zcoll::FP8E5M2) {
  check_damaged_streams<TestType, float>();
  check_damaged_streams<TestType, double>();
}

TEST_CASE("Cast codecs: a stream of another codec is a format error", "[codec][cast]") {
  const std::vector<float> data = normal_data<float>(256, 1.0, 71);
  const auto fp16 = zcoll::FP16{}.compress(data);
  const auto bf16 = zcoll::BF16{}.compress(data);
  const auto e4m3 = zcoll::FP8E4M3{}.compress(data);
  const auto e5m2 = zcoll::FP8E5M2{}.compress(data);
  // Same body size, other id.
  CHECK_THROWS_AS(zcoll::BF16{}.decompress<float>(fp16), zcoll::format_error);
  CHECK_THROWS_AS(zcoll::FP16{}.decompress<float>(bf16), zcoll::format_error);
  CHECK_THROWS_AS(zcoll::FP8E5M2{}.decompress<float>(e4m3), zcoll::format_error);
  CHECK_THROWS_AS(zcoll::FP8E4M3{}.decompress<float>(e5m2), zcoll::format_error);
  // Other body size.
  CHECK_THROWS_AS(zcoll::FP16{}.decompress<float>(e4m3), zcoll::format_error);
  // A fp16 stream whose id byte claims bf16 decodes as bf16 only if the id says so: flip the id.
  auto relabelled = fp16;
  relabelled[offset::codec_kind] = std::byte{zcoll::codec_ids::cast_bf16};
  CHECK_NOTHROW(zcoll::BF16{}.decompress<float>(relabelled));
  CHECK_THROWS_AS(zcoll::FP16{}.decompress<float>(relabelled), zcoll::format_error);
  // Pipelines and casts do not read each other's streams.
  const zcoll::FZLight fzlight{{.error_bound = zcoll::absolute(1e-3)}};
  const auto fz = fzlight.compress(data);
  const auto identity = zcoll::Identity{}.compress(data);
  CHECK_THROWS_AS(zcoll::FP16{}.decompress<float>(fz), zcoll::format_error);
  CHECK_THROWS_AS(zcoll::FP8E4M3{}.decompress<float>(identity), zcoll::format_error);
  CHECK_THROWS_AS(fzlight.decompress<float>(fp16), zcoll::format_error);
  CHECK_THROWS_AS(zcoll::Identity{}.decompress<float>(e5m2), zcoll::format_error);
  // A chunked header with the cast's id and a matching body size is still not a cast stream.
  auto chunked = fp16;
  poke(std::span<std::byte>(chunked), offset::chunk_values, std::uint32_t{4096});
  poke(std::span<std::byte>(chunked), offset::chunk_count, std::uint32_t{1});
  CHECK_THROWS_AS(zcoll::FP16{}.decompress<float>(chunked), zcoll::format_error);
  // A fill flag with a zero fill value parses as a header, but casts declare no fill value.
  auto filled = fp16;
  filled[offset::flags] = std::byte{1};
  CHECK_THROWS_AS(zcoll::FP16{}.decompress<float>(filled), zcoll::format_error);
}

TEST_CASE("Cast codecs: compress writes exactly max_compressed_size bytes, never past them", "[codec][cast]") {
  if (!guarded_buffer<>::available) {
    WARN("no guard pages on this platform: test skipped");
    return;
  }
  const auto data = adversarial_data<q::fp8_e4m3, double>(10007, 81);
  const zcoll::FP8E4M3 codec;
  guarded_buffer<> out(codec.max_compressed_size<double>(data.size()));
  const auto written = codec.compress(zcoll::exec::Host{3}, data, out.span());
  CHECK(written.size() == out.span().size());
  const auto expected = codec.compress(data);
  CHECK(std::equal(written.begin(), written.end(), expected.begin(), expected.end()));
}
