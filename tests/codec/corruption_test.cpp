// Untrusted input (DESIGN.md, guarantee 3): a damaged stream raises zcoll::format_error or decodes to some
// values; it never reads or writes out of bounds (the sanitizer build checks that) and never throws
// anything else.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "support/reference_decoder.hpp"
#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

enum class outcome { decoded, format_error };

/// Decodes `stream` with the convenience overload, which sizes its output from the header. Any exception
/// other than format_error fails the test.
template <class T, class Codec>
outcome try_decode(const Codec& codec, std::span<const std::byte> stream) {
  try {
    const auto values = codec.template decompress<T>(stream);
    (void)values;
    return outcome::decoded;
  } catch (const zcoll::format_error&) {
    return outcome::format_error;
  } catch (const std::exception& e) {
    FAIL("decoding a damaged stream threw something other than format_error: " << e.what());
  } catch (...) {
    FAIL("decoding a damaged stream threw a non-standard exception");
  }
  return outcome::decoded;
}

/// The same through the span overload on `threads` threads, sized from the (damaged) header when it parses.
template <class T, class Codec>
outcome try_decode_threads(const Codec& codec, std::span<const std::byte> stream, unsigned threads,
                           std::size_t max_count) {
  try {
    const auto h = zcoll::read_stream_header(stream);
    if (h.count > max_count) return try_decode<T>(codec, stream);
    std::vector<T> out(static_cast<std::size_t>(h.count));
    codec.decompress(zcoll::exec::Host{threads}, stream, std::span<T>(out));
    return outcome::decoded;
  } catch (const zcoll::format_error&) {
    return outcome::format_error;
  } catch (const std::exception& e) {
    FAIL("decoding a damaged stream threw something other than format_error: " << e.what());
  }
  return outcome::decoded;
}

/// A stream under test, with the codec that wrote it.
template <class Codec, class T>
struct sample {
  std::string name;
  Codec codec;
  std::vector<T> data;
  std::vector<std::byte> stream;
};

template <class T>
sample<zcoll::FZLight, T> fzlight_sample(std::size_t n, std::uint32_t chunk_values) {
  const T fill = T(-1e10);
  const zcoll::FZLight codec{
      {.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk_values, .fill_value = static_cast<double>(fill)}};
  auto data = mixed_input<T>(n, fill);
  auto stream = codec.compress(data);
  // Prove the stream has what the test is about: fill runs, masked blocks, outliers, verbatim chunks.
  const auto ref = reference_decode<T>(stream, reference_predictor::lorenzo, reference_encoder::bitshuffle);
  REQUIRE(ref.census.fill_runs > 0);
  REQUIRE(ref.census.masked_blocks > 0);
  REQUIRE(ref.census.outliers > 0);
  REQUIRE(ref.census.verbatim_chunks > 0);
  REQUIRE(ref.census.exception_chunks > 0);
  return {std::string("FZLight ") + type_name<T>(), codec, std::move(data), std::move(stream)};
}

/// Whether the documented header rules (core/stream_header.hpp) reject a header whose byte `at` was set to
/// `value`; index bytes always break the chunk sizes' sum. Written from the format table, not the reader;
/// `longest_chunk` is the codec's own limit (at most the format's 2^20 values).
bool header_change_must_fail(std::span<const std::byte> original, std::size_t at, std::byte value, bool is_f32,
                             std::uint32_t longest_chunk) {
  std::vector<std::byte> b(original.begin(), original.end());
  b[at] = value;
  const auto u8 = [&](std::size_t o) { return std::to_integer<unsigned>(b[o]); };
  const auto count = peek<std::uint64_t>(b, offset::count);
  const auto eb = peek<double>(b, offset::error_bound);
  const auto fill = peek<std::uint64_t>(b, offset::fill);
  const auto chunk_values = peek<std::uint32_t>(b, offset::chunk_values);
  const auto chunk_count = peek<std::uint32_t>(b, offset::chunk_count);
  if (at < offset::index) {
    if (at <= offset::codec_kind) return true;  // magic, version, codec kind: any change
    if (at >= offset::quantizer && at < offset::count) return true;  // stage ids, back-end, reserved bytes
    if (at == offset::value_type) return true;  // another tag is invalid or the wrong type
    if (u8(offset::flags) > 1) return true;
    if (u8(offset::flags) == 0 && fill != 0) return true;
    if (!(eb >= 0.0) || !std::isfinite(eb)) return true;
    if (is_f32 && (fill >> 32) != 0) return true;
    if (chunk_values < 32 || chunk_values > longest_chunk || chunk_values % 32 != 0) return true;
    // ceil(count / chunk_values) without wrapping.
    const std::uint64_t needed = count / chunk_values + (count % chunk_values != 0 ? 1 : 0);
    if (needed != chunk_count) return true;
    return false;
  }
  return true;  // a chunk size changed: the sizes no longer add up to the stream
}

