#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/core/error_stats.hpp"

static_assert(zcoll::codec<zcoll::Int8> && zcoll::codec<zcoll::Int4> && zcoll::codec<zcoll::Int2>,
              "the row-wise quantizers model zcoll::codec");

namespace {

using namespace zcoll_test;
namespace q = zcoll::quantize;

/// A reproducible generator with a fully specified output.
struct lcg {
  std::uint64_t state;
  std::uint64_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  }
  double unit() { return static_cast<double>(next()) * 0x1p-53; }
};

/// Rows of different character: a bell shape, an offset row, a narrow row, a constant row, and so on.
template <class T>
std::vector<T> row_data(std::size_t rows, std::size_t dim, std::uint64_t salt = 0) {
  lcg rng{seed + salt};
  std::vector<T> v(rows * dim);
  for (std::size_t r = 0; r < rows; ++r) {
    const double offset = (rng.unit() - 0.5) * 100, width = std::ldexp(1.0, static_cast<int>(r % 9) * 3 - 15);
    for (std::size_t j = 0; j < dim; ++j) {
      const double u = rng.unit();
      v[r * dim + j] = static_cast<T>(r % 7 == 3 ? offset : offset + width * (u - 0.5));
    }
  }
  return v;
}

zcoll::codec_config config_of(std::size_t rows, std::size_t dim) { return {.shape = {rows, dim}}; }

/// Offsets of the stream fields after the header.
constexpr std::size_t dim_offset = zcoll::stream_header_size_bytes, body_offset = dim_offset + 4;

template <int Bits, class T>
void check_round_trip(std::size_t rows, std::size_t dim) {
  using codec_type = zcoll::RowwiseQuantized<Bits>;
  INFO(codec_type::name() << " " << type_name<T>() << ": " << rows << " rows of dim " << dim);
  const codec_type codec(config_of(rows, dim));
  const auto data = row_data<T>(rows, dim, Bits * 1000 + dim);
  const auto r = round_trip(codec, std::span<const T>(data));  // guarded by canaries both ways
  const auto& h = r.header;
  CHECK(h.codec == codec_type::id);
  CHECK(h.type == zcoll::value_type_of<T>);
  CHECK(h.count == data.size());
  CHECK(h.chunk_values == 0);
  CHECK(h.chunk_count == 0);
  CHECK_FALSE(h.has_fill_value);
  CHECK(h.fill_bits == 0);
  const std::size_t row_bytes = q::rowwise_layout<Bits>::row_bytes(dim);
  REQUIRE(r.stream.size() == body_offset + rows * row_bytes);
  REQUIRE(r.stream.size() == codec.template max_compressed_size<T>(data.size()));
  CHECK(peek<std::uint32_t>(r.stream, dim_offset) == dim);
  // The body is exactly what quantize_rows writes, and the header states its bound.
  std::vector<std::byte> fused(rows * row_bytes);
  const double bound = q::quantize_rows<Bits>(std::span<const T>(data), dim, std::span<std::byte>(fused));
  CHECK(std::equal(fused.begin(), fused.end(), r.stream.begin() + body_offset, r.stream.end()));
  CHECK(h.error_bound == bound);
  require_bound_on_every_element(std::span<const T>(data), std::span<const T>(r.restored), h.error_bound);
  std::vector<T> expected(data.size());
  q::dequantize_rows<Bits>(std::span<const std::byte>(fused), dim, std::span<T>(expected));
  require_bit_identical(std::span<const T>(expected), std::span<const T>(r.restored));
  for (std::size_t row = 0; row < rows; ++row) {
    const auto p = q::row_parameters<Bits>(std::span<const std::byte>(fused), dim, row);
    const double e = q::row_error_bound<Bits>(p.scale, p.bias);
    CHECK(e <= h.error_bound);
    for (std::size_t j = 0; j < dim; ++j) {
      REQUIRE(zcoll::exactly_within(data[row * dim + j], r.restored[row * dim + j], e));
    }
  }
  // The convenience overloads give the same stream and values.
  CHECK(codec.compress(data) == r.stream);
  require_bit_identical(std::span<const T>(codec.template decompress<T>(r.stream)), std::span<const T>(r.restored));
}

template <int Bits, class T>
void check_round_trips() {
  for (const std::size_t dim : {1u, 3u, 5u, 7u, 8u, 33u, 64u}) {
    for (const std::size_t rows : {0u, 1u, 2u, 17u}) check_round_trip<Bits, T>(rows, dim);
  }
}

enum class outcome { decoded, format_error };

