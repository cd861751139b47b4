// The low-precision conversions against independent references: decoding against the formats' definition
// (ldexp of the fields), encoding against a brute-force search of the decoded code table (every finite
// code, sorted, with ties to the even code), and the F16C instructions against the portable loops.
#include "zcoll/quantize/cast.hpp"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace q = zcoll::quantize;

template <class F>
using code_t = typename F::storage;

template <class F>
constexpr std::uint32_t code_count = 1u << F::storage_bits;

/// The value a code stands for, from the format's definition: (1 + m / 2^M) 2^(e - bias) for a normal
/// code, m 2^(1 - bias - M) for a subnormal one; NaN for the NaN codes and ±Inf for the IEEE ones.
template <class F>
double defined_value(std::uint32_t code) {
  const std::uint32_t magnitude = code & F::magnitude_mask;
  const int e = static_cast<int>(magnitude >> F::mantissa_bits);
  const auto m = static_cast<double>(magnitude & F::mantissa_mask);
  const int top = (1 << F::exponent_bits) - 1;
  double v;
  if (F::has_infinity && e == top) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!F::has_infinity && magnitude == F::magnitude_mask) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(m, 1 - F::exponent_bias - F::mantissa_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(m, -F::mantissa_bits), e - F::exponent_bias);
  }
  return (code >> (F::storage_bits - 1)) != 0 ? -v : v;
}

template <class F>
bool is_nan_code(std::uint32_t code) {
  return std::isnan(defined_value<F>(code));
}

/// The brute-force reference encoder: the non-negative finite values of F in ascending order with their
/// codes, and for IEEE formats one more candidate, 2^(max exponent + 1) with the code of +Inf, which is
/// where a value that rounds past max finite goes (IEEE overflow, ties included: max finite is odd).
template <class F>
class reference_encoder {
 public:
  reference_encoder() {
    for (std::uint32_t c = 0; c < code_count<F> / 2; ++c) {
      const double v = defined_value<F>(c);
      if (std::isfinite(v)) candidates_.push_back({v, static_cast<code_t<F>>(c)});
    }
    std::sort(candidates_.begin(), candidates_.end());
    if constexpr (F::has_infinity) {
      candidates_.push_back({std::ldexp(1.0, F::max_exponent + 1), static_cast<code_t<F>>(F::max_finite_code + 1)});
    }
  }

  /// The code of the nearest candidate to x, ties to the even code; beyond the last candidate, its code
  /// (Inf for IEEE formats, max finite for E4M3: saturation). Not for NaN or Inf.
  template <class T>
  code_t<F> encode(T x) const {
    const double a = std::abs(static_cast<double>(x));  // exact: float -> double widens
    const std::uint32_t sign = std::signbit(x) ? F::sign_code : 0u;
    if (a >= candidates_.back().first) return static_cast<code_t<F>>(sign | candidates_.back().second);
    const auto above = std::upper_bound(candidates_.begin(), candidates_.end(), std::pair{a, code_t<F>{0}},
                                        [](const auto& l, const auto& r) { return l.first < r.first; });
    const auto below = above - 1;
    const double mid = (below->first + above->first) / 2;  // exact: few significant bits, no underflow
    code_t<F> nearest;
    if (a < mid) {
      nearest = below->second;
    } else if (a > mid) {
      nearest = above->second;
    } else {
      nearest = (below->second & 1) == 0 ? below->second : above->second;
    }
    return static_cast<code_t<F>>(sign | nearest);
  }

  const std::vector<std::pair<double, code_t<F>>>& candidates() const { return candidates_; }

 private:
  std::vector<std::pair<double, code_t<F>>> candidates_;
};

template <class F>
const reference_encoder<F>& reference() {
  static const reference_encoder<F> r;
  return r;
}

/// The code encode must give for a NaN with bit pattern x: a quiet NaN of the same sign; IEEE formats keep
/// the top payload bits (as x86 conversions do), E4M3 has one NaN per sign.
template <class F, class T>
code_t<F> expected_nan_code(T x) {
  const std::uint32_t sign = std::signbit(x) ? F::sign_code : 0u;
  if constexpr (!F::has_infinity) {
    return static_cast<code_t<F>>(sign | F::quiet_nan_code);
  } else {
    constexpr int dropped = std::numeric_limits<T>::digits - 1 - F::mantissa_bits;
    const auto payload = static_cast<std::uint32_t>((zcoll_test::bits(x) >> dropped) & F::mantissa_mask);
    return static_cast<code_t<F>>(sign | F::quiet_nan_code | payload);
  }
}

