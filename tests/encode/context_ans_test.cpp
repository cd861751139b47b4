#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/chunk_encoder_checks.hpp"
#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/encode/context_ans.hpp"

namespace {

using ContextAns = zcoll::encode::ContextAns;
namespace cd = zcoll::encode::detail;
using residuals_t = std::vector<std::int32_t>;
using zcoll_test::decoded;
using zcoll_test::guarded_buffer;
using zcoll_test::read_back;
using zcoll_test::require_equal;
using zcoll_test::statistics_of;
using zcoll_test::written_model;

static_assert(zcoll::encode::chunk_encoder<ContextAns>);

constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();

/// The largest chunk: the header and states, at most 16 bits of words and 29 raw bits a residual.
std::size_t room_for(std::size_t n) { return 8 + cd::ans_chunk_states_bytes + n * 6; }

std::vector<std::byte> encoded(const ContextAns::model& m, std::span<const std::int32_t> residuals) {
  std::vector<std::byte> out(room_for(residuals.size()));
  const auto size = ContextAns::encode_chunk(m, residuals, out);
  REQUIRE(size.has_value());
  out.resize(*size);
  return out;
}

/// Each context's frequencies sum to 2^12 or are all zero, and a token the statistics counted in a
/// context has a frequency there.
void require_valid_tables(const ContextAns::model& m, const ContextAns::statistics& stats) {
  for (std::uint32_t c = 0; c < cd::ans_context_count; ++c) {
    std::uint32_t sum = 0;
    for (std::uint32_t t = 0; t < cd::ans_token_count; ++t) {
      sum += m.frequency[c][t];
      if (stats.count(c, t) != 0) REQUIRE(m.frequency[c][t] >= 1);
      if (t >= m.tokens) REQUIRE(m.frequency[c][t] == 0);
    }
    INFO("context " << c);
    REQUIRE((sum == 0 || sum == cd::ans_scale));
  }
}

/// model -> write/read -> encode (exact room, one byte short) -> decode, chunk by chunk.
ContextAns::model check_round_trip(const std::vector<residuals_t>& chunks) {
  const ContextAns::statistics stats = statistics_of<ContextAns>(chunks);
  const ContextAns::model model = ContextAns::make_model(stats);
  require_valid_tables(model, stats);
  const std::vector<std::byte> model_bytes = written_model<ContextAns>(model);
  const ContextAns::model reread = read_back<ContextAns>(model_bytes);
  CHECK(reread.frequency == model.frequency);
  CHECK(written_model<ContextAns>(reread) == model_bytes);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    INFO("chunk " << c << " of " << chunks[c].size() << " residuals");
    const std::vector<std::byte> chunk = encoded(model, chunks[c]);
    require_equal(decoded<ContextAns>(reread, chunk, chunks[c].size()), chunks[c]);
    // The scalar rounds alone write the same bytes as the vector rounds with them (AVX-512 builds).
    std::vector<std::byte> scalar(room_for(chunks[c].size()));
    REQUIRE(cd::context_ans_encode_chunk(model, chunks[c], {}, scalar, cd::ans_rounds::scalar) == chunk.size());
    REQUIRE(std::equal(chunk.begin(), chunk.end(), scalar.begin()));
    guarded_buffer<std::byte> exact(chunk.size());
    REQUIRE(ContextAns::encode_chunk(model, chunks[c], exact.span()) == chunk.size());
    REQUIRE(std::equal(chunk.begin(), chunk.end(), exact.span().begin()));
    guarded_buffer<std::byte> short_by_one(chunk.size() - 1);
    CHECK_FALSE(ContextAns::encode_chunk(model, chunks[c], short_by_one.span()).has_value());
  }
  return model;
}

/// Residuals of magnitude m with probability p (1 - p)^m (p: the probability of 0), either sign; for
/// `run` values after a nonzero one p_after takes p's place: a source whose context matters.
residuals_t clustered(std::mt19937_64& rng, std::size_t n, double p, double p_after, unsigned run = 2) {
  residuals_t r(n);
  std::uniform_real_distribution<double> u(0, 1);
  unsigned since_nonzero = run + 1;
  for (auto& x : r) {
    const double zero_odds = since_nonzero <= run ? p_after : p;
    std::int32_t m = 0;
    while (u(rng) > zero_odds && m < 1000) ++m;
    x = u(rng) < 0.5 ? m : -m;
    since_nonzero = m != 0 ? 1 : since_nonzero + 1;
  }
  return r;
}

