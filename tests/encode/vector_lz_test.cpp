#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/encode/vector_lz.hpp"

namespace {

using VectorLZ = zcoll::encode::VectorLZ;
using BitShuffle = zcoll::encode::BitShuffle;
using Catch::Matchers::Contains;
using residual_vector = std::vector<std::int32_t>;

static_assert(zcoll::encode::chunk_encoder<VectorLZ>, "VectorLZ must model chunk_encoder");

constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();

/// The largest multiple of lcm(32, dim) that is a valid chunk length, or dim's own multiple of 32.
std::uint32_t chunk_values_for(std::size_t dim) {
  const std::size_t step = std::lcm(std::size_t{32}, dim);
  return static_cast<std::uint32_t>(step > 65536 ? step : 65536 / step * step);
}

/// The chunk layout of a pipeline over rows of `dim` values.
zcoll::encode::chunk_layout layout_for(std::size_t dim) { return {.chunk_values = chunk_values_for(dim), .row_length = dim}; }

/// make_model, then the model through write_model / read_model, as a stream carries it.
VectorLZ::model model_via_stream(std::size_t dim, std::uint32_t window) {
  const VectorLZ::model made = VectorLZ::make_model({}, {.match_window = window}, layout_for(dim));
  std::vector<std::byte> bytes(VectorLZ::model_size_bytes(made));
  zcoll::byte_writer writer(bytes);
  VectorLZ::write_model(made, writer);
  REQUIRE(writer.offset() == bytes.size());
  zcoll::byte_reader reader(bytes);
  const VectorLZ::model read = VectorLZ::read_model(reader);
  REQUIRE(reader.offset() == bytes.size());
  REQUIRE(read == made);
  return read;
}

VectorLZ::model model_for(std::size_t dim, std::uint32_t window) { return model_via_stream(dim, window); }

std::size_t vector_count(std::size_t values, std::size_t dim) { return (values + dim - 1) / dim; }

/// The documented format, built the slow and obvious way: for each full vector the nearest earlier
/// equal one within the window (by brute force), then the literals' blocks.
std::vector<std::byte> reference_chunk(const VectorLZ::model& m, const residual_vector& r) {
  const std::size_t dim = m.dim, vectors = vector_count(r.size(), dim);
  std::vector<std::byte> out(vectors);
  residual_vector literals;
  for (std::size_t v = 0; v < vectors; ++v) {
    const std::size_t length = std::min(dim, r.size() - v * dim);
    std::size_t token = 0;
    for (std::size_t d = 1; length == dim && d <= std::min<std::size_t>(m.window, v) && token == 0; ++d) {
      if (std::equal(r.begin() + static_cast<std::ptrdiff_t>(v * dim), r.begin() + static_cast<std::ptrdiff_t>((v + 1) * dim),
                     r.begin() + static_cast<std::ptrdiff_t>((v - d) * dim))) {
        token = d;
      }
    }
    out[v] = static_cast<std::byte>(token);
    if (token == 0) literals.insert(literals.end(), r.begin() + static_cast<std::ptrdiff_t>(v * dim),
                                    r.begin() + static_cast<std::ptrdiff_t>(v * dim + length));
  }
  literals.resize((literals.size() + 31) / 32 * 32, 0);
  for (std::size_t b = 0; b < literals.size(); b += 32) {
    std::array<std::byte, BitShuffle::max_block_bytes> block;
    const std::size_t size = BitShuffle::encode_block(literals.data() + b, block.data());
    out.insert(out.end(), block.begin(), block.begin() + static_cast<std::ptrdiff_t>(size));
  }
  return out;
}

/// Room for any chunk: a token per vector and a full block per 32 literal residuals.
std::size_t generous_bytes(std::size_t values, std::size_t dim) {
  return vector_count(values, dim) + (values / 32 + 2) * BitShuffle::max_block_bytes;
}

/// Encodes from residuals that end at a guard page (the hash and the comparison use masked loads,
/// which the sanitizers do not see).
std::vector<std::byte> encode(const VectorLZ::model& m, const residual_vector& r) {
  auto guarded = zcoll_test::guarded_buffer<std::int32_t>::copy_of(r);
  std::vector<std::byte> out(generous_bytes(r.size(), m.dim), std::byte{0xCD});
  const auto size = VectorLZ::encode_chunk(m, guarded.span(), out);
  REQUIRE(size.has_value());
  REQUIRE(*size <= out.size());
  out.resize(*size);
  return out;
}

/// Decodes from a copy that ends at a guard page into residuals that end at one: a read or write past
/// either faults.
void decode_guarded(const VectorLZ::model& m, std::span<const std::byte> chunk, std::span<std::uint32_t> residuals) {
  auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(chunk);
  const std::size_t read = VectorLZ::decode_chunk(m, in.span(), residuals);
  REQUIRE(read == chunk.size());
}

std::size_t matches_in(const std::vector<std::byte>& chunk, std::size_t vectors) {
  return static_cast<std::size_t>(
      std::count_if(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(vectors), [](std::byte t) { return t != std::byte{0}; }));
}

/// Encodes, checks the bytes against the reference, decodes into a guarded buffer pre-filled with
/// garbage and checks every residual. Returns the chunk.
std::vector<std::byte> require_round_trip(const VectorLZ::model& m, const residual_vector& r) {
  const auto chunk = encode(m, r);
  REQUIRE(chunk == reference_chunk(m, r));
  zcoll_test::guarded_buffer<std::uint32_t> decoded(r.size());
  std::fill(decoded.span().begin(), decoded.span().end(), 0xDEADBEEFu);
  decode_guarded(m, chunk, decoded.span());
  for (std::size_t i = 0; i < r.size(); ++i) {
    INFO("residual " << i);
    REQUIRE(static_cast<std::int32_t>(decoded.span()[i]) == r[i]);
  }
  return chunk;
}

/// `count` values drawn as vectors from a table of `rows` random rows, the row skewed toward the
/// first ones (u^3: a power law like embedding lookups); values within +-`amplitude`.
residual_vector repetitive(std::size_t count, std::size_t dim, std::size_t rows, std::int32_t amplitude,
                           std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int32_t> value(-amplitude, amplitude);
  residual_vector table(rows * dim);
  for (auto& x : table) x = value(rng);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  residual_vector r(count);
  for (std::size_t v = 0; v * dim < count; ++v) {
    const auto row = std::min(rows - 1, static_cast<std::size_t>(static_cast<double>(rows) * std::pow(u(rng), 3.0)));
    for (std::size_t j = 0; j < dim && v * dim + j < count; ++j) r[v * dim + j] = table[row * dim + j];
  }
  return r;
}

/// Vectors that are all different: element 0 of vector v is v (offset), the rest random.
residual_vector distinct_vectors(std::size_t count, std::size_t dim, std::int32_t offset, std::mt19937_64& rng) {
  residual_vector r(count);
  std::uniform_int_distribution<std::int32_t> value(-1000, 1000);
  for (std::size_t i = 0; i < count; ++i) r[i] = i % dim == 0 ? offset + static_cast<std::int32_t>(i / dim) : value(rng);
  return r;
}

std::uint8_t token_of(const std::vector<std::byte>& chunk, std::size_t v) { return std::to_integer<std::uint8_t>(chunk.at(v)); }

}  // namespace