/// What encode must give for any x: the reference for finite x, the overflow rule for ±Inf, the NaN rule.
template <class F, class T>
code_t<F> expected_code(T x) {
  if (std::isnan(x)) return expected_nan_code<F>(x);
  if (std::isinf(x)) {
    const std::uint32_t sign = std::signbit(x) ? F::sign_code : 0u;
    return static_cast<code_t<F>>(sign | (F::has_infinity ? F::max_finite_code + 1 : F::quiet_nan_code));
  }
  return reference<F>().encode(x);
}

template <class F, class T>
void require_encodes_like_reference(T x) {
  const code_t<F> got = q::encode<F>(x);
  const code_t<F> want = expected_code<F>(x);
  if (got != want) {
    INFO(F::name << " from " << zcoll_test::type_name<T>() << ": x = " << x << " (bits " << std::hex
                 << zcoll_test::bits(x) << "): got code " << +got << ", reference " << +want);
    FAIL("encode differs from the brute-force reference");
  }
}

/// Random values of T in and around F's range: random sign and fraction, exponent uniform from below the
/// smallest subnormal to above max finite, so every rounding regime is drawn often.
template <class F, class T>
T random_in_range(std::mt19937_64& rng) {
  const int lowest = F::min_exponent - F::mantissa_bits - 3;
  const int highest = F::max_exponent + 2;
  const int e = lowest + static_cast<int>(rng() % static_cast<std::uint64_t>(highest - lowest + 1));
  const double fraction = 1.0 + std::ldexp(static_cast<double>(rng() >> 11), -53);
  const T v = static_cast<T>(std::ldexp(fraction, e));
  return rng() % 2 ? -v : v;
}

template <class T>
T random_bits(std::mt19937_64& rng) {
  return std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(rng()));
}

template <class T>
T next_up(T x) {
  return std::nextafter(x, std::numeric_limits<T>::infinity());
}
template <class T>
T next_down(T x) {
  return std::nextafter(x, -std::numeric_limits<T>::infinity());
}

}  // namespace

// --- the format descriptions ---------------------------------------------------------------------------

TEST_CASE("Cast formats: names, storage and the constants of their definitions", "[quantize][cast]") {
  STATIC_REQUIRE(std::is_same_v<q::fp16::storage, std::uint16_t>);
  STATIC_REQUIRE(std::is_same_v<q::bf16::storage, std::uint16_t>);
  STATIC_REQUIRE(std::is_same_v<q::fp8_e4m3::storage, std::uint8_t>);
  STATIC_REQUIRE(std::is_same_v<q::fp8_e5m2::storage, std::uint8_t>);
  CHECK(std::string(q::fp16::name) == "fp16");
  CHECK(std::string(q::bf16::name) == "bf16");
  CHECK(std::string(q::fp8_e4m3::name) == "fp8-e4m3");
  CHECK(std::string(q::fp8_e5m2::name) == "fp8-e5m2");
  CHECK(q::fp16::relative_precision == std::ldexp(1.0, -11));
  CHECK(q::bf16::relative_precision == std::ldexp(1.0, -8));
  CHECK(q::fp8_e4m3::relative_precision == std::ldexp(1.0, -4));
  CHECK(q::fp8_e5m2::relative_precision == std::ldexp(1.0, -3));
  CHECK(q::bf16::max_finite == static_cast<double>(std::bit_cast<float>(0x7F7F0000u)));
  CHECK(q::fp8_e4m3::overflow == zcoll::small_float::overflow_rule::saturate);
  CHECK(q::fp16::overflow == zcoll::small_float::overflow_rule::infinity);
  // Known codes, evaluated at compile time.
  STATIC_REQUIRE(q::encode<q::fp16>(1.0f) == 0x3C00);
  STATIC_REQUIRE(q::encode<q::fp16>(0.1) == 0x2E66);
  STATIC_REQUIRE(q::encode<q::bf16>(-2.0) == 0xC000);
  STATIC_REQUIRE(q::encode<q::fp8_e4m3>(448.0f) == 0x7E);
  STATIC_REQUIRE(q::encode<q::fp8_e5m2>(57344.0) == 0x7B);
  STATIC_REQUIRE(q::decode<q::fp16>(0x0001) == 0x1p-24f);
  STATIC_REQUIRE(q::decode<q::bf16>(0x3F80) == 1.0f);
  STATIC_REQUIRE(q::decode<q::fp8_e4m3>(0x01) == 0x1p-9f);
  STATIC_REQUIRE(q::decode<q::fp8_e5m2>(0x83) == -0x3p-16f);
}

