// The CUDA row-wise driver's algorithm (codec/detail/rowwise_tile.hpp) run as a grid of host "threads":
// every thread's part in turn, the row bounds reduced as the kernel reduces them, then the header step.
// Its streams must be the host driver's bytes (FBGEMM's layout), batch or single, for 8, 4 and 2 bits on
// f32 and f64 rows of awkward lengths; rows the layout cannot hold are reported as the host raises them;
// its decoder must give the host decoder's values bit for bit and refuse exactly the streams the host
// decoder refuses, without reading or writing outside its buffers (ASan watches).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/batch_streams.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/detail/rowwise_tile.hpp"
#include "zcoll/codec/rowwise.hpp"

namespace {

namespace detail = zcoll::detail;
using zcoll_test::batch_input;
using zcoll_test::batch_streams;

struct grid_streams : batch_streams {
  detail::decode_fault fault{};
};

struct grid {
  std::uint64_t threads = 5;
};

/// Streams of whole rows of `dim`: empty, one row, constant rows, smooth rows, rows of denormals, of
/// mixed signs and magnitudes, and a long stream of random rows.
template <class T>
std::vector<std::vector<T>> row_streams(std::size_t dim) {
  std::mt19937_64 rng(dim);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const auto rows = [&](std::size_t n, auto value) {
    std::vector<T> v(n * dim);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(value(i / dim, i % dim));
    return v;
  };
  std::vector<std::vector<T>> streams;
  streams.push_back({});
  streams.push_back(rows(1, [&](std::size_t, std::size_t j) { return 0.25 * static_cast<double>(j) - 3.0; }));
  streams.push_back(rows(3, [&](std::size_t r, std::size_t) { return r == 1 ? -0.0 : 2.5 * static_cast<double>(r); }));
  streams.push_back(rows(9, [&](std::size_t r, std::size_t j) { return std::sin(0.1 * static_cast<double>(r * dim + j)); }));
  streams.push_back(rows(4, [&](std::size_t r, std::size_t j) {
    return static_cast<double>(std::numeric_limits<float>::denorm_min()) * static_cast<double>((r + 1) * (j % 5));
  }));
  streams.push_back({});
  streams.push_back(rows(37, [&](std::size_t r, std::size_t) { return std::ldexp(unit(rng), static_cast<int>(r % 20) - 10); }));
  return streams;
}

/// compress_batch's two kernels, on the host.
template <int Bits, class T>
grid_streams grid_compress(const zcoll::RowwiseQuantized<Bits>& codec, const batch_input<T>& input, grid g) {
  grid_streams out;
  out.bytes.assign(zcoll::batch_max_compressed_size<T>(codec, std::span<const std::size_t>(input.counts)), std::byte{0xA5});
  out.offset.assign(input.counts.size(), ~0ull);
  out.size.assign(input.counts.size(), ~0ull);
  std::vector<unsigned long long> largest(input.counts.size(), 0);
  detail::rowwise_compress_job<T> job;
  job.batch = detail::compression_batch<T>("test", codec, input.counts, input.values.size(), out.bytes.size());
  job.dim = static_cast<std::uint32_t>(codec.dim());
  job.values = input.values.data();
  job.out = out.bytes.data();
  job.largest_bound = largest.data();
  job.results = {out.offset.data(), out.size.data(), &out.total};
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) {
    for (std::uint64_t t = 0; t < g.threads; ++t) {
      const detail::row_part part = detail::rowwise_encode_part<Bits>(job, s, t, g.threads);
      largest[s] = std::max(largest[s], part.largest_bound);
      if (part.fault.code != 0 && out.fault.code == 0) out.fault = part.fault;
    }
  }
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) detail::rowwise_finish_stream<Bits>(job, s, largest[s]);
  return out;
}

/// decompress_batch's two kernels, on the host: the first fault of the launch (code 0: none).
template <int Bits, class T>
detail::decode_fault grid_decompress(std::span<const std::byte> in, const std::vector<std::uint64_t>& offset,
                                     const std::vector<std::uint64_t>& size, const std::vector<std::size_t>& counts,
                                     std::span<T> values, grid g) {
  std::vector<unsigned long long> largest(counts.size(), 0);
  detail::rowwise_decompress_job<T> job;
  job.batch = detail::decompression_batch("test", counts, values.size(), in.size(), offset, size);
  job.in = in.data();
  job.values = values.data();
  job.largest_bound = largest.data();
  detail::decode_fault first{};
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) {
    for (std::uint64_t t = 0; t < g.threads; ++t) {
      const detail::row_part part = detail::rowwise_decode_part<Bits>(job, s, t, g.threads);
      largest[s] = std::max(largest[s], part.largest_bound);
      if (part.fault.code != 0 && first.code == 0) first = part.fault;
    }
  }
  for (std::uint32_t s = 0; s < job.batch.streams; ++s) {
    const auto f = detail::rowwise_check_bound<Bits>(job, s, largest[s]);
    if (f.code != 0 && first.code == 0) first = f;
  }
  return first;
}

