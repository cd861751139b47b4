// The CUDA cast driver's algorithm (codec/detail/cast_tile.hpp) run as a grid of host "threads": every
// thread's part in turn, the magnitudes reduced as the kernel reduces them, then the header step. Its
// streams must be the host driver's bytes, batch or single, on every adversarial input; its decoder must
// give the host decoder's values bit for bit and refuse exactly the streams the host decoder refuses,
// without reading or writing outside its buffers (ASan watches). The kernels run this same code.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/batch_streams.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/detail/cast_tile.hpp"

namespace {

namespace detail = zcoll::detail;
using zcoll_test::batch_input;
using zcoll_test::batch_streams;
using grid_streams = batch_streams;

/// A grid of `blocks` x `threads` as the kernels see it: thread t of n takes values t, t + n, ...
struct grid {
  std::uint64_t blocks = 3;
  std::uint64_t threads = 5;
  std::uint64_t size() const { return blocks * threads; }
};

template <class T>
std::vector<std::vector<T>> adversarial_streams() {
  using lim = std::numeric_limits<T>;
  std::vector<std::vector<T>> streams;
  streams.push_back({});
  streams.push_back({T(1.5)});
  streams.push_back(std::vector<T>(97, T(3.25)));
  std::vector<T> specials(1001);
  const T special[] = {lim::quiet_NaN(), -lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(),
                       -T(0), lim::max(), T(448), T(449), T(65504), T(65520), T(57344), T(1e-8), lim::min()};
  for (std::size_t i = 0; i < specials.size(); ++i) {
    specials[i] = i % 5 == 0 ? special[(i / 5) % std::size(special)] : static_cast<T>(std::sin(0.01 * static_cast<double>(i)));
  }
  streams.push_back(specials);
  std::vector<T> huge(130);
  for (std::size_t i = 0; i < huge.size(); ++i) {
    huge[i] = static_cast<T>((i % 2 ? -1.0 : 1.0) * std::ldexp(1.0, static_cast<int>(i % 120) - 60));
  }
  streams.push_back(huge);
  streams.push_back({});
  streams.push_back(zcoll_test::mixed_input<T>(4099, T(-999)));
  return streams;
}


/// compress_batch's two kernels, on the host.
template <class Format, class T>
grid_streams grid_compress(const zcoll::Cast<Format>& codec, const batch_input<T>& input, grid g) {
  grid_streams out;
  const std::size_t bytes = zcoll::batch_max_compressed_size<T>(codec, std::span<const std::size_t>(input.counts));
  out.bytes.assign(bytes, std::byte{0xA5});
  out.offset.assign(input.counts.size(), ~0ull);
  out.size.assign(input.counts.size(), ~0ull);
  std::vector<unsigned long long> largest(input.counts.size(), 0);
  detail::cast_compress_job<T> job;
  job.batch = detail::compression_batch<T>("test", codec, input.counts, input.values.size(), out.bytes.size());
  job.values = input.values.data();
  job.out = out.bytes.data();
  job.largest = largest.data();
  job.results = {out.offset.data(), out.size.data(), &out.total};
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) {
    for (std::uint64_t t = 0; t < g.size(); ++t) {
      largest[s] = std::max<unsigned long long>(largest[s], detail::cast_encode_part<Format>(job, s, t, g.size()));
    }
  }
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) {
    detail::cast_finish_stream<Format>(job, s, static_cast<zcoll::bits_of<T>>(largest[s]));
  }
  return out;
}

/// decompress_batch's kernel, on the host: the first fault of the launch (code 0: none).
template <class Format, class T>
detail::decode_fault grid_decompress(std::span<const std::byte> in, const std::vector<std::uint64_t>& offset,
                                     const std::vector<std::uint64_t>& size, const std::vector<std::size_t>& counts,
                                     std::span<T> values, grid g) {
  detail::cast_decompress_job<T> job;
  job.batch = detail::decompression_batch("test", counts, values.size(), in.size(), offset, size);
  job.in = in.data();
  job.values = values.data();
  detail::decode_fault first{};
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) {
    for (std::uint64_t t = 0; t < g.size(); ++t) {
      const auto f = detail::cast_decode_part<Format>(job, s, t, g.size());
      if (f.code != 0 && t == 0 && first.code == 0) first = f;
    }
  }
  return first;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class Format, class T>