TEMPLATE_TEST_CASE("Cast decode: every code is the value its fields define", "[quantize][cast]", q::fp16, q::bf16,
                   q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  std::vector<code_t<F>> codes(code_count<F>);
  for (std::uint32_t c = 0; c < code_count<F>; ++c) codes[c] = static_cast<code_t<F>>(c);
  std::vector<float> bulk(codes.size());
  std::vector<double> bulk_double(codes.size());
  q::decode<F>(std::span<const code_t<F>>(codes), std::span<float>(bulk));
  q::decode<F>(std::span<const code_t<F>>(codes), std::span<double>(bulk_double));
  std::size_t nan_codes = 0;
  for (std::uint32_t c = 0; c < code_count<F>; ++c) {
    const double want = defined_value<F>(c);
    const float got = q::decode<F>(codes[c]);
    INFO(F::name << " code " << std::hex << c);
    if (std::isnan(want)) {
      ++nan_codes;
      REQUIRE(std::isnan(got));
      REQUIRE(std::signbit(got) == std::signbit(want));
      REQUIRE((zcoll_test::bits(got) & 0x00400000u) != 0);  // quiet
    } else {
      REQUIRE(static_cast<double>(got) == want);
      REQUIRE(std::signbit(got) == std::signbit(want));  // -0 stays -0
    }
    // The bulk forms give the scalar form's bits (doubles: its value widened, NaN sign kept).
    REQUIRE(zcoll_test::same_bits(bulk[c], got));
    REQUIRE(zcoll_test::same_bits(bulk_double[c], static_cast<double>(got)));
  }
  // IEEE formats: 2 x (2^M - 1) NaN codes; E4M3: S.1111.111 only.
  CHECK(nan_codes == (F::has_infinity ? 2 * ((1u << F::mantissa_bits) - 1) : 2u));
}

TEMPLATE_TEST_CASE("Cast round trip: every code decodes and re-encodes to itself, from float and from double",
                   "[quantize][cast]", q::fp16, q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  for (std::uint32_t c = 0; c < code_count<F>; ++c) {
    const auto code = static_cast<code_t<F>>(c);
    const float x = q::decode<F>(code);
    const code_t<F> from_float = q::encode<F>(x);
    const code_t<F> from_double = q::encode<F>(static_cast<double>(x));
    INFO(F::name << " code " << std::hex << c << " decodes to bits " << zcoll_test::bits(x));
    if (is_nan_code<F>(c)) {
      // NaN: a NaN of the same sign comes back. Payloads are kept, with the quiet bit set (a signaling NaN
      // comes back quiet); E4M3 has only the one NaN per sign.
      const auto expected = static_cast<code_t<F>>(code | (F::quiet_nan_code & F::magnitude_mask));
      REQUIRE(+from_float == +expected);
      REQUIRE(+from_double == +expected);
    } else {
      REQUIRE(+from_float == +code);
      REQUIRE(+from_double == +code);
    }
  }
}

// --- rounding against the brute-force reference ---------------------------------------------------------

TEMPLATE_TEST_CASE("Cast encode: random floats and doubles round like the brute-force reference", "[quantize][cast]",
                   q::fp16, q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  std::mt19937_64 rng(zcoll_test::seed + 101);
  constexpr int samples = 200000;
  for (int i = 0; i < samples; ++i) {
    require_encodes_like_reference<F>(random_in_range<F, float>(rng));
    require_encodes_like_reference<F>(random_in_range<F, double>(rng));
    require_encodes_like_reference<F>(random_bits<float>(rng));
    require_encodes_like_reference<F>(random_bits<double>(rng));
  }
  // The bulk forms agree with the scalar form, at every length up to 100 (vector body and tail).
  for (std::size_t n = 0; n <= 100; ++n) {
    std::vector<float> xf(n);
    std::vector<double> xd(n);
    for (std::size_t i = 0; i < n; ++i) {
      xf[i] = i % 3 == 0 ? random_bits<float>(rng) : random_in_range<F, float>(rng);
      xd[i] = i % 3 == 0 ? random_bits<double>(rng) : random_in_range<F, double>(rng);
    }
    std::vector<code_t<F>> cf(n), cd(n);
    q::encode<F>(std::span<const float>(xf), std::span<code_t<F>>(cf));
    q::encode<F>(std::span<const double>(xd), std::span<code_t<F>>(cd));
    for (std::size_t i = 0; i < n; ++i) {
      INFO("length " << n << ", element " << i);
      REQUIRE(+cf[i] == +q::encode<F>(xf[i]));
      REQUIRE(+cd[i] == +q::encode<F>(xd[i]));
    }
  }
}

