#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/predict/concepts.hpp"
#include "zcoll/predict/detail/interpolation_run.hpp"
#include "zcoll/predict/interpolation.hpp"

namespace {

using zcoll::predict::interpolation_parameters;
using zcoll::predict::prediction_method;
using zcoll::predict::detail::interpolation_box;

constexpr std::uint32_t unwritten = 0xDEADBEEF;

/// Every chunk index the walk of `p` reaches, with how often, and the bin width it gives the point (the
/// walk reads only `recon`).
struct walk_visits {
  std::vector<int> count;
  std::vector<std::int64_t> width;
};
walk_visits visits(const interpolation_box& b, const interpolation_parameters& p) {
  walk_visits v{std::vector<int>(b.count, 0), std::vector<std::int64_t>(b.count, 0)};
  std::vector<std::uint32_t> recon(b.count, 0);
  const auto apply = [&](std::size_t i, std::int64_t, std::int64_t width) {
    REQUIRE(i < b.count);
    ++v.count[i];
    v.width[i] = width;
  };
  if (p.method == prediction_method::lorenzo) {
    zcoll::predict::detail::lorenzo_walk(b, recon.data(), apply);
  } else {
    zcoll::predict::detail::interpolation_walk(b, p, recon.data(), apply);
  }
  return v;
}

/// The bin widths of SZ3's default level-wise bounds and a tighter schedule.
constexpr zcoll::predict::level_width_table sz3_default_widths = {16, 13, 10, 8, 8, 8, 8, 8};
constexpr zcoll::predict::level_width_table descending_widths = {16, 11, 8, 6, 5, 4, 3, 1};

/// Chunks of every kind: whole rows and planes, starting and ending inside them, shorter than a row,
/// rows longer than four chunks (the box falls back to fewer axes), one value.
struct chunk_case {
  zcoll::predict::grid_extents grid;
  std::uint64_t first;
  std::size_t count;
};
const std::vector<chunk_case> chunk_cases = {
    {{1, 1}, 0, 1},        {{1, 1}, 0, 1000},      {{45, 37}, 0, 45 * 37 * 5}, {{45, 37}, 1000, 4096},
    {{45, 37}, 17, 160},   {{45, 37}, 44, 2},      {{7, 3}, 5, 300},           {{100000, 1}, 99990, 64},
    {{125, 125}, 15625, 65536}, {{1501, 1}, 65536, 65536}, {{3, 100000}, 7, 999}, {{32, 32}, 1023, 1},
};

template <unsigned N>
void check_every_point_once() {
  for (const auto& c : chunk_cases) {
    const auto b = interpolation_box::of_chunk(c.grid, N, c.first, c.count);
    for (const auto& p : zcoll::predict::Interpolation<N>::candidates({.grid = c.grid})) {
      INFO(N << "-D, grid " << c.grid.nx << " x " << c.grid.ny << ", first " << c.first << ", " << c.count
              << " values, method " << static_cast<int>(p.method));
      const auto v = visits(b, p);
      for (std::size_t i = 0; i < v.count.size(); ++i) REQUIRE(v.count[i] == 1);
      for (const std::int64_t w : v.width) REQUIRE(w == 16);
    }
  }
}

/// forward_chunk's residuals, decoded by inverse_chunk, give forward_chunk's reconstructions; each is
/// within half its level's bin (at most 8 fine codes) of its target.
template <unsigned N>
void check_round_trip(std::mt19937_64& rng, const chunk_case& c, const interpolation_parameters& p) {
  using I = zcoll::predict::Interpolation<N>;
  std::vector<double> target(c.count);
  std::normal_distribution<double> noise(0.0, 40.0);
  double walk = 0.0;
  for (std::size_t i = 0; i < c.count; ++i) {
    walk += noise(rng);
    target[i] = i % 101 == 7 ? -3.0e6 : 100.0 * std::sin(0.01 * static_cast<double>(c.first + i)) + walk;
  }
  const typename I::state state(p, c.first, c.count);
  std::vector<std::int32_t> residuals(c.count);
  std::vector<std::uint32_t> recon(c.count, unwritten);  // a read before a write shows as a mismatch
  I::forward_chunk(state, std::span(residuals), std::span(recon), [&](std::size_t i) { return target[i]; });
  const auto widths = visits(interpolation_box::of_chunk(c.grid, N, c.first, c.count), p).width;
  for (std::size_t i = 0; i < c.count; ++i) {
    // Half a bin, and for a width that is not a power of two the hair that its reciprocal's rounding
    // may add at an exact half.
    const double half_bin = static_cast<double>(widths[i]) / 2.0 * (1.0 + 1e-12);
    REQUIRE(std::abs(static_cast<double>(static_cast<std::int32_t>(recon[i])) - target[i]) <= half_bin);
    REQUIRE(half_bin <= I::code_scale / 2.0 * (1.0 + 1e-12));
  }
  std::vector<std::uint32_t> decoded(residuals.begin(), residuals.end());
  I::inverse_chunk(state, std::span(decoded));
  REQUIRE(decoded == recon);
}

/// The pipeline's targets of a chunk of `count` values of type V (7/3 of a value a code step): a smooth
/// field with noise, of codes up to
/// about `scale` (2^20 fine codes is f32's range; f64 reaches 2^30, beyond which the vector runs' 32-bit
/// lanes would overflow and give way to the scalar walk), with lanes stored exactly (their code in
/// `codes`) at the rate `exact_rate` and in runs of 40, to cover whole and partial batches.
template <class V>
struct chunk_data {
  std::vector<V> values;
  std::vector<zcoll::block_mask> exact;
  std::vector<std::int32_t> codes;
};
template <class V>
chunk_data<V> make_chunk_data(std::mt19937_64& rng, std::size_t count, double scale, double exact_rate) {
  chunk_data<V> d{std::vector<V>(count), std::vector<zcoll::block_mask>((count + 31) / 32, 0), std::vector<std::int32_t>(count)};
  std::normal_distribution<double> noise(0.0, scale * 1e-3);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (std::size_t i = 0; i < count; ++i) {
    const double code = scale * std::sin(0.003 * static_cast<double>(i)) + noise(rng);
    d.values[i] = static_cast<V>(code * 3.0 / 7.0);
    d.codes[i] = static_cast<std::int32_t>(std::lround(code));
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (uniform(rng) >= exact_rate) continue;
    const std::size_t run = uniform(rng) < 0.1 ? 40 : 1;
    for (std::size_t j = i; j < std::min(count, i + run); ++j) d.exact[j / 32] |= zcoll::block_mask{1} << (j % 32);
  }
  return d;
}

/// The forward and inverse walks 16 points a vector (AVX-512 builds) give the scalar walk's residuals and
/// codes bit for bit, on the pipeline's targets (chunk_targets), and the inverse on arbitrary residuals
/// (a damaged stream's) the same codes too.
template <unsigned N, class V>
void check_vector_walk(std::mt19937_64& rng, const chunk_case& c, const interpolation_parameters& p, double scale,
                       double exact_rate) {
  using I = zcoll::predict::Interpolation<N>;
  using zcoll::predict::detail::walk_lanes;
  const auto d = make_chunk_data<V>(rng, c.count, scale, exact_rate);
  const typename I::state state(p, c.first, c.count);
  // A step that is no power of two, so that the product's rounding shows (values scaled to keep the codes).
  const double steps_per_unit = 7.0 / 3.0;
  std::vector<std::int32_t> residuals[2] = {d.codes, d.codes};
  std::vector<std::uint32_t> recon[2] = {std::vector<std::uint32_t>(c.count, unwritten), std::vector<std::uint32_t>(c.count, unwritten)};
  for (const walk_lanes lanes : {walk_lanes::scalar, walk_lanes::vector}) {
    auto& r = residuals[static_cast<int>(lanes == walk_lanes::vector)];
    const zcoll::predict::detail::chunk_targets<V> targets{
        .values = d.values.data(), .steps_per_unit = steps_per_unit, .exact = d.exact.data(), .blocks = d.exact.size(), .codes = r.data()};
    I::forward_chunk(state, std::span(r), std::span(recon[static_cast<int>(lanes == walk_lanes::vector)]), targets, lanes);
  }
  REQUIRE(residuals[0] == residuals[1]);
  REQUIRE(recon[0] == recon[1]);
  for (std::size_t i = 0; i < c.count; ++i) REQUIRE(recon[0][i] != unwritten);
  std::vector<std::uint32_t> decoded[2];
  for (const walk_lanes lanes : {walk_lanes::scalar, walk_lanes::vector}) {
    auto& out = decoded[static_cast<int>(lanes == walk_lanes::vector)];
    out.assign(residuals[0].begin(), residuals[0].end());
    I::inverse_chunk(state, std::span(out), lanes);
  }
  REQUIRE(decoded[0] == recon[0]);
  REQUIRE(decoded[1] == recon[0]);
  // Arbitrary residuals: small ones, and words of any size (codes that wrap modulo 2^32).
  std::uniform_int_distribution<std::uint32_t> any_word, small_word(0, 64);
  for (const bool wide : {false, true}) {
    std::vector<std::uint32_t> garbage(c.count);
    for (auto& w : garbage) w = wide ? any_word(rng) : small_word(rng) - 32u;
    decoded[0] = garbage;
    decoded[1] = garbage;
    I::inverse_chunk(state, std::span(decoded[0]), walk_lanes::scalar);
    I::inverse_chunk(state, std::span(decoded[1]), walk_lanes::vector);
    REQUIRE(decoded[0] == decoded[1]);
  }
}

}  // namespace

