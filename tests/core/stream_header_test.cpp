#include <catch2/catch.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/stream_header.hpp"

using namespace zcoll_test;

namespace {

zcoll::stream_header sample_header() {
  zcoll::stream_header h;
  h.codec = zcoll::codec_id{zcoll::pipeline_codec_kind, 1, 2, 3, zcoll::backend_none};
  h.type = zcoll::value_type::f64;
  h.has_fill_value = true;
  h.count = 1000;
  h.error_bound = 0.125;
  h.fill_bits = std::bit_cast<std::uint64_t>(-1e10);
  h.chunk_values = 256;
  h.chunk_count = 4;
  return h;
}

/// A whole stream with the given header and chunk sizes (chunk bytes are filler).
std::vector<std::byte> stream_with_chunks(const zcoll::stream_header& h, const std::vector<std::uint32_t>& sizes) {
  const std::size_t payload = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  auto bytes = header_bytes(h, 4 * sizes.size() + payload);
  for (std::size_t c = 0; c < sizes.size(); ++c) poke(std::span<std::byte>(bytes), offset::index + 4 * c, sizes[c]);
  return bytes;
}

}  // namespace

TEST_CASE("stream header: every field written is read back", "[core][stream_header]") {
  const auto h = sample_header();
  const auto bytes = header_bytes(h);
  REQUIRE(bytes.size() == zcoll::stream_header_size_bytes);

  // The documented byte layout.
  CHECK(std::to_integer<int>(bytes[0]) == 0x5A);
  CHECK(std::to_integer<int>(bytes[1]) == 0x43);
  CHECK(std::to_integer<int>(bytes[2]) == 0x4F);
  CHECK(std::to_integer<int>(bytes[3]) == 0x4C);
  CHECK(std::to_integer<int>(bytes[offset::version]) == 2);
  CHECK(std::to_integer<int>(bytes[offset::codec_kind]) == 0x80);
  CHECK(std::to_integer<int>(bytes[offset::quantizer]) == 1);
  CHECK(std::to_integer<int>(bytes[offset::predictor]) == 2);
  CHECK(std::to_integer<int>(bytes[offset::encoder]) == 3);
  CHECK(std::to_integer<int>(bytes[offset::backend]) == 0);
  CHECK(peek<std::uint32_t>(bytes, offset::reserved) == 0);
  CHECK(std::to_integer<int>(bytes[offset::value_type]) == 2);
  CHECK(std::to_integer<int>(bytes[offset::flags]) == 1);
  CHECK(peek<std::uint64_t>(bytes, offset::count) == 1000);
  CHECK(peek<double>(bytes, offset::error_bound) == 0.125);
  CHECK(peek<std::uint64_t>(bytes, offset::fill) == std::bit_cast<std::uint64_t>(-1e10));
  CHECK(peek<std::uint32_t>(bytes, offset::chunk_values) == 256);
  CHECK(peek<std::uint32_t>(bytes, offset::chunk_count) == 4);

  const auto r = zcoll::read_stream_header(bytes);
  CHECK(r.codec == h.codec);
  CHECK(r.type == h.type);
  CHECK(r.has_fill_value == h.has_fill_value);
  CHECK(r.count == h.count);
  CHECK(r.error_bound == h.error_bound);
  CHECK(r.fill_bits == h.fill_bits);
  CHECK(r.chunk_values == h.chunk_values);
  CHECK(r.chunk_count == h.chunk_count);
}

TEST_CASE("stream header: edge values that are valid round-trip", "[core][stream_header]") {
  auto h = sample_header();
  SECTION("f32 without fill, empty") {
    h.type = zcoll::value_type::f32;
    h.has_fill_value = false;
    h.fill_bits = 0;
    h.count = 0;
    h.chunk_count = 0;
    h.error_bound = 0.0;
  }
  SECTION("f32 NaN fill value") {
    h.type = zcoll::value_type::f32;
    h.fill_bits = std::bit_cast<std::uint32_t>(std::numeric_limits<float>::quiet_NaN());
  }
  SECTION("declared fill value +0.0 (all bits zero)") { h.fill_bits = 0; }
  SECTION("smallest and largest chunk length") {
    h.chunk_values = GENERATE(32u, 65536u, 65568u, 1u << 20);  // the format's; each codec may allow fewer
    h.count = 3 * std::uint64_t{h.chunk_values} + 1;
    h.chunk_count = 4;
  }
  SECTION("largest error bound and subnormal error bound") {
    h.error_bound = GENERATE(std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min());
  }
  SECTION("a count whose last chunk is full") {
    h.count = 1024;
    h.chunk_count = 4;
  }
  const auto r = zcoll::read_stream_header(header_bytes(h));
  CHECK(r.type == h.type);
  CHECK(r.has_fill_value == h.has_fill_value);
  CHECK(r.count == h.count);
  CHECK(zcoll_test::same_bits(r.error_bound, h.error_bound));
  CHECK(r.fill_bits == h.fill_bits);
  CHECK(r.chunk_values == h.chunk_values);
  CHECK(r.chunk_count == h.chunk_count);
}