/// The empirical entropy of the residuals' tokens given their context (in the chunks' four segments),
/// in bits, and the raw bits of the symbols that are not their own token.
std::pair<double, double> conditional_entropy_and_raw_bits(const std::vector<residuals_t>& chunks) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> joint;
  std::map<std::uint32_t, double> context_total;
  double raw_bits = 0;
  for (const auto& chunk : chunks) {
    const std::size_t length = cd::ans_segment_length(chunk.size());
    for (std::size_t first = 0; first < chunk.size(); first += length) {
      std::uint32_t previous = 0, before = 0;
      for (std::size_t i = first; i < std::min(chunk.size(), first + length); ++i) {
        const cd::ans_token t = cd::ans_token_of(cd::zigzag(chunk[i]));
        const std::uint32_t context = cd::ans_context(previous, before);
        joint[{context, t.token}] += 1;
        context_total[context] += 1;
        raw_bits += t.extra_width;
        before = previous;
        previous = t.token;
      }
    }
  }
  double bits = 0;
  for (const auto& [key, count] : joint) bits -= count * std::log2(count / context_total[key.first]);
  return {bits, raw_bits};
}

}  // namespace

TEST_CASE("ContextAns tokens: symbols below 16 are their own, larger ones a token and raw bits", "[encode][context-ans]") {
  for (std::uint32_t v = 0; v < 16; ++v) {
    CHECK(cd::ans_token_of(v).token == v);
    CHECK(cd::ans_token_of(v).extra_width == 0);
  }
  CHECK(cd::ans_token_of(16).token == 16);
  CHECK(cd::ans_token_of(16).extra_width == 2);
  CHECK(cd::ans_token_of(20).token == 17);
  CHECK(cd::ans_token_of(31).token == 19);
  CHECK(cd::ans_token_of(32).token == 20);
  CHECK(cd::ans_token_of(0xFFFF'FFFFu).token == cd::ans_token_count - 1);
  std::mt19937_64 rng(zcoll_test::seed + 300);
  std::vector<std::uint32_t> symbols = {15, 16, 17, 23, 24, 63, 64, 65, 0x7FFF'FFFFu, 0x8000'0000u, 0xFFFF'FFFFu};
  for (int k = 0; k < 10000; ++k) symbols.push_back(static_cast<std::uint32_t>(rng()) >> (rng() % 32));
  for (const std::uint32_t v : symbols) {
    const cd::ans_token t = cd::ans_token_of(v);
    INFO("symbol " << v);
    REQUIRE(t.token < cd::ans_token_count);
    REQUIRE(t.extra_width == cd::ans_extra_width(t.token));
    REQUIRE(t.extra < (std::uint64_t{1} << t.extra_width));
    REQUIRE(cd::ans_symbol_of(t.token, t.extra) == v);
    REQUIRE((cd::ans_token_base[t.token] | t.extra) == v);
  }
}

TEST_CASE("ContextAns symbols: each residual's context and token, segment by segment, on every path", "[encode][context-ans]") {
  // context_ans_symbols runs eight residuals a step in AVX2 builds (a bit width from a float's exponent):
  // every residual's symbol must be the definition's, at the bit widths where a float rounds (2^24 and
  // up), at both ends of the range, at segment starts and in the tails shorter than a step.
  std::mt19937_64 rng(zcoll_test::seed + 305);
  std::vector<std::int32_t> edges = {0, 1, -1, 2, -2, 7, -8, 8, 15, -16, 16, int_max, int_min, int_min + 1, int_max - 1};
  for (int b = 3; b < 31; ++b) {
    for (const std::int32_t v : {std::int32_t{1} << b, (std::int32_t{1} << b) - 1, (std::int32_t{1} << b) + 1}) {
      edges.push_back(v);
      edges.push_back(-v);
    }
  }
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{9}, std::size_t{33}, std::size_t{1000},
                              std::size_t{4133}, std::size_t{70001}}) {
    residuals_t r(n);
    std::vector<std::uint8_t> levels(n);
    for (std::size_t i = 0; i < n; ++i) {
      const int kind = static_cast<int>(rng() % 4);
      r[i] = kind == 0   ? 0
             : kind == 1 ? edges[rng() % edges.size()]
             : kind == 2 ? static_cast<std::int32_t>(rng() % 41) - 20
                         : static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()) >> (rng() % 32));
      levels[i] = static_cast<std::uint8_t>(rng() % cd::ans_level_classes);
    }
    const std::size_t length = cd::ans_segment_length(n);
    for (const bool with_levels : {false, true}) {
      std::vector<std::uint16_t> symbols(n);
      cd::context_ans_symbols(r, with_levels ? cd::ans_level_span(levels) : cd::ans_level_span{}, symbols);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t k = i % length;  // the residual's place in its segment
        const std::uint32_t previous = k >= 1 ? cd::zigzag(r[i - 1]) : 0, before = k >= 2 ? cd::zigzag(r[i - 2]) : 0;
        const std::uint32_t context = (with_levels ? cd::ans_magnitude_contexts * levels[i] : 0) +
                                      3 * cd::ans_class(previous) + cd::ans_class(before);
        INFO(n << " residuals, residual " << i << " = " << r[i] << (with_levels ? " with level classes" : ""));
        REQUIRE(symbols[i] == context * cd::ans_token_count + cd::ans_token_of(cd::zigzag(r[i])).token);
      }
    }
  }
}

