#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <span>
#include <vector>

#include "support/chunk_encoder_checks.hpp"
#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/core/bit_io.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/encode/huffman.hpp"

namespace {

using Huffman = zcoll::encode::Huffman;
namespace hd = zcoll::encode::detail;
using residuals_t = std::vector<std::int32_t>;
using zcoll_test::decoded;
using zcoll_test::guarded_buffer;
using zcoll_test::read_back;
using zcoll_test::require_equal;
using zcoll_test::statistics_of;
using zcoll_test::written_model;

static_assert(zcoll::encode::chunk_encoder<Huffman>);

constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();
constexpr unsigned max_length = hd::huffman_max_code_length;

/// The largest chunk any coding gives n residuals: 49 bits per escaped residual, or bit-plane blocks.
std::size_t room_for(std::size_t n) { return 16 + std::max(n * 49 / 8 + 8, (n + 31) / 32 * Huffman::max_model_bytes); }

std::vector<std::byte> encoded(const Huffman::model& m, std::span<const std::int32_t> residuals) {
  std::vector<std::byte> out(room_for(residuals.size()));
  const auto size = Huffman::encode_chunk(m, residuals, out);
  REQUIRE(size.has_value());
  REQUIRE(*size <= out.size());
  out.resize(*size);
  return out;
}

/// The code lengths of `m` are at most 12 and form a complete prefix code: the decode-table regions of
/// the codewords cover every 12-bit value exactly once.
void require_complete_prefix_code(const Huffman::model& m) {
  REQUIRE_FALSE(m.bitplane_fallback);
  REQUIRE(m.lengths.size() == m.tables.escape_symbol + 1);
  REQUIRE(m.lengths.back() != 0);
  REQUIRE(hd::scaled_kraft_sum(m.lengths, max_length) == hd::huffman_table_entries);
  const auto codes = hd::canonical_codes_reversed(m.lengths);
  std::vector<int> covered(hd::huffman_table_entries, 0);
  for (std::size_t s = 0; s < m.lengths.size(); ++s) {
    const unsigned l = m.lengths[s];
    REQUIRE(l <= max_length);
    if (l == 0) continue;
    for (std::size_t i = codes[s]; i < covered.size(); i += std::size_t{1} << l) ++covered[i];
  }
  for (const int c : covered) REQUIRE(c == 1);
}

/// model -> write/read -> encode (exact room, one byte short) -> decode, chunk by chunk.
void check_round_trip_with(const Huffman::model& model, const std::vector<residuals_t>& chunks) {
  const std::vector<std::byte> model_bytes = written_model<Huffman>(model);
  const Huffman::model reread = read_back<Huffman>(model_bytes);
  CHECK(reread.bitplane_fallback == model.bitplane_fallback);
  CHECK(reread.lengths == model.lengths);
  CHECK(written_model<Huffman>(reread) == model_bytes);
  if (!model.bitplane_fallback) require_complete_prefix_code(model);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    INFO("chunk " << c << " of " << chunks[c].size() << " residuals, fallback " << model.bitplane_fallback);
    const std::vector<std::byte> chunk = encoded(model, chunks[c]);
    require_equal(decoded<Huffman>(reread, chunk, chunks[c].size()), chunks[c]);
    // Exactly the room it needs: the same bytes; one byte less: nothing, and nothing written past it.
    guarded_buffer<std::byte> exact(chunk.size());
    const auto size = Huffman::encode_chunk(model, chunks[c], exact.span());
    REQUIRE(size == chunk.size());
    REQUIRE(std::equal(chunk.begin(), chunk.end(), exact.span().begin()));
    if (!chunk.empty()) {
      guarded_buffer<std::byte> short_by_one(chunk.size() - 1);
      CHECK_FALSE(Huffman::encode_chunk(model, chunks[c], short_by_one.span()).has_value());
    }
  }
}

/// The same, for the model make_model builds from the chunks' statistics.
Huffman::model check_round_trip(const std::vector<residuals_t>& chunks) {
  Huffman::model model = Huffman::make_model(statistics_of<Huffman>(chunks));
  check_round_trip_with(model, chunks);
  return model;
}

