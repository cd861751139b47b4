// zcoll::add's CUDA driver (codec/detail/pipeline_add_tile.hpp) run on a host team (fibers): the
// sum must be the host add's bytes on every kind of chunk pair — coded block by block (zero blocks
// copied), with exceptions, verbatim, codes whose sum leaves the code range — for f32 and f64, with and
// without a fill value, on teams of 128 and 1024 threads, the input chunks staged in the team's shared
// buffer as the kernel does, partly, or not at all; streams that differ or are damaged are reported
// exactly when the host add refuses them (ASan watches for reads and writes outside the buffers). The
// kernel runs this same code.

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <optional>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "support/host_team.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/add.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/detail/pipeline_add_tile.hpp"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll_test::host_team;
namespace detail = zcoll::detail;
using NoPrediction = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::None, zcoll::encode::BitShuffle>;
using RawLorenzo = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, zcoll::encode::Raw>;

struct team_sum {
  std::vector<std::byte> bytes;
  detail::decode_fault fault;
};

/// The add kernel's shared staging for the two input chunks (codec/pipeline.cuh's max_staging_bytes).
constexpr std::size_t kernel_staging_bytes = 32 * 1024;

/// The sum of streams a and b of `count` values as the CUDA driver computes it, on a host team, the coded
/// input chunks that fit in half of `staging_bytes` staged in a buffer the team shares (0: none is).
template <class T, class Q, class P, class E>
team_sum team_add(const zcoll::Pipeline<Q, P, E>& codec, std::size_t count, std::span<const std::byte> a,
                  std::span<const std::byte> b, std::size_t staging_bytes = kernel_staging_bytes) {
  // Each input in a buffer of its own length, so ASan sees a read past either.
  const std::vector<std::byte> in_a(a.begin(), a.end()), in_b(b.begin(), b.end());
  detail::add_job job;
  job.count = count;
  job.chunk_values = codec.config().chunk_values;
  job.a = in_a.data();
  job.a_bytes = in_a.size();
  job.b = in_b.data();
  job.b_bytes = in_b.size();
  team_sum sum;
  sum.bytes.resize(zcoll::Pipeline<Q, P, E>::template max_compressed_size<T>(count, job.chunk_values));
  std::uint64_t total = ~0ull;
  job.out = sum.bytes.data();
  job.total_bytes = &total;
  std::vector<std::byte> staging(staging_bytes);
  sum.fault = host_team::run(job.tiles(), job.chunk_values, [&](host_team& team, std::uint32_t t) {
    detail::add_tile<Q, P, E, T>(team, job, t, staging_bytes > 0 ? staging.data() : nullptr, staging_bytes);
  });
  if (sum.fault.code == 0) {
    REQUIRE(total <= sum.bytes.size());
    sum.bytes.resize(static_cast<std::size_t>(total));
  }
  return sum;
}

/// Whether the host's add refuses the pair, with any of zcoll's errors.
template <class Codec>
bool host_refuses(const Codec& codec, std::span<const std::byte> a, std::span<const std::byte> b) {
  try {
    (void)zcoll::add(zcoll::exec::Host{}, codec, a, b);
    return false;
  } catch (const zcoll::error&) {
    return true;
  }
}

template <class T>
struct named_pair {
  const char* name;
  std::vector<T> a, b;
};

/// Pairs of inputs that reach every path of the sum.
template <class T>
std::vector<named_pair<T>> pairs(double eb, T fill, std::int32_t max_code) {
  using lim = std::numeric_limits<T>;
  std::vector<named_pair<T>> all;
  const auto smooth = [](std::size_t n, double phase) {
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(0.003 * static_cast<double>(i) + phase) * 10.0);
    return v;
  };
  all.push_back({"empty", {}, {}});
  all.push_back({"one value", {T(1.5)}, {T(-0.25)}});
  all.push_back({"smooth, not a multiple of 32", smooth(3001, 0.0), smooth(3001, 1.0)});
  auto negated = smooth(2100, 0.5);
  for (auto& v : negated) v = -v;
  all.push_back({"a + (-a): zero blocks", smooth(2100, 0.5), negated});
  all.push_back({"zeros in b: copied blocks", smooth(1500, 0.2), std::vector<T>(1500, T(0))});
  std::vector<T> specials(1500);
  for (std::size_t i = 0; i < specials.size(); ++i) {
    const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
    specials[i] = i % 7 == 0 ? special[(i / 7) % 6] : static_cast<T>(std::sin(0.01 * static_cast<double>(i)));
  }
  all.push_back({"specials + smooth", specials, smooth(1500, 2.0)});
  all.push_back({"specials + specials", specials, specials});
  // Codes at 3/4 of the range: their sums leave it (exact lanes), single ones do not.
  const T near_limit = static_cast<T>(0.75 * max_code * 2 * eb);
  std::vector<T> high(1100), mixed(1100);
  for (std::size_t i = 0; i < high.size(); ++i) {
    high[i] = near_limit * static_cast<T>(i % 3 == 0 ? 1 : -1);
    mixed[i] = i % 5 == 0 ? near_limit * static_cast<T>(i % 3 == 0 ? 1 : -1) : T(0.5);
  }
  all.push_back({"codes whose sums leave the range", high, mixed});
  all.push_back({"mixed with fill", zcoll_test::mixed_input<T>(4001, fill), zcoll_test::mixed_input<T>(4001, fill, true, 7)});
  all.push_back({"smooth with fill", zcoll_test::mixed_input<T>(2500, fill, false), zcoll_test::mixed_input<T>(2500, fill, false, 3)});
  std::mt19937_64 rng(zcoll_test::seed);
  std::vector<T> noise_a(2048), noise_b(2048);
  for (std::size_t i = 0; i < noise_a.size(); ++i) {
    noise_a[i] = static_cast<T>(std::ldexp(static_cast<double>(rng() % 1000000) - 5e5, static_cast<int>(rng() % 40)));
    noise_b[i] = static_cast<T>(static_cast<double>(rng() % 1000) * 1e-2);
  }
  all.push_back({"noise: verbatim chunks", noise_a, noise_b});
  return all;
}