TEST_CASE("ContextAns round-trips every length, alphabet and extreme", "[encode][context-ans]") {
  std::mt19937_64 rng(zcoll_test::seed + 301);
  SECTION("lengths around the 32 segments and their lengths (odd multiples of 32)") {
    for (std::size_t n = 0; n < 70; ++n) check_round_trip({clustered(rng, n, 0.6, 0.2)});
    for (const std::size_t n : {1023, 1024, 1025, 3000, 31 * 96 + 1, 32 * 96, 32 * 96 + 1}) {
      check_round_trip({clustered(rng, n, 0.6, 0.2)});
    }
    check_round_trip({clustered(rng, 65536 + 3, 0.9, 0.3), clustered(rng, 1, 0.9, 0.3), {}});
  }
  SECTION("one symbol only: frequencies of 4096, no words") {
    for (const std::int32_t v : {0, 1, -7, 100000, int_min, int_max}) {
      const ContextAns::model m = check_round_trip({residuals_t(5000, v), residuals_t(3, v)});
      CHECK(encoded(m, residuals_t(5000, v)).size() <= 8 + cd::ans_chunk_states_bytes + (v == 0 || std::abs(std::int64_t{v}) < 8 ? 0 : 5000 * 4));
    }
  }
  SECTION("the widest residuals, every token") {
    residuals_t wide(20000);
    for (auto& x : wide) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()) >> (rng() % 32));
    wide[0] = int_min;
    wide[1] = int_max;
    wide[2] = -1;
    wide[19999] = int_min;
    const ContextAns::model m = check_round_trip({wide, residuals_t(wide.begin(), wide.begin() + 7)});
    CHECK(m.tokens == cd::ans_token_count);
  }
  SECTION("zero runs and clusters at every concentration") {
    for (const double p : {0.99, 0.9, 0.5, 0.1, 0.01}) check_round_trip({clustered(rng, 30000, p, p / 3), clustered(rng, 777, p, p)});
  }
}

TEST_CASE("ContextAns codes at the context's entropy, below a bit a value where 0 dominates", "[encode][context-ans]") {
  std::mt19937_64 rng(zcoll_test::seed + 302);
  for (const auto& [p, p_after] : {std::pair{0.99, 0.5}, {0.7, 0.2}, {0.3, 0.1}}) {
    const std::vector<residuals_t> chunks = {clustered(rng, 65536, p, p_after), clustered(rng, 65536, p, p_after)};
    const ContextAns::model m = ContextAns::make_model(statistics_of<ContextAns>(chunks));
    double coded_bits = 0;  // the chunks' bytes; the model is written once a stream
    for (const auto& r : chunks) coded_bits += 8.0 * static_cast<double>(encoded(m, r).size());
    // The entropy of the tokens given the context, and the raw bits of large symbols as they are.
    const auto [entropy_bits, raw_bits] = conditional_entropy_and_raw_bits(chunks);
    const double values = 2 * 65536;
    INFO("p " << p << ": " << coded_bits / values << " bits a value; entropy given the context and raw bits "
                   << (entropy_bits + raw_bits) / values);
    // Two chunks' heads: the sizes and the 32 states (136 bytes each).
    CHECK(coded_bits <= 1.01 * (entropy_bits + raw_bits) + 8.0 * (8 + cd::ans_chunk_states_bytes) * 2);
    if (p >= 0.9) CHECK(coded_bits < 0.6 * values);
  }
}

TEST_CASE("ContextAns refuses residuals its model has no frequency for", "[encode][context-ans]") {
  const ContextAns::model zeros = ContextAns::make_model(statistics_of<ContextAns>({residuals_t(100, 0)}));
  std::vector<std::byte> out(1024);
  CHECK(ContextAns::encode_chunk(zeros, residuals_t(10, 0), out).has_value());
  CHECK_FALSE(ContextAns::encode_chunk(zeros, residuals_t{0, 0, 1}, out).has_value());
  const ContextAns::model empty = ContextAns::make_model(ContextAns::statistics{});
  CHECK(written_model<ContextAns>(empty).size() == 5);  // the token count and the u32 context mask
  CHECK_FALSE(ContextAns::encode_chunk(empty, residuals_t{0}, out).has_value());
  CHECK(ContextAns::encode_chunk(empty, residuals_t{}, out).has_value());
  // A chunk of one model decoded with another stream's: a format error.
  std::mt19937_64 rng(zcoll_test::seed + 303);
  const residuals_t r = clustered(rng, 4000, 0.5, 0.2);
  const ContextAns::model own = ContextAns::make_model(statistics_of<ContextAns>({r}));
  const std::vector<std::byte> chunk = encoded(own, r);
  std::vector<std::uint32_t> back(r.size());
  auto g = guarded_buffer<std::byte>::copy_of(chunk);
  CHECK_THROWS_AS(ContextAns::decode_chunk(zeros, g.span(), back), zcoll::format_error);
  CHECK_THROWS_AS(ContextAns::decode_chunk(empty, g.span(), back), zcoll::format_error);
}