/// Textbook Huffman (no length limit): the code lengths, by merging the two lightest trees.
std::vector<unsigned> textbook_huffman_lengths(std::span<const std::uint64_t> weights) {
  struct node {
    std::uint64_t weight;
    std::size_t id;
    bool operator>(const node& o) const { return weight != o.weight ? weight > o.weight : id > o.id; }
  };
  std::vector<std::size_t> parent(2 * weights.size(), SIZE_MAX);
  std::priority_queue<node, std::vector<node>, std::greater<>> heap;
  std::size_t used = 0;
  for (std::size_t s = 0; s < weights.size(); ++s) {
    if (weights[s] != 0) {
      heap.push({weights[s], s});
      ++used;
    }
  }
  std::vector<unsigned> lengths(weights.size(), 0);
  if (used == 1) {
    for (std::size_t s = 0; s < weights.size(); ++s) lengths[s] = weights[s] != 0 ? 1 : 0;
    return lengths;
  }
  std::size_t next = weights.size();
  while (heap.size() > 1) {
    const node a = heap.top();
    heap.pop();
    const node b = heap.top();
    heap.pop();
    if (next >= parent.size()) parent.resize(next + 1, SIZE_MAX);
    parent[a.id] = next;
    parent[b.id] = next;
    heap.push({a.weight + b.weight, next++});
  }
  for (std::size_t s = 0; s < weights.size(); ++s) {
    if (weights[s] == 0) continue;
    for (std::size_t n = s; parent[n] != SIZE_MAX; n = parent[n]) ++lengths[s];
  }
  return lengths;
}

template <class L>
std::uint64_t total_bits(std::span<const std::uint64_t> weights, const L& lengths) {
  std::uint64_t bits = 0;
  for (std::size_t s = 0; s < weights.size(); ++s) bits += weights[s] * lengths[s];
  return bits;
}

/// The weights make_model gives the code: the histogram up to the last direct symbol, then the escape.
std::vector<std::uint64_t> model_weights(const Huffman::statistics& stats, std::uint32_t n) {
  std::vector<std::uint64_t> w(n + 1);
  for (std::uint32_t s = 0; s < n; ++s) w[s] = stats.count(s);
  w[n] = std::max<std::uint64_t>(stats.escape_count(), 1);
  return w;
}

residuals_t gaussian(std::mt19937_64& rng, std::size_t n, double sigma) {
  std::normal_distribution<double> d(0.0, sigma);
  residuals_t r(n);
  for (auto& x : r) x = static_cast<std::int32_t>(std::lround(d(rng)));
  return r;
}

residuals_t residuals_with_zigzag(std::uint32_t symbol, std::size_t count) {
  return residuals_t(count, static_cast<std::int32_t>(hd::unzigzag(symbol)));
}

/// Model bytes written with a bit_writer after the coding byte and n.
std::vector<std::byte> model_bytes_of(std::uint16_t n, const std::vector<std::pair<std::uint64_t, unsigned>>& fields) {
  std::vector<std::byte> bytes(3 + 64);
  bytes[0] = std::byte{0};
  bytes[1] = static_cast<std::byte>(n & 0xFF);
  bytes[2] = static_cast<std::byte>(n >> 8);
  zcoll::bit_writer out(std::span<std::byte>(bytes).subspan(3));
  for (const auto& [value, width] : fields) out.write(value, width);
  bytes.resize(3 + out.flush());
  return bytes;
}

// Length tokens (bits in the order read, written as one field least significant bit first).
constexpr std::pair<std::uint64_t, unsigned> repeat{0b0, 1}, up{0b001, 3}, down{0b101, 3};
std::pair<std::uint64_t, unsigned> literal(unsigned length) { return {0b011u | (length << 3), 7}; }
std::pair<std::uint64_t, unsigned> zeros(std::uint64_t run) {
  const auto b = static_cast<unsigned>(std::bit_width(run - 1));
  return {0b111u | (b << 3) | ((run - 1) << 7), 7 + b};
}

}  // namespace

