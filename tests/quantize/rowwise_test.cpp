#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "support/guarded_buffer.hpp"
#include "support/test_support.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/quantize/rowwise.hpp"

// Everything below checks the library against code written from the layout and the paper alone: f16 is
// decoded by hand, the cover test uses the FPU's round-toward-minus-infinity, the codes come from
// std::nearbyint of the formula, and the dequantizer is FBGEMM's loop (a multiply, then an add).

namespace {

namespace q = zcoll::quantize;
using zcoll_test::bits;

/// A reproducible generator with a fully specified output (std distributions are not).
struct lcg {
  std::uint64_t state;
  std::uint64_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  }
  double unit() { return static_cast<double>(next()) * 0x1p-53; }  // [0, 1)
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

double half_value(std::uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0x1F) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

/// b + span rounded toward minus infinity. For doubles b, span (span exact) and hi, the exact sum is >= hi
/// exactly when this is: rounding down is monotone and leaves hi unchanged.
bool reference_covers(double b, double span, double hi) {
  const int mode = std::fegetround();
  std::fesetround(FE_DOWNWARD);
  volatile double vb = b, vs = span;
  volatile double sum = vb + vs;  // volatile, so the add stays before the mode is restored
  std::fesetround(mode);
  return sum >= hi;
}

/// A row as the test reads it from the bytes: codes, the stored scale/bias bits and their values.
struct parsed_row {
  std::vector<unsigned> codes;
  std::uint32_t scale_bits = 0, bias_bits = 0;
  double scale = 0, bias = 0;
  std::uint8_t padding = 0;  // the unused high bits of the last code byte (n-bit)
};

template <int Bits>
parsed_row parse_row(std::span<const std::byte> fused, std::size_t dim, std::size_t row) {
  const std::size_t per_byte = 8 / Bits;
  const std::size_t code_bytes = (dim + per_byte - 1) / per_byte;
  const std::size_t row_bytes = code_bytes + (Bits == 8 ? 8 : 4);
  REQUIRE((row + 1) * row_bytes <= fused.size());
  const auto* r = reinterpret_cast<const std::uint8_t*>(fused.data()) + row * row_bytes;
  parsed_row p;
  for (std::size_t j = 0; j < dim; ++j) {
    p.codes.push_back((r[j / per_byte] >> ((j % per_byte) * Bits)) & ((1u << Bits) - 1));
  }
  if (dim % per_byte != 0) p.padding = static_cast<std::uint8_t>(r[code_bytes - 1] >> ((dim % per_byte) * Bits));
  if constexpr (Bits == 8) {
    std::memcpy(&p.scale_bits, r + code_bytes, 4);
    std::memcpy(&p.bias_bits, r + code_bytes + 4, 4);
    p.scale = std::bit_cast<float>(p.scale_bits);
    p.bias = std::bit_cast<float>(p.bias_bits);
  } else {
    std::uint16_t s, b;
    std::memcpy(&s, r + code_bytes, 2);
    std::memcpy(&b, r + code_bytes + 2, 2);
    p.scale_bits = s;
    p.bias_bits = b;
    p.scale = half_value(s);
    p.bias = half_value(b);
  }
  return p;
}

/// The next larger value of the stored format after the finite value `bits` (scale: f32 with 16
/// significant bits for 8 bits; f16 otherwise), and the next smaller one.
template <int Bits>
double next_scale_below(std::uint32_t scale_bits) {
  return Bits == 8 ? static_cast<double>(std::bit_cast<float>(scale_bits - 256)) : half_value(static_cast<std::uint16_t>(scale_bits - 1));
}
template <int Bits>
double next_bias_above(std::uint32_t bias_bits) {
  if constexpr (Bits == 8) {
    return std::nextafter(std::bit_cast<float>(bias_bits), std::numeric_limits<float>::infinity());
  } else {
    const auto b = static_cast<std::uint16_t>(bias_bits);
    if (b == 0x8001) return 0.0;
    return half_value(static_cast<std::uint16_t>((b & 0x8000u) ? b - 1 : b + 1));
  }
}

/// FBGEMM's dequantizer loop: the product rounded to float, then the sum.
float fbgemm_value(unsigned code, float scale, float bias) {
  volatile float product = static_cast<float>(code) * scale;
  return product + bias;
}

/// e(S, B) from the documented formula, in long double (the library rounds its double value up).
template <int Bits>
long double documented_bound(double scale, double bias) {
  if (scale == 0) return 0;
  const long double s = scale, b = bias, top = b + s * ((1 << Bits) - 1);
  return s / 2 + s * 0x1p-42L + 0x1p-24L * std::max(std::abs(b), std::abs(top)) + 0x1p-149L;
}

/// Every check of a quantized buffer against `values`: the layout, the tightest scale and bias, the codes
/// of the formula, FBGEMM's dequantization, the bound of each row and the returned bound. Returns how many
/// codes the literal x / s + z of the paper (in long double, away from ties) decided, all agreeing.
template <int Bits, class T>
std::size_t check_quantized(std::span<const T> values, std::size_t dim, std::span<const std::byte> fused,
                            double returned_bound) {
  const std::size_t rows = values.size() / dim;
  const unsigned max_code = (1u << Bits) - 1;
  REQUIRE(fused.size() == rows * q::rowwise_layout<Bits>::row_bytes(dim));
  std::vector<T> restored(values.size());
  q::dequantize_rows<Bits>(fused, dim, std::span<T>(restored));
  double largest = 0;
  std::size_t paper_decided = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    INFO("row " << r << " of dim " << dim);
    const auto row = values.subspan(r * dim, dim);
    const parsed_row p = parse_row<Bits>(fused, dim, r);
    REQUIRE(p.padding == 0);
    const double lo = static_cast<double>(*std::min_element(row.begin(), row.end()));
    const double hi = static_cast<double>(*std::max_element(row.begin(), row.end()));
    // B: the largest stored value <= min (+0 for zero); S: the smallest with B + (2^q - 1) S >= max.
    REQUIRE(std::isfinite(p.bias));
    REQUIRE(p.bias <= lo);
    REQUIRE(next_bias_above<Bits>(p.bias_bits) > lo);
    REQUIRE(p.bias_bits != (Bits == 8 ? 0x80000000u : 0x8000u));
    REQUIRE(std::isfinite(p.scale));
    REQUIRE_FALSE(std::signbit(p.scale));
    if (Bits == 8) REQUIRE((p.scale_bits & 0xFFu) == 0);
    REQUIRE(reference_covers(p.bias, max_code * p.scale, hi));
    if (p.scale_bits != 0) REQUIRE_FALSE(reference_covers(p.bias, max_code * next_scale_below<Bits>(p.scale_bits), hi));
    const auto scale = static_cast<float>(p.scale), bias = static_cast<float>(p.bias);
    const double e = q::row_error_bound<Bits>(scale, bias);
    REQUIRE(static_cast<long double>(e) >= documented_bound<Bits>(p.scale, p.bias));
    largest = std::max(largest, e);
    const auto params = q::row_parameters<Bits>(fused, dim, r);
    REQUIRE(bits(params.scale) == bits(scale));
    REQUIRE(bits(params.bias) == bits(bias));
    for (std::size_t j = 0; j < dim; ++j) {
      INFO("column " << j << ": x = " << row[j] << ", scale " << p.scale << ", bias " << p.bias);
      const T x = row[j];
      unsigned expected = 0;
      if (p.scale != 0) {
        const double code = std::nearbyint((static_cast<double>(x) - p.bias) / p.scale);
        expected = static_cast<unsigned>(std::clamp(code, 0.0, static_cast<double>(max_code)));
        // The paper's x / s + z with z = -B / s, in long double: away from ties it must agree.
        const long double s = p.scale, z = -static_cast<long double>(p.bias) / s;
        const long double literal = static_cast<long double>(x) / s + z;
        if (std::abs(literal - std::floor(literal) - 0.5L) > 1e-6L && literal > -0.5L && literal < max_code + 0.5L) {
          REQUIRE(static_cast<unsigned>(std::llround(literal)) == p.codes[j]);
          ++paper_decided;
        }
      }
      REQUIRE(p.codes[j] == expected);
      const float y = fbgemm_value(p.codes[j], scale, bias);
      REQUIRE(bits(restored[r * dim + j]) == bits(static_cast<T>(y)));
      REQUIRE(bits(std::fma(static_cast<float>(p.codes[j]), scale, bias)) == bits(y));  // FBGEMM's AVX2 form
      REQUIRE(zcoll::exactly_within(x, restored[r * dim + j], e));
      REQUIRE(zcoll::exactly_within(x, restored[r * dim + j], returned_bound));
    }
  }
  REQUIRE(returned_bound == largest);
  return paper_decided;
}

