// TopK (codec/topk.hpp): DCT-DP's sparsifier as a codec. Round trips, the documented stream layout read by
// an independent parser, adversarial inputs, damaged streams, threads, the life span, the residual of error
// feedback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/topk.hpp"

using namespace zcoll_test;
namespace sp = zcoll::sparsify;

static_assert(zcoll::codec<zcoll::TopK>);
static_assert(!zcoll::TopK::uses_error_bound);
static_assert(zcoll::TopK::id.kind == zcoll::codec_ids::topk);

// The body's fields after the stream header (layout in codec/topk.hpp).
constexpr std::size_t form_at = zcoll::stream_header_size_bytes, kept_at = form_at + 1, values_at = form_at + 9;

namespace {

/// A stream parsed from the table in codec/topk.hpp, without the codec's reader.
template <class T>
struct parsed_stream {
  std::uint64_t count = 0;
  double bound = 0.0;
  unsigned form = 0;
  std::vector<std::uint64_t> indices;
  std::vector<T> values;
};

std::uint64_t read_leb128(const std::vector<std::byte>& s, std::size_t& at) {
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    REQUIRE(at < s.size());
    const auto b = std::to_integer<std::uint64_t>(s[at++]);
    v |= (b & 0x7F) << shift;
    if ((b & 0x80) == 0) return v;
  }
}

template <class T>
parsed_stream<T> parse(const std::vector<std::byte>& s) {
  parsed_stream<T> p;
  REQUIRE(s.size() >= values_at);
  REQUIRE(std::to_integer<unsigned>(s[0]) == 0x5A);
  REQUIRE(std::to_integer<unsigned>(s[offset::codec_kind]) == 0x20);
  REQUIRE(std::to_integer<unsigned>(s[offset::value_type]) == (sizeof(T) == 4 ? 1u : 2u));
  REQUIRE(std::to_integer<unsigned>(s[offset::flags]) == 0u);
  REQUIRE(peek<std::uint64_t>(s, offset::fill) == 0u);
  REQUIRE(peek<std::uint32_t>(s, offset::chunk_values) == 0u);
  REQUIRE(peek<std::uint32_t>(s, offset::chunk_count) == 0u);
  p.count = peek<std::uint64_t>(s, offset::count);
  p.bound = peek<double>(s, offset::error_bound);
  p.form = std::to_integer<unsigned>(s[form_at]);
  const auto kept = peek<std::uint64_t>(s, kept_at);
  REQUIRE(s.size() >= values_at + kept * sizeof(T));
  for (std::uint64_t i = 0; i < kept; ++i) p.values.push_back(peek<T>(s, values_at + i * sizeof(T)));
  std::size_t at = values_at + kept * sizeof(T);
  if (p.form == 0) {
    std::uint64_t next = 0;
    for (std::uint64_t i = 0; i <= kept; ++i) {
      const std::uint64_t gap = read_leb128(s, at);
      if (i < kept) {
        p.indices.push_back(next + gap);
        next += gap + 1;
      } else {
        REQUIRE(next + gap == p.count);
      }
    }
  } else {
    REQUIRE(p.form == 1u);
    REQUIRE(s.size() - at == (p.count + 7) / 8);
    for (std::uint64_t i = 0; i < p.count; ++i) {
      if ((std::to_integer<unsigned>(s[at + i / 8]) >> (i % 8)) & 1u) p.indices.push_back(i);
    }
    at = s.size();
  }
  REQUIRE(at == s.size());
  REQUIRE(p.indices.size() == kept);
  return p;
}

template <class T>
std::vector<T> laplace_values(std::size_t n, std::uint64_t offset, double scale = 1.0) {
  std::mt19937_64 rng(seed + offset);
  std::exponential_distribution<double> e(1.0);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>((rng() & 1 ? 1.0 : -1.0) * e(rng) * scale);
  return x;
}

