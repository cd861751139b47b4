#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/add.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

using Lorenzo2 = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo<2>, zcoll::encode::BitShuffle>;
using Lorenzo3 = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo<3>, zcoll::encode::BitShuffle>;
using NoneRaw = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::None, zcoll::encode::Raw>;
using NoneBitShuffle = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::None, zcoll::encode::BitShuffle>;

static_assert(zcoll::addable_codec<zcoll::FZLight>);
static_assert(zcoll::addable_codec<Lorenzo2> && zcoll::addable_codec<Lorenzo3> && zcoll::addable_codec<NoneRaw>);
static_assert(!zcoll::addable_codec<zcoll::HighRatio<1>>);  // Huffman codes whole chunks
static_assert(!zcoll::addable_codec<zcoll::Identity>);      // no bins to add
static_assert(!zcoll::addable_codec<zcoll::Int8>);
// FZLight's exception path moves past blocks by their residual sums (BitShuffle::residual_sums with
// Lorenzo1D::skip_block); without prediction nothing carries, and Raw has no such sums.
static_assert(zcoll::detail::pipeline_add<zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle>::skips_blocks_by_sum);
static_assert(!zcoll::detail::pipeline_add<zcoll::predict::None, zcoll::encode::Raw>::skips_blocks_by_sum);
static_assert(!zcoll::detail::pipeline_add<zcoll::predict::Lorenzo<2>, zcoll::encode::BitShuffle>::skips_blocks_by_sum);

const zcoll::exec::Host one_thread{};

/// The code the quantizer gives `x` (as quantize/linear.hpp computes it), when the decoded `value` is that
/// code's value; nothing for a lane stored exactly.
template <class T>
std::optional<std::int64_t> code_of(T x, T value, double eb) {
  const T rounded = std::nearbyint(x * static_cast<T>(0.5 / eb));
  if (!std::isfinite(rounded) || std::abs(rounded) > zcoll::quantize::Linear::block_quantizer<T>::max_code) {
    return std::nullopt;
  }
  const auto q = static_cast<std::int32_t>(rounded);
  if (!same_bits(static_cast<T>(q) * static_cast<T>(2.0 * eb), value)) return std::nullopt;
  return q;
}

/// Lane i of `stream` lies in a chunk stored verbatim.
template <class Codec>
std::vector<bool> verbatim_lanes(std::span<const std::byte> stream) {
  const auto layout = zcoll::read_stream_layout(stream, Codec::has_parameter_section);
  std::vector<bool> verbatim(layout.header.count);
  for (std::uint32_t c = 0; c < layout.header.chunk_count; ++c) {
    const bool stored = stream[layout.chunk_offset(c)] == std::byte{1};
    const std::size_t first = std::size_t{c} * layout.header.chunk_values;
    for (std::size_t i = first; i < std::min<std::size_t>(first + layout.header.chunk_values, verbatim.size()); ++i) {
      verbatim[i] = stored;
    }
  }
  return verbatim;
}

/// The sum's lanes as codec/add.hpp states them: float(qa + qb) · 2eb where both lanes are codes, the code
/// stays in range and the chunk is coded; a' + b' (a NaN canonical) elsewhere.
template <class T>
void require_lane_semantics(std::span<const T> x, std::span<const T> y, std::span<const T> a, std::span<const T> b,
                            std::span<const T> sum, const std::vector<bool>& verbatim, double eb,
                            const std::string& what) {
  REQUIRE(a.size() == sum.size());
  const T step = static_cast<T>(2.0 * eb);
  const double limit = zcoll::quantize::Linear::block_quantizer<T>::max_code;
  for (std::size_t i = 0; i < sum.size(); ++i) {
    const auto qa = code_of(x[i], a[i], eb), qb = code_of(y[i], b[i], eb);
    T want;
    if (qa && qb && std::abs(static_cast<double>(*qa + *qb)) <= limit && !verbatim[i]) {
      want = static_cast<T>(static_cast<std::int32_t>(*qa + *qb)) * step;
    } else {
      want = a[i] + b[i];
      if (std::isnan(want)) want = std::numeric_limits<T>::quiet_NaN();
    }
    if (!same_bits(sum[i], want)) {
      FAIL(what << ": lane " << i << " of the sum is " << sum[i] << ", a' = " << a[i] << ", b' = " << b[i] << ", expected "
                << want);
    }
  }
}