TEST_CASE("ContextAns decode rejects every truncation and survives corruption", "[encode][context-ans]") {
  std::mt19937_64 rng(zcoll_test::seed + 304);
  std::vector<residuals_t> chunks = {clustered(rng, 1500, 0.6, 0.2), clustered(rng, 37, 0.9, 0.5), clustered(rng, 1, 0.5, 0.5)};
  chunks[0][17] = int_min;
  chunks[0][900] = 70000;
  const ContextAns::model m = ContextAns::make_model(statistics_of<ContextAns>(chunks));
  for (const auto& r : chunks) {
    const std::vector<std::byte> chunk = encoded(m, r);
    INFO(r.size() << " residuals in " << chunk.size() << " bytes");
    const auto [rejected, trials] = zcoll_test::check_damaged_chunk<ContextAns>(m, chunk, r.size(), rng, false);
    INFO(rejected << " of " << trials << " corruptions rejected");
    // The end-state check catches nearly every damaged word: a state that comes back to 2^15 by chance
    // is rare. Damaged raw bits decode to other residuals, which nothing can tell.
    CHECK(rejected * 2 > trials);
  }
}

TEST_CASE("ContextAns: a chunk whose coder states or words were changed is a format error", "[encode][context-ans]") {
  // What a damaged state or word leads to: the decoder's states do not come back to 2^15, or it reads
  // another number of words than the chunk holds. Both are checked after the loop.
  std::mt19937_64 rng(zcoll_test::seed + 307);
  const residuals_t r = clustered(rng, 3001, 0.7, 0.2);
  const ContextAns::model m = ContextAns::make_model(statistics_of<ContextAns>({r}));
  const std::vector<std::byte> chunk = encoded(m, r);
  std::uint32_t extra_bytes = 0, words = 0;
  std::memcpy(&extra_bytes, chunk.data(), 4);
  std::memcpy(&words, chunk.data() + 4, 4);
  REQUIRE(words > 100);
  const std::size_t states_at = 8 + extra_bytes;
  std::vector<std::uint32_t> out(r.size());
  for (std::size_t s = 0; s < cd::ans_segments; ++s) {
    for (const std::uint32_t flip : {1u, 0x100u, 0x4000u, 0x10000u}) {
      std::vector<std::byte> bad = chunk;
      std::uint32_t x;
      std::memcpy(&x, bad.data() + states_at + 4 * s, 4);
      x ^= flip;  // still in [2^15, 2^31)
      std::memcpy(bad.data() + states_at + 4 * s, &x, 4);
      auto g = guarded_buffer<std::byte>::copy_of(bad);
      INFO("state " << s << " ^ " << flip);
      CHECK_THROWS_AS(ContextAns::decode_chunk(m, g.span(), out), zcoll::format_error);
    }
  }
  // The last raw byte's padding bits are zero; a one there is damage.
  std::uint64_t raw_bits = 0;
  for (const std::int32_t x : r) raw_bits += cd::ans_token_of(cd::zigzag(x)).extra_width;
  REQUIRE(raw_bits == 8 * std::uint64_t{extra_bytes} - (8 - raw_bits % 8) % 8);
  if (raw_bits % 8 != 0) {
    std::vector<std::byte> bad = chunk;
    bad[8 + extra_bytes - 1] |= std::byte{0x80};
    auto g = guarded_buffer<std::byte>::copy_of(bad);
    CHECK_THROWS_WITH(ContextAns::decode_chunk(m, g.span(), out), Catch::Contains("not zero-padded"));
  }
  for (const std::size_t w : {std::size_t{0}, std::size_t{words / 2}, std::size_t{words - 1}}) {
    std::vector<std::byte> bad = chunk;
    bad[states_at + cd::ans_chunk_states_bytes + 2 * w] ^= std::byte{0x40};
    auto g = guarded_buffer<std::byte>::copy_of(bad);
    INFO("word " << w);
    CHECK_THROWS_AS(ContextAns::decode_chunk(m, g.span(), out), zcoll::format_error);
  }
}