/// One round trip with every check: the kept set is the threshold rule's for the exact top-K tau, kept
/// entries come back bit for bit, dropped ones as +0 within the header's bound, which is the largest
/// dropped magnitude exactly; the bytes are the documented layout and do not depend on the thread count.
template <class T>
parsed_stream<T> check_round_trip(const std::vector<T>& x, double keep_fraction, const std::string& what) {
  INFO(what << ", " << type_name<T>() << ", n = " << x.size() << ", keep_fraction = " << keep_fraction);
  std::vector<std::byte> first;
  parsed_stream<T> parsed;
  for (unsigned threads : {1u, 2u, 3u}) {
    INFO(threads << " threads");
    const zcoll::TopK codec({}, {.keep_fraction = keep_fraction});
    const auto r = round_trip(codec, std::span<const T>(x), zcoll::exec::Host{threads}, zcoll::exec::Host{threads});
    if (threads == 1) {
      first = r.stream;
      parsed = parse<T>(r.stream);
    } else {
      REQUIRE(r.stream == first);
    }
    const T tau = sp::topk_threshold(std::span<const T>(x), keep_fraction);
    double largest_dropped = 0.0;
    std::size_t p = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("element " << i << " = " << x[i] << ", tau = " << tau);
      const bool kept = std::isnan(x[i]) || (x[i] != 0 && std::fabs(x[i]) >= tau);
      REQUIRE((p < parsed.indices.size() && parsed.indices[p] == i) == kept);
      if (kept) {
        REQUIRE(same_bits(r.restored[i], x[i]));
        REQUIRE(same_bits(parsed.values[p], x[i]));
        ++p;
      } else {
        REQUIRE(same_bits(r.restored[i], T(0)));
        largest_dropped = std::max(largest_dropped, std::fabs(static_cast<double>(x[i])));
      }
      if (std::isfinite(x[i])) REQUIRE(std::fabs(static_cast<double>(x[i]) - static_cast<double>(r.restored[i])) <= r.header.error_bound);
    }
    REQUIRE(r.header.error_bound == largest_dropped);
    REQUIRE(r.header.count == x.size());
    // The smaller index form: gaps only when they beat the bitmap.
    REQUIRE(r.stream.size() <= zcoll::TopK::max_compressed_size<T>(x.size()));
    zcoll::TopK::state state;
    REQUIRE(zcoll::compress(codec, state, x) == r.stream);  // with a state: the same bytes, and the report
    const auto report = state.last;
    REQUIRE(report.count == x.size());
    REQUIRE(report.kept_count == parsed.indices.size());
    REQUIRE(report.threshold == static_cast<double>(tau));
    REQUIRE(report.max_dropped_magnitude == largest_dropped);
    // The decoded vector of the convenience overload is the same.
    const auto restored = codec.template decompress<T>(std::span<const std::byte>(r.stream));
    REQUIRE(restored.size() == x.size());
    for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(restored[i], r.restored[i]));
  }
  // Gaps are written only when they take fewer bytes than the bitmap.
  const std::size_t index_bytes = first.size() - values_at - parsed.values.size() * sizeof(T);
  if (parsed.form == 0) REQUIRE(index_bytes < (x.size() + 7) / 8);
  return parsed;
}

}  // namespace

TEMPLATE_TEST_CASE("TopK round trips keep the top entries exactly and drop the rest to 0", "[codec][topk]", float, double) {
  using T = TestType;
  std::uint64_t offset = 0;
  bool saw_gaps = false, saw_bitmap = false;
  for (std::size_t n : std::vector<std::size_t>{1, 2, 7, 31, 32, 33, 1000, 10007, 100003}) {
    for (double f : {1e-3, 0.01, 0.1, 0.3, 1.0}) {
      const auto p = check_round_trip(laplace_values<T>(n, ++offset), f, "Laplace");
      (p.form == 0 ? saw_gaps : saw_bitmap) = true;
    }
  }
  CHECK(saw_gaps);
  CHECK(saw_bitmap);
  // Ties: every entry equal to tau is kept (Algorithm 1's I(|W| >= tau)).
  std::vector<T> ties(1000);
  for (std::size_t i = 0; i < ties.size(); ++i) ties[i] = static_cast<T>(static_cast<double>(i % 4) * (i % 2 ? -1.0 : 1.0));
  const auto p = check_round_trip(ties, 0.1, "4 distinct magnitudes");
  CHECK(p.indices.size() == 250);  // all the 3s and -3s
}