TEST_CASE("VectorLZ has the documented identity", "[encode][vector_lz]") {
  STATIC_REQUIRE(VectorLZ::id == 3);
  STATIC_REQUIRE(std::string_view(VectorLZ::name) == "vector-lz");
  STATIC_REQUIRE(VectorLZ::needs_statistics);  // for the literals' Huffman code
  VectorLZ::statistics s;
  const residual_vector r = {1, 2, 3};
  s.add(r);
  s.merge(VectorLZ::statistics{});
  const auto m = VectorLZ::make_model(s, {.match_window = 100}, layout_for(64));
  CHECK(m.dim == 64);
  CHECK(m.window == 100);
  CHECK(VectorLZ::model_size_bytes(m) == VectorLZ::lz_model_bytes + zcoll::encode::Huffman::model_size_bytes(m.literals));
}

TEST_CASE("VectorLZ codes its literals with the Huffman code of the statistics", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 5);
  for (std::size_t dim : {1u, 32u, 100u}) {
    // Repeated rows of narrow values: matches for the repeats, a short code for the literals.
    const auto r = repetitive(6000, dim, 400, 3, rng);
    VectorLZ::statistics s;
    s.add(r);
    const auto coded = VectorLZ::make_model(s, {.match_window = 255}, layout_for(dim));
    REQUIRE_FALSE(coded.literals.bitplane_fallback);
    VectorLZ::model plain = coded;
    plain.literals = {};  // bit-plane literals
    const auto coded_chunk = encode(coded, r);
    const auto plain_chunk = encode(plain, r);
    INFO("dim " << dim << ": Huffman literals " << coded_chunk.size() << " bytes, bit-plane " << plain_chunk.size());
    CHECK(coded_chunk.size() < plain_chunk.size());
    zcoll_test::guarded_buffer<std::uint32_t> decoded(r.size());
    decode_guarded(coded, coded_chunk, decoded.span());
    for (std::size_t i = 0; i < r.size(); ++i) REQUIRE(static_cast<std::int32_t>(decoded.span()[i]) == r[i]);
    // The model goes through the stream, and every truncation of the chunk is a format error.
    std::vector<std::byte> model_bytes(VectorLZ::model_size_bytes(coded));
    zcoll::byte_writer writer(model_bytes);
    VectorLZ::write_model(coded, writer);
    zcoll::byte_reader reader(model_bytes);
    CHECK(VectorLZ::read_model(reader) == coded);
    std::vector<std::uint32_t> out(r.size());
    for (std::size_t n = 0; n < coded_chunk.size(); n += 7) {
      auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(std::span(coded_chunk).first(n));
      REQUIRE_THROWS_AS(VectorLZ::decode_chunk(coded, in.span(), out), zcoll::format_error);
    }
  }
}