TEST_CASE("Huffman zigzag maps 0, -1, 1, -2 to 0, 1, 2, 3 and back", "[encode][huffman]") {
  CHECK(hd::zigzag(0) == 0u);
  CHECK(hd::zigzag(-1) == 1u);
  CHECK(hd::zigzag(1) == 2u);
  CHECK(hd::zigzag(-2) == 3u);
  CHECK(hd::zigzag(2047) == 4094u);
  CHECK(hd::zigzag(-2048) == 4095u);
  CHECK(hd::zigzag(int_max) == 0xFFFF'FFFEu);
  CHECK(hd::zigzag(int_min) == 0xFFFF'FFFFu);
  std::mt19937_64 rng(zcoll_test::seed);
  for (int i = 0; i < 100000; ++i) {
    const auto r = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
    REQUIRE(hd::unzigzag(hd::zigzag(r)) == static_cast<std::uint32_t>(r));
  }
}

TEST_CASE("Huffman code lengths are optimal within the length limit", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 10);

  SECTION("equal to textbook Huffman wherever no length limit binds") {
    for (int trial = 0; trial < 300; ++trial) {
      const std::size_t n = 2 + rng() % 300;
      std::vector<std::uint64_t> w(n);
      for (auto& x : w) x = rng() % 4 == 0 ? 0 : 1 + rng() % (trial % 2 ? 1000 : 10);
      w[rng() % n] = 1 + rng() % 50;
      w[rng() % n] = 1 + rng() % 50;
      const auto reference = textbook_huffman_lengths(w);
      std::vector<std::uint8_t> lengths(n);
      hd::limited_code_lengths(w, max_length, lengths);
      INFO("trial " << trial);
      for (std::size_t s = 0; s < n; ++s) REQUIRE((lengths[s] == 0) == (w[s] == 0));
      if (*std::max_element(reference.begin(), reference.end()) <= max_length) {
        REQUIRE(total_bits(w, lengths) == total_bits(w, reference));
      } else {
        REQUIRE(total_bits(w, lengths) >= total_bits(w, reference));
      }
      REQUIRE(hd::scaled_kraft_sum(lengths, max_length) == hd::huffman_table_entries);
      REQUIRE(*std::max_element(lengths.begin(), lengths.end()) <= max_length);
    }
  }

  SECTION("equal to the best of every length assignment under a tight limit (exhaustive)") {
    for (int trial = 0; trial < 400; ++trial) {
      const std::size_t n = 2 + rng() % 6;
      const unsigned limit = std::max(3u, static_cast<unsigned>(std::bit_width(n - 1)));
      std::vector<std::uint64_t> w(n);
      for (auto& x : w) x = 1 + rng() % (trial % 3 == 0 ? 3 : 200);
      if (trial % 4 == 0) {  // Fibonacci-like, so the limit binds
        std::uint64_t a = 1, b = 1;
        for (auto& x : w) {
          x = a;
          a = std::exchange(b, a + b);
        }
      }
      std::uint64_t best = UINT64_MAX;
      std::vector<unsigned> l(n, 1);
      for (;;) {  // every assignment of lengths 1..limit
        std::uint64_t kraft = 0;
        for (auto x : l) kraft += std::uint64_t{1} << (limit - x);
        if (kraft <= (std::uint64_t{1} << limit)) best = std::min(best, total_bits(w, l));
        std::size_t k = 0;
        while (k < n && l[k] == limit) l[k++] = 1;
        if (k == n) break;
        ++l[k];
      }
      std::vector<std::uint8_t> lengths(n);
      hd::limited_code_lengths(w, limit, lengths);
      INFO("trial " << trial << ", " << n << " symbols, limit " << limit);
      REQUIRE(total_bits(w, lengths) == best);
      REQUIRE(hd::scaled_kraft_sum(lengths, limit) == (std::uint64_t{1} << limit));
    }
  }

  SECTION("a single symbol gets a 1-bit code; none gets nothing") {
    const std::vector<std::uint64_t> one = {0, 0, 7, 0};
    std::vector<std::uint8_t> lengths(4, 9);
    hd::limited_code_lengths(one, max_length, lengths);
    CHECK(lengths == std::vector<std::uint8_t>{0, 0, 1, 0});
    const std::vector<std::uint64_t> none = {0, 0};
    hd::limited_code_lengths(none, max_length, std::span<std::uint8_t>(lengths).first(2));
    CHECK(lengths[0] == 0);
    CHECK(lengths[1] == 0);
  }

  SECTION("more symbols than 12-bit codewords is an argument error") {
    const std::vector<std::uint64_t> w(hd::huffman_table_entries + 1, 1);
    std::vector<std::uint8_t> lengths(w.size());
    CHECK_THROWS_AS(hd::limited_code_lengths(w, max_length, lengths), zcoll::argument_error);
  }
}

TEST_CASE("Huffman writes the documented model and chunk layout", "[encode][huffman]") {
  // Residuals 5, 5, 0, 5: symbol 10 (weight 3), symbol 0 (1) and the escape 11 (1): lengths 1, 2, 2;
  // canonical codes 10 -> 0, 0 -> 10, escape -> 11.
  const residuals_t r = {5, 5, 0, 5};
  const Huffman::model m = check_round_trip({r});
  REQUIRE_FALSE(m.bitplane_fallback);
  REQUIRE(m.lengths == std::vector<std::uint8_t>{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2});
  // Coding 0, n = 11, then: literal 2 (110 + 0100), a run of 9 zeros (111 + b = 4: 0010 + 8: 0001),
  // 1 = 2 - 1 (101), escape 2 = 1 + 1 (100): 24 bits.
  const std::vector<std::byte> want_model = {std::byte{0x00}, std::byte{0x0B}, std::byte{0x00},
                                             std::byte{0x93}, std::byte{0x13}, std::byte{0x36}};
  CHECK(written_model<Huffman>(m) == want_model);
  // One stream: 0, 0, 1 0, 0 -> 0b00100.
  CHECK(encoded(m, r) == std::vector<std::byte>{std::byte{0x04}});

  SECTION("four streams of contiguous quarters from 1024 residuals, with their sizes in front") {
    std::vector<residuals_t> chunks = {residuals_t(1024, 5), residuals_t(1023, 5)};
    chunks[0][0] = 0;  // symbol 0 keeps the code at 1 bit for symbol 10
    const Huffman::model five = check_round_trip(chunks);
    REQUIRE(five.lengths[10] == 1);
    const auto four = encoded(five, chunks[0]);
    // 256 residuals per stream: 32 bytes each (33 for the stream holding the 2-bit symbol 0).
    REQUIRE(four.size() == 6 + 33 + 32 + 32 + 32);
    CHECK(zcoll_test::peek<std::uint16_t>(four, 0) == 33);
    CHECK(zcoll_test::peek<std::uint16_t>(four, 2) == 32);
    CHECK(zcoll_test::peek<std::uint16_t>(four, 4) == 32);
    // A stream of symbol 10 alone is all zero bits.
    CHECK(std::all_of(four.begin() + 6 + 33, four.end(), [](std::byte b) { return b == std::byte{0}; }));
    CHECK(encoded(five, chunks[1]).size() == (1023 + 7) / 8);  // one stream under 1024
  }
}

TEST_CASE("Huffman round-trips single-symbol, all-distinct and limit-reaching alphabets", "[encode][huffman]") {
  SECTION("a single symbol has a 1-bit code (the escape the other)") {
    for (const std::int32_t v : {5, -1, 1000}) {
      const Huffman::model m = check_round_trip({residuals_t(4096, v), residuals_t(33, v)});
      REQUIRE_FALSE(m.bitplane_fallback);
      CHECK(m.lengths[hd::zigzag(v)] == 1);
      CHECK(m.lengths.back() == 1);
      CHECK(encoded(m, residuals_t(4096, v)).size() == 6 + 4 * 128);
    }
  }
  SECTION("a constant 0 is cheaper as bit planes (one byte per 32 residuals)") {
    const Huffman::model m = check_round_trip({residuals_t(4096, 0), residuals_t(31, 0)});
    CHECK(m.bitplane_fallback);
    CHECK(encoded(m, residuals_t(4096, 0)).size() == 128);
  }
  SECTION("every direct symbol once: 4096 codewords of 12 bits") {
    residuals_t r(4095);
    std::iota(r.begin(), r.end(), -2047);
    std::mt19937_64 rng(zcoll_test::seed + 20);
    std::shuffle(r.begin(), r.end(), rng);
    // make_model prefers the bit planes here (11 planes: 12.25 bits a residual, against 12 bits and a
    // 516-byte model); the Huffman code it would have built is checked as well.
    CHECK(check_round_trip({r}).bitplane_fallback);
    const Huffman::model m = hd::huffman_model_from_lengths(std::vector<std::uint8_t>(4096, 12));
    require_complete_prefix_code(m);
    check_round_trip_with(m, {r, residuals_t(r.begin(), r.begin() + 1500)});
    CHECK(encoded(m, r).size() == 6 + 3 * 1536 + (1023 * 12 + 7) / 8);  // the last stream holds 1023
  }
  SECTION("Fibonacci frequencies reach the 12-bit limit") {
    residuals_t r;
    std::uint64_t a = 1, b = 1;
    for (std::uint32_t s = 0; s < 24; ++s) {
      const auto part = residuals_with_zigzag(s, a);
      r.insert(r.end(), part.begin(), part.end());
      a = std::exchange(b, a + b);
    }
    std::mt19937_64 rng(zcoll_test::seed + 21);
    std::shuffle(r.begin(), r.end(), rng);
    std::vector<residuals_t> chunks;
    for (std::size_t first = 0; first < r.size(); first += 4096) {
      chunks.emplace_back(r.begin() + static_cast<std::ptrdiff_t>(first),
                          r.begin() + static_cast<std::ptrdiff_t>(std::min(r.size(), first + 4096)));
    }
    const Huffman::model m = check_round_trip(chunks);
    REQUIRE_FALSE(m.bitplane_fallback);
    CHECK(*std::max_element(m.lengths.begin(), m.lengths.end()) == max_length);
    const auto w = model_weights(statistics_of<Huffman>(chunks), m.tables.escape_symbol);
    const auto unlimited = textbook_huffman_lengths(w);
    CHECK(*std::max_element(unlimited.begin(), unlimited.end()) > max_length);
    CHECK(total_bits(w, m.lengths) >= total_bits(w, unlimited));
  }
}

TEST_CASE("Huffman codes are optimal where no length limit binds", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 30);
  for (const double sigma : {0.3, 2.0, 5.0, 20.0, 100.0}) {
    INFO("sigma " << sigma);
    const std::vector<residuals_t> chunks = {gaussian(rng, 4096, sigma), gaussian(rng, 4096, sigma),
                                             gaussian(rng, 1000, sigma)};
    const Huffman::model m = check_round_trip(chunks);
    REQUIRE_FALSE(m.bitplane_fallback);
    const auto w = model_weights(statistics_of<Huffman>(chunks), m.tables.escape_symbol);
    const auto unlimited = textbook_huffman_lengths(w);
    if (*std::max_element(unlimited.begin(), unlimited.end()) <= max_length) {
      CHECK(total_bits(w, m.lengths) == total_bits(w, unlimited));
    }
    // The chunks take what the code says: codeword bits, padding and stream sizes.
    std::uint64_t coded_bytes = 0;
    for (const auto& c : chunks) coded_bytes += encoded(m, c).size();
    const std::uint64_t bits = total_bits(w, m.lengths) - w.back() * m.lengths.back();
    CHECK(coded_bytes * 8 >= bits);
    CHECK(coded_bytes * 8 <= bits + chunks.size() * (6 * 8 + 4 * 8));
    // The model was chosen because it beats the bit-plane blocks, and it does.
    CHECK(coded_bytes + Huffman::model_size_bytes(m) < statistics_of<Huffman>(chunks).bitplane_bytes() + 1);
  }
}