TEST_CASE("Interpolation: the vector walk gives the scalar walk's residuals and codes", "[predict][interpolation]") {
  std::mt19937_64 rng(zcoll_test::seed);
  // Chunks of whole and partial rows and planes, with rows whose runs end in every part of a batch.
  std::vector<chunk_case> cases = chunk_cases;
  for (const std::uint64_t nx : {33, 64, 95, 190}) cases.push_back({{nx, 37}, 5, static_cast<std::size_t>(nx * 37 * 3 - 11)});
  for (const auto& c : cases) {
    INFO("grid " << c.grid.nx << " x " << c.grid.ny << ", first " << c.first << ", " << c.count << " values");
    for (const double exact_rate : {0.0, 0.01, 0.3}) {
      INFO("exact lanes at rate " << exact_rate);
      for (const auto& p : zcoll::predict::Interpolation<1>::candidates({.grid = c.grid})) {
        check_vector_walk<1, float>(rng, c, p, 1e5, exact_rate);
      }
      for (const auto& p : zcoll::predict::Interpolation<2>::candidates({.grid = c.grid})) {
        check_vector_walk<2, float>(rng, c, p, 1e5, exact_rate);
        check_vector_walk<2, double>(rng, c, p, 1e5, exact_rate);
      }
      for (const auto& p : zcoll::predict::Interpolation<3>::candidates({.grid = c.grid})) {
        check_vector_walk<3, float>(rng, c, p, 1e5, exact_rate);
      }
      // Narrower bins (widths that are not powers of two), linear levels, the other axis order.
      check_vector_walk<2, float>(rng, c, {.grid = c.grid, .level_widths = descending_widths}, 1e5, exact_rate);
      check_vector_walk<3, double>(rng, c, {.grid = c.grid, .method = prediction_method::interpolation_fastest_first,
                                            .cubic_levels = 0x55, .level_widths = sz3_default_widths}, 1e5, exact_rate);
      // Codes past 2^26 (f64's range reaches 2^30): batches that would overflow 32-bit lanes.
      check_vector_walk<2, double>(rng, c, {.grid = c.grid}, 1e9, exact_rate);
      check_vector_walk<1, double>(rng, c, {.grid = c.grid, .cubic_levels = 0}, 6.7e7, exact_rate);
    }
  }
}