TEST_CASE("VectorLZ round-trips chunks of every length, vector length and window", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed);
  for (std::size_t dim : {1u, 3u, 32u, 100u, 1024u}) {
    for (std::uint32_t window : {1u, 7u, 255u}) {
      const auto m = model_for(dim, window);
      for (std::size_t count : {0u, 1u, 31u, 32u, 33u, 4096u, 65536u}) {
        INFO("dim " << dim << ", window " << window << ", " << count << " values");
        const auto r = repetitive(count, dim, 40, 300, rng);
        const auto chunk = require_round_trip(m, r);
        // A partial last vector is a literal.
        if (count % dim != 0) CHECK(token_of(chunk, count / dim) == 0);
      }
    }
  }
}

TEST_CASE("VectorLZ: all vectors equal cost one literal vector and a token each", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 1);
  for (std::size_t dim : {1u, 3u, 32u, 64u, 128u, 1024u}) {
    const std::size_t vectors = std::min<std::size_t>(2048, 65536 / dim);
    residual_vector row(dim);
    for (auto& x : row) x = static_cast<std::int32_t>(rng() % 2001) - 1000;
    residual_vector r;
    for (std::size_t v = 0; v < vectors; ++v) r.insert(r.end(), row.begin(), row.end());
    INFO("dim " << dim);
    const auto chunk = require_round_trip(model_for(dim, 255), r);
    CHECK(token_of(chunk, 0) == 0);
    for (std::size_t v = 1; v < vectors; ++v) REQUIRE(token_of(chunk, v) == 1);
    const auto literal_only = reference_chunk(model_for(dim, 255), row);
    CHECK(chunk.size() == vectors - 1 + literal_only.size());
  }
  SECTION("all zero: the literal is one-byte blocks") {
    const residual_vector zeros(4096, 0);
    const auto chunk = require_round_trip(model_for(32, 255), zeros);
    CHECK(chunk.size() == 128 + 1);
  }
}