std::vector<std::byte> replacement_values(std::byte original) {
  std::vector<std::byte> out;
  for (std::byte v : {std::byte{0x00}, std::byte{0xFF}, original ^ std::byte{0x01}, original ^ std::byte{0x80},
                      static_cast<std::byte>(std::to_integer<unsigned>(original) + 1), std::byte{0x7F},
                      original ^ std::byte{0x10}}) {
    if (v != original && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

template <class T, class Codec>
void check_every_truncation(const sample<Codec, T>& s) {
  INFO(s.name << ", stream of " << s.stream.size() << " bytes");
  std::vector<T> out(s.data.size());
  for (std::size_t n = 0; n < s.stream.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    CHECK_THROWS_AS(s.codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(s.stream).first(n),
                                       std::span<T>(out)),
                    zcoll::format_error);
    CHECK_THROWS_AS(s.codec.template decompress<T>(std::span<const std::byte>(s.stream).first(n)),
                    zcoll::format_error);
  }
}

template <class T, class Codec>
void check_every_prefix_byte(const sample<Codec, T>& s) {
  const auto h = zcoll::read_stream_header(s.stream);
  const std::size_t prefix = zcoll::stream_prefix_size_bytes(h.chunk_count);
  std::size_t failed = 0, decoded = 0;
  for (std::size_t at = 0; at < prefix; ++at) {
    for (std::byte value : replacement_values(s.stream[at])) {
      auto damaged = s.stream;
      damaged[at] = value;
      INFO(s.name << ": byte " << at << " set to " << std::to_integer<unsigned>(value));
      const bool must_fail =
          header_change_must_fail(s.stream, at, value, std::is_same_v<T, float>, Codec::longest_chunk_values);
      const outcome o = try_decode<T>(s.codec, damaged);
      if (must_fail) CHECK(o == outcome::format_error);
      ++(o == outcome::format_error ? failed : decoded);
    }
  }
  CHECK(failed > 0);
}

template <class T, class Codec>
void check_random_bit_flips(const sample<Codec, T>& s, int trials) {
  std::mt19937_64 rng(seed + 99);
  std::size_t decoded = 0;
  for (int trial = 0; trial < trials; ++trial) {
    auto damaged = s.stream;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      const std::size_t at = rng() % damaged.size();
      damaged[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    INFO(s.name << ", trial " << trial);
    const outcome o = trial % 8 == 0 ? try_decode_threads<T>(s.codec, damaged, 3, 4 * s.data.size())
                                     : try_decode<T>(s.codec, damaged);
    decoded += o == outcome::decoded;
  }
  // Flips inside verbatim values and code bits decode to other values: not every flip is detectable.
  CHECK(decoded > 0);
}

}  // namespace

TEMPLATE_TEST_CASE("Every truncation of a stream is a format error", "[codec][corruption]", float, double) {
  using T = TestType;
  check_every_truncation(fzlight_sample<T>(1500, 128));
  const zcoll::Identity identity{{.chunk_values = 64}};
  std::vector<T> data(300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<T>(i) * T(0.5);
  check_every_truncation(sample<zcoll::Identity, T>{"Identity", identity, data, identity.compress(data)});
}

TEMPLATE_TEST_CASE("Every header and index byte set to other values: format error or a decode",
                   "[codec][corruption]", float, double) {
  using T = TestType;
  check_every_prefix_byte(fzlight_sample<T>(2000, 256));
  SECTION("a stream without a fill value") {
    const zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-3), .chunk_values = 32}};
    auto data = mixed_input<T>(333, T(0), /*extremes=*/false);
    auto stream = codec.compress(data);
    REQUIRE_FALSE(zcoll::read_stream_header(stream).has_fill_value);
    check_every_prefix_byte(sample<zcoll::FZLight, T>{"FZLight without fill", codec, data, stream});
  }
  SECTION("an Identity stream") {
    const zcoll::Identity codec{{.chunk_values = 64}};
    auto data = mixed_input<T>(200, T(-1e10));
    check_every_prefix_byte(sample<zcoll::Identity, T>{"Identity", codec, data, codec.compress(data)});
  }
}