TEST_CASE("ContextAns decodes chunks with few raw bits as those with many", "[encode][context-ans]") {
  // The decoder branches around the raw-bit read where a chunk states under a quarter of a raw bit a
  // residual (32 x raw bytes < residuals), and reads every token's raw bits otherwise: both forms, and
  // chunks on either side of the threshold, round-trip, and damage to their raw bits is caught or stays
  // in bounds.
  std::mt19937_64 rng(zcoll_test::seed + 308);
  const auto sprinkled = [&](std::size_t n, std::size_t wide_every) {
    residuals_t r = clustered(rng, n, 0.95, 0.5);
    for (auto& x : r) x = std::clamp(x, -7, 7);  // tokens without raw bits...
    for (std::size_t i = 3; i < n; i += wide_every) r[i] = (i % 2 ? 1 : -1) * static_cast<std::int32_t>(100 + i);
    return r;  // ...but every wide_every-th, with 6 to 16 raw bits
  };
  for (const std::size_t wide_every : {std::size_t{1000}, std::size_t{80}, std::size_t{40}, std::size_t{20}, std::size_t{3}}) {
    const residuals_t r = sprinkled(20000, wide_every);
    const ContextAns::model m = check_round_trip({r, residuals_t(r.begin(), r.begin() + 33)});
    const std::vector<std::byte> chunk = encoded(m, r);
    std::uint32_t extra_bytes = 0;
    std::memcpy(&extra_bytes, chunk.data(), 4);
    const bool few = 32 * std::uint64_t{extra_bytes} < r.size();
    INFO("a wide residual every " << wide_every << ": " << extra_bytes << " raw bytes, "
                                  << (few ? "the branch around the read" : "every read"));
    CHECK(few == (wide_every >= 80));  // the fixture covers both forms
    // Every truncation is a format error, every corruption decodes in bounds or is one (damaged raw bits
    // decode to other residuals, which nothing can tell: how many are caught depends on their share).
    const auto [rejected, trials] = zcoll_test::check_damaged_chunk<ContextAns>(m, chunk, r.size(), rng, true);
    INFO(rejected << " of " << trials << " corruptions rejected");
    CHECK(rejected > 0);
    // A damaged word, or a raw bit read by no token (the last byte's padding), is a format error in
    // either form: the branch skips no raw bit that a token has.
    std::uint32_t words = 0;
    std::memcpy(&words, chunk.data() + 4, 4);
    REQUIRE(words > 16);
    std::vector<std::uint32_t> out(r.size());
    std::vector<std::byte> bad_word = chunk;
    bad_word[8 + extra_bytes + cd::ans_chunk_states_bytes + words] ^= std::byte{0x40};
    auto g = guarded_buffer<std::byte>::copy_of(bad_word);
    CHECK_THROWS_AS(ContextAns::decode_chunk(m, g.span(), out), zcoll::format_error);
    std::uint64_t raw_bits = 0;
    for (const std::int32_t x : r) raw_bits += cd::ans_token_of(cd::zigzag(x)).extra_width;
    if (raw_bits % 8 != 0) {
      std::vector<std::byte> bad_padding = chunk;
      bad_padding[8 + extra_bytes - 1] |= std::byte{0x80};
      auto p = guarded_buffer<std::byte>::copy_of(bad_padding);
      CHECK_THROWS_WITH(ContextAns::decode_chunk(m, p.span(), out), Catch::Contains("not zero-padded"));
    }
  }
}

TEST_CASE("ContextAns decode of arbitrary bytes raises format_error or stays in bounds", "[encode][context-ans]") {
  std::mt19937_64 rng(zcoll_test::seed + 305);
  const ContextAns::model m = ContextAns::make_model(statistics_of<ContextAns>({clustered(rng, 5000, 0.4, 0.1)}));
  zcoll_test::check_arbitrary_bytes<ContextAns>(m, rng, [&](std::vector<std::byte>& bytes) {
    // Plausible sizes and the 32 states in range (arbitrary ones would nearly never all be), so that the
    // decoder's rounds run over arbitrary words and raw bits.
    const auto extra_bytes = static_cast<std::uint32_t>(rng() % 40), words = static_cast<std::uint32_t>(rng() % 400);
    const std::size_t states_at = 8 + extra_bytes;
    bytes.resize(states_at + cd::ans_chunk_states_bytes + 2 * std::size_t{words} + rng() % 3);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
    zcoll_test::poke<std::uint32_t>(bytes, 0, extra_bytes);
    zcoll_test::poke<std::uint32_t>(bytes, 4, words);
    for (std::size_t s = 0; s < cd::ans_segments; ++s) {
      zcoll_test::poke<std::uint32_t>(bytes, states_at + 4 * s,
                                      cd::ans_state_low + static_cast<std::uint32_t>(rng() % (cd::ans_state_high - cd::ans_state_low)));
    }
  });
}