TEMPLATE_TEST_CASE("TopK on adversarial inputs", "[codec][topk]", float, double) {
  using T = TestType;
  using lim = std::numeric_limits<T>;
  const T nan = lim::quiet_NaN(), inf = lim::infinity();
  check_round_trip(std::vector<T>{}, 0.01, "empty");
  check_round_trip(std::vector<T>{T(-2)}, 0.01, "one element");
  check_round_trip(std::vector<T>{nan}, 0.01, "one NaN");
  for (std::size_t n : std::vector<std::size_t>{9, 33, 4097}) {
    const auto zeros = check_round_trip(std::vector<T>(n, T(0)), 0.01, "all zero");
    CHECK(zeros.indices.empty());
    CHECK(zeros.bound == 0.0);
    CHECK(check_round_trip(std::vector<T>(n, T(-0.0)), 0.5, "all -0").indices.empty());  // -0 decodes to +0
    CHECK(check_round_trip(std::vector<T>(n, T(1.25)), 0.01, "constant").indices.size() == n);
    check_round_trip(std::vector<T>(n, -inf), 0.01, "all -Inf");
    auto x = laplace_values<T>(n, 40 + n);
    // NaN payloads of both signs, ±Inf, ±max, denormals.
    for (std::size_t i = 0; i < n; i += 5) x[i] = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(bits(nan) | (i % 7) | (i % 2 ? bits(T(-0.0)) : 0)));
    x[1] = inf;
    x[n - 2] = -inf;
    x[2] = lim::max();
    x[3] = lim::lowest();
    for (std::size_t i = 6; i < n; i += 11) x[i] = static_cast<T>(static_cast<double>(i % 3) * (i % 2 ? -1 : 1) * lim::denorm_min());
    const auto p = check_round_trip(x, 0.05, "NaN, Inf, max, denormals");
    // Every NaN and infinity is among the kept entries, whatever K is.
    std::size_t specials = 0;
    for (T v : x) specials += !std::isfinite(v);
    std::size_t kept_specials = 0;
    for (T v : p.values) kept_specials += !std::isfinite(v);
    CHECK(kept_specials == specials);
    std::vector<T> denormals(n);
    for (std::size_t i = 0; i < n; ++i) denormals[i] = static_cast<T>(static_cast<double>(i % 50) * lim::denorm_min());
    check_round_trip(denormals, 0.1, "denormals only");
  }
}

TEMPLATE_TEST_CASE("Every truncation of a TopK stream is a format error", "[codec][topk][corruption]", float, double) {
  using T = TestType;
  for (double f : {0.05, 0.5}) {  // gap form and bitmap form
    const zcoll::TopK c({}, {.keep_fraction = f});
    const auto x = laplace_values<T>(333, 50);
    const auto stream = c.compress(x);
    INFO("keep_fraction " << f << ", form " << std::to_integer<unsigned>(stream[form_at]) << ", " << stream.size() << " bytes");
    std::vector<T> out(x.size());
    for (std::size_t n = 0; n < stream.size(); ++n) {
      INFO("truncated to " << n << " bytes");
      CHECK_THROWS_AS(c.decompress(zcoll::exec::Host{}, std::span<const std::byte>(stream).first(n), std::span<T>(out)),
                      zcoll::format_error);
      CHECK_THROWS_AS(c.template decompress<T>(std::span<const std::byte>(stream).first(n)), zcoll::format_error);
    }
    // A byte appended: trailing data is an error.
    auto longer = stream;
    longer.push_back(std::byte{0});
    CHECK_THROWS_AS(c.template decompress<T>(std::span<const std::byte>(longer)), zcoll::format_error);
  }
}