TEMPLATE_TEST_CASE(
    "Cast encode: every tie between neighbouring codes goes to the even code, and one ulp off "
    "goes to the nearer one",
    "[quantize][cast]", q::fp16, q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  const auto& candidates = reference<F>().candidates();
  std::size_t ties = 0;
  std::vector<float> floats;
  std::vector<double> doubles;
  for (std::size_t i = 0; i + 1 < candidates.size(); ++i) {
    const auto [low, low_code] = candidates[i];
    const auto [high, high_code] = candidates[i + 1];
    const double mid = (low + high) / 2;
    const code_t<F> even = (low_code & 1) == 0 ? low_code : high_code;
    INFO(F::name << ": tie between codes " << std::hex << +low_code << " and " << +high_code);
    for (const double sign : {1.0, -1.0}) {
      const std::uint32_t sign_code = sign < 0 ? F::sign_code : 0u;
      // The midpoint is exact in float too (at most M + 2 significant bits).
      const auto midf = static_cast<float>(sign * mid);
      REQUIRE(static_cast<double>(midf) == sign * mid);
      REQUIRE(+q::encode<F>(midf) == +(sign_code | even));
      REQUIRE(+q::encode<F>(sign * mid) == +(sign_code | even));
      const float inward_f = sign > 0 ? next_down(midf) : next_up(midf);
      const float outward_f = sign > 0 ? next_up(midf) : next_down(midf);
      REQUIRE(+q::encode<F>(inward_f) == +(sign_code | low_code));
      REQUIRE(+q::encode<F>(outward_f) == +(sign_code | high_code));
      // From double, one double ulp off the tie. Those values are ties again once rounded to float, so a
      // conversion through float would round them to the even code: this checks there is no double
      // rounding.
      const double inward = sign > 0 ? next_down(sign * mid) : next_up(sign * mid);
      const double outward = sign > 0 ? next_up(sign * mid) : next_down(sign * mid);
      REQUIRE(static_cast<float>(inward) == midf);
      REQUIRE(static_cast<float>(outward) == midf);
      REQUIRE(+q::encode<F>(inward) == +(sign_code | low_code));
      REQUIRE(+q::encode<F>(outward) == +(sign_code | high_code));
      floats.insert(floats.end(), {midf, inward_f, outward_f});
      doubles.insert(doubles.end(), {sign * mid, inward, outward});
    }
    ++ties;
  }
  // The bulk forms (F16C where compiled in) on the same values.
  std::vector<code_t<F>> bulk_floats(floats.size()), bulk_doubles(doubles.size());
  q::encode<F>(std::span<const float>(floats), std::span<code_t<F>>(bulk_floats));
  q::encode<F>(std::span<const double>(doubles), std::span<code_t<F>>(bulk_doubles));
  for (std::size_t i = 0; i < floats.size(); ++i) {
    INFO(F::name << ": float " << floats[i] << ", double " << doubles[i]);
    REQUIRE(+bulk_floats[i] == +q::encode<F>(floats[i]));
    REQUIRE(+bulk_doubles[i] == +q::encode<F>(doubles[i]));
  }
  CHECK(ties == candidates.size() - 1);
}

// --- special values and boundaries -----------------------------------------------------------------------

TEMPLATE_TEST_CASE("Cast encode: overflow boundaries", "[quantize][cast]", q::fp16, q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  const double max = F::max_finite;
  const double half_ulp = std::ldexp(1.0, F::max_exponent - F::mantissa_bits - 1);
  const code_t<F> max_code = F::max_finite_code;
  const auto neg = [](code_t<F> c) { return static_cast<code_t<F>>(c | F::sign_code); };
  const auto overflow = static_cast<code_t<F>>(F::has_infinity ? F::max_finite_code + 1 : F::max_finite_code);
  for (const double sign : {1.0, -1.0}) {
    const auto with_sign = [&](code_t<F> c) { return sign < 0 ? neg(c) : c; };
    INFO(F::name << " sign " << sign);
    CHECK(+q::encode<F>(sign * max) == +with_sign(max_code));
    CHECK(+q::encode<F>(static_cast<float>(sign * max)) == +with_sign(max_code));
    // Just below the halfway point above max finite: still max finite.
    CHECK(+q::encode<F>(sign * next_down(max + half_ulp)) == +with_sign(max_code));
    CHECK(+q::encode<F>(static_cast<float>(sign) * next_down(static_cast<float>(max + half_ulp))) ==
          +with_sign(max_code));
    // The halfway point: IEEE rounds to Inf (max finite is odd), E4M3 saturates.
    CHECK(+q::encode<F>(sign * (max + half_ulp)) == +with_sign(overflow));
    CHECK(+q::encode<F>(static_cast<float>(sign * (max + half_ulp))) == +with_sign(overflow));
    CHECK(+q::encode<F>(sign * next_up(max + half_ulp)) == +with_sign(overflow));
    // Far beyond, and the largest finite float and double.
    CHECK(+q::encode<F>(sign * 1e300) == +with_sign(overflow));
    CHECK(+q::encode<F>(sign * std::numeric_limits<double>::max()) == +with_sign(overflow));
    CHECK(+q::encode<F>(static_cast<float>(sign) * std::numeric_limits<float>::max()) == +with_sign(overflow));
    // ±Inf: ±Inf for IEEE formats, NaN of the same sign for E4M3 (it has no infinities).
    const auto inf_code = static_cast<code_t<F>>(F::has_infinity ? F::max_finite_code + 1 : F::quiet_nan_code);
    CHECK(+q::encode<F>(sign * std::numeric_limits<double>::infinity()) == +with_sign(inf_code));
    CHECK(+q::encode<F>(static_cast<float>(sign) * std::numeric_limits<float>::infinity()) == +with_sign(inf_code));
  }
  if constexpr (!F::has_infinity) {
    CHECK(q::encode<q::fp8_e4m3>(449.0f) == 0x7E);
    CHECK(q::encode<q::fp8_e4m3>(464.0) == 0x7E);  // the tie with the would-be 480 goes to 448 (even)
    CHECK(q::encode<q::fp8_e4m3>(465.0) == 0x7E);  // saturated
    CHECK(q::encode<q::fp8_e4m3>(-1e6f) == 0xFE);
    CHECK(std::isnan(q::decode<q::fp8_e4m3>(q::encode<q::fp8_e4m3>(std::numeric_limits<float>::infinity()))));
  } else {
    CHECK(std::isinf(q::decode<F>(q::encode<F>(1e300))));
  }
}