void check_format() {
  const zcoll::Cast<Format> codec;
  const batch_input<T> input(adversarial_streams<T>());
  const batch_streams host = zcoll_test::host_batch(codec, input);
  const std::vector<T> expected = zcoll_test::host_decoded<T>(codec, host);
  for (const grid g : {grid{1, 1}, grid{3, 5}, grid{2, 128}}) {
    const grid_streams team = grid_compress(codec, input, g);
    REQUIRE(team.total == host.total);
    REQUIRE(team.bytes == host.bytes);
    CHECK(team.offset == host.offset);
    CHECK(team.size == host.size);
    std::vector<T> decoded(input.values.size());
    REQUIRE(grid_decompress<Format>(std::span<const std::byte>(host.bytes), host.offset, host.size, input.counts,
                                    std::span<T>(decoded), g)
                .code == 0);
    CHECK(same_bits(decoded, expected));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("cast tile: streams are the host driver's bytes and decode to its values", "[cast][cuda-tile]", float,
                   double) {
  check_format<zcoll::quantize::fp16, TestType>();
  check_format<zcoll::quantize::bf16, TestType>();
  check_format<zcoll::quantize::fp8_e4m3, TestType>();
  check_format<zcoll::quantize::fp8_e5m2, TestType>();
}

TEST_CASE("cast tile: a damaged stream is refused exactly when the host decoder refuses it", "[cast][cuda-tile]") {
  const zcoll::BF16 codec;
  const std::vector<float> values = zcoll_test::mixed_input<float>(777, -999.0f);
  const std::vector<std::byte> stream = codec.compress(std::span<const float>(values));
  const grid g{2, 7};
  const auto decode_both = [&](const std::vector<std::byte>& damaged, std::size_t count) {
    std::vector<float> out(count);
    const auto fault = grid_decompress<zcoll::quantize::bf16>(std::span<const std::byte>(damaged), {0}, {damaged.size()},
                                                              {count}, std::span<float>(out), g);
    return std::pair{zcoll_test::host_refuses<float>(codec, damaged, count), fault.code != 0};
  };
  SECTION("every truncation") {
    for (std::size_t length = 0; length < stream.size(); length += length < 64 ? 1 : 37) {
      const std::vector<std::byte> cut(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(length));
      const auto [host, device] = decode_both(cut, values.size());
      INFO("length " << length);
      CHECK(host);
      CHECK(device);
    }
  }
  SECTION("a longer stream, another count") {
    std::vector<std::byte> longer = stream;
    longer.push_back(std::byte{0});
    CHECK(decode_both(longer, values.size()) == std::pair{true, true});
    CHECK(decode_both(stream, values.size() - 1) == std::pair{true, true});
  }
  SECTION("another cast's stream") {
    const std::vector<std::byte> fp16 = zcoll::FP16{}.compress(std::span<const float>(values));
    CHECK(decode_both(fp16, values.size()) == std::pair{true, true});
  }
  SECTION("random header bit flips") {
    std::mt19937_64 rng(23);
    int refused = 0;
    for (int trial = 0; trial < 400; ++trial) {
      std::vector<std::byte> damaged = stream;
      const std::size_t bit = rng() % (8 * zcoll::stream_header_size_bytes);
      damaged[bit / 8] ^= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
      const auto [host, device] = decode_both(damaged, values.size());
      INFO("bit " << bit);
      CHECK(host == device);
      refused += host ? 1 : 0;
    }
    CHECK(refused > 100);  // most header bits matter; the flips must exercise the refusals
  }
}

TEST_CASE("cast tile: batches are checked at the API boundary", "[cast][cuda-tile]") {
  const zcoll::FP16 codec;
  const std::vector<std::size_t> counts = {3, 4};
  CHECK_THROWS_AS(detail::compression_batch<float>("compress_batch", codec, counts, 6, 1000), zcoll::argument_error);
  CHECK_THROWS_AS(detail::compression_batch<float>("compress_batch", codec, counts, 7, 48 * 2 + 13), zcoll::argument_error);
  CHECK_NOTHROW(detail::compression_batch<float>("compress_batch", codec, counts, 7, 48 * 2 + 14));
  const std::vector<std::size_t> too_many(detail::max_batch_streams + 1, 1);
  CHECK_THROWS_AS(detail::batch_of_counts("compress_batch", too_many, too_many.size()), zcoll::argument_error);
  CHECK_THROWS_AS(detail::decompression_batch("decompress_batch", counts, 7, 100, std::vector<std::uint64_t>{0, 90},
                                              std::vector<std::uint64_t>{50, 20}),
                  zcoll::argument_error);
}