/// Decompresses a stream ending at a guard page into an output ending at one; the output size is the
/// stream's own count when it parses, so a changed count is no argument_error.
template <class Codec, class T>
outcome try_decode(const Codec& codec, std::span<const std::byte> stream, std::size_t expected_count,
                   unsigned threads = 1) {
  auto guarded = guarded_buffer<>::copy_of(stream);
  guarded_buffer<T> values(expected_count);
  try {
    codec.decompress(zcoll::exec::Host{threads}, guarded.span(), values.span());
    return outcome::decoded;
  } catch (const zcoll::format_error&) {
    return outcome::format_error;
  }
}

template <int Bits, class T>
void check_damage(std::size_t rows, std::size_t dim) {
  using codec_type = zcoll::RowwiseQuantized<Bits>;
  INFO(codec_type::name() << " " << type_name<T>() << ": " << rows << " rows of dim " << dim);
  const codec_type codec(config_of(rows, dim));
  const auto data = row_data<T>(rows, dim, 7);
  const auto stream = codec.compress(data);
  REQUIRE(try_decode<codec_type, T>(codec, stream, data.size()) == outcome::decoded);
  // Every truncation is a format error.
  for (std::size_t n = 0; n < stream.size(); ++n) {
    INFO("truncated to " << n << " of " << stream.size() << " bytes");
    CHECK(try_decode<codec_type, T>(codec, std::span<const std::byte>(stream).first(n), data.size()) ==
          outcome::format_error);
    CHECK_THROWS_AS(codec.template decompress<T>(std::span<const std::byte>(stream).first(n)), zcoll::format_error);
  }
  // Every byte changed three ways: a format error, or a decode of the right size. Changes to the header,
  // dim, scales and biases are all caught; changes to codes decode to other values.
  std::size_t decoded = 0, rejected = 0;
  for (std::size_t at = 0; at < stream.size(); ++at) {
    for (const unsigned flip : {0x01u, 0x80u, 0xFFu}) {
      auto damaged = stream;
      damaged[at] ^= static_cast<std::byte>(flip);
      INFO("byte " << at << " ^ " << flip);
      outcome o;
      try {
        o = codec.template decompress<T>(damaged).size() == data.size() ? outcome::decoded : outcome::format_error;
        CHECK(o == outcome::decoded);
      } catch (const zcoll::format_error&) {
        o = outcome::format_error;
      }
      if (o == outcome::decoded) {
        ++decoded;
        // Nothing before the rows changes unnoticed, except dim when there are no rows: any dim then
        // describes the empty body.
        CHECK((at >= body_offset || (rows == 0 && at >= dim_offset)));
      } else {
        ++rejected;
      }
      if (at % 7 == 0) CHECK(try_decode<codec_type, T>(codec, damaged, data.size(), 3) == o);
    }
  }
  CHECK(rejected >= 3 * dim_offset);  // at least every header change
  if (rows > 0) CHECK(decoded > 0);
}

/// The stream of `rows` rows of dim 3 as Int4 (f16 scale and bias, one padding nibble per row).
std::vector<std::byte> int4_stream(std::size_t rows = 4, std::size_t dim = 3) {
  return zcoll::Int4(config_of(rows, dim)).compress(row_data<float>(rows, dim, 11));
}

}  // namespace

TEST_CASE("RowwiseQuantized: ids, names, presets", "[codec][rowwise]") {
  CHECK(zcoll::Int8::id.kind == zcoll::codec_ids::rowwise_int8);
  CHECK(zcoll::Int4::id.kind == zcoll::codec_ids::rowwise_int4);
  CHECK(zcoll::Int2::id.kind == zcoll::codec_ids::rowwise_int2);
  CHECK(zcoll::Int8::name() == "rowwise-int8");
  CHECK(zcoll::Int4::name() == "rowwise-int4");
  CHECK(zcoll::Int2::name() == "rowwise-int2");
  CHECK_FALSE(zcoll::Int4::uses_error_bound);
  CHECK(std::is_same_v<zcoll::Int4, zcoll::RowwiseQuantized<4>>);
}

