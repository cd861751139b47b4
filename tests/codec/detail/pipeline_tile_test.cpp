// The CUDA driver's tile algorithm (codec/detail/pipeline_tile.hpp) run on a host team (fibers):
// its streams must be the host driver's byte for byte, batch or single, on every adversarial input, and
// its decoder must give the host decoder's values and report every truncated or damaged stream without
// reading or writing outside its buffers (ASan watches). The kernels themselves run this same code.

#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/host_team.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll_test::host_team;
namespace detail = zcoll::detail;

template <class T>
struct named_input {
  const char* name;
  std::vector<T> values;
};

template <class T>
std::vector<named_input<T>> inputs() {
  using lim = std::numeric_limits<T>;
  std::vector<named_input<T>> all;
  all.push_back({"empty", {}});
  all.push_back({"one", {T(1.5)}});
  all.push_back({"constant", std::vector<T>(100, T(3.25))});
  std::vector<T> specials(1500), huge(130);
  for (std::size_t i = 0; i < specials.size(); ++i) {
    const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
    specials[i] = i % 7 == 0 ? special[(i / 7) % 6] : static_cast<T>(std::sin(0.01 * static_cast<double>(i)));
  }
  for (std::size_t i = 0; i < huge.size(); ++i) {
    huge[i] = static_cast<T>((i % 2 ? -1.0 : 1.0) * std::ldexp(1.0, static_cast<int>(i % 60) * 2));
  }
  all.push_back({"specials", specials});
  all.push_back({"huge-range", huge});
  all.push_back({"mixed with fill", zcoll_test::mixed_input<T>(4001, T(-999))});
  all.push_back({"smooth with fill", zcoll_test::mixed_input<T>(2500, T(-999), false)});
  return all;
}

/// The CUDA driver's layout and ranges, computed as compress_batch and its range kernel do.
template <class T>
struct team_batch {
  std::vector<std::size_t> counts;
  std::vector<T> values;
  std::vector<detail::extent_keys> extents;
  detail::batch_layout layout;

  team_batch(const std::vector<std::vector<T>>& streams, std::uint32_t chunk_values, const std::optional<zcoll::bits_of<T>>& fill) {
    for (const auto& s : streams) {
      counts.push_back(s.size());
      values.insert(values.end(), s.begin(), s.end());
      detail::extent_keys keys;
      for (const T v : s) {
        if (!detail::in_value_range(v, fill.has_value(), fill.value_or(0))) continue;
        keys.lowest = std::min<long long>(keys.lowest, zcoll::order_key(v));
        keys.highest = std::max<long long>(keys.highest, zcoll::order_key(v));
      }
      extents.push_back(keys);
    }
    layout = detail::make_layout("team_batch", counts, chunk_values);
  }
};

struct team_streams {
  std::vector<std::byte> bytes;
  std::vector<std::uint64_t> offset, size;
};

template <class Q, class P, class E, class T>
team_streams team_compress(const zcoll::Pipeline<Q, P, E>& codec, const std::vector<std::vector<T>>& streams) {
  const auto fill = codec.template fill_bits<T>();
  team_batch<T> batch(streams, codec.config().chunk_values, fill);
  team_streams out;
  std::size_t room = 0;
  for (const auto count : batch.counts) room += codec.template max_compressed_size<T>(count);
  out.bytes.resize(room);
  out.offset.assign(streams.size(), ~0ull);
  out.size.assign(streams.size(), ~0ull);
  std::uint64_t total = ~0ull;
  detail::compress_job<T> job;
  job.layout = batch.layout;
  job.values = batch.values.data();
  job.out = out.bytes.data();
  job.error_bound = codec.config().error_bound;
  job.has_fill = fill.has_value();
  job.fill = fill.value_or(0);
  job.extents = batch.extents.data();
  job.stream_offset = out.offset.data();
  job.stream_bytes = out.size.data();
  job.total_bytes = &total;
  const auto fault = host_team::run(job.layout, [&](host_team& team, std::uint32_t t) {
    detail::compress_tile<Q, P, E>(team, job, t);
  });
  REQUIRE(fault.code == 0);
  REQUIRE(total <= room);
  out.bytes.resize(total);
  return out;
}

