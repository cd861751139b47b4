#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "zcoll/adapt/homogenization.hpp"
#include "zcoll/core/error.hpp"

using zcoll::adapt::homogenization_of;

TEST_CASE("Homogenization index: vectors that quantize alike merge; the index counts them", "[adapt][homogenization]") {
  // Six vectors, four distinct: a twice more, b within a's bins, d within c's bins at eb = 0.01.
  const std::vector<float> batch{
      0.0f,   0.0f, 0.0f,  // a
      0.001f, 0.0f, 0.0f,  // b: 0.001 / 0.02 rounds to code 0, as a
      1.0f,   2.0f, 3.0f,  // c: codes 50, 100, 150
      1.004f, 2.0f, 3.0f,  // d: 1.004 / 0.02 = 50.2, code 50, as c
      0.0f,   0.0f, 0.0f,  // a
      0.0f,   0.0f, 0.0f,  // a
  };
  const auto h = homogenization_of<float>(batch, 3, 0.01);
  CHECK(h.vectors == 6);
  CHECK(h.original_unique == 4);
  CHECK(h.quantized_unique == 2);
  CHECK(h.index() == 0.5);
  // A bound too small to merge anything, and lossless: nothing merges.
  CHECK(homogenization_of<float>(batch, 3, 1e-6).index() == 0.0);
  CHECK(homogenization_of<float>(batch, 3, 0.0).index() == 0.0);
  // Every vector in one bin: all N distinct vectors become one.
  std::vector<double> close(3 * 40);
  for (std::size_t i = 0; i < close.size(); ++i) close[i] = 1e-4 * static_cast<double>(i % 7 + 1) + 1e-6 * static_cast<double>(i);
  const auto one = homogenization_of<double>(close, 3, 0.01);
  CHECK(one.original_unique == 40);
  CHECK(one.quantized_unique == 1);
  CHECK(one.index() == Approx(39.0 / 40.0));
}

TEST_CASE("Homogenization index: values the quantizer keeps exactly keep vectors apart", "[adapt][homogenization]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> batch{nan, 1.0f, inf, nan, 1.0f, -inf, nan, 1.0f, inf, 1e30f, 1.0f, 1.0f};
  const auto h = homogenization_of<float>(batch, 3, 0.01);
  CHECK(h.original_unique == 3);  // (nan, 1, inf) twice, bit for bit
  CHECK(h.quantized_unique == 3);
  CHECK(h.index() == 0.0);
}

TEST_CASE("Homogenization index: empty batches, and bad arguments named", "[adapt][homogenization]") {
  const std::vector<float> none;
  CHECK(homogenization_of<float>(none, 4, 0.01).index() == 0.0);
  const std::vector<float> five(5, 1.0f);
  CHECK_THROWS_WITH(homogenization_of<float>(five, 2, 0.01), Catch::Contains("dim 2"));
  CHECK_THROWS_WITH(homogenization_of<float>(five, 0, 0.01), Catch::Contains("dim"));
  CHECK_THROWS_WITH(homogenization_of<float>(five, 5, -1.0), Catch::Contains("error_bound"));
  CHECK_THROWS_AS(homogenization_of<float>(five, 5, std::nan("")), zcoll::argument_error);
}