TEST_CASE("Huffman escapes residuals outside the alphabet, up to INT32_MIN", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 40);
  const std::vector<std::int32_t> extremes = {int_min,   int_max,   int_min + 1, int_max - 1, 1 << 30, -(1 << 30),
                                              2048,      -2048,     -2049,       2047,        -2047,   65536,
                                              -65537,    1 << 20,   3000,        -3000};
  std::vector<residuals_t> chunks;
  for (const std::size_t n : {std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33}, std::size_t{1024},
                              std::size_t{4096}}) {
    residuals_t r = gaussian(rng, n, 3.0);
    for (std::size_t k = 0; k < std::max<std::size_t>(1, n / 50); ++k) r[rng() % n] = extremes[rng() % extremes.size()];
    chunks.push_back(r);
  }
  chunks.push_back(extremes);
  const Huffman::statistics stats = statistics_of<Huffman>(chunks);
  std::uint64_t escapes = 0, payload = 0;
  for (const auto& c : chunks) {
    for (const auto x : c) {
      if (hd::zigzag(x) >= hd::huffman_alphabet_cap) {
        ++escapes;
        payload += 5 + static_cast<unsigned>(std::bit_width(hd::zigzag(x)));
      }
    }
  }
  REQUIRE(escapes > 20);
  CHECK(stats.escape_count() == escapes);
  CHECK(stats.escape_payload_bits() == payload);
  const Huffman::model m = check_round_trip(chunks);
  CHECK_FALSE(m.bitplane_fallback);

  SECTION("symbols the statistics never saw are escaped too") {
    residuals_t unseen = {0, 1, -1, 2, 3, 4, 2047, -2047, 5000, int_min};
    for (const std::uint32_t s : {1u, 9u, 4000u}) unseen.push_back(static_cast<std::int32_t>(hd::unzigzag(s)));
    const Huffman::model small = check_round_trip({residuals_t{0, 0, 0, 0, 1, 1, 1, 5}});
    REQUIRE_FALSE(small.bitplane_fallback);
    require_equal(decoded<Huffman>(small, encoded(small, unseen), unseen.size()), unseen);
  }
}