/// `call` raises zcoll::argument_error, and its message contains `word`.
template <class Call>
void require_argument_error(Call&& call, const std::string& word) {
  try {
    call();
    FAIL("no argument_error; expected one naming " << word);
  } catch (const zcoll::argument_error& e) {
    REQUIRE_THAT(std::string(e.what()), Catch::Matchers::Contains(word));
  }
}

template <class T>
std::vector<T> smooth(std::size_t n, double phase, double amplitude = 10.0) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    v[i] = static_cast<T>(amplitude * std::sin(0.01 * t + phase) + 0.3 * std::cos(0.13 * t * (1 + phase)));
  }
  return v;
}

/// Smooth data with NaN, ±Inf, values beyond the code range, a fill value and a constant run.
template <class T>
std::vector<T> adversarial(std::size_t n, double phase, T fill) {
  auto v = smooth<T>(n, phase);
  const T lim = std::numeric_limits<T>::max();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = (i * 7 + static_cast<std::size_t>(phase * 10)) % 97;
    if (k == 3) v[i] = std::numeric_limits<T>::quiet_NaN();
    if (k == 5) v[i] = std::numeric_limits<T>::infinity();
    if (k == 11) v[i] = -std::numeric_limits<T>::infinity();
    if (k == 13) v[i] = static_cast<T>(1e30);
    if (k == 17) v[i] = -lim / 4;
    if (k == 19 || (i / 64) % 9 == 4) v[i] = fill;  // single lanes and whole blocks of fill
    if ((i / 200) % 7 == 2) v[i] = static_cast<T>(1.25);  // constant runs: zero residual blocks
  }
  return v;
}

template <class Codec, class T>
void check_sum(const Codec& codec, std::span<const T> x, std::span<const T> y, const std::string& what) {
  const auto a = codec.compress(x), b = codec.compress(y);
  const auto sum = zcoll::add(one_thread, codec, a, b);
  REQUIRE(sum.size() <= codec.template max_compressed_size<T>(x.size()));
  const auto da = codec.template decompress<T>(a), db = codec.template decompress<T>(b);
  const auto ds = codec.template decompress<T>(sum);
  const double eb = zcoll::read_stream_header(a).error_bound;
  require_lane_semantics<T>(x, y, da, db, ds, verbatim_lanes<Codec>(sum), eb, what);
  // The sum is within the two streams' bounds of x + y on every lane coded in both (the others hold a' + b').
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!code_of(x[i], da[i], eb) || !code_of(y[i], db[i], eb)) continue;
    const double exact = static_cast<double>(x[i]) + static_cast<double>(y[i]);
    const double rounding = std::abs(exact) * std::numeric_limits<T>::epsilon();
    if (!(std::abs(static_cast<double>(ds[i]) - exact) <= 2 * eb + rounding)) {
      FAIL(what << ": lane " << i << " of the sum is " << ds[i] << ", x + y = " << exact << ", bound " << 2 * eb);
    }
  }
  // a + b and b + a are the same bytes; so is the sum on three threads.
  REQUIRE(zcoll::add(one_thread, codec, b, a) == sum);
  REQUIRE(zcoll::add(zcoll::exec::Host{.threads = 3}, codec, a, b) == sum);
}

}  // namespace