/// Decodes on a host team, staging each chunk in a shared buffer first (as the 128-thread CUDA team does)
/// or writing each block where it goes (as the 1024-thread team does).
template <class Q, class P, class E, class T>
detail::decode_fault team_decompress(const zcoll::Pipeline<Q, P, E>& codec, std::span<const std::byte> in,
                                     const std::vector<std::uint64_t>& offset, const std::vector<std::uint64_t>& size,
                                     const std::vector<std::size_t>& counts, std::vector<T>& values, bool staged = true) {
  detail::decompress_job<T> job;
  job.layout = detail::make_layout("team_decompress", counts, codec.config().chunk_values);
  std::size_t total = 0;
  for (const auto c : counts) total += c;
  values.assign(total, T(0));
  job.in = in.data();
  job.values = values.data();
  for (std::size_t s = 0; s < counts.size(); ++s) {
    REQUIRE(offset[s] + size[s] <= in.size());
    job.stream_offset[s] = offset[s];
    job.stream_bytes[s] = size[s];
  }
  std::vector<T> staging(staged ? codec.config().chunk_values : 0);
  return host_team::run(job.layout, [&](host_team& team, std::uint32_t t) {
    detail::decompress_tile<Q, P, E>(team, job, t, staged ? staging.data() : nullptr);
  });
}

template <class Codec, class T>
void check_codec_on_inputs(const Codec& codec) {
  // A 1024-thread host team costs 1024 thread starts a call: it gets the largest input (fill runs, NaN,
  // ±Inf, huge values and noise: coded chunks with exceptions) and leaves the small ones to the 128-thread
  // team.
  const bool large_team = detail::team_threads_for(codec.config().chunk_values) > 128;
  for (const auto& input : inputs<T>()) {
    if (large_team && input.values.size() < 4000) continue;
    INFO(input.name << ", " << zcoll_test::type_name<T>() << ", " << Codec::name() << ", chunk "
                    << codec.config().chunk_values << ", bound " << zcoll::to_string(codec.config().error_bound));
    const auto expected = zcoll::compress_to_vector(codec, std::span<const T>(input.values));
    const auto team = team_compress(codec, std::vector<std::vector<T>>{input.values});
    REQUIRE(team.offset[0] == 0);
    REQUIRE(team.size[0] == expected.size());
    REQUIRE(team.bytes == expected);

    const auto host = codec.template decompress<T>(std::span<const std::byte>(expected));
    for (const bool staged : {true, false}) {
      INFO((staged ? "staged" : "not staged"));
      std::vector<T> decoded;
      const auto fault = team_decompress(codec, expected, {0}, {expected.size()}, {input.values.size()}, decoded, staged);
      REQUIRE(fault.code == 0);
      REQUIRE(host.size() == decoded.size());
      for (std::size_t i = 0; i < host.size(); ++i) {
        INFO("value " << i);
        REQUIRE(zcoll_test::same_bits(host[i], decoded[i]));
      }
    }
  }
}

template <class Codec>
void check_codec_configs(zcoll::codec_config base, bool with_large_team) {
  // Bounds that code, that leave most values outliers, lossless (verbatim), and relative (the range
  // pass), on teams of 128 threads (chunks of 1024 values: 96 threads idle, several chunks per input);
  // the 1024-thread team (chunks of 8192, 768 threads idle) at the relative bound, f32 only: a host
  // team's barriers, per chunk, are what this test spends its time on.
  for (const auto eb : {zcoll::absolute(1e-2), zcoll::absolute(1e-6), zcoll::absolute(0), zcoll::relative(1e-3)}) {
    for (const std::uint32_t chunk : {1024u, 8192u}) {
      if (chunk == 8192 && (!with_large_team || eb.mode != zcoll::bound_mode::relative)) continue;
      auto config = base;
      config.chunk_values = chunk;
      config.error_bound = eb;
      const Codec codec{config};
      check_codec_on_inputs<Codec, float>(codec);
      if (chunk == 1024) check_codec_on_inputs<Codec, double>(codec);
    }
  }
}

}  // namespace

TEST_CASE("CUDA tile algorithm on a host team: FZLight streams are the host driver's, bytes and values",
          "[pipeline][cuda-tile]") {
  check_codec_configs<zcoll::FZLight>({}, true);
}

TEST_CASE("CUDA tile algorithm on a host team: with a fill value, fill runs and masked blocks are the host's",
          "[pipeline][cuda-tile]") {
  zcoll::codec_config config;
  config.fill_value = -999.0;
  check_codec_configs<zcoll::FZLight>(config, false);
}