namespace {

enum class outcome { decoded, format_error };

/// Decodes a damaged stream with the convenience overload (and, for the span overload, into a vector sized
/// from the damaged header). Only format_error may escape; a decode must produce the header's count.
template <class T>
outcome try_decode(const zcoll::TopK& codec, const std::vector<std::byte>& stream) {
  try {
    const auto values = codec.template decompress<T>(std::span<const std::byte>(stream));
    const auto h = zcoll::read_stream_header(stream);
    REQUIRE(values.size() == h.count);
    std::vector<T> out(values.size());
    codec.decompress(zcoll::exec::Host{2}, std::span<const std::byte>(stream), std::span<T>(out));
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(same_bits(out[i], values[i]));
    return outcome::decoded;
  } catch (const zcoll::format_error&) {
    return outcome::format_error;
  } catch (const std::exception& e) {
    FAIL("decoding a damaged stream threw something other than format_error: " << e.what());
  }
  return outcome::decoded;
}

}  // namespace

TEMPLATE_TEST_CASE("Damaged TopK streams are format errors or decode to the header's count", "[codec][topk][corruption]",
                   float, double) {
  using T = TestType;
  for (double f : {0.03, 0.4}) {
    const zcoll::TopK codec({}, {.keep_fraction = f});
    const auto x = laplace_values<T>(517, 60);
    const auto stream = codec.compress(x);
    const unsigned form = std::to_integer<unsigned>(stream[form_at]);
    INFO("keep_fraction " << f << ", form " << form);
    SECTION("every byte set to other values") {
      std::size_t failed = 0;
      for (std::size_t at = 0; at < stream.size(); ++at) {
        for (std::byte v : {std::byte{0x00}, std::byte{0xFF}, stream[at] ^ std::byte{0x01}, stream[at] ^ std::byte{0x80}}) {
          if (v == stream[at]) continue;
          auto damaged = stream;
          damaged[at] = v;
          INFO("byte " << at << " set to " << std::to_integer<unsigned>(v));
          const outcome o = try_decode<T>(codec, damaged);
          failed += o == outcome::format_error;
          // Fields whose every change the format detects: magic, version, codec id, type, flags, fill,
          // chunk fields, the form (but for a switch to the other form), the kept count, and in the gap
          // form the value count (the gaps must add up to it).
          const bool value_count_byte = at >= offset::count && at < offset::count + 8;
          if (at < offset::count || (at >= offset::fill && at < values_at && !(at == form_at && v <= std::byte{0x01})) ||
              (value_count_byte && form == 0)) {
            CHECK(o == outcome::format_error);
          }
        }
      }
      CHECK(failed > 0);
    }
    SECTION("random bit flips") {
      std::mt19937_64 rng(seed + 61);
      std::size_t decoded = 0;
      for (int trial = 0; trial < 3000; ++trial) {
        auto damaged = stream;
        for (int k = 0; k < 1 + trial % 3; ++k) damaged[rng() % damaged.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
        decoded += try_decode<T>(codec, damaged) == outcome::decoded;
      }
      CHECK(decoded > 0);  // flips inside kept values decode to other values
    }
  }
}

TEST_CASE("Targeted corruptions of TopK streams", "[codec][topk][corruption]") {
  const zcoll::TopK codec({}, {.keep_fraction = 0.1});
  std::vector<float> x(100, 0.0f);
  x[3] = 5.0f;
  x[70] = -6.0f;
  x[99] = 1.0f;
  x[50] = 0.5f;
  const auto stream = codec.compress(x);  // K = 10 but 4 non-zero entries: tau = 0 and the 4 are kept
  REQUIRE(std::to_integer<unsigned>(stream[form_at]) == 0u);  // gaps: 4 entries + 1 < 13 bitmap bytes
  REQUIRE(peek<std::uint64_t>(stream, kept_at) == 4u);
  const std::size_t gaps = values_at + 4 * 4;
  // gaps: 3, 46, 19, 28, then the trailing 0.
  REQUIRE(stream.size() == gaps + 5);
  CHECK(std::to_integer<unsigned>(stream[gaps]) == 3u);
  CHECK(std::to_integer<unsigned>(stream[gaps + 1]) == 46u);
  CHECK(std::to_integer<unsigned>(stream[gaps + 4]) == 0u);
  auto expect_error = [&](std::vector<std::byte> s, const char* what) {
    INFO(what);
    CHECK_THROWS_AS(codec.decompress<float>(std::span<const std::byte>(s)), zcoll::format_error);
    std::vector<float> out(100);
    CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(s), std::span<float>(out)),
                    zcoll::format_error);
  };
  auto s = stream;
  s[form_at] = std::byte{2};
  expect_error(s, "form 2");
  s = stream;
  poke<std::uint64_t>(s, kept_at, 101);
  expect_error(s, "kept count above the value count");
  s = stream;
  poke<std::uint64_t>(s, kept_at, 5);
  expect_error(s, "kept count one more than written");
  s = stream;
  s[gaps + 1] = std::byte{97};
  expect_error(s, "an index past the value count");
  s = stream;
  s[gaps + 4] = std::byte{1};
  expect_error(s, "the gaps do not add up to the count");
  s = stream;
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(gaps + 4), std::byte{0x80});
  expect_error(s, "a non-minimal varint");
  s = stream;
  s.resize(gaps);
  for (int i = 0; i < 11; ++i) s.push_back(std::byte{0xFF});
  expect_error(s, "a varint longer than 64 bits");
  s = stream;
  s[offset::codec_kind] = std::byte{0x21};
  expect_error(s, "another codec id");
  s = stream;
  s[offset::value_type] = std::byte{2};
  expect_error(s, "f64 tag on an f32 stream");
  s = stream;
  poke<std::uint32_t>(s, offset::chunk_values, 64);
  poke<std::uint32_t>(s, offset::chunk_count, 2);
  expect_error(s, "a chunked header");
  s = stream;
  poke<double>(s, offset::error_bound, std::numeric_limits<double>::infinity());
  expect_error(s, "an infinite bound");
  CHECK_THROWS_AS(codec.decompress<double>(std::span<const std::byte>(stream)), zcoll::format_error);
  std::vector<float> wrong_size(99);
  CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(stream), std::span<float>(wrong_size)),
                  zcoll::argument_error);

  // The bitmap form: padding bits and the popcount.
  const zcoll::TopK dense({}, {.keep_fraction = 0.5});
  std::vector<float> y(21);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i) + 1.0f;
  const auto b = dense.compress(y);
  REQUIRE(std::to_integer<unsigned>(b[form_at]) == 1u);
  REQUIRE(b.size() == values_at + 11 * 4 + 3);
  auto bad = b;
  bad.back() |= std::byte{0x80};  // bit 23, past 21 entries
  CHECK_THROWS_AS(dense.decompress<float>(std::span<const std::byte>(bad)), zcoll::format_error);
  bad = b;
  bad[b.size() - 3] ^= std::byte{0x01};  // entry 0 was dropped: one bit more than the kept count
  CHECK_THROWS_AS(dense.decompress<float>(std::span<const std::byte>(bad)), zcoll::format_error);
}