template <int Bits, class T>
void check_rows(std::size_t dim) {
  INFO(Bits << " bits, " << zcoll_test::type_name<T>() << ", dim " << dim);
  const zcoll::RowwiseQuantized<Bits> codec{{.shape = {1, dim}}};
  const batch_input<T> input(row_streams<T>(dim));
  const batch_streams host = zcoll_test::host_batch(codec, input);
  const std::vector<T> expected = zcoll_test::host_decoded<T>(codec, host);
  for (const grid g : {grid{1}, grid{5}, grid{64}}) {
    const grid_streams team = grid_compress(codec, input, g);
    REQUIRE(team.fault.code == 0);
    REQUIRE(team.total == host.total);
    REQUIRE(team.bytes == host.bytes);
    CHECK(team.size == host.size);
    std::vector<T> decoded(input.values.size());
    REQUIRE(grid_decompress<Bits>(std::span<const std::byte>(host.bytes), host.offset, host.size, input.counts,
                                  std::span<T>(decoded), g)
                .code == 0);
    CHECK(std::memcmp(decoded.data(), expected.data(), decoded.size() * sizeof(T)) == 0);
  }
}

template <int Bits, class T>
void check_unrepresentable(T bad, std::size_t dim) {
  const zcoll::RowwiseQuantized<Bits> codec{{.shape = {1, dim}}};
  std::vector<T> values(6 * dim, T(0.5));
  values[4 * dim + dim / 2] = bad;  // row 4
  const std::vector<std::size_t> counts = {values.size()};
  CHECK_THROWS_AS(codec.compress(std::span<const T>(values)), zcoll::argument_error);
  const grid_streams team = grid_compress(codec, batch_input<T>({values}), grid{3});
  CHECK(team.fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::unrepresentable_row));
  CHECK(team.fault.detail == 4);
}

}  // namespace

TEMPLATE_TEST_CASE("rowwise tile: streams are the host driver's bytes and decode to its values", "[rowwise][cuda-tile]",
                   float, double) {
  for (const std::size_t dim : {1, 3, 7, 64, 129}) {
    check_rows<8, TestType>(dim);
    check_rows<4, TestType>(dim);
    check_rows<2, TestType>(dim);
  }
}

TEMPLATE_TEST_CASE("rowwise tile: a row the layout cannot hold is reported as the host raises it", "[rowwise][cuda-tile]",
                   float, double) {
  using lim = std::numeric_limits<TestType>;
  for (const TestType bad : {lim::quiet_NaN(), lim::infinity(), -lim::infinity()}) {
    check_unrepresentable<8, TestType>(bad, 5);
    check_unrepresentable<4, TestType>(bad, 8);
    check_unrepresentable<2, TestType>(bad, 3);
  }
  check_unrepresentable<4, TestType>(TestType(-70000), 8);  // below the lowest f16 bias
  check_unrepresentable<2, TestType>(TestType(300000), 8);  // scale beyond the largest f16
  if constexpr (std::is_same_v<TestType, double>) check_unrepresentable<8, TestType>(-1e300, 4);
}

TEST_CASE("rowwise tile: a damaged stream is refused exactly when the host decoder refuses it", "[rowwise][cuda-tile]") {
  const std::size_t dim = 7;
  const zcoll::Int4 codec{{.shape = {1, dim}}};
  const std::vector<std::vector<float>> streams = row_streams<float>(dim);
  const std::vector<float>& values = streams[3];
  const std::vector<std::byte> stream = codec.compress(std::span<const float>(values));
  const auto decode_both = [&](const std::vector<std::byte>& damaged, std::size_t count) {
    std::vector<float> out(count);
    const auto fault = grid_decompress<4>(std::span<const std::byte>(damaged), {0}, {damaged.size()}, {count},
                                          std::span<float>(out), grid{3});
    return std::pair{zcoll_test::host_refuses<float>(codec, damaged, count), fault.code != 0};
  };
  SECTION("every truncation, a longer stream, another count") {
    for (std::size_t length = 0; length < stream.size(); ++length) {
      INFO("length " << length);
      CHECK(decode_both({stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(length)}, values.size()) ==
            std::pair{true, true});
    }
    std::vector<std::byte> longer = stream;
    longer.push_back(std::byte{0});
    CHECK(decode_both(longer, values.size()) == std::pair{true, true});
    CHECK(decode_both(stream, values.size() - dim) == std::pair{true, true});
  }
  SECTION("random bit flips anywhere in the stream") {
    std::mt19937_64 rng(29);
    int refused = 0;
    for (int trial = 0; trial < 2000; ++trial) {
      std::vector<std::byte> damaged = stream;
      const std::size_t bit = rng() % (8 * stream.size());
      damaged[bit / 8] ^= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
      const auto [host, device] = decode_both(damaged, values.size());
      INFO("bit " << bit);
      CHECK(host == device);
      refused += host ? 1 : 0;
    }
    CHECK(refused > 200);  // header, scales, biases and padding bits matter; codes do not
  }
}