TEMPLATE_TEST_CASE("Random bit flips: format error or a decode, nothing else", "[codec][corruption]", float, double) {
  using T = TestType;
  check_random_bit_flips(fzlight_sample<T>(2000, 256), 3000);
  check_random_bit_flips(fzlight_sample<T>(700, 64), 1500);
}

TEMPLATE_TEST_CASE("Streams and outputs that end at a guard page: no byte is touched past either end",
                   "[codec][corruption]", float, double) {
  using T = TestType;
  if (!guarded_buffer<>::available) {
    WARN("no guard pages on this platform: test skipped");
    return;
  }
  const auto s = fzlight_sample<T>(1500, 128);
  // Compression into exactly max_compressed_size bytes: scratch writes must stay inside.
  guarded_buffer<> out(s.codec.template max_compressed_size<T>(s.data.size()));
  const auto written = s.codec.compress(zcoll::exec::Host{2}, s.data, out.span());
  REQUIRE(std::equal(written.begin(), written.end(), s.stream.begin(), s.stream.end()));
  // Decompression of the whole stream and of every truncation, each ending at a guard page, into an
  // output that ends at one too.
  guarded_buffer<T> values(s.data.size());
  for (std::size_t n = 0; n <= s.stream.size(); ++n) {
    auto stream = guarded_buffer<>::copy_of(std::span<const std::byte>(s.stream).first(n));
    INFO(n << " of " << s.stream.size() << " bytes");
    if (n < s.stream.size()) {
      CHECK_THROWS_AS(s.codec.decompress(zcoll::exec::Host{}, stream.span(), values.span()), zcoll::format_error);
    } else {
      s.codec.decompress(zcoll::exec::Host{}, stream.span(), values.span());
      require_bound_on_every_element(std::span<const T>(s.data), std::span<const T>(values.span()), 1e-3,
                                     bits(T(-1e10)));
    }
  }
  // Damaged streams at a guard page.
  std::mt19937_64 rng(seed + 5);
  for (int trial = 0; trial < 300; ++trial) {
    auto damaged = s.stream;
    damaged[rng() % damaged.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    auto stream = guarded_buffer<>::copy_of(std::span<const std::byte>(damaged));
    INFO("trial " << trial);
    try {
      s.codec.decompress(zcoll::exec::Host{}, stream.span(), values.span());
    } catch (const zcoll::error& e) {
      // format_error, or argument_error when the flip changed the value count
      CHECK((dynamic_cast<const zcoll::format_error*>(&e) != nullptr ||
             zcoll::read_stream_header(damaged).count != s.data.size()));
    }
  }
}

TEST_CASE("A stream of another value type or codec is a format error", "[codec][corruption]") {
  const std::vector<float> f = mixed_input<float>(1000, -1e10f);
  const std::vector<double> d = mixed_input<double>(1000, -1e10);
  const zcoll::FZLight fz{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 256}};
  const zcoll::Identity id{{.chunk_values = 256}};
  const zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::None, zcoll::encode::BitShuffle> no_lorenzo{
      {.error_bound = zcoll::absolute(1e-3), .chunk_values = 256}};

  const auto fz_f = fz.compress(f), fz_d = fz.compress(d), id_f = id.compress(f), id_d = id.compress(d);
  std::vector<float> out_f(f.size());
  std::vector<double> out_d(d.size());
  // A float stream read as double and back.
  CHECK_THROWS_AS(fz.decompress(zcoll::exec::Host{}, fz_f, std::span<double>(out_d)), zcoll::format_error);
  CHECK_THROWS_AS(fz.decompress<double>(fz_f), zcoll::format_error);
  CHECK_THROWS_AS(fz.decompress(zcoll::exec::Host{}, fz_d, std::span<float>(out_f)), zcoll::format_error);
  CHECK_THROWS_AS(id.decompress(zcoll::exec::Host{2}, id_f, std::span<double>(out_d)), zcoll::format_error);
  // FZLight streams read by Identity and back, and by another pipeline.
  CHECK_THROWS_AS(id.decompress(zcoll::exec::Host{}, fz_f, std::span<float>(out_f)), zcoll::format_error);
  CHECK_THROWS_AS(id.decompress<double>(fz_d), zcoll::format_error);
  CHECK_THROWS_AS(fz.decompress(zcoll::exec::Host{}, id_f, std::span<float>(out_f)), zcoll::format_error);
  CHECK_THROWS_AS(fz.decompress<double>(id_d), zcoll::format_error);
  CHECK_THROWS_AS(no_lorenzo.decompress<float>(fz_f), zcoll::format_error);
  // The controls: each stream decodes with its own codec and type.
  CHECK_NOTHROW(fz.decompress(zcoll::exec::Host{}, fz_f, std::span<float>(out_f)));
  CHECK_NOTHROW(id.decompress(zcoll::exec::Host{}, id_d, std::span<double>(out_d)));
}