TEMPLATE_TEST_CASE("compress_with_residual writes x - decoded in the same pass, in place too", "[codec][topk]", float,
                   double) {
  using T = TestType;
  auto x = laplace_values<T>(10007, 70);
  x[5] = std::numeric_limits<T>::quiet_NaN();
  x[6] = -std::numeric_limits<T>::infinity();
  x[7] = T(-0.0);
  for (unsigned threads : {1u, 2u, 3u}) {
    const zcoll::TopK codec({}, {.keep_fraction = 0.02});
    std::vector<std::byte> stream(codec.max_compressed_size<T>(x.size()));
    std::vector<T> residual(x.size(), T(-1));
    const auto written = codec.compress_with_residual(zcoll::exec::Host{threads}, x, stream, std::span<T>(residual));
    const std::vector<std::byte> bytes(written.begin(), written.end());
    CHECK(bytes == codec.compress(x));  // the residual does not change the stream
    std::vector<T> decoded(x.size());
    codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(bytes), std::span<T>(decoded));
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("element " << i);
      // Kept: residual +0 (not x - x, which is NaN for NaN and Inf); dropped: x itself, so that
      // x == decoded + residual exactly.
      REQUIRE(same_bits(residual[i], same_bits(decoded[i], x[i]) && x[i] != 0 ? T(0) : x[i]));
    }
    // In place: the input becomes its residual.
    std::vector<T> z = x;
    codec.compress_with_residual(zcoll::exec::Host{threads}, z, stream, std::span<T>(z));
    for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(z[i], residual[i]));
    CHECK(std::vector<std::byte>(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(bytes.size())) == bytes);
  }
  const zcoll::TopK codec{};
  std::vector<std::byte> stream(codec.max_compressed_size<T>(x.size()));
  std::vector<T> short_residual(x.size() - 1);
  CHECK_THROWS_AS(codec.compress_with_residual(zcoll::exec::Host{}, x, stream, std::span<T>(short_residual)),
                  zcoll::argument_error);
  std::vector<std::byte> small(codec.max_compressed_size<T>(x.size()) - 1);
  CHECK_THROWS_AS(codec.compress(zcoll::exec::Host{}, x, small), zcoll::argument_error);
}