TEST_CASE("VectorLZ: all vectors distinct cost one token byte per vector over bit-shuffle", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 2);
  for (std::size_t dim : {1u, 3u, 32u, 100u}) {
    const std::size_t count = 4096;
    const auto r = distinct_vectors(count, dim, -2000, rng);
    INFO("dim " << dim);
    const auto chunk = require_round_trip(model_for(dim, 255), r);
    const std::size_t vectors = vector_count(count, dim);
    CHECK(matches_in(chunk, vectors) == 0);
    std::size_t blocks_bytes = 0;
    for (std::size_t b = 0; b < count; b += 32) {
      std::array<std::byte, BitShuffle::max_block_bytes> block;
      blocks_bytes += BitShuffle::encode_block(r.data() + b, block.data());
    }
    CHECK(chunk.size() == vectors + blocks_bytes);
  }
}

TEST_CASE("VectorLZ: a repeat exactly at the window edge matches, one past it does not", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 3);
  for (std::size_t dim : {1u, 3u, 32u}) {
    for (std::uint32_t window : {1u, 2u, 17u, 254u, 255u}) {
      const auto m = model_for(dim, window);
      residual_vector a(dim);
      for (auto& x : a) x = 7777 + static_cast<std::int32_t>(rng() % 100);
      for (std::size_t distance : {std::size_t{window}, std::size_t{window} + 1}) {
        INFO("dim " << dim << ", window " << window << ", repeat at distance " << distance);
        residual_vector r = a;
        const auto between = distinct_vectors((distance - 1) * dim, dim, 0, rng);
        r.insert(r.end(), between.begin(), between.end());
        r.insert(r.end(), a.begin(), a.end());
        const auto chunk = require_round_trip(m, r);
        CHECK(token_of(chunk, distance) == (distance <= window ? distance : 0));
        CHECK(matches_in(chunk, distance + 1) == (distance <= window ? 1 : 0));
      }
    }
  }
}

TEST_CASE("VectorLZ finds the nearest repeat whatever the hash slots share", "[encode][vector_lz]") {
  // Many distinct short vectors in a long chunk: slots are shared by many vectors, and the tokens must
  // still be the nearest repeat within the window (require_round_trip compares with the brute-force
  // reference byte for byte).
  std::mt19937_64 rng(zcoll_test::seed + 4);
  for (std::size_t dim : {1u, 2u, 5u}) {
    for (std::uint32_t window : {3u, 64u, 255u}) {
      for (std::size_t rows : {10u, 600u, 5000u}) {
        INFO("dim " << dim << ", window " << window << ", rows " << rows);
        require_round_trip(model_for(dim, window), repetitive(65536 / dim * dim, dim, rows, 3, rng));
      }
    }
  }
}

TEST_CASE("VectorLZ round-trips extreme residuals", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 5);
  for (std::size_t dim : {1u, 32u, 33u}) {
    residual_vector r(4096 + 7);
    for (std::size_t i = 0; i < r.size(); ++i) {
      switch (rng() % 4) {
        case 0: r[i] = int_min; break;
        case 1: r[i] = int_max; break;
        case 2: r[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng())); break;
        default: r[i] = -1; break;
      }
    }
    // and some repeats of those
    for (std::size_t v = 10; v + 1 < r.size() / dim; v += 3) {
      std::copy_n(r.begin() + static_cast<std::ptrdiff_t>((v - 5) * dim), dim, r.begin() + static_cast<std::ptrdiff_t>(v * dim));
    }
    INFO("dim " << dim);
    require_round_trip(model_for(dim, 255), r);
  }
}

TEST_CASE("VectorLZ: larger windows find more matches and give smaller chunks", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 6);
  for (std::size_t dim : {32u, 64u}) {
    const auto r = repetitive(65536, dim, 3000, 200, rng);
    const std::size_t vectors = 65536 / dim;
    std::size_t last_matches = 0, last_size = std::numeric_limits<std::size_t>::max();
    for (std::uint32_t window : {1u, 8u, 32u, 64u, 128u, 255u}) {
      INFO("dim " << dim << ", window " << window);
      const auto chunk = require_round_trip(model_for(dim, window), r);
      const std::size_t matches = matches_in(chunk, vectors);
      CHECK(matches > last_matches);
      CHECK(chunk.size() < last_size);
      last_matches = matches;
      last_size = chunk.size();
    }
  }
}