TEST_CASE("add: the codes of the sum are the sums of the codes, on every block kind and length",
          "[codec][add]") {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{4099},
                              std::size_t{20000}}) {
    const std::string what = "n=" + std::to_string(n);
    const auto x = smooth<float>(n, 0.1), y = smooth<float>(n, 0.7);
    for (const auto b : {zcoll::absolute(1e-3), zcoll::absolute(0.25)}) {
      check_sum(zcoll::FZLight{{.error_bound = b}}, std::span<const float>(x), std::span<const float>(y), what + " fzlight");
      check_sum(NoneRaw{{.error_bound = b}}, std::span<const float>(x), std::span<const float>(y), what + " none+raw");
      check_sum(NoneBitShuffle{{.error_bound = b}}, std::span<const float>(x), std::span<const float>(y),
                what + " none+bitshuffle");
    }
    const auto xd = smooth<double>(n, 0.2), yd = smooth<double>(n, 0.9);
    check_sum(zcoll::FZLight{{.error_bound = zcoll::absolute(1e-6)}}, std::span<const double>(xd),
              std::span<const double>(yd), what + " fzlight f64");
  }
}

TEST_CASE("add: NaN, ±Inf, values beyond the code range and fill values give decompress-then-add's lanes",
          "[codec][add]") {
  for (const std::size_t n : {std::size_t{1}, std::size_t{97}, std::size_t{5000}, std::size_t{17000}}) {
    const float fill = -1e35f;
    const auto x = adversarial<float>(n, 0.1, fill), y = adversarial<float>(n, 0.45, fill);
    for (const bool with_fill : {false, true}) {
      zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024};
      if (with_fill) config.fill_value = fill;
      const std::string what = "n=" + std::to_string(n) + (with_fill ? " with fill" : " no fill");
      check_sum(zcoll::FZLight{config}, std::span<const float>(x), std::span<const float>(y), what);
      check_sum(NoneBitShuffle{config}, std::span<const float>(x), std::span<const float>(y), what + " none");
    }
    const auto xd = adversarial<double>(n, 0.3, -1e300), yd = adversarial<double>(n, 0.6, -1e300);
    check_sum(zcoll::FZLight{{.error_bound = zcoll::absolute(1e-9), .fill_value = -1e300}}, std::span<const double>(xd),
              std::span<const double>(yd), "f64 n=" + std::to_string(n));
  }
}

TEST_CASE("add: codes whose sum leaves the code range become exact lanes", "[codec][add]") {
  // eb = 1e-3: codes reach 2^24 at |x| = 33554; two values of 30000 sum to a code beyond it.
  std::vector<float> x(3000), y(3000);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = 30000.0f + static_cast<float>(i % 50) * 0.01f;
    y[i] = (i / 100) % 2 == 0 ? 30000.0f : -5.0f + static_cast<float>(i % 13) * 0.1f;
  }
  for (const std::uint32_t chunk : {32u, 4096u}) {
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk}};
    check_sum(codec, std::span<const float>(x), std::span<const float>(y), "chunk " + std::to_string(chunk));
    const auto sum = codec.decompress<float>(zcoll::add(one_thread, codec, codec.compress(x), codec.compress(y)));
    CHECK(sum[0] == 60000.0f);  // beyond the codes: stored exactly, a' + b'
  }
  const NoneRaw none{{.error_bound = zcoll::absolute(1e-3)}};
  check_sum(none, std::span<const float>(x), std::span<const float>(y), "none+raw");
}