template <int Bits, class T>
std::vector<std::byte> quantize(std::span<const T> values, std::size_t dim, double* bound = nullptr) {
  std::vector<std::byte> fused(q::rowwise_layout<Bits>::fused_bytes(values.size() / dim, dim));
  const double e = q::quantize_rows<Bits>(values, dim, std::span<std::byte>(fused));
  if (bound) *bound = e;
  return fused;
}

template <int Bits, class T>
std::size_t round_trip_checked(const std::vector<T>& values, std::size_t dim) {
  double bound = 0;
  const auto fused = quantize<Bits, T>(std::span<const T>(values), dim, &bound);
  return check_quantized<Bits, T>(std::span<const T>(values), dim, std::span<const std::byte>(fused), bound);
}

/// One row of `dim` values of a kind that probes the quantizer.
template <class T>
void fill_row(lcg& rng, int kind, std::size_t dim, T* row) {
  const double offset = (rng.unit() - 0.5) * 200;
  const double width = std::ldexp(1.0, static_cast<int>(rng.below(30)) - 20);
  for (std::size_t j = 0; j < dim; ++j) {
    const double u = rng.unit();
    double v;
    switch (kind) {
      case 0: v = (u + rng.unit() + rng.unit() - 1.5) * 2; break;         // bell-shaped, mixed signs
      case 1: v = 1000 + u; break;                                      // range small next to |min|
      case 2: v = (u - 0.3) * 1e-6; break;                              // tiny
      case 3: v = static_cast<double>(rng.below(31)) * 0.5; break;      // codes and exact ties of 4-bit rows
      case 4: v = (u - 0.5) * 4e4; break;                               // wide, within f16
      case 5: v = offset + width * u; break;                            // any scale
      case 6: v = static_cast<double>(rng.below(511)) * 0.5 - 10; break;  // ties of 8-bit rows
      default: v = std::ldexp(u - 0.5, static_cast<int>(rng.below(30)) - 20); break;  // mixed magnitudes
    }
    row[j] = static_cast<T>(v);
  }
}

