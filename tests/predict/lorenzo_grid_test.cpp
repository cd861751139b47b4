#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/predict/lorenzo.hpp"

namespace {

using zcoll::block_values;

/// The prediction straight from the formula: neighbours outside the grid (a coordinate of 0) or before
/// the chunk's first value count as 0. Modulo 2^32.
template <unsigned N>
std::uint32_t direct_prediction(const std::vector<std::int32_t>& codes, std::uint64_t first, std::size_t i,
                                std::uint64_t nx, std::uint64_t ny) {
  const std::uint64_t g = first + i;
  const std::uint64_t x = g % nx, y = N == 3 ? (g / nx) % ny : g / nx, z = N == 3 ? g / (nx * ny) : 0;
  const auto q = [&](unsigned dx, unsigned dy, unsigned dz) -> std::uint32_t {
    if ((dx && x == 0) || (dy && y == 0) || (dz && z == 0)) return 0;
    const std::uint64_t back = dx + dy * nx + dz * nx * ny;
    if (back > i) return 0;  // before the chunk
    return static_cast<std::uint32_t>(codes[i - back]);
  };
  std::uint32_t p = q(1, 0, 0) + q(0, 1, 0) - q(1, 1, 0);
  if constexpr (N == 3) p += q(0, 0, 1) - q(1, 0, 1) - q(0, 1, 1) + q(1, 1, 1);
  return p;
}

template <unsigned N>
void check_grid(std::mt19937_64& rng, std::uint64_t nx, std::uint64_t ny, std::uint64_t first, std::size_t blocks) {
  using L = zcoll::predict::Lorenzo<N>;
  const std::size_t n = blocks * block_values;
  std::vector<std::int32_t> codes(n);
  std::int64_t walk = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 97 < 80) {
      walk += static_cast<std::int64_t>(rng() % 7) - 3;
      codes[i] = static_cast<std::int32_t>(walk);
    } else {  // extremes: differences wrap modulo 2^32
      codes[i] = rng() % 2 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int32_t>::max();
    }
  }
  const typename L::parameters grid{.nx = nx, .ny = ny};
  typename L::state forward_state(grid, first, n);
  std::vector<std::int32_t> residuals(n);
  for (std::size_t b = 0; b < blocks; ++b) {
    L::forward(forward_state, codes.data() + b * block_values, residuals.data() + b * block_values);
  }
  for (std::size_t i = 0; i < n; ++i) {
    INFO("nx " << nx << ", ny " << ny << ", first " << first << ", value " << i);
    REQUIRE(static_cast<std::uint32_t>(residuals[i]) ==
            static_cast<std::uint32_t>(codes[i]) - direct_prediction<N>(codes, first, i, nx, ny));
  }
  typename L::state inverse_state(grid, first, n);
  std::vector<std::uint32_t> values(residuals.begin(), residuals.end());
  for (std::size_t b = 0; b < blocks; ++b) L::inverse(inverse_state, values.data() + b * block_values);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("nx " << nx << ", ny " << ny << ", first " << first << ", value " << i);
    REQUIRE(static_cast<std::int32_t>(values[i]) == codes[i]);
  }
}

}  // namespace

TEST_CASE("Lorenzo<2> residuals are the formula's, and inverse restores the codes", "[predict][lorenzo]") {
  std::mt19937_64 rng(zcoll_test::seed);
  // Rows shorter than a block, at and around its length, long; chunks starting mid-row.
  for (std::uint64_t nx : {1u, 2u, 5u, 31u, 32u, 33u, 64u, 100u, 1000u}) {
    for (std::uint64_t first : {0u, 7u, 64u, 1000u}) check_grid<2>(rng, nx, 1, first, 1 + rng() % 40);
  }
}

TEST_CASE("Lorenzo<3> residuals are the formula's, and inverse restores the codes", "[predict][lorenzo]") {
  std::mt19937_64 rng(zcoll_test::seed + 1);
  for (std::uint64_t nx : {1u, 3u, 31u, 33u, 70u}) {
    for (std::uint64_t ny : {1u, 2u, 7u}) {
      for (std::uint64_t first : {0u, 5u, 96u, 5000u}) check_grid<3>(rng, nx, ny, first, 1 + rng() % 30);
    }
  }
}