TEST_CASE("Interpolation: the walks reach every point of a chunk exactly once", "[predict][interpolation]") {
  check_every_point_once<1>();
  check_every_point_once<2>();
  check_every_point_once<3>();
}

TEST_CASE("Interpolation: the decoder reconstructs the encoder's codes, each within half a bin",
          "[predict][interpolation]") {
  std::mt19937_64 rng(zcoll_test::seed);
  for (const auto& c : chunk_cases) {
    INFO("grid " << c.grid.nx << " x " << c.grid.ny << ", first " << c.first << ", " << c.count << " values");
    for (const auto& p : zcoll::predict::Interpolation<1>::candidates({.grid = c.grid})) check_round_trip<1>(rng, c, p);
    for (const auto& p : zcoll::predict::Interpolation<2>::candidates({.grid = c.grid})) check_round_trip<2>(rng, c, p);
    for (const auto& p : zcoll::predict::Interpolation<3>::candidates({.grid = c.grid})) check_round_trip<3>(rng, c, p);
    // A mask that mixes cubic and linear levels.
    check_round_trip<3>(rng, c, {.grid = c.grid, .cubic_levels = 0x55});
    // Narrower bins on the coarse levels: the compressor's schedules, and one down to 1 code.
    for (const auto& p : zcoll::predict::Interpolation<2>::width_candidates({.grid = c.grid})) check_round_trip<2>(rng, c, p);
    check_round_trip<2>(rng, c, {.grid = c.grid, .level_widths = descending_widths});
    check_round_trip<3>(rng, c, {.grid = c.grid, .method = prediction_method::interpolation_fastest_first,
                                 .cubic_levels = 0x0F, .level_widths = sz3_default_widths});
    check_round_trip<1>(rng, c, {.grid = c.grid, .cubic_levels = 0, .level_widths = descending_widths});
  }
}

