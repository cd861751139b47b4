// The CUDA driver of the row-wise quantizers (codec/rowwise.cuh) on a device: a batch of streams
// quantized in one launch is the host driver's bytes (FBGEMM's layout), sizes included; host streams
// dequantize to the host's values bit for bit; a NaN row raises argument_error from check_quantized; a
// truncated or damaged stream raises format_error from check_decoded. The same per-thread algorithm runs
// on the host in codec/detail/rowwise_tile_test.cpp, where there is no GPU.

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/device_batch.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/rowwise.cuh"

namespace {

using zcoll_test::device_bytes;

template <class T>
std::vector<std::vector<T>> row_streams(std::size_t dim) {
  std::mt19937_64 rng(dim);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const auto rows = [&](std::size_t n, int spread) {
    std::vector<T> v(n * dim);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(std::ldexp(unit(rng), static_cast<int>((i / dim) % spread)));
    return v;
  };
  return {{}, rows(1, 1), std::vector<T>(3 * dim, T(2.5)), rows(100'000, 12), {}, rows(333, 3)};
}

template <int Bits, class T>
void check_against_host(std::size_t dim) {
  INFO(Bits << " bits on " << zcoll_test::type_name<T>() << ", dim " << dim);
  const zcoll::RowwiseQuantized<Bits> codec{{.shape = {1, dim}}};
  const zcoll_test::batch_input<T> input(row_streams<T>(dim));
  const auto host = zcoll_test::host_batch(codec, input);
  device_bytes workspace(zcoll::cuda::compress_workspace_bytes(codec, std::span<const std::size_t>(input.counts)));
  const auto device = zcoll_test::device_batch(codec, input, workspace);
  zcoll::cuda::check_quantized(zcoll::exec::Cuda{}, workspace.span(), input.counts.size());
  CHECK(device.bytes == host.bytes);
  CHECK(device.offset == host.offset);
  CHECK(device.size == host.size);
  const auto decoded = zcoll_test::device_decoded(codec, host, input, workspace);
  const auto expected = zcoll_test::host_decoded<T>(codec, host);
  CHECK(std::memcmp(decoded.data(), expected.data(), decoded.size() * sizeof(T)) == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("cuda rowwise: device streams are the host's bytes and decode to its values", "[cuda][rowwise]", float,
                   double) {
  for (const std::size_t dim : {1, 7, 64, 129}) {
    check_against_host<8, TestType>(dim);
    check_against_host<4, TestType>(dim);
    check_against_host<2, TestType>(dim);
  }
}

TEST_CASE("cuda rowwise: a NaN row and a damaged stream raise the host's errors", "[cuda][rowwise]") {
  const std::size_t dim = 16;
  const zcoll::Int4 codec{{.shape = {1, dim}}};
  const zcoll::exec::Cuda exec{};
  std::vector<float> values(64 * dim, 0.5f);
  values[5 * dim + 3] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::size_t> counts = {values.size()};
  device_bytes d_values = device_bytes::from(std::span<const float>(values));
  device_bytes d_out(codec.max_compressed_size<float>(values.size()));
  device_bytes workspace(zcoll::cuda::compress_workspace_bytes(codec, counts));
  zcoll::compress(exec, codec, std::span<const float>(d_values.as<float>(), values.size()), d_out.span(), workspace.span());
  CHECK_THROWS_AS(zcoll::cuda::check_quantized(exec, workspace.span(), 1), zcoll::argument_error);

  values[5 * dim + 3] = 0.25f;
  const auto stream = codec.compress(std::span<const float>(values));
  device_bytes d_decoded(values.size() * sizeof(float));
  const auto decode = [&](std::span<const std::byte> bytes) {
    device_bytes d_in = device_bytes::from(bytes);
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_in.span()), std::span<float>(d_decoded.as<float>(), values.size()),
                      workspace.span());
    zcoll::cuda::check_decoded(exec, workspace.span(), 1);
  };
  CHECK_NOTHROW(decode(stream));
  CHECK_THROWS_AS(decode(std::span<const std::byte>(stream).first(stream.size() - 1)), zcoll::format_error);
  std::vector<std::byte> damaged = stream;
  damaged[zcoll::Int4::prefix_size_bytes + zcoll::Int4::layout::code_bytes(dim) + 1] ^= std::byte{0x80};  // a scale's sign
  CHECK_THROWS_AS(decode(damaged), zcoll::format_error);
}