TEST_CASE("Huffman falls back to bit-plane blocks for wide residuals", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 50);
  std::vector<residuals_t> chunks;
  for (const std::size_t n : {std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33}, std::size_t{4096},
                              std::size_t{1000}}) {
    residuals_t r(n);
    for (auto& x : r) x = static_cast<std::int32_t>(rng() % (1u << 24)) - (1 << 23);
    chunks.push_back(r);
  }
  chunks.push_back({int_min, int_max, 0, -1});
  const Huffman::model m = check_round_trip(chunks);
  REQUIRE(m.bitplane_fallback);
  CHECK(written_model<Huffman>(m) == std::vector<std::byte>{std::byte{1}});
  // The statistics' estimate of the bit-plane size is what the fallback writes.
  std::uint64_t bytes = 0;
  for (const auto& c : chunks) bytes += encoded(m, c).size();
  CHECK(statistics_of<Huffman>(chunks).bitplane_bytes() == bytes);
  // Chunks are whole bit-plane blocks, the last one padded with zero residuals.
  const residuals_t three = {7, -7, 1};
  const auto chunk = encoded(m, three);
  std::array<std::byte, zcoll::encode::BitShuffle::max_block_bytes> block{};
  const std::array<std::int32_t, 32> padded = {7, -7, 1};
  const std::size_t size = zcoll::encode::BitShuffle::encode_block(padded.data(), block.data());
  REQUIRE(chunk.size() == size);
  CHECK(std::equal(chunk.begin(), chunk.end(), block.begin()));

  SECTION("non-zero padding lanes are a format error") {
    std::array<std::int32_t, 32> dirty = padded;
    dirty[5] = 1;
    zcoll::encode::BitShuffle::encode_block(dirty.data(), block.data());
    std::vector<std::uint32_t> out(3);
    CHECK_THROWS_AS(Huffman::decode_chunk(m, std::span<const std::byte>(block.data(), size), out), zcoll::format_error);
  }
  SECTION("empty statistics give the fallback") {
    CHECK(Huffman::make_model(Huffman::statistics{}).bitplane_fallback);
  }
}