TEST_CASE("add: 2-D and 3-D Lorenzo streams whose rows and planes cross chunks", "[codec][add]") {
  const std::size_t rows = 37, cols = 101, planes = 5;
  const auto x = smooth<float>(rows * cols * planes, 0.2), y = smooth<float>(rows * cols * planes, 1.3);
  for (const std::uint32_t chunk : {256u, 4096u, 0u}) {
    check_sum(Lorenzo2{{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk, .shape = {planes * rows, cols}}},
              std::span<const float>(x), std::span<const float>(y), "2-D chunk " + std::to_string(chunk));
    check_sum(Lorenzo3{{.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk, .shape = {planes, rows, cols}}},
              std::span<const float>(x), std::span<const float>(y), "3-D chunk " + std::to_string(chunk));
  }
  const float fill = -1e35f;
  const auto xa = adversarial<float>(rows * cols * planes, 0.2, fill), ya = adversarial<float>(rows * cols * planes, 0.5, fill);
  check_sum(Lorenzo3{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 2048, .fill_value = fill, .shape = {planes, rows, cols}}},
            std::span<const float>(xa), std::span<const float>(ya), "3-D adversarial");
}

TEST_CASE("add: a few exception lanes in one stream, early and late in its chunks, on every predictor",
          "[codec][add]") {
  // Chunks coded with exceptions in a and without in b: the sum is added block by block and only the
  // blocks up to the last exception lane are decoded (codec/detail/pipeline_add.hpp); every lane is checked.
  const std::size_t rows = 40, cols = 250, n = rows * cols;
  const float fill = -1e35f;
  auto x = smooth<float>(n, 0.3);
  const auto y = smooth<float>(n, 0.8);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t at = i % 1024;
    if (at == 5) x[i] = std::numeric_limits<float>::quiet_NaN();  // first block
    if (at == 700) x[i] = fill;                                    // a fill lane in the middle
    if (at == 1023) x[i] = 1e30f;                                  // the chunk's last lane: beyond the codes
  }
  x[n - 1] = -std::numeric_limits<float>::infinity();  // the short last chunk's last lane
  for (const bool with_fill : {false, true}) {
    zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024, .shape = {rows, cols}};
    if (with_fill) config.fill_value = fill;
    const std::string what = with_fill ? "with fill" : "no fill";
    check_sum(zcoll::FZLight{config}, std::span<const float>(x), std::span<const float>(y), what + " fzlight");
    check_sum(NoneBitShuffle{config}, std::span<const float>(x), std::span<const float>(y), what + " none+bitshuffle");
    check_sum(NoneRaw{config}, std::span<const float>(x), std::span<const float>(y), what + " none+raw");
    check_sum(Lorenzo2{config}, std::span<const float>(x), std::span<const float>(y), what + " lorenzo 2-D");
    // The sum keeps its chunks coded, with the exception lanes in a section.
    const zcoll::FZLight codec{config};
    const auto sum = zcoll::add(one_thread, codec, codec.compress(x), codec.compress(y));
    const auto layout = zcoll::read_stream_layout(sum, false);
    for (std::uint32_t c = 0; c < layout.header.chunk_count; ++c) {
      CHECK(sum[layout.chunk_offset(c)] == std::byte{2});  // chunk_kind::coded_with_exceptions
    }
  }
}