TEMPLATE_TEST_CASE("Cast encode: signed zeros, subnormal targets and denormal sources", "[quantize][cast]", q::fp16,
                   q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  const double tiny = F::min_subnormal;
  const code_t<F> minus_zero = F::sign_code;
  CHECK(+q::encode<F>(0.0) == 0);
  CHECK(+q::encode<F>(0.0f) == 0);
  CHECK(+q::encode<F>(-0.0) == +minus_zero);
  CHECK(+q::encode<F>(-0.0f) == +minus_zero);
  CHECK(std::signbit(q::decode<F>(minus_zero)));
  // Around half the smallest subnormal: the tie goes to zero (even), anything above to the subnormal.
  CHECK(+q::encode<F>(tiny) == 1);
  CHECK(+q::encode<F>(tiny / 2) == 0);
  CHECK(+q::encode<F>(-tiny / 2) == +minus_zero);
  CHECK(+q::encode<F>(next_up(tiny / 2)) == 1);
  CHECK(+q::encode<F>(next_down(tiny / 2)) == 0);
  CHECK(+q::encode<F>(static_cast<float>(tiny / 2)) == 0);
  CHECK(+q::encode<F>(next_up(static_cast<float>(tiny / 2))) == 1);
  CHECK(+q::encode<F>(-next_up(static_cast<float>(tiny / 2))) == +(F::sign_code | 1u));
  // 1.5 x the smallest subnormal is a tie between codes 1 and 2: even is 2.
  CHECK(+q::encode<F>(1.5 * tiny) == 2);
  // The largest subnormal and the smallest normal.
  CHECK(static_cast<double>(q::decode<F>(F::mantissa_mask)) == F::min_normal - tiny);
  CHECK(+q::encode<F>(F::min_normal - tiny) == +F::mantissa_mask);
  CHECK(+q::encode<F>(F::min_normal) == +(F::mantissa_mask + 1));
  CHECK(+q::encode<F>(F::min_normal - tiny / 2) == +(F::mantissa_mask + 1));  // tie: the normal code is even

  // Denormal sources.
  const float float_denormals[] = {std::numeric_limits<float>::denorm_min(), 1e-40f, 5.877e-39f,
                                   std::bit_cast<float>(0x007FFFFFu)};
  for (const float d : float_denormals) {
    INFO(F::name << " from float denormal " << d);
    require_encodes_like_reference<F>(d);
    require_encodes_like_reference<F>(-d);
    if constexpr (!std::is_same_v<F, q::bf16>) {
      CHECK(+q::encode<F>(d) == 0);  // far below half the smallest subnormal
      CHECK(+q::encode<F>(-d) == +minus_zero);
    }
  }
  CHECK(+q::encode<F>(std::numeric_limits<double>::denorm_min()) == 0);
  CHECK(+q::encode<F>(-std::numeric_limits<double>::denorm_min()) == +minus_zero);
  if constexpr (std::is_same_v<F, q::bf16>) {
    // bf16 has float's exponent range: float denormals become bf16 subnormals, rounded.
    CHECK(q::encode<q::bf16>(std::bit_cast<float>(0x00010000u)) == 0x0001);
    CHECK(q::encode<q::bf16>(std::bit_cast<float>(0x00018000u)) == 0x0002);  // tie to even
    CHECK(q::encode<q::bf16>(std::bit_cast<float>(0x00008000u)) == 0x0000);  // tie to even (zero)
    CHECK(q::encode<q::bf16>(std::bit_cast<float>(0x00008001u)) == 0x0001);
    CHECK(q::encode<q::bf16>(std::bit_cast<float>(0x007FFFFFu)) == 0x0080);  // rounds up to min normal
    // Every float denormal with a representative spread of low bits.
    for (std::uint32_t b = 1; b < 0x00800000u; b += 0x101) require_encodes_like_reference<F>(std::bit_cast<float>(b));
  }
}