TEST_CASE("ContextAns read_model rejects every truncation and malformed tables", "[encode][context-ans]") {
  std::mt19937_64 rng(zcoll_test::seed + 306);
  const auto rejects = [](std::vector<std::byte> bytes, const char* what) {
    auto g = guarded_buffer<std::byte>::copy_of(bytes);
    zcoll::byte_reader in(g.span());
    CHECK_THROWS_WITH(ContextAns::read_model(in), Catch::Contains(what));
  };
  for (const double p : {0.95, 0.5, 0.02}) {
    const auto bytes = written_model<ContextAns>(ContextAns::make_model(statistics_of<ContextAns>({clustered(rng, 30000, p, p / 2)})));
    INFO("p " << p << ", model of " << bytes.size() << " bytes");
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      auto g = guarded_buffer<std::byte>::copy_of(std::span<const std::byte>(bytes).first(n));
      zcoll::byte_reader in(g.span());
      REQUIRE_THROWS_AS(ContextAns::read_model(in), zcoll::format_error);
    }
  }
  using b = std::byte;
  const b none{0};
  rejects({b{0}, none, none, none, none}, "token count 0");
  rejects({b{129}, none, none, none, none}, "token count 129");
  rejects({b{1}, none, none, none, b{8}}, "names contexts past the 27");  // context 27
  rejects({b{1}, b{1}, none, none, none, b{100}}, "sum to 100");
  rejects({b{2}, b{1}, none, none, none, b{0x81}, b{0}, b{1}}, "written in two bytes");
  rejects({b{2}, b{1}, none, none, none, b{0x80}, b{33}, b{0}}, "exceeds 4096");
  rejects({b{2}, b{1}, none, none, none, b{0}, b{2}}, "passes token 2");
  // The smallest valid ones: one token of frequency 4096 in context 0, and no table at all; a table in
  // context 9 (level class 1) makes a model of the level classes' contexts.
  auto one = read_back<ContextAns>(std::vector<std::byte>{b{1}, b{1}, none, none, none, b{0x80}, b{32}});
  CHECK(one.frequency[0][0] == 4096);
  CHECK_FALSE(one.uses_levels);
  CHECK(read_back<ContextAns>(std::vector<std::byte>{b{1}, none, none, none, none}).tokens == 1);
  auto leveled = read_back<ContextAns>(std::vector<std::byte>{b{1}, b{1}, b{2}, none, none, b{0x80}, b{32}, b{0x80}, b{32}});
  CHECK(leveled.frequency[9][0] == 4096);
  CHECK(leveled.uses_levels);
}

namespace {

/// Residuals whose zero share depends on a level class, as an interpolation walk's at a coarse bound:
/// class 0 (one in two) nearly all 0, classes 1 and 2 less so; and the classes.
std::pair<residuals_t, std::vector<std::uint8_t>> leveled_residuals(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint8_t> levels(n);
  residuals_t r(n);
  std::uniform_real_distribution<double> u(0, 1);
  for (std::size_t i = 0; i < n; ++i) {
    levels[i] = static_cast<std::uint8_t>((i % 2 == 0) + (i % 4 == 0));
    const double zero_odds = levels[i] == 0 ? 0.98 : levels[i] == 1 ? 0.6 : 0.3;
    std::int32_t m = 0;
    while (u(rng) > zero_odds && m < 300) ++m;
    r[i] = u(rng) < 0.5 ? m : -m;
  }
  return {r, levels};
}

}  // namespace