TEST_CASE("RowwiseQuantized: configurations", "[codec][rowwise]") {
  try {
    const zcoll::Int4 flat{zcoll::codec_config{}};
    FAIL("a flat config was accepted");
  } catch (const zcoll::argument_error& e) {
    CHECK(std::string(e.what()).find("shape = {rows, dim}") != std::string::npos);
  }
  CHECK_THROWS_AS(zcoll::Int8(zcoll::codec_config{.shape = {4, 0}}), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::Int8(zcoll::codec_config{.shape = {std::size_t{1} << 33}}), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::Int2(zcoll::codec_config{.fill_value = 0.0, .shape = {4, 8}}), zcoll::argument_error);
  // The row length is the last extent; the error bound and chunk length are ignored.
  const zcoll::Int4 codec{{.error_bound = zcoll::absolute(1e-9), .chunk_values = 64, .shape = {2, 3, 5}}};
  CHECK(codec.dim() == 5);
  CHECK(codec.config().shape.size() == 3);
  const auto data = row_data<float>(6, 5);
  CHECK(codec.compress(data) == zcoll::Int4({.shape = {5}}).compress(data));
  // A count that is not a whole number of rows.
  std::vector<std::byte> out(1000);
  CHECK_THROWS_AS(codec.max_compressed_size<float>(7), zcoll::argument_error);
  CHECK_THROWS_AS(codec.compress(zcoll::exec::Host{}, std::span<const float>(data).first(7), std::span<std::byte>(out)),
                  zcoll::argument_error);
  CHECK_THROWS_AS(codec.compress(zcoll::exec::Host{}, data, std::span<std::byte>(out).first(20)), zcoll::argument_error);
}

TEMPLATE_TEST_CASE("RowwiseQuantized: round trips state and keep their bound", "[codec][rowwise]", float, double) {
  using T = TestType;
  check_round_trips<8, T>();
  check_round_trips<4, T>();
  check_round_trips<2, T>();
}

TEMPLATE_TEST_CASE("RowwiseQuantized: empty input", "[codec][rowwise]", float, double) {
  using T = TestType;
  const zcoll::Int4 codec{{.shape = {0, 16}}};
  const auto stream = codec.compress(std::vector<T>{});
  REQUIRE(stream.size() == body_offset);
  const auto h = zcoll::read_stream_header(stream);
  CHECK(h.count == 0);
  CHECK(h.error_bound == 0.0);
  CHECK(codec.decompress<T>(stream).empty());
  codec.decompress(zcoll::exec::Host{3}, stream, std::span<T>());
}

TEMPLATE_TEST_CASE("RowwiseQuantized: the bytes do not depend on the thread count", "[codec][rowwise]", float,
                   double) {
  using T = TestType;
  const std::size_t rows = 101, dim = 33;
  const auto data = row_data<T>(rows, dim, 3);
  auto check = [&](auto codec) {
    const auto reference = codec.compress(data);
    const auto values = codec.template decompress<T>(reference);
    for (const unsigned threads : {1u, 2u, 3u, 7u, 300u}) {
      INFO(codec.name() << ", " << threads << " threads");
      std::vector<std::byte> out(codec.template max_compressed_size<T>(data.size()));
      const auto written = codec.compress(zcoll::exec::Host{threads}, data, std::span<std::byte>(out));
      CHECK(std::equal(written.begin(), written.end(), reference.begin(), reference.end()));
      std::vector<T> back(data.size());
      codec.decompress(zcoll::exec::Host{threads}, std::span<const std::byte>(reference), back);
      require_bit_identical(std::span<const T>(values), std::span<const T>(back));
    }
  };
  check(zcoll::Int8{config_of(rows, dim)});
  check(zcoll::Int4{config_of(rows, dim)});
  check(zcoll::Int2{config_of(rows, dim)});
}

TEMPLATE_TEST_CASE("RowwiseQuantized: NaN and Inf are argument errors naming the row, whatever the threads",
                   "[codec][rowwise]", float, double) {
  using T = TestType;
  const std::size_t rows = 20, dim = 9;
  auto data = row_data<T>(rows, dim, 5);
  data[13 * dim + 4] = std::numeric_limits<T>::quiet_NaN();
  data[17 * dim + 8] = -std::numeric_limits<T>::infinity();
  auto check = [&](auto codec) {
    for (const unsigned threads : {1u, 2u, 3u}) {
      guarded_buffer<> out(codec.template max_compressed_size<T>(data.size()));
      try {
        codec.compress(zcoll::exec::Host{threads}, data, out.span());
        FAIL("no argument_error");
      } catch (const zcoll::argument_error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("row 13, column 4") != std::string::npos);
      }
    }
  };
  check(zcoll::Int8{config_of(rows, dim)});
  check(zcoll::Int4{config_of(rows, dim)});
  check(zcoll::Int2{config_of(rows, dim)});
}

TEMPLATE_TEST_CASE("RowwiseQuantized: truncations and corruptions are format errors or decodes",
                   "[codec][rowwise]", float, double) {
  using T = TestType;
  if (!guarded_buffer<>::available) {
    WARN("no guard pages on this platform: test skipped");
    return;
  }
  check_damage<8, T>(3, 5);
  check_damage<4, T>(3, 7);
  check_damage<2, T>(2, 33);
  check_damage<4, T>(0, 8);
}