TEST_CASE("Huffman round-trips chunks of every length class", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 60);
  for (const double sigma : {1.0, 8.0, 400.0}) {
    std::vector<residuals_t> chunks;
    for (const std::size_t n : std::initializer_list<std::size_t>{0, 1, 2, 3, 4, 5, 31, 32, 33, 1023, 1024, 1025, 1027, 4096, 65536}) {
      chunks.push_back(gaussian(rng, n, sigma));
    }
    INFO("sigma " << sigma);
    const Huffman::model m = check_round_trip(chunks);
    CHECK_FALSE(m.bitplane_fallback);
  }
}

TEST_CASE("Huffman statistics count what the chunks hold, in any split and merge order", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 70);
  residuals_t all = gaussian(rng, 20000, 6.0);
  for (int k = 0; k < 50; ++k) all[rng() % all.size()] = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
  std::vector<std::uint64_t> histogram(Huffman::statistics::bins, 0);
  for (const auto x : all) ++histogram[std::min(hd::zigzag(x), Huffman::statistics::escape_bin)];

  Huffman::statistics whole;
  whole.add(all);
  for (std::uint32_t s = 0; s < Huffman::statistics::bins; ++s) REQUIRE(whole.count(s) == histogram[s]);
  CHECK(whole.value_count() == all.size());

  // Chunks of odd sizes, spread over three objects merged in two orders: the same counts and model.
  std::array<Huffman::statistics, 3> parts;
  for (std::size_t first = 0, c = 0; first < all.size(); ++c) {
    const std::size_t n = std::min<std::size_t>(all.size() - first, 1 + rng() % 3000);
    parts[c % 3].add(std::span<const std::int32_t>(all).subspan(first, n));
    first += n;
  }
  Huffman::statistics forward, backward;
  for (const auto& p : parts) forward.merge(p);
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) backward.merge(*p);
  for (std::uint32_t s = 0; s < Huffman::statistics::bins; ++s) {
    REQUIRE(forward.count(s) == histogram[s]);
    REQUIRE(backward.count(s) == histogram[s]);
  }
  CHECK(forward.escape_payload_bits() == whole.escape_payload_bits());
  CHECK(forward.value_count() == all.size());
  const auto a = Huffman::make_model(forward), b = Huffman::make_model(backward);
  CHECK(written_model<Huffman>(a) == written_model<Huffman>(b));
  CHECK(a.lengths == b.lengths);
}

TEST_CASE("Huffman encode_chunk returns nothing rather than overflow its room", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 80);
  const std::vector<residuals_t> chunks = {gaussian(rng, 1500, 4.0), gaussian(rng, 100, 4.0)};
  residuals_t wide(300);
  for (auto& x : wide) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
  for (const auto& model : {Huffman::make_model(statistics_of<Huffman>(chunks)), Huffman::make_model(statistics_of<Huffman>({wide}))}) {
    for (const auto& r : {chunks[0], chunks[1], wide}) {
      const std::size_t size = encoded(model, r).size();
      INFO("fallback " << model.bitplane_fallback << ", " << r.size() << " residuals, " << size << " bytes");
      for (std::size_t room = 0; room < size; room += 1 + room / 16) {
        guarded_buffer<std::byte> out(room);  // a write past `room` faults
        REQUIRE_FALSE(Huffman::encode_chunk(model, r, out.span()).has_value());
      }
      guarded_buffer<std::byte> out(size);
      CHECK(Huffman::encode_chunk(model, r, out.span()) == size);
    }
  }
}

TEST_CASE("Huffman decode rejects every truncation and survives corruption", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 90);
  std::vector<residuals_t> chunks = {gaussian(rng, 1100, 5.0), gaussian(rng, 200, 5.0), gaussian(rng, 1, 5.0)};
  chunks[0][17] = int_min;
  chunks[0][900] = 70000;
  chunks[1][3] = -5000;
  residuals_t wide(128);
  for (auto& x : wide) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
  const Huffman::model huffman = Huffman::make_model(statistics_of<Huffman>(chunks));
  const Huffman::model planes = Huffman::make_model(statistics_of<Huffman>({wide}));
  REQUIRE_FALSE(huffman.bitplane_fallback);
  REQUIRE(planes.bitplane_fallback);

  for (const auto* model : {&huffman, &planes}) {
    for (const auto& r : {chunks[0], chunks[1], chunks[2], wide}) {
      const std::vector<std::byte> chunk = encoded(*model, r);
      INFO("fallback " << model->bitplane_fallback << ", " << r.size() << " residuals in " << chunk.size() << " bytes");
      const auto [rejected, trials] = zcoll_test::check_damaged_chunk<Huffman>(*model, chunk, r.size(), rng, true);
      INFO(rejected << " of " << trials << " corruptions rejected");
      CHECK(trials > 0);
    }
  }
}