template <int Bits, class T>
void check_random_rows() {
  const std::size_t dims[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 257};
  lcg rng{zcoll_test::seed + Bits};
  std::size_t decided = 0, values_checked = 0;
  for (const std::size_t dim : dims) {
    for (int kind = 0; kind < 8; ++kind) {
      const std::size_t rows = 1 + rng.below(6);
      std::vector<T> values(rows * dim);
      for (std::size_t r = 0; r < rows; ++r) fill_row(rng, kind, dim, values.data() + r * dim);
      INFO("dim " << dim << ", kind " << kind);
      decided += round_trip_checked<Bits, T>(values, dim);
      values_checked += values.size();
    }
  }
  // The literal paper formula was comparable (not near a tie) for most values.
  CHECK(decided > values_checked / 2);
}

}  // namespace

TEST_CASE("rowwise_layout gives FBGEMM's row sizes", "[quantize][rowwise]") {
  for (std::size_t dim : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 33u, 64u, 1000u}) {
    INFO("dim " << dim);
    CHECK(q::rowwise_layout<8>::row_bytes(dim) == dim + 8);
    CHECK(q::rowwise_layout<4>::row_bytes(dim) == (dim + 1) / 2 + 4);
    CHECK(q::rowwise_layout<2>::row_bytes(dim) == (dim + 3) / 4 + 4);
    CHECK(q::rowwise_layout<4>::fused_bytes(3, dim) == 3 * ((dim + 1) / 2 + 4));
  }
  CHECK(q::rowwise_layout<4>::max_code == 15);
  CHECK(q::rowwise_layout<2>::codes_per_byte == 4);
  CHECK_THROWS_AS(q::rowwise_layout<8>::fused_bytes(std::numeric_limits<std::size_t>::max() / 4, 64),
                  zcoll::argument_error);
}

TEMPLATE_TEST_CASE("Row-wise codes are the paper's RNE formula, scale and bias the tightest the layout stores",
                   "[quantize][rowwise]", float, double) {
  using T = TestType;
  SECTION("8 bits") { check_random_rows<8, T>(); }
  SECTION("4 bits") { check_random_rows<4, T>(); }
  SECTION("2 bits") { check_random_rows<2, T>(); }
}