TEMPLATE_TEST_CASE("Cast encode: NaN becomes a quiet NaN of the same sign", "[quantize][cast]", q::fp16, q::bf16,
                   q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  const float float_nans[] = {std::numeric_limits<float>::quiet_NaN(),     -std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::signaling_NaN(), std::bit_cast<float>(0x7F800001u),
                              std::bit_cast<float>(0xFF812345u),           std::bit_cast<float>(0x7FFFFFFFu)};
  for (const float x : float_nans) {
    const code_t<F> c = q::encode<F>(x);
    INFO(F::name << " NaN bits " << std::hex << zcoll_test::bits(x) << " -> " << +c);
    CHECK(+c == +expected_nan_code<F>(x));
    CHECK(std::isnan(q::decode<F>(c)));
    CHECK(std::signbit(q::decode<F>(c)) == std::signbit(x));
    CHECK(is_nan_code<F>(c));
  }
  const double double_nans[] = {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::signaling_NaN(),
                                std::bit_cast<double>(0xFFF0000000000001ull)};
  for (const double x : double_nans) {
    const code_t<F> c = q::encode<F>(x);
    INFO(F::name << " NaN bits " << std::hex << zcoll_test::bits(x) << " -> " << +c);
    CHECK(+c == +expected_nan_code<F>(x));
    CHECK(std::isnan(q::decode<F>(c)));
    CHECK(std::signbit(q::decode<F>(c)) == std::signbit(x));
  }
}

TEST_CASE("Cast bulk forms refuse spans of different sizes", "[quantize][cast]") {
  std::vector<float> x(5);
  std::vector<std::uint16_t> codes(4);
  std::vector<float> back(6);
  std::vector<std::byte> bytes(9);
  CHECK_THROWS_AS(q::encode<q::fp16>(std::span<const float>(x), std::span<std::uint16_t>(codes)),
                  zcoll::argument_error);
  CHECK_THROWS_AS(q::decode<q::bf16>(std::span<const std::uint16_t>(codes), std::span<float>(back)),
                  zcoll::argument_error);
  CHECK_THROWS_WITH(q::encode_bytes<q::fp16>(std::span<const float>(x), std::span<std::byte>(bytes)),
                    Catch::Contains("5 values need 10 bytes"));
  CHECK_THROWS_AS(q::decode_bytes<q::fp8_e4m3>(std::span<const std::byte>(bytes), std::span<float>(back)),
                  zcoll::argument_error);
}

TEMPLATE_TEST_CASE("Cast byte forms: little-endian codes at any alignment, the typed forms' bits", "[quantize][cast]",
                   q::fp16, q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  constexpr std::size_t width = sizeof(code_t<F>);
  std::mt19937_64 rng(zcoll_test::seed + 103);
  for (std::size_t n = 0; n <= 100; ++n) {
    std::vector<float> xf(n);
    std::vector<double> xd(n);
    for (std::size_t i = 0; i < n; ++i) {
      xf[i] = i % 4 == 0 ? random_bits<float>(rng) : random_in_range<F, float>(rng);
      xd[i] = i % 4 == 0 ? random_bits<double>(rng) : random_in_range<F, double>(rng);
    }
    for (std::size_t offset = 0; offset < 4; ++offset) {
      INFO(F::name << ", " << n << " values at byte offset " << offset);
      std::vector<std::byte> buffer(offset + n * width + 3, std::byte{0xA5});
      const std::span<std::byte> body(buffer.data() + offset, n * width);
      q::encode_bytes<F>(std::span<const float>(xf), body);
      for (std::size_t i = 0; i < n; ++i) {
        const code_t<F> code = q::encode<F>(xf[i]);
        for (std::size_t b = 0; b < width; ++b) {  // little-endian, whatever the host
          REQUIRE(std::to_integer<unsigned>(body[i * width + b]) == ((static_cast<unsigned>(code) >> (8 * b)) & 0xFFu));
        }
      }
      for (std::size_t b = 0; b < offset; ++b) REQUIRE(buffer[b] == std::byte{0xA5});
      for (std::size_t b = offset + n * width; b < buffer.size(); ++b) REQUIRE(buffer[b] == std::byte{0xA5});
      std::vector<float> back(n);
      std::vector<double> back_double(n);
      q::decode_bytes<F>(std::span<const std::byte>(body), std::span<float>(back));
      q::decode_bytes<F>(std::span<const std::byte>(body), std::span<double>(back_double));
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(zcoll_test::same_bits(back[i], q::decode<F>(q::encode<F>(xf[i]))));
        REQUIRE(zcoll_test::same_bits(back_double[i], static_cast<double>(back[i])));
      }
      q::encode_bytes<F>(std::span<const double>(xd), body);
      for (std::size_t i = 0; i < n; ++i) {
        code_t<F> code;
        std::memcpy(&code, body.data() + i * width, width);
        REQUIRE(+code == +q::encode<F>(xd[i]));
      }
    }
  }
}