TEST_CASE("Huffman decode of arbitrary bytes raises format_error or stays in bounds", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 95);
  const Huffman::model m = Huffman::make_model(statistics_of<Huffman>({gaussian(rng, 5000, 30.0)}));
  REQUIRE_FALSE(m.bitplane_fallback);
  zcoll_test::check_arbitrary_bytes<Huffman>(m, rng, [&](std::vector<std::byte>& bytes) {
    if (bytes.size() < 6) return;  // plausible stream sizes
    for (int s = 0; s < 3; ++s) zcoll_test::poke<std::uint16_t>(bytes, 2 * std::size_t(s), static_cast<std::uint16_t>(rng() % 80));
  });
}

TEST_CASE("Huffman read_model rejects every truncation and malformed code lengths", "[encode][huffman]") {
  std::mt19937_64 rng(zcoll_test::seed + 100);

  SECTION("every truncation of written models") {
    for (const double sigma : {0.5, 3.0, 40.0, 900.0}) {
      residuals_t r = gaussian(rng, 30000, sigma);
      r[5] = int_min;
      const Huffman::model m = Huffman::make_model(statistics_of<Huffman>({r}));
      const auto bytes = written_model<Huffman>(m);
      INFO("sigma " << sigma << ", model of " << bytes.size() << " bytes");
      for (std::size_t n = 0; n < bytes.size(); ++n) {
        auto g = guarded_buffer<std::byte>::copy_of(std::span<const std::byte>(bytes).first(n));
        zcoll::byte_reader in(g.span());
        REQUIRE_THROWS_AS(Huffman::read_model(in), zcoll::format_error);
      }
    }
    auto empty = guarded_buffer<std::byte>::copy_of({});
    zcoll::byte_reader in(empty.span());
    CHECK_THROWS_AS(Huffman::read_model(in), zcoll::format_error);
  }

  SECTION("single-byte corruptions of a model: a format error or a complete code") {
    const residuals_t r = gaussian(rng, 30000, 25.0);
    const Huffman::model m = Huffman::make_model(statistics_of<Huffman>({r}));
    const auto chunk = encoded(m, r);
    const auto bytes = written_model<Huffman>(m);
    std::size_t rejected = 0;
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      for (int k = 0; k < 8; ++k) {
        std::vector<std::byte> bad = bytes;
        bad[at] ^= static_cast<std::byte>(1 + rng() % 255);
        auto g = guarded_buffer<std::byte>::copy_of(bad);
        zcoll::byte_reader in(g.span());
        try {
          const Huffman::model read = Huffman::read_model(in);
          if (!read.bitplane_fallback) require_complete_prefix_code(read);
          std::vector<std::uint32_t> out(r.size());
          auto gc = guarded_buffer<std::byte>::copy_of(chunk);
          try {
            Huffman::decode_chunk(read, gc.span(), out);
          } catch (const zcoll::format_error&) {
          }
        } catch (const zcoll::format_error&) {
          ++rejected;
        }
      }
    }
    CHECK(rejected > bytes.size() * 4);
  }

  const auto read = [](const std::vector<std::byte>& bytes) {
    auto g = guarded_buffer<std::byte>::copy_of(bytes);
    zcoll::byte_reader in(g.span());
    auto m = Huffman::read_model(in);
    CHECK(in.remaining() == 0);
    return m;
  };
  SECTION("the controls: valid hand-written models") {
    const auto m = read(model_bytes_of(1, {literal(1), repeat}));
    CHECK(m.lengths == std::vector<std::uint8_t>{1, 1});
    const auto m2 = read(model_bytes_of(3, {literal(1), up, zeros(1), repeat}));
    CHECK(m2.lengths == std::vector<std::uint8_t>{1, 2, 0, 2});
  }
  SECTION("coding bytes other than 0 and 1") {
    for (unsigned coding = 2; coding < 256; ++coding) {
      CHECK_THROWS_AS(read({static_cast<std::byte>(coding), std::byte{1}, std::byte{0}, std::byte{0x0B}}),
                      zcoll::format_error);
    }
  }
  SECTION("an alphabet of 0 or more than 4095 direct symbols") {
    CHECK_THROWS_AS(read(model_bytes_of(0, {literal(1), repeat})), zcoll::format_error);
    CHECK_THROWS_AS(read(model_bytes_of(4096, {literal(12), repeat})), zcoll::format_error);
    CHECK_THROWS_AS(read(model_bytes_of(65535, {literal(12), repeat})), zcoll::format_error);
  }
  SECTION("lengths outside 1..12") {
    for (unsigned l : {0u, 13u, 14u, 15u}) CHECK_THROWS_AS(read(model_bytes_of(1, {literal(l), literal(1)})), zcoll::format_error);
    CHECK_THROWS_AS(read(model_bytes_of(1, {literal(1), down})), zcoll::format_error);      // 0
    CHECK_THROWS_AS(read(model_bytes_of(1, {down, literal(1)})), zcoll::format_error);      // -1 from the start
    CHECK_THROWS_AS(read(model_bytes_of(1, {repeat, literal(1)})), zcoll::format_error);    // 0 from the start
    CHECK_THROWS_AS(read(model_bytes_of(1, {literal(12), up})), zcoll::format_error);       // 13
  }
  SECTION("codes that are not complete prefix codes") {
    CHECK_THROWS_AS(read(model_bytes_of(2, {literal(2), repeat, repeat})), zcoll::format_error);  // Kraft 3/4
    CHECK_THROWS_AS(read(model_bytes_of(2, {literal(1), repeat, repeat})), zcoll::format_error);  // Kraft 3/2
    CHECK_THROWS_AS(read(model_bytes_of(1, {literal(1), up})), zcoll::format_error);              // 1/2 + 1/4
    CHECK_THROWS_AS(read(model_bytes_of(2, {literal(1), repeat, zeros(1)})), zcoll::format_error);  // no escape
  }
  SECTION("zero runs past the escape or of over-wide counts") {
    CHECK_THROWS_AS(read(model_bytes_of(2, {literal(1), zeros(3)})), zcoll::format_error);
    CHECK_THROWS_AS(read(model_bytes_of(2, {literal(1), {0b111u | (13u << 3), 7 + 13}, literal(1)})), zcoll::format_error);
  }
  SECTION("non-zero padding bits") {
    auto bytes = model_bytes_of(1, {literal(1), repeat});  // 8 bits: no padding
    CHECK(read(bytes).lengths.size() == 2);
    auto padded = model_bytes_of(3, {literal(1), up, zeros(1), repeat});  // 18 bits: 6 of padding
    padded.back() |= std::byte{0x80};
    CHECK_THROWS_AS(read(padded), zcoll::format_error);
  }
}