TEST_CASE("Error feedback by hand: the transmitted sum converges to the input sum", "[codec][topk][error_feedback]") {
  // z = g + e; send C(z); e = z - C(z). Then sum(sent) = sum(g) - e exactly (in exact arithmetic), and e
  // stays bounded, so the relative gap between the sums shrinks like 1 / steps.
  const std::size_t n = 4096;
  const zcoll::TopK codec({}, {.keep_fraction = 0.02, .threshold_life_span = 10});
  std::mt19937_64 rng(seed + 80);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> mean(n);
  for (auto& m : mean) m = 0.1 * noise(rng);  // every coordinate has a drift the sums accumulate
  std::vector<float> e(n, 0.0f), z(n), decoded(n);
  std::vector<double> sum_in(n, 0.0), sum_sent(n, 0.0);
  std::vector<std::byte> stream(codec.max_compressed_size<float>(n));
  std::vector<bool> ever_sent(n, false);
  zcoll::TopK::state state;  // the threshold schedule: tau lives 10 steps
  double gap_at_50 = 0.0;
  for (int step = 1; step <= 400; ++step) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto g = static_cast<float>(mean[i] + 0.5 * noise(rng));
      sum_in[i] += g;
      z[i] = g + e[i];
    }
    const auto written = codec.compress_with_residual(zcoll::exec::Host{}, state, z, stream, std::span<float>(e));
    CHECK(state.last.threshold_recomputed == (step % 10 == 1));
    codec.decompress(zcoll::exec::Host{}, written, std::span<float>(decoded));
    for (std::size_t i = 0; i < n; ++i) {
      sum_sent[i] += decoded[i];
      ever_sent[i] = ever_sent[i] || decoded[i] != 0.0f;
    }
    // The identity sum(sent) + e = sum(g), up to float rounding of g + e.
    double gap = 0.0, norm = 0.0, worst_identity = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      gap = std::max(gap, std::fabs(sum_in[i] - sum_sent[i]));
      norm = std::max(norm, std::fabs(sum_in[i]));
      worst_identity = std::max(worst_identity, std::fabs(sum_in[i] - sum_sent[i] - e[i]));
    }
    REQUIRE(worst_identity < 1e-3);
    if (step == 50) gap_at_50 = gap / norm;
    if (step == 400) {
      const double relative = gap / norm;
      WARN("error feedback, keep 2 %, life span 10: max |sum(g) - sum(sent)| / max |sum(g)| = " << gap_at_50
           << " after 50 steps, " << relative << " after 400");
      CHECK(relative < 0.5 * gap_at_50);
      CHECK(relative < 0.1);
    }
  }
  // Error feedback lets every coordinate through eventually.
  CHECK(std::count(ever_sent.begin(), ever_sent.end(), true) == static_cast<std::ptrdiff_t>(n));
}