TEST_CASE("Interpolation: each level's points get that level's bin width", "[predict][interpolation]") {
  // A 2-D box of 9 x 9 points, whole (grid 9 x 9 from the origin): 4 levels (strides 8, 4, 2, 1). A point
  // belongs to the level of the largest stride dividing both its coordinates' (the origin to the
  // coarsest level).
  const zcoll::predict::grid_extents grid{.nx = 9, .ny = 9};
  const interpolation_parameters p{.grid = grid, .level_widths = descending_widths};
  const auto b = interpolation_box::of_chunk(grid, 2, 0, 81);
  REQUIRE(b.levels() == 4);
  const auto v = visits(b, p);
  for (std::size_t i = 0; i < 81; ++i) {
    const std::size_t x = i % 9, y = i / 9;
    unsigned level = 0;
    while (level < 3 && x % (std::size_t{2} << level) == 0 && y % (std::size_t{2} << level) == 0) ++level;
    if (x == 0 && y == 0) level = 4;
    INFO("point (" << y << ", " << x << ")");
    CHECK(v.width[i] == descending_widths[level]);
  }
  // Levels past the table take its last width; the Lorenzo walk bins every point 16 codes wide.
  CHECK(p.width_of_level(7) == 1);
  CHECK(p.width_of_level(20) == 1);
  const auto lorenzo = visits(b, {.grid = grid, .method = prediction_method::lorenzo, .level_widths = descending_widths});
  for (const std::int64_t w : lorenzo.width) CHECK(w == 16);
  // The compressor's schedules narrow the coarse levels only, never below half the finer level's width.
  for (const auto& c : zcoll::predict::Interpolation<2>::width_candidates({.grid = grid})) {
    CHECK(c.level_widths[0] == 16);
    for (std::size_t l = 1; l < zcoll::predict::width_levels; ++l) {
      CHECK(c.level_widths[l] <= c.level_widths[l - 1]);
      CHECK(2 * c.level_widths[l] >= c.level_widths[l - 1]);
    }
  }
  CHECK(zcoll::predict::Interpolation<2>::width_candidates({.grid = grid, .method = prediction_method::lorenzo}).empty());
}

TEST_CASE("Interpolation: a point's level class is its level in the walk, 0, 1 or coarser", "[predict][interpolation]") {
  // The walk gives each point its level's bin width; with a width of its own for each level, the width
  // names the level the walk predicts the point at, which level_classes must give (capped at 2).
  const auto check = [](auto n) {
    constexpr unsigned N = decltype(n)::value;
    using I = zcoll::predict::Interpolation<N>;
    for (const auto& c : chunk_cases) {
      for (auto p : I::candidates({.grid = c.grid})) {
        p.level_widths = descending_widths;
        INFO(N << "-D, grid " << c.grid.nx << " x " << c.grid.ny << ", first " << c.first << ", " << c.count
                << " values, method " << static_cast<int>(p.method));
        std::vector<std::uint8_t> levels(c.count, 0xEE);
        I::level_classes(typename I::state(p, c.first, c.count), std::span(levels));
        const auto widths = visits(interpolation_box::of_chunk(c.grid, N, c.first, c.count), p).width;
        for (std::size_t i = 0; i < c.count; ++i) {
          std::uint8_t expected = 0;
          if (p.method != prediction_method::lorenzo) {
            const auto level = static_cast<std::size_t>(
                std::find(descending_widths.begin(), descending_widths.end(), widths[i]) - descending_widths.begin());
            REQUIRE(level < descending_widths.size());
            expected = static_cast<std::uint8_t>(std::min<std::size_t>(level, 2));
          }
          INFO("point " << i);
          REQUIRE(levels[i] == expected);
        }
      }
    }
  };
  check(std::integral_constant<unsigned, 1>{});
  check(std::integral_constant<unsigned, 2>{});
  check(std::integral_constant<unsigned, 3>{});
  std::vector<std::uint8_t> none;
  zcoll::predict::Interpolation<2>::level_classes({{.grid = {45, 37}}, 0, 0}, std::span(none));  // no points, no work
}