TEST_CASE("add: adding a stream of zeros gives the other stream back, byte for byte", "[codec][add]") {
  // x' + 0 is x' on every lane: coded lanes keep their codes, an exception lane keeps its kind and value.
  // With a fill value the zeros hold it where x does (the same land mask), so those lanes are fill in
  // both and fill lanes of the sum, whose fill value is fill + fill (addition_fills); every other
  // exception lane of x is an outlier holding x' + 0 = x'. So the sum is x's stream byte for byte but for
  // the header's fill value, which checks the classification that lane semantics cannot see: a fill lane
  // and an outlier holding the fill value decode alike but are not the same bytes.
  const auto zeros_with_fill_of = [](const auto& x, auto fill) {
    std::vector<std::remove_cvref_t<decltype(x[0])>> zeros(x.size(), 0);
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (same_bits(x[i], fill)) zeros[i] = fill;
    }
    return zeros;
  };
  const auto with_fill_sum = [](std::vector<std::byte> stream, auto fill_sum) {
    auto header = zcoll::read_stream_header(stream);
    header.fill_bits = std::bit_cast<zcoll::bits_of<decltype(fill_sum)>>(fill_sum);
    zcoll::store_stream_header(header, stream.data());
    return stream;
  };
  for (const std::size_t n : {std::size_t{1}, std::size_t{97}, std::size_t{5000}, std::size_t{17001}}) {
    INFO("n=" << n);
    const float fill = -1e35f;
    const auto x = adversarial<float>(n, 0.35, fill);
    const std::vector<float> zeros(n, 0.0f);
    zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024};
    {
      const zcoll::FZLight codec{config};
      const auto a = codec.compress(x);
      CHECK(zcoll::add(one_thread, codec, a, codec.compress(zeros)) == a);
      const NoneBitShuffle none{config};
      const auto na = none.compress(x);
      CHECK(zcoll::add(one_thread, none, none.compress(zeros), na) == na);
    }
    config.fill_value = fill;
    const auto land = zeros_with_fill_of(x, fill);
    const zcoll::FZLight codec{config};
    const auto a = codec.compress(x);
    CHECK(zcoll::add(one_thread, codec, a, codec.compress(land)) == with_fill_sum(a, fill + fill));
    const NoneBitShuffle none{config};
    const auto na = none.compress(x);
    CHECK(zcoll::add(one_thread, none, none.compress(land), na) == with_fill_sum(na, fill + fill));
    // f64 at a tight bound: short inputs are stored verbatim, whose fill lanes hold -1e300 in x's chunk
    // and -2e300 in the sum's (a' + b', verbatim), so the sum is checked lane by lane.
    const auto xd = adversarial<double>(n, 0.55, -1e300);
    const zcoll::FZLight f64{{.error_bound = zcoll::absolute(1e-9), .fill_value = -1e300}};
    const auto ad = f64.compress(xd);
    const auto land_d = zeros_with_fill_of(xd, -1e300);
    const auto sum_d = zcoll::add(one_thread, f64, ad, f64.compress(land_d));
    CHECK(zcoll::read_stream_header(sum_d).fill_bits == std::bit_cast<std::uint64_t>(-2e300));
    const auto decoded = f64.decompress<double>(ad), decoded_sum = f64.decompress<double>(sum_d);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(same_bits(decoded_sum[i], decoded[i] + land_d[i]));
  }
}