// --- the F16C path ---------------------------------------------------------------------------------------

#if ZCOLL_HAS_F16C
namespace {

/// The F16C form of float -> F (fp16, E4M3, E5M2).
template <class F>
void encode_f16c(const float* in, code_t<F>* out, std::size_t count) {
  if constexpr (std::is_same_v<F, q::fp16>) {
    q::cast_detail::encode_fp16_f16c(in, reinterpret_cast<std::byte*>(out), count);
  } else {
    q::cast_detail::encode_fp8_f16c<F>(in, reinterpret_cast<std::byte*>(out), count);
  }
}

/// Compares the F16C and portable float -> F loops on `values`.
template <class F>
void require_f16c_matches_portable(const std::vector<float>& values) {
  std::vector<code_t<F>> hardware(values.size()), portable(values.size());
  encode_f16c<F>(values.data(), hardware.data(), values.size());
  q::cast_detail::encode_portable<F, float>(values.data(), reinterpret_cast<std::byte*>(portable.data()),
                                            values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (hardware[i] != portable[i]) {
      INFO(F::name << ": float bits " << std::hex << zcoll_test::bits(values[i]) << ": F16C " << +hardware[i]
                   << ", portable " << +portable[i]);
      FAIL("F16C and portable encodes differ");
    }
  }
  REQUIRE(hardware == portable);
}

/// Biased float exponents where F's rounding changes regime: zero threshold, subnormal range, smallest
/// normal, 1, the top binade and overflow.
template <class F>
std::vector<std::uint32_t> interesting_float_exponents() {
  const int zero_threshold = 127 + F::min_exponent - F::mantissa_bits - 1;  // half the smallest subnormal
  return {static_cast<std::uint32_t>(zero_threshold - 1),
          static_cast<std::uint32_t>(zero_threshold),
          static_cast<std::uint32_t>(127 + F::min_exponent - 1),
          static_cast<std::uint32_t>(127 + F::min_exponent),
          127u,
          static_cast<std::uint32_t>(127 + F::max_exponent),
          static_cast<std::uint32_t>(127 + F::max_exponent + 1)};
}

}  // namespace

TEST_CASE("Cast fp16: F16C and portable decodes give identical bits for every code", "[quantize][cast][f16c]") {
  std::vector<std::uint16_t> codes(65536);
  for (std::uint32_t c = 0; c < 65536; ++c) codes[c] = static_cast<std::uint16_t>(c);
  std::vector<float> hardware(codes.size()), portable(codes.size());
  const auto* bytes = reinterpret_cast<const std::byte*>(codes.data());
  q::cast_detail::decode_fp16_f16c(bytes, hardware.data(), codes.size());
  q::cast_detail::decode_portable<q::fp16, float>(bytes, portable.data(), codes.size());
  for (std::size_t c = 0; c < codes.size(); ++c) {
    INFO("code " << std::hex << c);
    REQUIRE(zcoll_test::same_bits(hardware[c], portable[c]));
  }
}

TEMPLATE_TEST_CASE("Cast encode: the F16C paths and the portable loops give identical bits", "[quantize][cast][f16c]",
                   q::fp16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  // All 2^23 fractions of every binade where the rounding regime changes, both signs, then a stride
  // through all 2^32 patterns (NaNs, infinities and denormals included). The hidden [.exhaustive] test
  // below covers every float.
  std::vector<float> values;
  values.reserve(1u << 23);
  for (const std::uint32_t exponent : interesting_float_exponents<F>()) {
    for (const std::uint32_t sign : {0u, 1u}) {
      values.clear();
      for (std::uint32_t f = 0; f < (1u << 23); ++f) {
        values.push_back(std::bit_cast<float>((sign << 31) | (exponent << 23) | f));
      }
      require_f16c_matches_portable<F>(values);
    }
  }
  values.clear();
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 1021) {
    values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  }
  require_f16c_matches_portable<F>(values);
}