template <class T, class Codec>
void check_sums(const Codec& codec) {
  const auto& config = codec.config();
  const double eb = config.error_bound.value;
  const T fill = static_cast<T>(config.fill_value.value_or(-999.0));
  using quantizer = typename zcoll::quantize::Linear::template block_quantizer<T>;
  for (const auto& pair : pairs<T>(eb == 0 ? 1e-3 : eb, fill, quantizer::max_code)) {
    INFO(pair.name << ": " << pair.a.size() << " values of " << zcoll_test::type_name<T>() << ", chunk "
                   << config.chunk_values << (config.fill_value ? ", fill value" : ""));
    const auto a = zcoll::compress_to_vector(codec, std::span<const T>(pair.a));
    const auto b = zcoll::compress_to_vector(codec, std::span<const T>(pair.b));
    const auto expected = zcoll::add(zcoll::exec::Host{}, codec, std::span<const std::byte>(a), std::span<const std::byte>(b));
    const auto team = team_add<T>(codec, pair.a.size(), a, b);
    REQUIRE(team.fault.code == 0);
    REQUIRE(team.bytes == expected);
    const auto swapped = team_add<T>(codec, pair.a.size(), b, a);
    REQUIRE(swapped.bytes == expected);
    // Nothing staged, and 2 KiB: chunks of 1 KiB or less staged, larger ones read where they are.
    REQUIRE(team_add<T>(codec, pair.a.size(), a, b, 0).bytes == expected);
    REQUIRE(team_add<T>(codec, pair.a.size(), b, a, 2048).bytes == expected);
  }
}

/// Chunks of 1024 values (teams of 128 threads) for both types, and of 8192 (1024 threads, most idle on
/// the short inputs) for f32: a team of 1024 host threads is what this test spends its time on.
template <class Codec>
void check_codec(zcoll::codec_config config) {
  config.chunk_values = 1024;
  check_sums<float>(Codec{config});
  check_sums<double>(Codec{config});
  config.chunk_values = 8192;
  check_sums<float>(Codec{config});
}

}  // namespace

TEST_CASE("CUDA add on a host team: FZLight sums are the host add's bytes", "[add][cuda-tile]") {
  check_codec<zcoll::FZLight>({.error_bound = zcoll::absolute(1e-3)});
  // No quantizer step: every chunk verbatim.
  check_sums<float>(zcoll::FZLight{{.error_bound = zcoll::absolute(0.0), .chunk_values = 1024}});
}

TEST_CASE("CUDA add on a host team: with a fill value, fill lanes and runs are the host add's", "[add][cuda-tile]") {
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-2)};
  config.fill_value = -999.0;
  check_codec<zcoll::FZLight>(config);
}