TEST_CASE("VectorLZ encode returns nullopt rather than writing past a too-small out", "[encode][vector_lz]") {
  if (!zcoll_test::guarded_buffer<std::byte>::available) return;
  std::mt19937_64 rng(zcoll_test::seed + 7);
  struct input {
    std::size_t dim;
    residual_vector residuals;
  };
  residual_vector wide(1000);
  for (auto& x : wide) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));  // 133-byte blocks
  const std::vector<input> inputs = {{32, repetitive(1024, 32, 8, 1000, rng)},
                                     {3, repetitive(1000, 3, 50, 20, rng)},
                                     {1, repetitive(777, 1, 30, 5, rng)},
                                     {10, wide}};
  for (const auto& [dim, r] : inputs) {
    const auto m = model_for(dim, 255);
    const auto expected = encode(m, r);
    for (std::size_t room = 0; room <= expected.size() + 200; ++room) {
      INFO("dim " << dim << ", " << r.size() << " values, chunk of " << expected.size() << " bytes, room " << room);
      zcoll_test::guarded_buffer<std::byte> out(room);
      const auto size = VectorLZ::encode_chunk(m, r, out.span());
      if (room < expected.size()) {
        REQUIRE_FALSE(size.has_value());
      } else {
        REQUIRE(size == expected.size());
        REQUIRE(std::equal(expected.begin(), expected.end(), out.span().begin()));
      }
    }
  }
}

TEST_CASE("VectorLZ decode rejects every truncation of a chunk", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 8);
  for (std::size_t dim : {1u, 3u, 32u}) {
    for (std::size_t count : {1u, 33u, 1000u, 4096u}) {
      const auto m = model_for(dim, 255);
      const auto r = repetitive(count, dim, 20, 100, rng);
      const auto chunk = require_round_trip(m, r);
      std::vector<std::uint32_t> decoded(count);
      for (std::size_t n = 0; n < chunk.size(); ++n) {
        INFO("dim " << dim << ", " << count << " values, truncated to " << n << " of " << chunk.size() << " bytes");
        auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(std::span(chunk).first(n));
        REQUIRE_THROWS_AS(VectorLZ::decode_chunk(m, in.span(), decoded), zcoll::format_error);
      }
    }
  }
}

TEST_CASE("VectorLZ decode survives single-byte corruptions", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 9);
  std::size_t rejected = 0, trials = 0;
  for (std::size_t dim : {1u, 3u, 32u, 100u}) {
    for (std::uint32_t window : {1u, 16u, 255u}) {
      const auto m = model_for(dim, window);
      const std::size_t count = 3000 + dim / 2;
      const auto r = repetitive(count, dim, 30, 500, rng);
      const auto chunk = require_round_trip(m, r);
      zcoll_test::guarded_buffer<std::uint32_t> decoded(count);
      for (int trial = 0; trial < 1500; ++trial) {
        auto corrupted = chunk;
        const std::size_t at = trial < 200 ? rng() % std::min<std::size_t>(chunk.size(), vector_count(count, dim))
                                           : rng() % chunk.size();
        const auto value = static_cast<std::byte>(rng() % 256);
        if (corrupted[at] == value) continue;
        corrupted[at] = value;
        auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(corrupted);
        ++trials;
        try {
          const std::size_t read = VectorLZ::decode_chunk(m, in.span(), decoded.span());
          REQUIRE(read <= corrupted.size());
        } catch (const zcoll::format_error&) {
          ++rejected;
        }
      }
    }
  }
  INFO(rejected << " of " << trials << " corruptions rejected");
  CHECK(rejected > trials / 4);
}