TEST_CASE("ContextAns codes residuals in the contexts of their level classes where that pays", "[encode][context-ans]") {
  std::mt19937_64 rng(zcoll_test::seed + 309);
  // (Not a structured binding: clang 14 does not let a lambda capture one.)
  const auto generated = leveled_residuals(rng, 40000);
  const residuals_t& r = generated.first;
  const std::vector<std::uint8_t>& levels = generated.second;
  ContextAns::statistics with, without;
  with.add(r, levels);
  without.add(r);
  const ContextAns::model leveled = ContextAns::make_model(with);
  const ContextAns::model plain = ContextAns::make_model(without);
  REQUIRE(leveled.uses_levels);
  CHECK_FALSE(plain.uses_levels);
  // The level classes' contexts code the chunk in fewer bytes, and it decodes only with its classes.
  const auto coded = [&](const ContextAns::model& m, zcoll::encode::detail::ans_level_span l) {
    std::vector<std::byte> out(room_for(r.size()));
    const auto size = ContextAns::encode_chunk(m, r, out, l);
    REQUIRE(size.has_value());
    out.resize(*size);
    return out;
  };
  const std::vector<std::byte> chunk = coded(leveled, levels);
  CHECK(static_cast<double>(chunk.size()) < 0.9 * static_cast<double>(coded(plain, {}).size()));
  std::vector<std::uint32_t> back(r.size());
  auto g = guarded_buffer<std::byte>::copy_of(chunk);
  REQUIRE(ContextAns::decode_chunk(leveled, g.span(), back, levels) == chunk.size());
  require_equal(back, r);
  // Decoded without its classes (or with others) it is another chunk: a format error or other values,
  // never a read out of bounds (the guarded buffers).
  std::vector<std::uint8_t> shifted(levels.begin() + 1, levels.end());
  shifted.push_back(0);
  for (const auto& wrong : {std::vector<std::uint8_t>{}, shifted}) {
    try {
      ContextAns::decode_chunk(leveled, g.span(), back, wrong);
    } catch (const zcoll::format_error&) {
      continue;
    }
    CHECK_FALSE(std::equal(back.begin(), back.end(), r.begin(),
                           [](std::uint32_t a, std::int32_t b) { return a == static_cast<std::uint32_t>(b); }));
  }
  // Every truncation is a format error, trailing bytes are not read, corruptions decode in bounds or are
  // one (the guarded buffers).
  CHECK(zcoll_test::check_damaged_chunk<ContextAns>(leveled, chunk, r.size(), rng, true, levels).rejected > 0);
  // The model's bytes read back to the same tables, its level classes' contexts with them.
  const ContextAns::model reread = read_back<ContextAns>(written_model<ContextAns>(leveled));
  CHECK(reread.uses_levels);
  CHECK(reread.frequency == leveled.frequency);
  // Where the classes do not change the residuals' statistics, the nine contexts are kept.
  std::vector<std::uint8_t> arbitrary(r.size());
  for (auto& l : arbitrary) l = static_cast<std::uint8_t>(rng() % 3);
  const residuals_t alike = clustered(rng, r.size(), 0.7, 0.3);
  ContextAns::statistics unrelated;
  unrelated.add(alike, arbitrary);
  const ContextAns::model kept = ContextAns::make_model(unrelated);
  CHECK_FALSE(kept.uses_levels);
  std::vector<std::byte> out(room_for(alike.size()));
  const auto size = ContextAns::encode_chunk(kept, alike, out, arbitrary);
  REQUIRE(size.has_value());
  out.resize(*size);
  auto h = guarded_buffer<std::byte>::copy_of(out);
  std::vector<std::uint32_t> back_alike(alike.size());
  ContextAns::decode_chunk(kept, h.span(), back_alike);  // the classes are not needed
  require_equal(back_alike, alike);
}

TEST_CASE("ContextAns rejects level classes that do not fit the residuals", "[encode][context-ans]") {
  const residuals_t r(10, 0);
  ContextAns::statistics stats;
  CHECK_THROWS_WITH(stats.add(r, std::vector<std::uint8_t>(9, 0)), Catch::Contains("levels holds 9 classes for 10 residuals"));
  CHECK_THROWS_WITH(stats.add(r, std::vector<std::uint8_t>(10, 3)), Catch::Contains("a class of 3; expected 0..2"));
  stats.add(r, std::vector<std::uint8_t>(10, 2));
  const ContextAns::model m = ContextAns::make_model(stats);
  std::vector<std::byte> out(room_for(r.size()));
  CHECK_THROWS_AS(ContextAns::encode_chunk(m, r, out, std::vector<std::uint8_t>(11, 0)), zcoll::argument_error);
  std::vector<std::uint32_t> back(r.size());
  CHECK_THROWS_AS(ContextAns::decode_chunk(m, out, back, std::vector<std::uint8_t>(10, 7)), zcoll::argument_error);
}