TEST_CASE("stream header: every invalid field raises format_error", "[core][stream_header]") {
  auto bytes = header_bytes(sample_header());
  REQUIRE_NOTHROW(zcoll::read_stream_header(bytes));
  const std::span<std::byte> b(bytes);

  SECTION("magic") {
    for (std::size_t i = 0; i < 4; ++i) {
      auto copy = bytes;
      copy[i] ^= std::byte{0x20};
      CHECK_THROWS_AS(zcoll::read_stream_header(copy), zcoll::format_error);
    }
  }
  SECTION("version") {
    for (int v : {0, 3, 255}) {
      poke(b, offset::version, static_cast<std::uint8_t>(v));
      CHECK_THROWS_WITH(zcoll::read_stream_header(bytes),
                        Catch::Contains("format version " + std::to_string(v) + " is not supported"));
    }
  }
  SECTION("a codec of its own layout with stage ids set") {
    poke(b, offset::codec_kind, std::uint8_t{0x20});
    CHECK_THROWS_WITH(zcoll::read_stream_header(bytes), Catch::Contains("stage ids are set"));
    for (std::size_t at : {offset::quantizer, offset::predictor, offset::encoder}) poke(b, at, std::uint8_t{0});
    CHECK(zcoll::read_stream_header(bytes).codec == zcoll::codec_id{0x20, 0, 0, 0, 0});  // the control
  }
  SECTION("a lossless back-end this version does not know") {
    poke(b, offset::backend, zcoll::backend_zstd);
    CHECK(zcoll::read_stream_header(bytes).codec.backend == zcoll::backend_zstd);  // the control: zstd is known
    for (int id : {2, 255}) {
      poke(b, offset::backend, static_cast<std::uint8_t>(id));
      CHECK_THROWS_WITH(zcoll::read_stream_header(bytes),
                        Catch::Contains("lossless back-end id " + std::to_string(id) + " is not known"));
    }
  }
  SECTION("reserved bytes") {
    for (std::size_t at = offset::reserved; at < offset::count; ++at) {
      auto copy = bytes;
      copy[at] = std::byte{1};
      CHECK_THROWS_WITH(zcoll::read_stream_header(copy), Catch::Contains("reserved header bytes"));
    }
  }
  SECTION("value type tag") {
    for (int t : {0, 3, 4, 0x81, 255}) {
      poke(b, offset::value_type, static_cast<std::uint8_t>(t));
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
  }
  SECTION("flags reserved bits") {
    for (int f = 2; f < 256; ++f) {
      poke(b, offset::flags, static_cast<std::uint8_t>(f));
      INFO("flags " << f);
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
  }
  SECTION("error bound NaN, negative, -inf") {
    for (double eb : {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(), -1.0,
                      -std::numeric_limits<double>::denorm_min(), -0.5, -std::numeric_limits<double>::infinity()}) {
      poke(b, offset::error_bound, eb);
      INFO("error bound " << eb);
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
    // +inf states "no bound" (a cast that overflowed): the header takes it, a pipeline refuses it.
    poke(b, offset::error_bound, std::numeric_limits<double>::infinity());
    CHECK(zcoll::read_stream_header(bytes).error_bound == std::numeric_limits<double>::infinity());
  }
  SECTION("fill bits without the fill flag") {
    poke(b, offset::flags, std::uint8_t{0});
    CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    poke(b, offset::fill, std::uint64_t{1});
    CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    poke(b, offset::fill, std::uint64_t{0});
    CHECK_NOTHROW(zcoll::read_stream_header(bytes));  // the control: no flag, no bits
  }
  SECTION("f32 fill value with bits above bit 31") {
    poke(b, offset::value_type, std::uint8_t{1});
    poke(b, offset::fill, std::uint64_t{0x1'0000'0000});
    CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    poke(b, offset::fill, std::uint64_t{0xFFFF'FFFF});
    CHECK_NOTHROW(zcoll::read_stream_header(bytes));  // the control: 32 bits are fine
  }
  SECTION("chunk length not a multiple of 32, too small, too large") {
    for (std::uint32_t c : {1u, 16u, 31u, 33u, 100u, 4095u, 4097u, 65535u, 65537u, (1u << 20) - 1,
                            (1u << 20) + 1, (1u << 20) + 32, 1u << 21, std::numeric_limits<std::uint32_t>::max()}) {
      poke(b, offset::chunk_values, c);
      // Keep the chunk count consistent where it fits, so only the length is wrong.
      poke(b, offset::chunk_count, static_cast<std::uint32_t>(zcoll::chunk_count_for(1000, c)));
      INFO("chunk length " << c);
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
  }
  SECTION("chunk length 0 (an unchunked body) only with chunk count 0") {
    poke(b, offset::chunk_values, std::uint32_t{0});
    for (std::uint32_t n : {1u, 32u, std::numeric_limits<std::uint32_t>::max()}) {
      poke(b, offset::chunk_count, n);
      INFO("chunk count " << n);
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
    poke(b, offset::chunk_count, std::uint32_t{0});
    CHECK(zcoll::read_stream_header(bytes).chunk_values == 0);
    // A chunked reader refuses it.
    CHECK_THROWS_AS(zcoll::read_stream_layout(bytes), zcoll::format_error);
  }
  SECTION("chunk count mismatch") {
    for (std::uint32_t n : {0u, 3u, 5u, 1000u, std::numeric_limits<std::uint32_t>::max()}) {
      poke(b, offset::chunk_count, n);
      INFO("chunk count " << n);
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
  }
  SECTION("value count that does not match the chunk count") {
    for (std::uint64_t count : {std::uint64_t{0}, std::uint64_t{768}, std::uint64_t{1025}, std::uint64_t{1} << 40,
                                std::uint64_t{1} << 63}) {
      poke(b, offset::count, count);
      INFO("count " << count);
      CHECK_THROWS_AS(zcoll::read_stream_header(bytes), zcoll::format_error);
    }
  }
  SECTION("every truncation of the header") {
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      INFO("header truncated to " << n << " bytes");
      CHECK_THROWS_AS(zcoll::read_stream_header(std::span<const std::byte>(bytes).first(n)), zcoll::format_error);
    }
  }
}

// ceil(count / chunk_values) must not wrap around: a count near 2^64 needs about 2^59 chunks, not 0.
TEST_CASE("stream header: a value count near 2^64 with chunk count 0 raises format_error", "[core][stream_header]") {
  auto h = sample_header();
  h.chunk_count = 0;
  for (std::uint32_t chunk_values : {32u, 4096u, 65536u}) {
    for (std::uint64_t count : {std::numeric_limits<std::uint64_t>::max(),
                                std::numeric_limits<std::uint64_t>::max() - chunk_values + 2}) {
      h.count = count;
      h.chunk_values = chunk_values;
      INFO("count " << count << ", chunk length " << chunk_values << ", chunk count 0");
      CHECK_THROWS_AS(zcoll::read_stream_header(header_bytes(h)), zcoll::format_error);
    }
  }
}

TEST_CASE("stream layout: index and chunk sizes are checked against the stream", "[core][stream_header]") {
  const auto h = sample_header();
  const std::vector<std::uint32_t> sizes{10, 1, 300, 7};
  auto bytes = stream_with_chunks(h, sizes);

  SECTION("a valid layout") {
    const auto layout = zcoll::read_stream_layout(bytes);
    CHECK(layout.header.chunk_count == 4);
    REQUIRE(layout.index.size() == 16);
    std::size_t expected_offset = zcoll::stream_prefix_size_bytes(4);
    CHECK(expected_offset == 64);
    for (std::uint32_t c = 0; c < 4; ++c) {
      CHECK(layout.chunk_size_bytes(c) == sizes[c]);
      CHECK(layout.chunk_offset(c) == expected_offset);
      expected_offset += sizes[c];
    }
    CHECK(expected_offset == bytes.size());
  }
  SECTION("an empty stream has no index") {
    auto e = sample_header();
    e.count = 0;
    e.chunk_count = 0;
    const auto layout = zcoll::read_stream_layout(header_bytes(e));
    CHECK(layout.index.empty());
    CHECK_THROWS_AS(zcoll::read_stream_layout(header_bytes(e, 1)), zcoll::format_error);  // a stray byte
  }
  SECTION("index truncated") {
    for (std::size_t n = zcoll::stream_header_size_bytes; n < zcoll::stream_prefix_size_bytes(4); ++n) {
      INFO("stream of " << n << " bytes");
      CHECK_THROWS_AS(zcoll::read_stream_layout(std::span<const std::byte>(bytes).first(n)), zcoll::format_error);
    }
  }
  SECTION("every truncation of the chunks") {
    for (std::size_t n = zcoll::stream_prefix_size_bytes(4); n < bytes.size(); ++n) {
      INFO("stream of " << n << " bytes");
      CHECK_THROWS_AS(zcoll::read_stream_layout(std::span<const std::byte>(bytes).first(n)), zcoll::format_error);
    }
  }
  SECTION("trailing bytes after the last chunk") {
    bytes.push_back(std::byte{0});
    CHECK_THROWS_AS(zcoll::read_stream_layout(bytes), zcoll::format_error);
  }
  SECTION("a chunk size that overruns the stream") {
    for (std::uint32_t c = 0; c < 4; ++c) {
      for (std::uint32_t size : {sizes[c] + 1, 0xFFFF'FFFFu, 0x8000'0000u, static_cast<std::uint32_t>(bytes.size())}) {
        auto copy = bytes;
        poke(std::span<std::byte>(copy), offset::index + 4 * c, size);
        INFO("chunk " << c << " size " << size);
        CHECK_THROWS_AS(zcoll::read_stream_layout(copy), zcoll::format_error);
      }
    }
  }
  SECTION("a chunk size that underruns the stream, or is zero") {
    for (std::uint32_t c = 0; c < 4; ++c) {
      for (std::uint32_t size : {sizes[c] - 1, 0u}) {
        auto copy = bytes;
        poke(std::span<std::byte>(copy), offset::index + 4 * c, size);
        INFO("chunk " << c << " size " << size);
        CHECK_THROWS_AS(zcoll::read_stream_layout(copy), zcoll::format_error);
      }
    }
  }
  SECTION("sizes that sum to the stream but include a zero-size chunk") {
    poke(std::span<std::byte>(bytes), offset::index + 4, std::uint32_t{0});
    poke(std::span<std::byte>(bytes), offset::index + 8, std::uint32_t{301});
    CHECK_THROWS_AS(zcoll::read_stream_layout(bytes), zcoll::format_error);
  }
}

TEST_CASE("stream layout helpers", "[core][stream_header]") {
  CHECK(zcoll::chunk_count_for(0, 32) == 0);
  CHECK(zcoll::chunk_count_for(1, 32) == 1);
  CHECK(zcoll::chunk_count_for(32, 32) == 1);
  CHECK(zcoll::chunk_count_for(33, 32) == 2);
  CHECK(zcoll::chunk_count_for(10007, 4096) == 3);
  CHECK(zcoll::stream_prefix_size_bytes(0) == 48);
  CHECK(zcoll::stream_prefix_size_bytes(3) == 60);
}

// A stream of zcoll before API 1.0: its 40-byte header with version 1 and the stage ids packed in byte 5.
TEST_CASE("stream header: a format version 1 stream is refused, naming its version", "[core][stream_header]") {
  std::vector<std::byte> v1(40 + 4 * 1 + 12, std::byte{0});  // header, index, a chunk of 12 bytes
  for (std::size_t i = 0; i < 4; ++i) v1[i] = std::byte{zcoll::stream_magic[i]};
  v1[4] = std::byte{1};     // version 1
  v1[5] = std::byte{0x95};  // FZLight's v1 id: 1 qqq pp ee = 1 001 01 01
  v1[6] = std::byte{1};     // f32
  poke(std::span<std::byte>(v1), 8, std::uint64_t{100});
  poke(std::span<std::byte>(v1), 32, std::uint32_t{4096});
  poke(std::span<std::byte>(v1), 36, std::uint32_t{1});
  for (const std::size_t length : {v1.size(), std::size_t{5}, std::size_t{40}}) {
    INFO(length << " bytes");
    CHECK_THROWS_WITH(zcoll::read_stream_header(std::span<const std::byte>(v1).first(length)),
                      Catch::Contains("format version 1") && Catch::Contains("before API 1.0"));
  }
}