TEST_CASE("add: the sum declares the sum of the fill values, so shared fill lanes stay fill lanes", "[codec][add]") {
  // Two fields of one grid (the same land mask, other values), fill values alike or not, or one stream
  // without any: a lane that is fill in both is a fill lane of the sum (no value stored) decoding to
  // fill_a + fill_b, what decompress-then-add gives; a sum of sums declares the sum of all.
  const std::size_t n = 20000;
  auto x = smooth<float>(n, 0.2), y = smooth<float>(n, 0.9);
  std::vector<bool> land(n);
  for (std::size_t i = 0; i < n; ++i) land[i] = (i / 300) % 3 == 1 || i % 37 == 0;
  const auto masked = [&](std::vector<float> v, float fill) {
    for (std::size_t i = 0; i < n; ++i) {
      if (land[i]) v[i] = fill;
    }
    return v;
  };
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096};
  const auto codec_with = [&](std::optional<double> fill) {
    config.fill_value = fill;
    return zcoll::FZLight{config};
  };
  const auto a = codec_with(-1e10).compress(masked(x, -1e10f));
  const auto b = codec_with(-1e10).compress(masked(y, -1e10f));
  const auto c = codec_with(7.5).compress(masked(y, 7.5f));
  const auto plain = codec_with(std::nullopt).compress(y);
  const zcoll::FZLight codec = codec_with(-1e10);
  const auto land_lanes = static_cast<std::size_t>(std::count(land.begin(), land.end(), true));
  for (const auto& [name, other, fill_sum] :
       {std::tuple{"same fill", &b, std::optional<float>(-2e10f)}, std::tuple{"fill 7.5", &c, std::optional<float>(-1e10f + 7.5f)},
        std::tuple{"no fill", &plain, std::optional<float>()}}) {
    INFO(name);
    const auto sum = zcoll::add(one_thread, codec, a, *other);
    REQUIRE(zcoll::add(one_thread, codec, *other, a) == sum);
    const auto header = zcoll::read_stream_header(sum);
    REQUIRE(header.has_fill_value == fill_sum.has_value());
    if (fill_sum) REQUIRE(header.fill_bits == std::bit_cast<std::uint32_t>(*fill_sum));
    const auto da = codec.decompress<float>(a), db = codec.decompress<float>(*other), ds = codec.decompress<float>(sum);
    for (std::size_t i = 0; i < n; ++i) {
      if (land[i]) REQUIRE(same_bits(ds[i], da[i] + db[i]));  // the shared fill lanes: fill_a + fill_b, or a' + y'
    }
    // The land lanes cost a mask bit each where the sum has a fill value (the whole sum is smaller than
    // their values would be), 4 bytes each where it has none.
    if (fill_sum) {
      CHECK(sum.size() < land_lanes * sizeof(float));
    } else {
      CHECK(sum.size() > land_lanes * sizeof(float));
    }
  }
  // A sum of sums declares the sum of every stream's fill value and keeps the shared fill lanes.
  const auto ab = zcoll::add(one_thread, codec, a, b);
  const auto aba = zcoll::add(one_thread, codec, ab, a);
  REQUIRE(zcoll::read_stream_header(aba).fill_bits == std::bit_cast<std::uint32_t>(-2e10f + -1e10f));
  const auto dab = codec.decompress<float>(ab), da = codec.decompress<float>(a), daba = codec.decompress<float>(aba);
  for (std::size_t i = 0; i < n; ++i) {
    if (land[i]) REQUIRE(same_bits(daba[i], dab[i] + da[i]));
  }
  CHECK(aba.size() < land_lanes * sizeof(float));
}

TEST_CASE("add: a chunk stored verbatim in either stream is stored verbatim as a' + b'", "[codec][add]") {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> noise(-1e4f, 1e4f);
  std::vector<float> x(5000), y = smooth<float>(5000, 0.4);
  for (auto& v : x) v = noise(rng);  // incompressible at eb = 1e-6: verbatim chunks
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-6), .chunk_values = 1024}};
  const auto a = codec.compress(x), b = codec.compress(y);
  const auto da = codec.decompress<float>(a), db = codec.decompress<float>(b);
  const auto ds = codec.decompress<float>(zcoll::add(one_thread, codec, a, b));
  for (std::size_t i = 0; i < ds.size(); ++i) REQUIRE(same_bits(ds[i], da[i] + db[i]));
  REQUIRE(zcoll::add(one_thread, codec, b, a) == zcoll::add(one_thread, codec, a, b));
  // A stream whose bound admits no quantizer step (lossless) is all verbatim, and adds too.
  const zcoll::FZLight lossless{{.error_bound = zcoll::absolute(0.0)}};
  const auto ls = lossless.decompress<float>(zcoll::add(one_thread, lossless, lossless.compress(x), lossless.compress(y)));
  for (std::size_t i = 0; i < ls.size(); ++i) REQUIRE(same_bits(ls[i], x[i] + y[i]));
}