TEST_CASE("ContextAns's vector and scalar rounds agree on every chunk, damaged ones too", "[encode][context-ans]") {
  // The coder's rounds run as AVX-512 or AVX2 lanes where the build has them
  // (encode/detail/context_ans_avx512.hpp, context_ans_avx2.hpp) and in scalar code otherwise and for the
  // last rounds: both must write the same bytes, and decode the same residuals, or raise the same format
  // error, on every chunk. (Built without either, both are the scalar coder.)
  std::mt19937_64 rng(zcoll_test::seed + 310);
  const auto leveled = leveled_residuals(rng, 30000);
  residuals_t wide(9000);
  for (auto& x : wide) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()) >> (rng() % 32));
  using levels_t = std::vector<std::uint8_t>;
  const std::vector<std::pair<residuals_t, levels_t>> cases = {
      {clustered(rng, 65536, 0.9, 0.3), {}},   {clustered(rng, 5003, 0.3, 0.1), {}}, {clustered(rng, 97, 0.5, 0.2), {}},
      {clustered(rng, 3000, 0.99, 0.5), {}},   {leveled.first, leveled.second},     {wide, {}}};
  for (const auto& one_case : cases) {
    const residuals_t& r = one_case.first;  // (not a structured binding: clang 14 lets no lambda capture one)
    const levels_t& levels = one_case.second;
    ContextAns::statistics stats;
    stats.add(r, levels);
    const ContextAns::model m = ContextAns::make_model(stats);
    std::vector<std::byte> chunk(room_for(r.size()));
    const auto size = ContextAns::encode_chunk(m, r, chunk, levels);
    REQUIRE(size.has_value());
    chunk.resize(*size);
    // The encoder's vector and scalar rounds write the same bytes, in room to spare and in room that
    // runs out within the rounds (the vector rounds stop and the scalar ones find it too small).
    std::vector<std::byte> scalar(room_for(r.size()));
    REQUIRE(cd::context_ans_encode_chunk(m, r, levels, scalar, cd::ans_rounds::scalar) == chunk.size());
    REQUIRE(std::equal(chunk.begin(), chunk.end(), scalar.begin()));
    for (const std::size_t short_by : {std::size_t{1}, std::size_t{2}, std::size_t{65}, chunk.size() / 3}) {
      std::vector<std::byte> tight(chunk.size() - short_by);
      CHECK_FALSE(cd::context_ans_encode_chunk(m, r, levels, tight, cd::ans_rounds::vector).has_value());
      CHECK_FALSE(cd::context_ans_encode_chunk(m, r, levels, tight, cd::ans_rounds::scalar).has_value());
    }
    std::vector<std::byte> exact(chunk.size());
    REQUIRE(cd::context_ans_encode_chunk(m, r, levels, exact, cd::ans_rounds::vector) == chunk.size());
    REQUIRE(exact == chunk);
    // The residuals and the bytes read, or the error's message.
    const auto decode_with = [&](cd::ans_rounds rounds, const std::vector<std::byte>& bytes) {
      auto g = guarded_buffer<std::byte>::copy_of(bytes);
      std::vector<std::uint32_t> out(r.size());
      try {
        const std::size_t used = cd::context_ans_decode_chunk(m, g.span(), levels, out, rounds);
        out.push_back(static_cast<std::uint32_t>(used));
        return std::pair{out, std::string()};
      } catch (const zcoll::format_error& e) {
        return std::pair{std::vector<std::uint32_t>{}, std::string(e.what())};
      }
    };
    const auto agree = [&](const std::vector<std::byte>& bytes) {
      const auto vector = decode_with(cd::ans_rounds::vector, bytes);
      const auto scalar = decode_with(cd::ans_rounds::scalar, bytes);
      CHECK(vector.second == scalar.second);
      CHECK(vector.first == scalar.first);
      return vector.second.empty();
    };
    INFO(r.size() << " residuals" << (levels.empty() ? "" : " with level classes") << " in " << chunk.size() << " bytes");
    REQUIRE(agree(chunk));
    require_equal(decode_with(cd::ans_rounds::vector, chunk).first, [&] {
      residuals_t with_size = r;
      with_size.push_back(static_cast<std::int32_t>(chunk.size()));
      return with_size;
    }());
    for (std::size_t n = 0; n < chunk.size(); n += 1 + chunk.size() / 50) {
      CHECK_FALSE(agree(std::vector<std::byte>(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n))));
    }
    std::size_t rejected = 0;
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<std::byte> bad = chunk;
      bad[rng() % bad.size()] ^= static_cast<std::byte>(1 + rng() % 255);
      rejected += agree(bad) ? 0 : 1;
    }
    CHECK(rejected > 0);
  }
}

TEST_CASE("ContextAns level classes in round order: residual k of segment s at k * 32 + s, 0 past the end", "[encode][context-ans]") {
  // The vector decoders' transposition goes in tiles of 64 rounds. The coder's segment lengths are odd
  // multiples of 32 (ans_segment_length), so its chunks end inside a tile; lengths of whole tiles are
  // given as well, and counts whose last segments are short or empty.
  std::mt19937_64 rng(zcoll_test::seed + 311);
  std::vector<std::pair<std::size_t, std::size_t>> chunks;  // (count, length)
  for (const std::size_t count : {std::size_t{1}, std::size_t{31}, std::size_t{32 * 64}, std::size_t{32 * 64 + 1},
                                  std::size_t{5003}, std::size_t{30000}, std::size_t{65536}, std::size_t{100001}}) {
    chunks.emplace_back(count, cd::ans_segment_length(count));
  }
  for (const std::size_t count : {std::size_t{32 * 128}, std::size_t{32 * 128 - 1}, std::size_t{31 * 128 + 5}}) {
    chunks.emplace_back(count, 128);
  }
  chunks.emplace_back(64, 64);
  for (const auto& chunk : chunks) {
    const std::size_t count = chunk.first, length = chunk.second;
    std::vector<std::uint8_t> level(count);
    for (auto& l : level) l = static_cast<std::uint8_t>(1 + rng() % 3);
    const auto rounds = cd::ans_levels_in_round_order(level.data(), count, length);
    std::size_t mismatches = 0;
    for (std::size_t k = 0; k < length; ++k) {
      for (std::size_t s = 0; s < cd::ans_segments; ++s) {
        const std::size_t i = s * length + k;
        mismatches += rounds[k * cd::ans_segments + s] != (i < count ? level[i] : 0);
      }
    }
    INFO(count << " residuals in segments of " << length);
    CHECK(mismatches == 0);
  }
}