TEMPLATE_TEST_CASE("Exact ties round to the even code", "[quantize][rowwise]", float, double) {
  using T = TestType;
  // Rows [0, 2^q - 1] have B = 0 and S = 1, so k + 0.5 is an exact tie between codes k and k + 1.
  auto check = [](auto bits_tag, unsigned max_code) {
    constexpr int Bits = decltype(bits_tag)::value;
    std::vector<T> row = {T(0), static_cast<T>(max_code)};
    for (unsigned k = 0; k < max_code; ++k) {
      row.push_back(static_cast<T>(k + 0.5));
      row.push_back(std::nextafter(static_cast<T>(k + 0.5), T(0)));
      row.push_back(std::nextafter(static_cast<T>(k + 0.5), T(1e9)));
    }
    // Pad to a multiple of 32 with the tie 0.5, so the vector paths see full blocks of ties.
    while (row.size() % 32 != 0) row.push_back(T(0.5));
    const auto fused = quantize<Bits, T>(std::span<const T>(row), row.size());
    const parsed_row p = parse_row<Bits>(fused, row.size(), 0);
    REQUIRE(p.scale == 1.0);
    REQUIRE(p.bias == 0.0);
    for (std::size_t j = 2; j + 2 < 2 + 3 * max_code; j += 3) {
      const unsigned k = static_cast<unsigned>(j - 2) / 3;
      INFO("tie " << k << ".5");
      CHECK(p.codes[j] == (k % 2 == 0 ? k : k + 1));
      CHECK(p.codes[j + 1] == k);
      CHECK(p.codes[j + 2] == k + 1);
    }
    round_trip_checked<Bits, T>(row, row.size());
  };
  check(std::integral_constant<int, 8>{}, 255);
  check(std::integral_constant<int, 4>{}, 15);
  check(std::integral_constant<int, 2>{}, 3);
}

TEMPLATE_TEST_CASE("A row of equal values has scale 0 when the bias holds it, and comes back exactly",
                   "[quantize][rowwise]", float, double) {
  using T = TestType;
  for (const std::size_t dim : {1u, 5u, 32u, 33u}) {
    INFO("dim " << dim);
    // 8 bits: an f32 bias holds any float exactly (FBGEMM also writes scale 0 and bias = min).
    for (const float f : {0.0f, -0.0f, 3.25f, -1e30f, 1e-40f, 0.1f}) {
      const T v = f;
      const std::vector<T> row(dim, v);
      double bound = -1;
      const auto fused = quantize<8, T>(std::span<const T>(row), dim, &bound);
      const parsed_row p = parse_row<8>(fused, dim, 0);
      CHECK(p.scale_bits == 0);
      CHECK(bound == 0.0);
      std::vector<T> back(dim);
      q::dequantize_rows<8>(std::span<const std::byte>(fused), dim, std::span<T>(back));
      for (const T y : back) CHECK(y == v);
      round_trip_checked<8, T>(row, dim);
    }
    // 4 and 2 bits: an f16 value has scale 0; another value gets the smallest covering scale.
    for (const T v : {T(0), T(1.5), T(-65504), T(0x1p-24)}) {
      const std::vector<T> row(dim, v);
      double bound = -1;
      const auto fused = quantize<4, T>(std::span<const T>(row), dim, &bound);
      CHECK(parse_row<4>(fused, dim, 0).scale_bits == 0);
      CHECK(bound == 0.0);
      round_trip_checked<4, T>(row, dim);
      round_trip_checked<2, T>(row, dim);
    }
    for (const T v : {T(0.1), T(1000.3), T(-3e-7)}) {
      const std::vector<T> row(dim, v);
      double bound = 0;
      const auto fused = quantize<4, T>(std::span<const T>(row), dim, &bound);
      const parsed_row p = parse_row<4>(fused, dim, 0);
      CHECK(p.scale > 0);
      // Far below f16's own rounding of v: (v - B) / 15 rounded up to f16, at least its 2^-24 spacing.
      CHECK(bound <= std::max(std::abs(static_cast<double>(v)) * 1e-3, 0x1p-25 * 1.01));
      round_trip_checked<4, T>(row, dim);
      round_trip_checked<2, T>(row, dim);
    }
    if constexpr (std::is_same_v<T, double>) {
      // A double the f32 bias cannot hold: B is the float below it and S covers the gap.
      for (const double v : {0.1, -1e30, 1e-40}) {
        const std::vector<T> row(dim, v);
        double bound = 0;
        const auto fused = quantize<8, T>(std::span<const T>(row), dim, &bound);
        CHECK(parse_row<8>(fused, dim, 0).scale > 0);
        CHECK(bound <= std::max(std::abs(v) * 1e-7, 0x1p-140));  // 2^-141: the smallest 8-bit scale
        round_trip_checked<8, T>(row, dim);
      }
    }
  }
}