TEST_CASE("Interpolation: predictions are exact on linear data, cubic ones on cubic data", "[predict][interpolation]") {
  using I = zcoll::predict::Interpolation<2>;
  const zcoll::predict::grid_extents grid{.nx = 64, .ny = 1};
  const std::size_t n = 64 * 64;
  const auto residuals_of = [&](const interpolation_parameters& p, auto f) {
    std::vector<std::int32_t> residuals(n);
    std::vector<std::uint32_t> recon(n);
    I::forward_chunk(I::state(p, 0, n), std::span(residuals), std::span(recon), [&](std::size_t i) {
      return f(static_cast<double>(i % 64), static_cast<double>(i / 64));
    });
    return residuals;
  };
  // A plane: linear interpolation and Lorenzo predict every point that has its neighbours exactly. The
  // others miss: Lorenzo's first row and column (127 points); interpolation's origin and the points
  // predicted from one neighbour, x = 64 - s on the 64 / s rows of each stride s and y = 64 - s on 32 / s
  // columns: 1 + 126 + 63 = 190.
  const auto plane = [](double x, double y) { return 16.0 * (3.0 * x + 5.0 * y); };
  for (const auto method : {prediction_method::interpolation_slowest_first, prediction_method::lorenzo}) {
    const auto r = residuals_of({.grid = grid, .method = method, .cubic_levels = 0}, plane);
    std::size_t nonzero = 0;
    for (const auto v : r) nonzero += v != 0;
    INFO("method " << static_cast<int>(method));
    CHECK(nonzero <= (method == prediction_method::lorenzo ? 127u : 190u));
  }
  // A cubic in x: the cubic forms predict it exactly where four neighbours exist; linear ones do not.
  const auto cubic = [](double x, double) { return 16.0 * (x * x * x - 20.0 * x * x); };
  const auto count_nonzero = [](const std::vector<std::int32_t>& r) {
    std::size_t k = 0;
    for (const auto v : r) k += v != 0;
    return k;
  };
  const auto with_cubic = count_nonzero(residuals_of({.grid = grid, .cubic_levels = ~0u}, cubic));
  const auto linear_only = count_nonzero(residuals_of({.grid = grid, .cubic_levels = 0}, cubic));
  CHECK(with_cubic * 4 < linear_only);
}

TEST_CASE("Interpolation: Lorenzo's walk rounds each residual as nearbyint does, exact halves to even",
          "[predict][interpolation]") {
  // The walk rounds in integers (predict/interpolation.hpp); the reference is nearbyint((t - p) / 16) in
  // double. On a 1-D grid Lorenzo predicts point i from the reconstruction of point i - 1, so the target
  // can be chosen from that prediction: exact halves of either parity and sign, values a hair off a half,
  // whole and fractional targets far from the prediction.
  using I = zcoll::predict::Interpolation<1>;
  const std::size_t n = 20000;
  std::mt19937_64 rng(zcoll_test::seed);
  std::vector<std::int32_t> residuals(n);
  std::vector<std::uint32_t> recon(n);
  std::vector<double> targets(n), predictions(n);
  const interpolation_parameters p{.grid = {}, .method = prediction_method::lorenzo};
  I::forward_chunk(I::state(p, 0, n), std::span(residuals), std::span(recon), [&](std::size_t i) {
    const double prediction = i == 0 ? 0.0 : static_cast<double>(static_cast<std::int32_t>(recon[i - 1]));
    const auto k = static_cast<double>(static_cast<std::int64_t>(rng() % 4001) - 2000);
    const double sign = rng() % 2 ? 1.0 : -1.0;
    double t = prediction;
    switch (i % 5) {
      case 0: t += 16.0 * k + sign * 8.0; break;                           // an exact half
      case 1: t += 16.0 * k + sign * 8.0 + sign * std::ldexp(1.0, -20); break;  // just beyond one
      case 2: t += 16.0 * k + sign * 8.0 - sign * std::ldexp(1.0, -20); break;  // just short of one
      case 3: t += static_cast<double>(static_cast<std::int64_t>(rng() % (1u << 25)) - (1 << 24)); break;
      default: t += std::ldexp(static_cast<double>(rng() % (1u << 30)), -6) - (1 << 23); break;
    }
    predictions[i] = prediction;
    targets[i] = t;
    return t;
  });
  std::size_t ties = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double quotient = (targets[i] - predictions[i]) / 16.0;
    ties += quotient - std::floor(quotient) == 0.5;
    const double expected = std::nearbyint(quotient);
    if (static_cast<double>(residuals[i]) != expected) {
      FAIL("point " << i << ": target " << targets[i] << ", prediction " << predictions[i] << ", residual "
                    << residuals[i] << ", nearbyint gives " << expected);
    }
  }
  CHECK(ties >= n / 5);  // the exact halves were reached (both parities: k spans odd and even)
}