TEST_CASE("Huffman decode rejects padding bits and stream sizes that do not match", "[encode][huffman]") {
  // Residual 5 has the 1-bit codeword 0, residual 0 the 2-bit codeword 10 (read as 1, then 0).
  std::vector<residuals_t> chunks = {residuals_t(1024, 5), residuals_t(13, 5)};
  chunks[0][0] = 0;
  const Huffman::model m = check_round_trip(chunks);
  REQUIRE(m.lengths[10] == 1);
  std::vector<std::uint32_t> out(1024), out13(13);
  const auto decode = [&](const std::vector<std::byte>& bytes, std::span<std::uint32_t> residuals) {
    auto g = guarded_buffer<std::byte>::copy_of(bytes);
    return Huffman::decode_chunk(m, g.span(), residuals);
  };

  SECTION("a set padding bit after the last codeword") {
    auto one = encoded(m, chunks[1]);  // 13 bits of 0, 3 bits of padding
    REQUIRE(one.size() == 2);
    CHECK(decode(one, out13) == 2);
    for (unsigned bit = 5; bit < 8; ++bit) {
      auto bad = one;
      bad[1] |= static_cast<std::byte>(1u << bit);
      CHECK_THROWS_AS(decode(bad, out13), zcoll::format_error);
    }
  }
  SECTION("stream 0 of four, one byte longer than its codewords, or one shorter") {
    auto four = encoded(m, chunks[0]);  // stream 0: 257 bits in 33 bytes
    REQUIRE(zcoll_test::peek<std::uint16_t>(four, 0) == 33);
    CHECK(decode(four, out) == four.size());
    auto longer = four;
    longer.insert(longer.begin() + 6 + 33, std::byte{0});
    zcoll_test::poke<std::uint16_t>(longer, 0, 34);
    CHECK_THROWS_AS(decode(longer, out), zcoll::format_error);
    auto shorter = four;
    zcoll_test::poke<std::uint16_t>(shorter, 0, 32);
    CHECK_THROWS_AS(decode(shorter, out), zcoll::format_error);
    auto padded = four;
    padded[6 + 32] |= std::byte{0x80};  // stream 0's 7 padding bits
    CHECK_THROWS_AS(decode(padded, out), zcoll::format_error);
    auto past = four;
    zcoll_test::poke<std::uint16_t>(past, 2, 60000);
    CHECK_THROWS_AS(decode(past, out), zcoll::format_error);
    CHECK_THROWS_AS(decode(std::vector<std::byte>(four.begin(), four.begin() + 5), out), zcoll::format_error);
  }
}