TEMPLATE_TEST_CASE("Denormal and tiny rows", "[quantize][rowwise]", float, double) {
  using T = TestType;
  const T d = std::numeric_limits<float>::denorm_min();
  std::vector<T> rows;
  const std::size_t dim = 37;
  for (std::size_t j = 0; j < dim; ++j) rows.push_back(static_cast<T>(static_cast<double>(j % 11) - 3) * d);
  for (std::size_t j = 0; j < dim; ++j) rows.push_back(static_cast<T>(j) * T(1e-38));
  for (std::size_t j = 0; j < dim; ++j) rows.push_back(static_cast<T>(j % 5) * std::numeric_limits<T>::denorm_min());
  for (std::size_t j = 0; j < dim; ++j) rows.push_back(T(1) + static_cast<T>(j) * std::numeric_limits<T>::epsilon());
  round_trip_checked<8, T>(rows, dim);
  round_trip_checked<4, T>(rows, dim);
  round_trip_checked<2, T>(rows, dim);
}

TEMPLATE_TEST_CASE("Huge ranges: the layout's limits are argument errors naming the row", "[quantize][rowwise]",
                   float, double) {
  using T = TestType;
  constexpr double big = std::numeric_limits<float>::max();
  auto outcome = [](auto bits_tag, std::vector<T> row) -> std::string {
    constexpr int Bits = decltype(bits_tag)::value;
    std::vector<T> values(row.size(), T(1));  // row 0: harmless; row 1: the one under test
    values.insert(values.end(), row.begin(), row.end());
    std::vector<std::byte> fused(q::rowwise_layout<Bits>::fused_bytes(2, row.size()));
    try {
      const double e = q::quantize_rows<Bits>(std::span<const T>(values), row.size(), std::span<std::byte>(fused));
      check_quantized<Bits, T>(std::span<const T>(values), row.size(), std::span<const std::byte>(fused), e);
      return "ok";
    } catch (const zcoll::argument_error& error) {
      const std::string what = error.what();
      CHECK(what.find("row 1") != std::string::npos);
      return "argument_error";
    }
  };
  using b8 = std::integral_constant<int, 8>;
  using b4 = std::integral_constant<int, 4>;
  using b2 = std::integral_constant<int, 2>;
  // 8 bits: f32 scale and bias; the dequantizer's 255 S + B must stay finite.
  CHECK(outcome(b8{}, {T(0), static_cast<T>(3e38)}) == "ok");
  CHECK(outcome(b8{}, {static_cast<T>(-1e38), static_cast<T>(1e38)}) == "ok");
  CHECK(outcome(b8{}, {static_cast<T>(-3e38), static_cast<T>(3e38)}) == "argument_error");
  CHECK(outcome(b8{}, {static_cast<T>(-big), static_cast<T>(big)}) == "argument_error");
  CHECK(outcome(b8{}, {static_cast<T>(1e38), static_cast<T>(big)}) == "argument_error");
  // 4 and 2 bits: f16 bias >= -65504 and f16 scale <= 65504.
  for (const int which : {4, 2}) {
    auto run = [&](std::vector<T> row) { return which == 4 ? outcome(b4{}, row) : outcome(b2{}, row); };
    CHECK(run({T(-65504), T(65504)}) == "ok");
    CHECK(run({T(0), T(60000)}) == "ok");
    CHECK(run({T(70000), T(70001)}) == "ok");  // bias 65504, scale covers the rest: a true, loose bound
    CHECK(run({T(-65505), T(0)}) == "argument_error");
    CHECK(run({T(-70000), T(0)}) == "argument_error");
    CHECK(run({T(0), T(1e7)}) == "argument_error");
    CHECK(run({T(-1e30), T(1e30)}) == "argument_error");
  }
  if constexpr (std::is_same_v<T, double>) {
    CHECK(outcome(b8{}, {-1e300, 0.0}) == "argument_error");
    CHECK(outcome(b8{}, {0.0, 1e300}) == "argument_error");
    CHECK(outcome(b8{}, {-1e-300, 1e-300}) == "ok");
    CHECK(outcome(b4{}, {-1e-300, 1e-300}) == "ok");
    CHECK(outcome(b8{}, {-big * 1.0000001, 0.0}) == "argument_error");
  }
}