TEST_CASE("VectorLZ decode rejects malformed chunks", "[encode][vector_lz]") {
  const auto m = model_for(4, 5);
  residual_vector r = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 9, 9};  // literal, literal, copy 2, partial
  const auto chunk = require_round_trip(m, r);
  REQUIRE(chunk.size() >= 4);
  REQUIRE(token_of(chunk, 2) == 2);
  std::vector<std::uint32_t> decoded(r.size());
  const auto rejects = [&](std::vector<std::byte> bad, const std::string& what) {
    auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(bad);
    CHECK_THROWS_WITH(VectorLZ::decode_chunk(m, in.span(), decoded), Contains(what));
  };
  auto bad = chunk;
  bad[1] = std::byte{2};  // vector 1 cannot copy from vector -1
  rejects(bad, "token 2 of vector 1");
  bad = chunk;
  bad[0] = std::byte{1};
  rejects(bad, "token 1 of vector 0");
  bad = chunk;
  bad[2] = std::byte{6};  // past the window of 5 (and past the start)
  rejects(bad, "window of 5");
  bad = chunk;
  bad[3] = std::byte{1};  // the partial vector must be a literal
  rejects(bad, "partial last vector");
  bad = chunk;
  bad.push_back(std::byte{0});  // a byte past the chunk is not read: the chunk's size is its own
  {
    auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(bad);
    CHECK(VectorLZ::decode_chunk(m, in.span(), decoded) == chunk.size());
  }
  rejects({}, "shorter than its 4 token bytes");
  bad = chunk;
  bad[1] = std::byte{1};  // one literal fewer: its residuals are left where padding must be zero
  rejects(bad, "padding residual 6");

  SECTION("non-zero padding in the last block") {
    // 10 literal residuals, padding lanes 10..31; set lane 20 in plane 0.
    residual_vector ten = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const auto tm = model_for(10, 5);
    auto c = require_round_trip(tm, ten);
    REQUIRE(c.size() == 1 + 5 + 4);  // token, planes byte + sign mask, one plane
    c[1 + 5 + 2] |= std::byte{0x10};  // bit 20 of plane 0
    std::vector<std::uint32_t> out(10);
    CHECK_THROWS_WITH(VectorLZ::decode_chunk(tm, c, out), Contains("padding residual 20"));
  }
  SECTION("an empty chunk") {
    const residual_vector none;
    const auto c = encode(m, none);
    CHECK(c.empty());
    std::vector<std::uint32_t> out;
    CHECK(VectorLZ::decode_chunk(m, c, out) == 0);
    // Bytes past the chunk are not the encoder's: it reads none of them (the pipeline rejects them).
    const std::array<std::byte, 1> extra{};
    CHECK(VectorLZ::decode_chunk(m, extra, out) == 0);
  }
}

TEST_CASE("VectorLZ decode with another model's parameters fails cleanly", "[encode][vector_lz]") {
  std::mt19937_64 rng(zcoll_test::seed + 10);
  const auto r = repetitive(4096, 32, 20, 100, rng);
  const auto chunk = require_round_trip(model_for(32, 255), r);
  zcoll_test::guarded_buffer<std::uint32_t> decoded(r.size());
  auto in = zcoll_test::guarded_buffer<std::byte>::copy_of(chunk);
  for (std::uint32_t dim : {1u, 16u, 31u, 33u, 64u, 4096u}) {
    for (std::uint8_t window : {std::uint8_t{1}, std::uint8_t{4}, std::uint8_t{255}}) {
      INFO("dim " << dim << ", window " << int{window});
      try {
        VectorLZ::decode_chunk({.dim = dim, .window = window}, in.span(), decoded.span());
      } catch (const zcoll::format_error&) {
      }
    }
  }
}

TEST_CASE("VectorLZ rejects a hand-built model with vector length 0", "[encode][vector_lz]") {
  const VectorLZ::model zero{.dim = 0, .window = 8};
  const residual_vector r(64, 1);
  std::vector<std::byte> out(1000);
  std::vector<std::uint32_t> decoded(64);
  CHECK_THROWS_WITH(VectorLZ::encode_chunk(zero, r, out), Contains("model.dim is 0"));
  CHECK_THROWS_WITH(VectorLZ::decode_chunk(zero, out, decoded), Contains("model.dim is 0"));
}