TEST_CASE("RowwiseQuantized: each malformed field is a format error", "[codec][rowwise]") {
  const zcoll::Int4 codec{config_of(4, 3)};
  const auto good = int4_stream();
  REQUIRE(codec.decompress<float>(good).size() == 12);
  const std::size_t row_bytes = q::rowwise_layout<4>::row_bytes(3);  // 2 code bytes, f16 scale, f16 bias
  auto rejects = [&](auto edit, const char* what, const zcoll::Int4& reader) {
    auto s = good;
    edit(s);
    INFO(what);
    CHECK_THROWS_AS(reader.decompress<float>(s), zcoll::format_error);
  };
  auto both = [&](auto edit, const char* what) { rejects(edit, what, codec); };
  both([](auto& s) { s[offset::codec_kind] = std::byte{zcoll::codec_ids::rowwise_int8}; }, "another codec id");
  both([](auto& s) { s[offset::value_type] = std::byte{2}; }, "f64 values read as f32");
  both([](auto& s) { poke<std::uint32_t>(s, dim_offset, 0); }, "dim 0");
  both([](auto& s) { poke<std::uint32_t>(s, dim_offset, 5); }, "count not a multiple of dim");
  both([](auto& s) { poke<std::uint32_t>(s, dim_offset, 6); }, "body of another size");
  both([](auto& s) { poke<std::uint64_t>(s, offset::count, 15); }, "more rows than the body holds");
  both([](auto& s) { poke<std::uint64_t>(s, offset::count, std::uint64_t{3} << 60); }, "a huge count");
  both([](auto& s) { s.push_back(std::byte{0}); }, "a trailing byte");
  both([](auto& s) { s.pop_back(); }, "a missing byte");
  both([](auto& s) { poke<std::uint32_t>(s, offset::chunk_values, 32); }, "a chunked header");
  both([](auto& s) { s[offset::flags] = std::byte{1}; }, "a fill flag");
  both([](auto& s) { poke<double>(s, offset::error_bound, std::numeric_limits<double>::infinity()); }, "bound +inf");
  both([](auto& s) { poke<double>(s, offset::error_bound, std::nextafter(peek<double>(s, offset::error_bound), 1.0)); },
       "a bound that is not the rows' bound");
  const std::size_t row1 = body_offset + row_bytes;
  both([&](auto& s) { s[row1 + 1] |= std::byte{0x10}; }, "padding bits set");
  both([&](auto& s) { poke<std::uint16_t>(s, row1 + 2, 0x7E00); }, "scale NaN");
  both([&](auto& s) { poke<std::uint16_t>(s, row1 + 2, 0x7C00); }, "scale +Inf");
  both([&](auto& s) { poke<std::uint16_t>(s, row1 + 2, 0xBC00); }, "scale -1");
  both([&](auto& s) { poke<std::uint16_t>(s, row1 + 2, 0x8000); }, "scale -0");
  both([&](auto& s) { poke<std::uint16_t>(s, row1 + 4, 0xFC00); }, "bias -Inf");
  both([&](auto& s) { poke<std::uint16_t>(s, row1 + 4, 0x7C01); }, "bias NaN");
  // A stream of another codec or type.
  const auto int8_stream = zcoll::Int8(config_of(4, 3)).compress(row_data<float>(4, 3, 11));
  CHECK_THROWS_AS(codec.decompress<float>(int8_stream), zcoll::format_error);
  CHECK_THROWS_AS(codec.decompress<double>(good), zcoll::format_error);
  // The output must hold the stream's count.
  std::vector<float> wrong(11);
  CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, good, wrong), zcoll::argument_error);
}

TEST_CASE("RowwiseQuantized: malformed 8-bit scales are format errors", "[codec][rowwise]") {
  const zcoll::Int8 codec{config_of(3, 4)};
  const auto good = codec.compress(row_data<float>(3, 4, 13));
  REQUIRE(codec.decompress<float>(good).size() == 12);
  const std::size_t scale_at = body_offset + q::rowwise_layout<8>::row_bytes(4) + 4;  // row 1
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), -1.0f,
                          -0.0f, std::nextafter(1.0f, 2.0f), 1e37f}) {
    auto s = good;
    poke<float>(s, scale_at, bad);
    INFO("scale " << bad);
    CHECK_THROWS_AS(codec.decompress<float>(s), zcoll::format_error);
  }
  auto s = good;
  poke<float>(s, scale_at + 4, std::numeric_limits<float>::infinity());
  CHECK_THROWS_AS(codec.decompress<float>(s), zcoll::format_error);
}