namespace {

/// A one-chunk FZLight f32 stream of `count` values, bound 0.5, whose chunk is `chunk` (hand-written).
std::vector<std::byte> crafted_stream(std::uint32_t count, const std::vector<std::uint8_t>& chunk,
                                      bool has_fill = true, double error_bound = 0.5) {
  zcoll::stream_header h;
  h.codec = zcoll::FZLight::id;
  h.type = zcoll::value_type::f32;
  h.has_fill_value = has_fill;
  h.count = count;
  h.error_bound = error_bound;
  h.fill_bits = has_fill ? std::bit_cast<std::uint32_t>(-1e10f) : 0;
  h.chunk_values = 64;
  h.chunk_count = 1;
  auto bytes = header_bytes(h, 4 + chunk.size());
  poke(std::span<std::byte>(bytes), offset::index, static_cast<std::uint32_t>(chunk.size()));
  for (std::size_t i = 0; i < chunk.size(); ++i) bytes[offset::index + 4 + i] = static_cast<std::byte>(chunk[i]);
  return bytes;
}

/// Two all-zero BitShuffle blocks (one byte each), then an exception section of `entries` entries.
std::vector<std::uint8_t> exception_chunk(std::uint16_t entries, const std::vector<std::uint8_t>& body) {
  std::vector<std::uint8_t> c(5 + body.size());
  c[0] = 2;  // coded with exceptions
  c[3] = static_cast<std::uint8_t>(entries & 0xFF);
  c[4] = static_cast<std::uint8_t>(entries >> 8);
  std::copy(body.begin(), body.end(), c.begin() + 5);
  return c;
}

std::vector<std::uint8_t> le32(std::uint32_t v) {
  return {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v >> 16),
          static_cast<std::uint8_t>(v >> 24)};
}