TEST_CASE("VectorLZ model: truncations and corruptions raise format_error or read a valid model", "[encode][vector_lz]") {
  const auto m = model_for(64, 200);
  std::vector<std::byte> bytes(VectorLZ::model_size_bytes(m));
  zcoll::byte_writer writer(bytes);
  VectorLZ::write_model(m, writer);
  // The documented layout: u32 dim, u8 window, the literals' Huffman model (here 1 byte: bit-plane).
  CHECK(zcoll_test::peek<std::uint32_t>(bytes, 0) == 64);
  CHECK(zcoll_test::peek<std::uint8_t>(bytes, 4) == 200);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("model truncated to " << n << " bytes");
    zcoll::byte_reader reader(std::span<const std::byte>(bytes).first(n));
    CHECK_THROWS_AS(VectorLZ::read_model(reader), zcoll::format_error);
  }
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    for (unsigned value = 0; value < 256; ++value) {
      auto corrupted = bytes;
      corrupted[at] = static_cast<std::byte>(value);
      const auto dim = zcoll_test::peek<std::uint32_t>(corrupted, 0);
      const auto window = zcoll_test::peek<std::uint8_t>(corrupted, 4);
      // Byte 5 is the literals' Huffman model: 1 = bit-plane literals, all of it; 0 = a code, which
      // must follow (it does not here).
      const bool valid = dim >= 1 && dim <= 65536 && window >= 1 && std::to_integer<unsigned>(corrupted[5]) == 1;
      INFO("byte " << at << " = " << value);
      zcoll::byte_reader reader(corrupted);
      if (valid) {
        const auto read = VectorLZ::read_model(reader);
        CHECK(read.dim == dim);
        CHECK(read.window == window);
      } else {
        CHECK_THROWS_AS(VectorLZ::read_model(reader), zcoll::format_error);
      }
    }
  }
  SECTION("out-of-range fields, named") {
    auto bad = bytes;
    zcoll_test::poke<std::uint32_t>(bad, 0, 0);
    zcoll::byte_reader r0(bad);
    CHECK_THROWS_WITH(VectorLZ::read_model(r0), Contains("vector length 0"));
    zcoll_test::poke<std::uint32_t>(bad, 0, 65537);
    zcoll::byte_reader r1(bad);
    CHECK_THROWS_WITH(VectorLZ::read_model(r1), Contains("vector length 65537"));
    bad = bytes;
    zcoll_test::poke<std::uint8_t>(bad, 4, 0);
    zcoll::byte_reader r2(bad);
    CHECK_THROWS_WITH(VectorLZ::read_model(r2), Contains("match window 0"));
  }
}

TEST_CASE("VectorLZ make_model names the setting it cannot use", "[encode][vector_lz]") {
  const auto fails = [](VectorLZ::settings settings, zcoll::encode::chunk_layout layout, const std::string& what) {
    CHECK_THROWS_AS(VectorLZ::make_model({}, settings, layout), zcoll::argument_error);
    CHECK_THROWS_WITH(VectorLZ::make_model({}, settings, layout), Contains(what));
  };
  fails({}, {.chunk_values = 4096}, "shape is empty or ends in 0");
  fails({.match_window = 0}, {.chunk_values = 4096, .row_length = 32}, "match_window 0 must be in 1..255");
  fails({.match_window = 256}, {.chunk_values = 4096, .row_length = 32}, "match_window 256 must be in 1..255");
  fails({.match_window = 100000}, {.chunk_values = 4096, .row_length = 32}, "match_window 100000");
  fails({}, {.chunk_values = 4096, .row_length = 100},
        "chunk_values 4096 must be a multiple of the vector length 100 (shape.back()) for vector-lz");
  fails({}, {.chunk_values = 4096, .row_length = 8192}, "chunk_values 4096 must be a multiple of the vector length 8192");
  fails({}, {.chunk_values = 4096, .row_length = std::size_t{1} << 40}, "multiple of the vector length");
  // The accepted edges.
  CHECK(VectorLZ::make_model({}, {.match_window = 1}, {.chunk_values = 3200, .row_length = 100}).window == 1);
  CHECK(VectorLZ::make_model({}, {.match_window = 255}, {.chunk_values = 65536, .row_length = 65536}).dim == 65536);
  CHECK(VectorLZ::make_model({}, {}, {.chunk_values = 32, .row_length = 1}).dim == 1);
}