TEST_CASE("Interpolation: parameters round-trip and damaged ones are format errors", "[predict][interpolation]") {
  using I = zcoll::predict::Interpolation<3>;
  STATIC_REQUIRE(zcoll::predict::chunk_predictor<I>);
  STATIC_REQUIRE_FALSE(zcoll::predict::predictor<I>);
  const interpolation_parameters p{
      .grid = {.nx = 45, .ny = 37}, .method = prediction_method::lorenzo, .cubic_levels = 5, .level_widths = descending_widths};
  std::vector<std::byte> bytes(I::parameter_bytes);
  zcoll::byte_writer out(bytes);
  I::write_parameters(p, out);
  CHECK(out.remaining() == 0);
  zcoll::byte_reader in(bytes);
  const auto read = I::read_parameters(in);
  CHECK(read.grid.nx == 45);
  CHECK(read.grid.ny == 37);
  CHECK(read.method == prediction_method::lorenzo);
  CHECK(read.cubic_levels == 5u);
  CHECK(read.level_widths == descending_widths);

  auto bad_method = bytes;
  bad_method[16] = std::byte{3};
  zcoll::byte_reader bad_in(bad_method);
  CHECK_THROWS_AS(I::read_parameters(bad_in), zcoll::format_error);
  auto zero_row = bytes;
  std::fill_n(zero_row.begin(), 8, std::byte{0});
  zcoll::byte_reader zero_in(zero_row);
  CHECK_THROWS_AS(I::read_parameters(zero_in), zcoll::format_error);
  zcoll::byte_reader short_in(std::span<const std::byte>(bytes).first(I::parameter_bytes - 1));
  CHECK_THROWS_AS(I::read_parameters(short_in), zcoll::format_error);
  // A bin width of 0 or wider than 16 codes (2 eb), at any level.
  for (const std::size_t level : {std::size_t{0}, std::size_t{3}, zcoll::predict::width_levels - 1}) {
    for (const std::uint8_t width : {std::uint8_t{0}, std::uint8_t{17}, std::uint8_t{255}}) {
      auto bad_width = bytes;
      bad_width[I::parameter_bytes - zcoll::predict::width_levels + level] = std::byte{width};
      zcoll::byte_reader width_in(bad_width);
      INFO("level " << level << ", width " << int{width});
      CHECK_THROWS_AS(I::read_parameters(width_in), zcoll::format_error);
    }
  }
}

TEST_CASE("Interpolation: a chunk short against its rows is read along fewer axes", "[predict][interpolation]") {
  // 64 values of a 3-D grid of planes 100 x 100 within one row: read as 1-D.
  auto b = interpolation_box::of_chunk({.nx = 100, .ny = 100}, 3, 210, 64);
  CHECK(b.extent[0] == 1);
  CHECK(b.extent[1] == 1);
  CHECK(b.extent[2] == 64);
  CHECK(b.offset == 0);
  // 4096 values within one plane: rows of 100 (42 rows from x = 50).
  b = interpolation_box::of_chunk({.nx = 100, .ny = 100}, 3, 50, 4096);
  CHECK(b.extent[0] == 1);
  CHECK(b.extent[1] == 42);
  CHECK(b.extent[2] == 100);
  CHECK(b.offset == 50);
  // 65536 values: planes of 10000 (8 planes from value 5000 of the first).
  b = interpolation_box::of_chunk({.nx = 100, .ny = 100}, 3, 5000, 65536);
  CHECK(b.extent[0] == 8);
  CHECK(b.extent[1] == 100);
  CHECK(b.offset == 5000);
  // Rows longer than four chunks: 1-D.
  b = interpolation_box::of_chunk({.nx = 100000, .ny = 1}, 2, 99990, 64);
  CHECK(b.extent[1] == 1);
  CHECK(b.extent[2] == 64);
}