std::vector<std::uint8_t> cat(std::initializer_list<std::vector<std::uint8_t>> parts) {
  std::vector<std::uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("Hand-written chunks: every malformed chunk and exception section is a format error",
          "[codec][corruption]") {
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(0.5), .chunk_values = 64}};
  const std::vector<std::uint8_t> outlier_value = le32(std::bit_cast<std::uint32_t>(1e30f));
  auto decodes = [&](const std::vector<std::byte>& s) { return try_decode<float>(codec, s) == outcome::decoded; };

  // The controls: well-formed hand-written streams decode to what the format says.
  SECTION("controls") {
    const auto coded = crafted_stream(40, {0, 0, 0});
    REQUIRE(decodes(coded));
    for (float x : codec.decompress<float>(coded)) CHECK(x == 0.0f);
    const auto run = crafted_stream(40, exception_chunk(1, {1, 0, 1, 0, 0}));  // fill run over block 1
    const auto values = codec.decompress<float>(run);
    for (std::size_t i = 0; i < 40; ++i) CHECK(values[i] == (i >= 32 ? -1e10f : 0.0f));
    const auto masked = crafted_stream(40, exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(0b100), le32(0b1), outlier_value})));
    const auto m = codec.decompress<float>(masked);
    CHECK(m[0] == 1e30f);
    CHECK(m[2] == -1e10f);
    CHECK(m[1] == 0.0f);
  }
  SECTION("unknown chunk kinds") {
    for (int kind : {3, 4, 0x80, 0xFF}) {
      INFO("kind " << kind);
      CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {static_cast<std::uint8_t>(kind), 0, 0})),
                      zcoll::format_error);
    }
  }
  SECTION("a verbatim chunk of the wrong size") {
    std::vector<std::uint8_t> verbatim(1 + 40 * 4, 0);
    verbatim[0] = 1;
    REQUIRE(decodes(crafted_stream(40, verbatim)));
    verbatim.push_back(0);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, verbatim)), zcoll::format_error);
    verbatim.resize(40 * 4);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, verbatim)), zcoll::format_error);
  }
  SECTION("a coded chunk with too few blocks, or bytes left over") {
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {0, 0})), zcoll::format_error);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {0, 0, 0, 0})), zcoll::format_error);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {0, 0, 33})), zcoll::format_error);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {0, 0, 1, 1, 0, 0})), zcoll::format_error);
  }
  SECTION("a coded chunk in a stream whose bound admits no quantizer step") {
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {0, 0, 0}, true, 0.0)), zcoll::format_error);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, {0, 0, 0}, true, 1e300)), zcoll::format_error);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, exception_chunk(1, {1, 0, 1, 0, 0}), true, 0.0)),
                    zcoll::format_error);
  }
  SECTION("exception sections") {
    const std::vector<std::pair<const char*, std::vector<std::uint8_t>>> bad{
        {"no entries", exception_chunk(0, {})},
        {"entry count beyond the section", exception_chunk(2, {1, 0, 1, 0, 0})},
        {"zero blocks", exception_chunk(1, {0, 0, 0, 0, 0})},
        {"blocks past the chunk", exception_chunk(1, {1, 0, 2, 0, 0})},
        {"first block past the chunk", exception_chunk(1, {2, 0, 1, 0, 0})},
        {"first block 0xFFFF", exception_chunk(1, {0xFF, 0xFF, 1, 0, 0})},
        {"entries out of order", exception_chunk(2, {1, 0, 1, 0, 0, 0, 0, 1, 0, 0})},
        {"entries overlapping", exception_chunk(2, {0, 0, 2, 0, 0, 1, 0, 1, 0, 0})},
        {"unknown entry type", exception_chunk(1, {0, 0, 1, 0, 2})},
        {"masked entry over two blocks", exception_chunk(1, cat({{0, 0, 2, 0, 1}, le32(1), le32(0)}))},
        {"masks overlap", exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(1), le32(1), outlier_value}))},
        {"masks empty", exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(0), le32(0)}))},
        {"fill lane past the last value", exception_chunk(1, cat({{1, 0, 1, 0, 1}, le32(1u << 8), le32(0)}))},
        {"outlier lane past the last value", exception_chunk(1, cat({{1, 0, 1, 0, 1}, le32(0), le32(1u << 31), outlier_value}))},
        {"outlier value missing", exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(0), le32(0b11), outlier_value}))},
        {"masks truncated", exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(0)}))},
        {"bytes after the section", exception_chunk(1, {1, 0, 1, 0, 0, 0})},
    };
    for (const auto& [what, chunk] : bad) {
      INFO(what);
      CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, chunk)), zcoll::format_error);
    }
  }
  SECTION("fill exceptions in a stream without a fill value") {
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, exception_chunk(1, {1, 0, 1, 0, 0}), false)),
                    zcoll::format_error);
    CHECK_THROWS_AS(codec.decompress<float>(crafted_stream(40, exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(1), le32(0)})), false)),
                    zcoll::format_error);
    // Outliers alone need no fill value.
    CHECK(decodes(crafted_stream(40, exception_chunk(1, cat({{0, 0, 1, 0, 1}, le32(0), le32(1), outlier_value})), false)));
  }
}

// A 40-byte stream may claim billions of values. The decoder must find the stream too short for them
// before it allocates or writes anything.
TEST_CASE("A header that claims far more values than the stream holds is a format error, not an allocation",
          "[codec][corruption]") {
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 65536}};
  zcoll::stream_header h;
  h.codec = zcoll::FZLight::id;
  h.type = zcoll::value_type::f32;
  h.error_bound = 1e-3;
  h.chunk_values = 65536;
  h.chunk_count = 0xFFFF'FFFFu;
  h.count = std::uint64_t{h.chunk_count} * h.chunk_values;  // about 2.8e14 values, 1.1 PB of floats
  const auto bytes = header_bytes(h);
  REQUIRE_NOTHROW(zcoll::read_stream_header(bytes));  // the header alone is consistent
  std::vector<float> none;
  CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, bytes, std::span<float>(none)), zcoll::format_error);
  CHECK_THROWS_AS(codec.decompress<float>(bytes), zcoll::format_error);
}

TEST_CASE("A stream that claims 2^64 - 1 values in no chunks is a format error for either overload",
          "[codec][corruption]") {
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 32}};
  zcoll::stream_header h;
  h.codec = zcoll::FZLight::id;
  h.type = zcoll::value_type::f32;
  h.error_bound = 1e-3;
  h.chunk_values = 32;
  h.chunk_count = 0;
  h.count = std::numeric_limits<std::uint64_t>::max();
  const auto bytes = header_bytes(h);
  std::vector<float> none;
  CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, bytes, std::span<float>(none)), zcoll::format_error);
  CHECK_THROWS_AS(codec.decompress<float>(bytes), zcoll::format_error);
}