TEST_CASE("add: any order of additions gives the same stream", "[codec][add]") {
  const float fill = -1e35f;
  // Values on the bin grid (multiples of 2eb = 2^-9), so that no finite value fails the quantizer's check
  // and stays exact: the exact lanes are NaN, ±Inf, fill values and values beyond the code range, whose
  // sums do not depend on the order. (Exact lanes holding finite values that round, and chunks stored
  // verbatim as sums, do: codec/add.hpp says so.)
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < 5; ++r) {
    auto v = adversarial<float>(9000, 0.1 * r + 0.05, fill);
    for (auto& value : v) {
      if (std::abs(value) < 1e6f) value = std::nearbyint(value * 512.0f) / 512.0f;
    }
    inputs.push_back(std::move(v));
  }
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1.0 / 1024), .chunk_values = 2048, .fill_value = fill}};
  std::vector<std::vector<std::byte>> s;
  for (const auto& in : inputs) s.push_back(codec.compress(in));
  auto left = s[0];
  for (int r = 1; r < 5; ++r) zcoll::add_into(one_thread, codec, left, s[static_cast<std::size_t>(r)]);
  auto right = s[4];
  for (int r = 3; r >= 0; --r) zcoll::add_into(one_thread, codec, right, s[static_cast<std::size_t>(r)]);
  const auto pairs = zcoll::add(one_thread, codec, zcoll::add(one_thread, codec, s[0], s[3]),
                                zcoll::add(one_thread, codec, zcoll::add(one_thread, codec, s[2], s[1]), s[4]));
  REQUIRE(left == right);
  REQUIRE(left == pairs);
}

TEST_CASE("add: streams that cannot be added are argument errors naming what differs", "[codec][add]") {
  const auto x = smooth<float>(1000, 0.1);
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3)}};
  const auto a = codec.compress(x);
  const auto refused = [&](const std::vector<std::byte>& b, const std::string& word) {
    require_argument_error([&] { (void)zcoll::add(one_thread, codec, a, b); }, word);
  };
  refused(zcoll::FZLight{{.error_bound = zcoll::absolute(2e-3)}}.compress(x), "absolute error bound");
  refused(zcoll::FZLight{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024}}.compress(x), "chunking");
  refused(codec.compress(std::span<const float>(x).first(999)), "value count");
  refused(codec.compress(std::vector<double>(x.begin(), x.end())), "value type");
  refused(NoneBitShuffle{{.error_bound = zcoll::absolute(1e-3)}}.compress(x), "codec");
  const Lorenzo2 grid{{.error_bound = zcoll::absolute(1e-3), .shape = {10, 100}}};
  const Lorenzo2 other_grid{{.error_bound = zcoll::absolute(1e-3), .shape = {20, 50}}};
  require_argument_error([&] { (void)zcoll::add(one_thread, grid, grid.compress(x), other_grid.compress(x)); }, "shape");
  std::vector<std::byte> small(10);
  require_argument_error([&] { (void)zcoll::add(one_thread, codec, a, a, std::span<std::byte>(small)); }, "max_compressed_size");
}

TEST_CASE("add: truncated and corrupted streams are format errors, never a crash", "[codec][add]") {
  const float fill = -1e35f;
  const auto x = adversarial<float>(6000, 0.1, fill), y = adversarial<float>(6000, 0.8, fill);
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024, .fill_value = fill}};
  const auto a = codec.compress(x), b = codec.compress(y);
  for (std::size_t cut = 0; cut < b.size(); cut += 1 + cut / 7) {
    const std::vector<std::byte> truncated(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(cut));
    REQUIRE_THROWS_AS(zcoll::add(one_thread, codec, a, truncated), zcoll::format_error);
  }
  std::mt19937_64 rng(seed);
  const std::size_t prefix = zcoll::stream_prefix_size_bytes(zcoll::read_stream_header(b).chunk_count);
  std::size_t refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto damaged = b;
    for (int k = 0; k < 1 + trial % 4; ++k) {
      const std::size_t at = prefix + rng() % (damaged.size() - prefix);  // the chunks: the header is checked above
      damaged[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    try {
      (void)codec.decompress<float>(zcoll::add(one_thread, codec, a, damaged));
    } catch (const zcoll::format_error&) {
      ++refused;
    }
  }
  CHECK(refused > 1000);  // most flips break a block, a kind or a section; the others decode to other values
}