TEMPLATE_TEST_CASE("The threshold life span through the codec", "[codec][topk]", float, double) {
  using T = TestType;
  const zcoll::TopK codec({}, {.keep_fraction = 0.01, .threshold_life_span = 4});
  std::vector<std::byte> stream(codec.max_compressed_size<T>(20000));
  double previous = -1.0;
  zcoll::TopK::state state;
  for (int call = 0; call < 11; ++call) {
    // The data grow every call: a reused tau keeps more than 1 %.
    const auto x = laplace_values<T>(20000, 90 + static_cast<std::uint64_t>(call), 1.0 + 0.5 * call);
    codec.compress(zcoll::exec::Host{}, state, x, stream);
    const auto report = state.last;
    INFO("call " << call << ": kept " << report.obtained_keep_fraction());
    CHECK(report.threshold_recomputed == (call % 4 == 0));
    if (call % 4 == 0) {
      CHECK(report.threshold != previous);
      CHECK(report.kept_count == 200);
    } else {
      CHECK(report.threshold == previous);
      CHECK(report.obtained_keep_fraction() > 0.01);
    }
    previous = report.threshold;
  }
  // A copy of the state carries the schedule: its next call (call 11) reuses tau; a fresh state and the
  // stateless call recompute it.
  auto copy = state;
  const auto x = laplace_values<T>(20000, 200);
  codec.compress(zcoll::exec::Host{}, copy, x, stream);
  CHECK_FALSE(copy.last.threshold_recomputed);
  CHECK(copy.last.threshold == previous);
  zcoll::TopK::state fresh;
  codec.compress(zcoll::exec::Host{}, fresh, x, stream);
  CHECK(fresh.last.threshold_recomputed);
  CHECK(std::vector<std::byte>(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(codec.compress(x).size())) ==
        codec.compress(x));
  // A state made by another TopK's settings starts over under these.
  const zcoll::TopK other({}, {.keep_fraction = 0.05, .threshold_life_span = 4});
  other.compress(zcoll::exec::Host{}, copy, x, stream);
  CHECK(copy.last.threshold_recomputed);
  CHECK(copy.last.target_keep_fraction == 0.05);
}

TEMPLATE_TEST_CASE("TopK with the Laplace estimate reports the fraction it obtained", "[codec][topk]", float, double) {
  using T = TestType;
  const zcoll::TopK codec({}, {.keep_fraction = 0.01, .threshold = sp::threshold_method::laplace});
  const auto x = laplace_values<T>(1 << 20, 100);
  zcoll::TopK::state state;
  const auto stream = zcoll::compress(codec, state, x);
  const auto report = state.last;
  CHECK(report.method_used == sp::threshold_method::laplace);
  WARN(type_name<T>() << " TopK, Laplace threshold, target keep 1 % of 2^20 Laplace values: obtained "
                      << report.obtained_keep_fraction() * 100.0 << " %, " << stream.size() << " bytes");
  CHECK(std::fabs(report.obtained_keep_fraction() / 0.01 - 1.0) < 0.05);
  const auto restored = codec.template decompress<T>(std::span<const std::byte>(stream));
  const T tau = static_cast<T>(report.threshold);
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(restored[i], sp::threshold_keeps(x[i], tau) ? x[i] : T(0)));
}

TEST_CASE("TopK configuration", "[codec][topk]") {
  const zcoll::TopK defaults{};
  CHECK(zcoll::TopK::name() == "topk");
  CHECK(defaults.sparsity().keep_fraction == 0.01);
  CHECK(defaults.sparsity().threshold_life_span == 1u);
  CHECK(defaults.sparsity().threshold == sp::threshold_method::exact);
  CHECK(zcoll::TopK::state{}.last.count == 0u);
  const zcoll::TopK from_config(zcoll::codec_config{.error_bound = zcoll::absolute(0.5)});
  CHECK(from_config.config().error_bound.value == 0.5);
  CHECK_THROWS_AS(zcoll::TopK({}, {.keep_fraction = 0.0}), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::TopK({}, {.keep_fraction = 1.01}), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::TopK({}, {.keep_fraction = 0.5, .threshold_life_span = 0}), zcoll::argument_error);
  CHECK(zcoll::TopK::max_compressed_size<float>(0) == values_at);
  CHECK(zcoll::TopK::max_compressed_size<float>(9) == values_at + 36 + 2);
  CHECK(zcoll::TopK::max_compressed_size<double>(16) == values_at + 128 + 2);
}