TEST_CASE("CUDA add on a host team: streams of other fill values, or none, and sums of sums are the host add's bytes",
          "[add][cuda-tile]") {
  // The sum declares fill_a + fill_b, or none where either stream declares none (addition_fills).
  const auto values = zcoll_test::mixed_input<float>(3000, -999.0f, false);
  auto shifted = zcoll_test::mixed_input<float>(3000, 5.0f, false, 3);
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024};
  const auto stream = [&](std::optional<double> fill, const std::vector<float>& v) {
    config.fill_value = fill;
    return zcoll::compress_to_vector(zcoll::FZLight{config}, std::span<const float>(v));
  };
  const zcoll::FZLight codec{config};
  const auto with_fill = stream(-999.0, values), other_fill = stream(5.0, shifted), no_fill = stream(std::nullopt, shifted);
  const auto host_sum = [&](std::span<const std::byte> a, std::span<const std::byte> b) {
    return zcoll::add(zcoll::exec::Host{}, codec, a, b);
  };
  const auto twice = host_sum(with_fill, with_fill);
  const std::vector<std::pair<const char*, std::pair<std::vector<std::byte>, std::vector<std::byte>>>> cases = {
      {"fill -999 + fill 5", {with_fill, other_fill}},
      {"fill -999 + no fill", {with_fill, no_fill}},
      {"(a + a) + a: fill -1998 + fill -999", {twice, with_fill}},
      {"(a + a) + (a + a)", {twice, twice}}};
  for (const auto& [name, streams] : cases) {
    INFO(name);
    const auto expected = host_sum(streams.first, streams.second);
    for (const auto& [x, y] : {std::pair{streams.first, streams.second}, std::pair{streams.second, streams.first}}) {
      const auto team = team_add<float>(codec, values.size(), x, y);
      REQUIRE(team.fault.code == 0);
      REQUIRE(team.bytes == expected);
    }
  }
  CHECK(zcoll::read_stream_header(twice).fill_bits == std::bit_cast<std::uint32_t>(-1998.0f));
  CHECK_FALSE(zcoll::read_stream_header(host_sum(with_fill, no_fill)).has_fill_value);
}

TEST_CASE("CUDA add on a host team: other predictor and encoder choices", "[add][cuda-tile]") {
  const zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024};
  check_sums<float>(NoPrediction{config});
  check_sums<double>(NoPrediction{config});
  check_sums<float>(RawLorenzo{config});
  check_sums<double>(RawLorenzo{config});
}

TEST_CASE("CUDA add on a host team: streams that differ are reported as the host's argument_error is raised",
          "[add][cuda-tile]") {
  const auto values = zcoll_test::mixed_input<float>(3000, -999.0f, false);
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024};
  const zcoll::FZLight codec{config};
  const auto a = zcoll::compress_to_vector(codec, std::span<const float>(values));

  config.error_bound = zcoll::absolute(2e-3);
  const auto other_bound = zcoll::compress_to_vector(zcoll::FZLight{config}, std::span<const float>(values));
  auto sum = team_add<float>(codec, values.size(), a, other_bound);
  CHECK(sum.fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::streams_differ));
  CHECK(sum.fault.detail == static_cast<std::uint64_t>(detail::streams_differ_in::error_bound));


  const auto shorter = zcoll::compress_to_vector(codec, std::span<const float>(values).first(2999));
  CHECK(team_add<float>(codec, values.size(), a, shorter).fault.code != 0);
  const std::vector<double> doubles(values.begin(), values.end());
  const auto f64 = zcoll::compress_to_vector(codec, std::span<const double>(doubles));
  CHECK(team_add<float>(codec, values.size(), a, f64).fault.code != 0);
}

TEST_CASE("CUDA add on a host team: truncated and damaged streams are reported when the host refuses them, never overrun",
          "[add][cuda-tile][corruption]") {
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 512};
  config.fill_value = -999.0;
  const zcoll::FZLight codec{config};
  const auto values_a = zcoll_test::mixed_input<float>(1000, -999.0f);  // two chunks, with exceptions
  const auto values_b = zcoll_test::mixed_input<float>(1000, -999.0f, false, 5);
  const auto a = zcoll::compress_to_vector(codec, std::span<const float>(values_a));
  const auto b = zcoll::compress_to_vector(codec, std::span<const float>(values_b));

  for (std::size_t length = 0; length < a.size(); length += length < 48 ? 1 : length < 160 ? 13 : 151) {
    INFO("a truncated to " << length << " of " << a.size() << " bytes");
    const std::span<const std::byte> cut(a.data(), length);
    CHECK(team_add<float>(codec, values_a.size(), cut, b).fault.code != 0);
    CHECK(team_add<float>(codec, values_a.size(), b, cut).fault.code != 0);
  }

  std::mt19937_64 rng(zcoll_test::seed + 19);
  int refused = 0;
  for (int trial = 0; trial < 120; ++trial) {
    auto damaged = a;
    const std::size_t at = rng() % damaged.size();
    damaged[at] ^= std::byte(static_cast<unsigned char>(1u << (rng() % 8)));
    INFO("bit flip at byte " << at);
    const bool refuses = host_refuses(codec, damaged, b);
    const auto sum = team_add<float>(codec, values_a.size(), damaged, b);
    REQUIRE((sum.fault.code != 0) == refuses);
    if (!refuses) REQUIRE(sum.bytes == zcoll::add(zcoll::exec::Host{}, codec, std::span<const std::byte>(damaged), std::span<const std::byte>(b)));
    refused += refuses;
  }
  CHECK(refused > 0);
}