TEMPLATE_TEST_CASE("Cast encode: F16C and portable agree on every float (exhaustive, slow)",
                   "[.exhaustive][quantize][cast]", q::fp16, q::fp8_e4m3, q::fp8_e5m2) {
  std::vector<float> values(1u << 24);
  for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += values.size()) {
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = std::bit_cast<float>(static_cast<std::uint32_t>(base + i));
    require_f16c_matches_portable<TestType>(values);
  }
}
#endif

// --- the error bound -------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("Cast rounding_error_bound holds for every value up to the magnitude it is given",
                   "[quantize][cast]", q::fp16, q::bf16, q::fp8_e4m3, q::fp8_e5m2) {
  using F = TestType;
  std::mt19937_64 rng(zcoll_test::seed + 102);
  // Worst cases first: the ties (largest error in each binade) and values just below each candidate.
  const auto& candidates = reference<F>().candidates();
  for (int i = 0; i < 20000; ++i) {
    const double m = std::abs(random_in_range<F, double>(rng));
    const double bound = q::rounding_error_bound<F>(m);
    REQUIRE(bound >= 0.0);
    // Values x <= m: m itself, a random fraction of it, and the tie just below m.
    const auto above = std::upper_bound(candidates.begin(), candidates.end(), std::pair{m, code_t<F>{0}},
                                        [](const auto& l, const auto& r) { return l.first < r.first; });
    std::vector<double> xs = {m, m * std::ldexp(static_cast<double>(rng() >> 11), -53)};
    if (above != candidates.begin() && above != candidates.end()) {
      const double mid = ((above - 1)->first + above->first) / 2;
      if (mid <= m) xs.push_back(mid);
    }
    if (std::isinf(bound)) continue;  // some x <= m overflows: there is no finite bound to check
    for (const double x : xs) {
      const float y = q::decode<F>(q::encode<F>(x));
      INFO(F::name << ": m = " << m << ", x = " << x << ", decoded " << y << ", bound " << bound);
      REQUIRE(zcoll::exactly_within(x, static_cast<double>(y), bound));
      const auto mf = static_cast<float>(m), xf = static_cast<float>(x);
      if (std::isfinite(mf) && !std::isinf(q::rounding_error_bound<F>(mf))) {
        REQUIRE(zcoll::exactly_within(xf, q::decode<F>(q::encode<F>(xf)), q::rounding_error_bound<F>(mf)));
      }
    }
  }
  CHECK(q::rounding_error_bound<F>(0.0) == 0.0);
  CHECK(q::rounding_error_bound<F>(-0.0f) == 0.0);
  CHECK(q::rounding_error_bound<F>(1.5) == F::relative_precision);  // binade [1, 2)
  CHECK(q::rounding_error_bound<F>(-1.5f) == F::relative_precision);
  CHECK(q::rounding_error_bound<F>(F::min_subnormal) == F::min_subnormal / 2);      // half the subnormal spacing
  CHECK(q::rounding_error_bound<F>(F::min_subnormal / 8) == F::min_subnormal / 8);  // never more than m
  CHECK_THROWS_AS(q::rounding_error_bound<F>(std::numeric_limits<double>::quiet_NaN()), zcoll::argument_error);
  if constexpr (F::has_infinity) {
    const double half_ulp = std::ldexp(1.0, F::max_exponent - F::mantissa_bits - 1);
    CHECK(q::rounding_error_bound<F>(F::max_finite) == half_ulp);
    CHECK(q::rounding_error_bound<F>(next_down(F::max_finite + half_ulp)) == half_ulp);
    CHECK(std::isinf(q::rounding_error_bound<F>(F::max_finite + half_ulp)));
    CHECK(std::isinf(q::rounding_error_bound<F>(std::numeric_limits<double>::max())));
  } else {
    CHECK(q::rounding_error_bound<F>(448.0) == 16.0);
    CHECK(q::rounding_error_bound<F>(464.0) == 16.0);
    CHECK(q::rounding_error_bound<F>(1000.0) == 552.0);
    // The saturation error of huge values, rounded up: 1e300 - 448 is not a double.
    const double huge_bound = q::rounding_error_bound<F>(1e300);
    CHECK(huge_bound >= 1e300 - 448.0);
    CHECK(zcoll::exactly_within(1e300, 448.0, huge_bound));
    CHECK(zcoll::exactly_within(std::numeric_limits<double>::max(), 448.0,
                                q::rounding_error_bound<F>(std::numeric_limits<double>::max())));
    CHECK(zcoll::exactly_within(std::numeric_limits<float>::max(), 448.0f,
                                q::rounding_error_bound<F>(std::numeric_limits<float>::max())));
  }
}