TEMPLATE_TEST_CASE("NaN and Inf are argument errors naming row and value; nothing is written past the output",
                   "[quantize][rowwise]", float, double) {
  using T = TestType;
  const std::size_t dim = 33, rows = 4;
  for (const T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                      -std::numeric_limits<T>::infinity()}) {
    for (const std::size_t column : {0u, 7u, 31u, 32u}) {
      std::vector<T> values(rows * dim);
      lcg rng{zcoll_test::seed};
      for (std::size_t r = 0; r < rows; ++r) fill_row(rng, 0, dim, values.data() + r * dim);
      values[2 * dim + column] = bad;
      auto check = [&](auto bits_tag) {
        constexpr int Bits = decltype(bits_tag)::value;
        zcoll_test::guarded_buffer<> out(q::rowwise_layout<Bits>::fused_bytes(rows, dim));
        try {
          q::quantize_rows<Bits>(std::span<const T>(values), dim, out.span());
          FAIL("no argument_error for " << bad << " at row 2, column " << column);
        } catch (const zcoll::argument_error& e) {
          const std::string what = e.what();
          INFO(what);
          CHECK(what.find("row 2") != std::string::npos);
          CHECK(what.find("column " + std::to_string(column)) != std::string::npos);
          CHECK(what.find(std::isnan(bad) ? "nan" : "inf") != std::string::npos);
        }
      };
      check(std::integral_constant<int, 8>{});
      check(std::integral_constant<int, 4>{});
      check(std::integral_constant<int, 2>{});
    }
  }
}

TEMPLATE_TEST_CASE("Argument checks and empty input", "[quantize][rowwise]", float, double) {
  using T = TestType;
  std::vector<T> values(12, T(1));
  std::vector<std::byte> fused(q::rowwise_layout<4>::fused_bytes(3, 4));
  CHECK_THROWS_AS(q::quantize_rows<4>(std::span<const T>(values), 0, std::span<std::byte>(fused)), zcoll::argument_error);
  CHECK_THROWS_AS(q::quantize_rows<4>(std::span<const T>(values), 5, std::span<std::byte>(fused)), zcoll::argument_error);
  CHECK_THROWS_AS(q::quantize_rows<4>(std::span<const T>(values), 4, std::span<std::byte>(fused).first(fused.size() - 1)),
                  zcoll::argument_error);
  // A larger output is fine; the bytes past the rows stay untouched.
  std::vector<std::byte> larger(fused.size() + 5, std::byte{0xA5});
  q::quantize_rows<4>(std::span<const T>(values), 4, std::span<std::byte>(larger));
  for (std::size_t i = fused.size(); i < larger.size(); ++i) CHECK(larger[i] == std::byte{0xA5});
  std::vector<T> out(12);
  CHECK_THROWS_AS(q::dequantize_rows<4>(std::span<const std::byte>(larger), 4, std::span<T>(out)), zcoll::argument_error);
  CHECK_THROWS_AS(q::dequantize_rows<4>(std::span<const std::byte>(fused), 0, std::span<T>(out)), zcoll::argument_error);
  CHECK_THROWS_AS(q::dequantize_rows<4>(std::span<const std::byte>(fused), 5, std::span<T>(out)), zcoll::argument_error);
  CHECK_THROWS_AS(q::row_parameters<4>(std::span<const std::byte>(fused), 4, 3), zcoll::argument_error);
  // Empty input: no rows, bound 0, nothing written.
  std::vector<std::byte> none(4, std::byte{0x5A});
  CHECK(q::quantize_rows<8>(std::span<const T>(), 7, std::span<std::byte>(none)) == 0.0);
  for (const auto b : none) CHECK(b == std::byte{0x5A});
  q::dequantize_rows<2>(std::span<const std::byte>(), 7, std::span<T>());
}

