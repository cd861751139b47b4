// Built into its own executable with -ffp-contract=fast -march=native -O3 (tests/CMakeLists.txt): the
// compiler may then fuse any a * b + c into one FMA. The bound must still hold exactly on every element,
// which it does only if the encoder checks the very reconstruction the decoder computes.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

const std::vector<double>& absolute_bounds() {
  static const std::vector<double> bounds{0.5,         0.1,         1e-2,        1e-3,          1e-4,   1e-5, 1e-6,
                                          1e-7,        1.0 / 3.0,   2.0 / 3.0,   0.7,           0.3,    12.5, 1e3,
                                          0x1p-10,     3 * 0x1p-12, std::numbers::pi * 1e-5, std::sqrt(2.0) * 1e-3, 4.9e-4, 5.1e-4,
                                          0.123456789, 1e-9,        1e-15};
  return bounds;
}

/// Values on and next to the bin edges k * 2eb ± eb, computed both in double and with T's own step.
template <class T>
std::vector<T> edge_values(double eb, std::mt19937_64& rng, std::size_t n) {
  const double max_k = std::min(1e6, 0.9 * zcoll::quantize::Linear::block_quantizer<T>::max_code);
  const T step_t = static_cast<T>(2 * eb);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double k = std::floor(std::uniform_real_distribution<double>(-max_k, max_k)(rng));
    T x;
    switch (i % 4) {
      case 0: x = static_cast<T>(k * 2 * eb + eb); break;
      case 1: x = static_cast<T>(k * 2 * eb - eb); break;
      case 2: x = static_cast<T>(k) * step_t + static_cast<T>(eb); break;
      default: x = static_cast<T>((k + 0.5) * static_cast<double>(step_t)); break;
    }
    const int nudge = static_cast<int>(rng() % 5) - 2;  // up to two ulps either way
    for (int s = 0; s < std::abs(nudge); ++s) x = std::nextafter(x, nudge > 0 ? T(1e30) : T(-1e30));
    v[i] = x;
  }
  return v;
}

template <class T>
std::vector<T> real_like(std::size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0.0, 0.05);
  std::vector<T> v(n);
  double walk = 0;
  for (std::size_t i = 0; i < n; ++i) {
    walk += noise(rng);
    v[i] = static_cast<T>(280.0 + 15.0 * std::sin(0.002 * static_cast<double>(i)) + walk);
  }
  return v;
}

template <class T>
void check(const zcoll::codec_config& config, const std::vector<T>& data, const char* what) {
  const zcoll::FZLight codec(config);
  INFO(type_name<T>() << ", " << what << ", " << zcoll::to_string(config.error_bound));
  const auto r = round_trip(codec, std::span<const T>(data), zcoll::exec::Host{1}, zcoll::exec::Host{2});
  const double eb = r.header.error_bound;
  if (config.error_bound.mode == zcoll::bound_mode::absolute) {
    REQUIRE(eb <= config.error_bound.value);
  } else {
    REQUIRE_FALSE(std::signbit(std::fma(config.error_bound.value, reference_range(std::span<const T>(data)), -eb)));
  }
  if (eb == 0.0) {
    require_bit_identical(std::span<const T>(data), std::span<const T>(r.restored));
  } else {
    require_bound_on_every_element(std::span<const T>(data), std::span<const T>(r.restored), eb);
  }
}

}  // namespace

[[gnu::noinline]] double multiply_add(double a, double b, double c) { return a * b + c; }

TEST_CASE("Contraction: this executable really fuses a * b + c", "[codec][contraction]") {
#if defined(__FMA__)
  // (1 + 2^-27)(1 - 2^-27) - 1 = -2^-54 exactly; unfused, the product rounds to 1 and the sum to 0.
  volatile double a = 1.0 + 0x1p-27, b = 1.0 - 0x1p-27, c = -1.0;
  CHECK(multiply_add(a, b, c) == -0x1p-54);
#else
  WARN("this CPU has no FMA: -ffp-contract=fast cannot fuse anything here");
#endif
}

TEMPLATE_TEST_CASE("Contraction: bound holds exactly at many absolute bounds", "[codec][contraction]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(seed);
  for (double eb : absolute_bounds()) {
    const zcoll::codec_config config{.error_bound = zcoll::absolute(eb), .chunk_values = 1024};
    check(config, edge_values<T>(eb, rng, 8192), "bin edges");
    std::vector<T> uniform(4096);
    std::uniform_real_distribution<double> u(-2000 * eb, 2000 * eb);
    for (auto& x : uniform) x = static_cast<T>(u(rng));
    check(config, uniform, "uniform");
    check(config, real_like<T>(4096, rng), "real-like");
  }
}

TEMPLATE_TEST_CASE("Contraction: bound holds exactly at many relative bounds", "[codec][contraction]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(seed + 1);
  const auto smooth = real_like<T>(20000, rng);
  const auto mixed = mixed_input<T>(20000, T(-1e10), /*extremes=*/false);
  for (double fraction : {1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 1e-4, 1e-5, 1e-6, 1.0 / 3.0 * 1e-3}) {
    check({.error_bound = zcoll::relative(fraction), .chunk_values = 4096}, smooth, "real-like");
    check({.error_bound = zcoll::relative(fraction), .chunk_values = 256}, mixed, "mixed");
  }
}

TEST_CASE("Contraction: small real fields keep the bound", "[codec][contraction][data]") {
  const auto dir = data_dir();
  if (!dir) return;
  for (const char* name : {"sz3_testfloat_8_8_128.f32", "echam5_t_17x96x192.f32"}) {
    const auto path = *dir / name;
    if (!std::filesystem::exists(path)) {
      WARN(path.string() << " is absent: skipped");
      continue;
    }
    const auto data = read_raw<float>(path);
    for (double fraction : {1e-2, 1e-3, 1e-4, 1e-5}) {
      check({.error_bound = zcoll::relative(fraction)}, data, name);
    }
  }
}