TEST_CASE("CUDA tile algorithm on a host team: other predictor and encoder choices", "[pipeline][cuda-tile]") {
  using NoPrediction = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::None, zcoll::encode::BitShuffle>;
  using RawLorenzo = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, zcoll::encode::Raw>;
  const zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 1024};
  check_codec_on_inputs<NoPrediction, float>(NoPrediction{config});
  check_codec_on_inputs<RawLorenzo, double>(RawLorenzo{config});
}

TEST_CASE("CUDA tile algorithm on a host team: one batch packs every stream as the host writes it alone",
          "[pipeline][cuda-tile]") {
  const zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-4), .chunk_values = 1024}};
  std::vector<std::vector<float>> streams;
  for (const std::size_t n : {3000, 0, 1, 1024, 4097, 0, 777}) {
    auto values = zcoll_test::mixed_input<float>(n + 700, -1.0f, n % 2 == 0, n);  // n + 700: room for its fill runs
    values.resize(n);
    streams.push_back(std::move(values));
  }
  const auto team = team_compress(codec, streams);
  std::uint64_t at = 0;
  std::vector<std::size_t> counts;
  for (std::size_t s = 0; s < streams.size(); ++s) {
    INFO("stream " << s << " of " << streams[s].size() << " values");
    const auto expected = zcoll::compress_to_vector(codec, std::span<const float>(streams[s]));
    REQUIRE(team.offset[s] == at);
    REQUIRE(team.size[s] == expected.size());
    REQUIRE(std::equal(expected.begin(), expected.end(), team.bytes.begin() + static_cast<std::ptrdiff_t>(at)));
    at += expected.size();
    counts.push_back(streams[s].size());
  }
  REQUIRE(team.bytes.size() == at);

  std::vector<float> decoded;
  REQUIRE(team_decompress(codec, team.bytes, team.offset, team.size, counts, decoded).code == 0);
  std::size_t first = 0;
  for (const auto& s : streams) {
    const auto host = codec.decompress<float>(std::span<const std::byte>(team.bytes).subspan(
        static_cast<std::size_t>(team.offset[&s - streams.data()]), static_cast<std::size_t>(team.size[&s - streams.data()])));
    for (std::size_t i = 0; i < s.size(); ++i) REQUIRE(zcoll_test::same_bits(host[i], decoded[first + i]));
    first += s.size();
  }
}

TEST_CASE("CUDA tile algorithm on a host team: truncated and damaged streams are reported, never overrun",
          "[pipeline][cuda-tile][corruption]") {
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 512};
  config.fill_value = -999.0;
  const zcoll::FZLight codec{config};
  const auto values = zcoll_test::mixed_input<float>(1000, -999.0f);  // two chunks
  const auto stream = zcoll::compress_to_vector(codec, std::span<const float>(values));
  std::vector<float> decoded;

  // Every length through the header and the index, every 7th through the first blocks, then every 97th.
  for (std::size_t length = 0; length < stream.size(); length += length < 48 ? 1 : length < 160 ? 7 : 97) {
    INFO("truncated to " << length << " of " << stream.size() << " bytes");
    // The truncated stream in a buffer of its own length, so ASan sees a read past it.
    const std::vector<std::byte> cut(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(length));
    REQUIRE(team_decompress(codec, cut, {0}, {length}, {values.size()}, decoded, length % 2 == 0).code != 0);
  }

  std::mt19937_64 rng(zcoll_test::seed);
  int reported = 0;
  for (int trial = 0; trial < 30; ++trial) {
    auto damaged = stream;
    const std::size_t at = rng() % damaged.size();
    damaged[at] ^= std::byte(static_cast<unsigned char>(1u << (rng() % 8)));
    const auto fault = team_decompress(codec, damaged, {0}, {damaged.size()}, {values.size()}, decoded, trial % 2 == 0);
    bool host_refuses = false;
    try {
      (void)codec.decompress<float>(std::span<const std::byte>(damaged));
    } catch (const zcoll::format_error&) {
      host_refuses = true;
    }
    // What the host decoder refuses in the header, index or chunk structure the device decoder refuses too.
    if (host_refuses) {
      INFO("flip at byte " << at);
      CHECK(fault.code != 0);
    }
    reported += fault.code != 0;
  }
  CHECK(reported > 0);
}