TEST_CASE("Lorenzo<N> grids longer than the chunk: the neighbours a row or plane back are all outside it",
          "[predict][lorenzo]") {
  std::mt19937_64 rng(zcoll_test::seed + 2);
  check_grid<2>(rng, std::uint64_t{1} << 40, 1, 12345, 8);
  check_grid<3>(rng, 300, 1000, 0, 16);  // the plane (300 000 values) is longer than the 512-value chunk
  check_grid<3>(rng, std::uint64_t{1} << 30, std::uint64_t{1} << 30, 77, 4);
}

TEST_CASE("Lorenzo<1> is the 1-D predictor", "[predict][lorenzo]") {
  STATIC_REQUIRE(std::is_same_v<zcoll::predict::Lorenzo<1>, zcoll::predict::Lorenzo1D>);
  STATIC_REQUIRE(zcoll::predict::parameterized_predictor<zcoll::predict::Lorenzo<2>>);
  STATIC_REQUIRE(zcoll::predict::parameterized_predictor<zcoll::predict::Lorenzo<3>>);
  STATIC_REQUIRE_FALSE(zcoll::predict::parameterized_predictor<zcoll::predict::Lorenzo<1>>);
}

TEST_CASE("Lorenzo<N> grids from the shape: the last extents, checked against the count", "[predict][lorenzo]") {
  using L2 = zcoll::predict::Lorenzo<2>;
  using L3 = zcoll::predict::Lorenzo<3>;
  using shape = std::vector<std::size_t>;
  const auto grid2 = L2::make_parameters(shape{4, 5, 6}, 120);
  CHECK(grid2.nx == 6);
  const auto grid3 = L3::make_parameters(shape{4, 5, 6}, 120);
  CHECK((grid3.nx == 6 && grid3.ny == 5));
  const auto padded = L3::make_parameters(shape{9}, 9);  // one row: leading extents of 1
  CHECK((padded.nx == 9 && padded.ny == 1));
  const auto flat = L2::make_parameters({}, 1000);  // no shape: one row of every value
  CHECK(flat.nx == 1000);

  const auto refuses = [](const shape& extents, std::size_t count, const char* what) {
    INFO(what);
    CHECK_THROWS_WITH(L3::make_parameters(extents, count), Catch::Contains(what));
  };
  refuses({4, 5, 6}, 121, "shape {4, 5, 6} does not hold the input's 121 values");
  refuses({4, 0, 6}, 24, "shape {4, 0, 6} does not hold the input's 24 values");
  const auto empty = L3::make_parameters(shape{4, 0, 6}, 0);  // an empty grid is fine
  CHECK((empty.nx >= 1 && empty.ny >= 1));
  refuses({std::size_t{1} << 40, std::size_t{1} << 40}, 16, "does not hold the input's 16 values");
}

TEST_CASE("Lorenzo<N> stream parameters: zero or oversized extents are format errors", "[predict][lorenzo]") {
  using L3 = zcoll::predict::Lorenzo<3>;
  const auto read = [](std::uint64_t nx, std::uint64_t ny) {
    std::vector<std::byte> bytes(16);
    zcoll::byte_writer out(bytes);
    L3::write_parameters({.nx = nx, .ny = ny}, out);
    zcoll::byte_reader in(bytes);
    return L3::read_parameters(in);
  };
  CHECK(read(6, 5).ny == 5);
  CHECK_THROWS_AS(read(0, 5), zcoll::format_error);
  CHECK_THROWS_AS(read(6, 0), zcoll::format_error);
  CHECK_THROWS_AS(read(std::uint64_t{1} << 40, std::uint64_t{1} << 40), zcoll::format_error);
  std::vector<std::byte> short_bytes(12);
  zcoll::byte_reader in(short_bytes);
  CHECK_THROWS_AS(L3::read_parameters(in), zcoll::format_error);
}