TEMPLATE_TEST_CASE("Dequantizing buffers FBGEMM wrote: code x scale + bias as FBGEMM computes it",
                   "[quantize][rowwise]", float, double) {
  using T = TestType;
  // FBGEMM's 8-bit quantizer stores scale = range / 255 with all 24 bits; the product is then inexact and
  // dequantize_rows gives the fused (AVX2) value. Every byte pattern of finite parameters decodes in bounds.
  lcg rng{zcoll_test::seed + 99};
  for (const std::size_t dim : {1u, 3u, 32u, 45u}) {
    INFO("dim " << dim);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<std::uint8_t> bytes8(q::rowwise_layout<8>::row_bytes(dim));
      for (auto& b : bytes8) b = static_cast<std::uint8_t>(rng.next());
      const float scale = static_cast<float>(rng.unit()) / 255.0f, bias = static_cast<float>(rng.unit() - 0.5);
      std::memcpy(bytes8.data() + dim, &scale, 4);
      std::memcpy(bytes8.data() + dim + 4, &bias, 4);
      std::vector<T> out(dim);
      q::dequantize_rows<8>(std::as_bytes(std::span(bytes8)), dim, std::span<T>(out));
      for (std::size_t j = 0; j < dim; ++j) {
        CHECK(bits(out[j]) == bits(static_cast<T>(std::fma(static_cast<float>(bytes8[j]), scale, bias))));
      }
      std::vector<std::uint8_t> bytes4(q::rowwise_layout<4>::row_bytes(dim));
      for (auto& b : bytes4) b = static_cast<std::uint8_t>(rng.next());
      const std::size_t code_bytes = (dim + 1) / 2;
      std::uint16_t s16, b16;
      std::memcpy(&s16, bytes4.data() + code_bytes, 2);
      std::memcpy(&b16, bytes4.data() + code_bytes + 2, 2);
      q::dequantize_rows<4>(std::as_bytes(std::span(bytes4)), dim, std::span<T>(out));
      for (std::size_t j = 0; j < dim; ++j) {
        const unsigned code = (bytes4[j / 2] >> (4 * (j % 2))) & 15u;
        const float expected = fbgemm_value(code, static_cast<float>(half_value(s16)), static_cast<float>(half_value(b16)));
        // NaN/Inf parameters included: Inf bit for bit, NaN as NaN (payloads are the decoder's).
        if (std::isnan(expected)) {
          CHECK(std::isnan(out[j]));
        } else {
          CHECK(bits(out[j]) == bits(static_cast<T>(expected)));
        }
      }
    }
  }
}

TEST_CASE("The same bytes on every build (AVX2 and portable paths)", "[quantize][rowwise]") {
  // FNV-1a of the fused buffers of a fixed data set: a build without AVX2 or F16C must produce these too.
  auto fnv = [](std::span<const std::byte> b, std::uint64_t h) {
    for (const auto c : b) h = (h ^ static_cast<std::uint64_t>(c)) * 0x100000001b3ull;
    return h;
  };
  std::uint64_t h = 0xcbf29ce484222325ull;
  lcg rng{12345};
  for (const std::size_t dim : {1u, 7u, 32u, 33u, 64u, 100u}) {
    for (int kind = 0; kind < 8; ++kind) {
      std::vector<float> f(4 * dim);
      for (std::size_t r = 0; r < 4; ++r) fill_row(rng, kind, dim, f.data() + r * dim);
      const std::vector<double> d(f.begin(), f.end());
      std::vector<double> d2(d);
      for (auto& v : d2) v += 1e-12 * rng.unit();
      h = fnv(quantize<8, float>(std::span<const float>(f), dim), h);
      h = fnv(quantize<4, float>(std::span<const float>(f), dim), h);
      h = fnv(quantize<2, float>(std::span<const float>(f), dim), h);
      h = fnv(quantize<8, double>(std::span<const double>(d2), dim), h);
      h = fnv(quantize<4, double>(std::span<const double>(d2), dim), h);
      h = fnv(quantize<2, double>(std::span<const double>(d2), dim), h);
    }
  }
  CHECK(h == 0xba1d17bf84d5fb0cull);
}