TEST_CASE("Interpolation: the default chunk holds whole planes where they make a multiple of 32",
          "[predict][interpolation]") {
  using I2 = zcoll::predict::Interpolation<2>;
  using I3 = zcoll::predict::Interpolation<3>;
  const auto chunk = [](auto predictor, std::vector<std::size_t> shape) {
    return decltype(predictor)::default_chunk_values(shape, 65536);
  };
  CHECK(chunk(I2{}, {17, 96, 192}) == 3 * 96 * 192);    // ECHAM5's planes
  CHECK(chunk(I3{}, {132, 73, 144}) == 6 * 73 * 144);   // an odd number of planes is not a multiple of 32
  CHECK(chunk(I3{}, {20, 180, 360}) == 180 * 360);      // one plane
  CHECK(chunk(I3{}, {3, 100, 200}) == 3 * 100 * 200);
  CHECK(chunk(I3{}, {1, 2, 3, 150, 200}) == 2 * 150 * 200);  // the last two extents make the plane
  // No whole planes of a multiple of 32 in at least half the longest chunk: the longest.
  CHECK(chunk(I3{}, {300, 125, 125}) == 65536);  // odd planes: 32 of them do not fit
  CHECK(chunk(I3{}, {2, 165, 200}) == 65536);    // one plane of 33000 values
  CHECK(chunk(I3{}, {4, 300, 300}) == 65536);    // a plane longer than a chunk
  CHECK(chunk(I3{}, {601, 1501}) == 65536);      // two axes: no planes
  CHECK(chunk(I3{}, {4, 0, 10}) == 65536);
  CHECK(chunk(I3{}, {2, std::numeric_limits<std::size_t>::max(), 3}) == 65536);
  CHECK(chunk(zcoll::predict::Interpolation<1>{}, {17, 96, 192}) == 65536);  // a 1-D walk has no planes
  CHECK(I2::default_chunk_values(std::vector<std::size_t>{8, 64, 64}, 4096) == 4096);
}

TEST_CASE("Interpolation: a 2-D field's default chunk is the whole field, where the encoder codes it",
          "[predict][interpolation]") {
  using I2 = zcoll::predict::Interpolation<2>;
  using I3 = zcoll::predict::Interpolation<3>;
  constexpr std::uint32_t long_chunks = 1u << 20;  // the context coder's
  const auto chunk = [](auto predictor, std::vector<std::size_t> shape, std::uint32_t longest) {
    return decltype(predictor)::default_chunk_values(shape, longest);
  };
  CHECK(chunk(I2{}, {601, 1501}, long_chunks) == 902112);  // Penobscot: 902101 values, rounded up to 32
  CHECK(chunk(I3{}, {601, 1501}, long_chunks) == 902112);
  CHECK(chunk(I2{}, {32, 32768}, long_chunks) == long_chunks);  // exactly the longest
  CHECK(chunk(I2{}, {33, 32768}, long_chunks) == long_chunks);  // one row too many: the longest
  CHECK(chunk(I2{}, {3, 5}, long_chunks) == 32);
  CHECK(chunk(I2{}, {0, 1501}, long_chunks) == long_chunks);
  CHECK(chunk(I2{}, {2, std::numeric_limits<std::size_t>::max()}, long_chunks) == long_chunks);
  CHECK(chunk(I2{}, {601, 1501}, 65536) == 65536);  // a shorter limit: the field does not fit
  // Volumes keep chunks of whole planes up to 65536 values (their walk fits the cache), a 1-D walk 65536.
  CHECK(chunk(I2{}, {17, 96, 192}, long_chunks) == 3 * 96 * 192);
  CHECK(chunk(I3{}, {300, 125, 125}, long_chunks) == 65536);
  CHECK(chunk(zcoll::predict::Interpolation<1>{}, {601, 1501}, long_chunks) == 65536);
  CHECK(chunk(I2{}, {}, long_chunks) == 65536);
}
