// The CUDA driver of the casts (codec/cast.cuh) on a device: a batch of streams cast in one launch is the
// host driver's bytes, stream sizes included; host streams decode to the host's values bit for bit; a
// truncated or foreign stream raises format_error from check_decoded. The same per-thread algorithm runs
// on the host in codec/detail/cast_tile_test.cpp, where there is no GPU.

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "support/device_batch.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/cast.cuh"
#include "zcoll/codec/compress.hpp"

namespace {

using zcoll_test::device_bytes;

template <class T>
std::vector<std::vector<T>> cast_streams() {
  using lim = std::numeric_limits<T>;
  std::vector<T> specials(3001);
  const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max(), T(449), T(70000)};
  for (std::size_t i = 0; i < specials.size(); ++i) {
    specials[i] = i % 7 == 0 ? special[(i / 7) % 8] : static_cast<T>(std::sin(0.01 * static_cast<double>(i)));
  }
  return {{}, {T(1.5)}, std::vector<T>(100, T(3.25)), specials, zcoll_test::mixed_input<T>(1'000'003, T(-999)), {}};
}

template <class Codec, class T>
void check_against_host(const Codec& codec) {
  INFO(Codec::name() << " on " << zcoll_test::type_name<T>());
  const zcoll_test::batch_input<T> input(cast_streams<T>());
  const auto host = zcoll_test::host_batch(codec, input);
  device_bytes workspace(zcoll::cuda::compress_workspace_bytes(codec, std::span<const std::size_t>(input.counts)));
  const auto device = zcoll_test::device_batch(codec, input, workspace);
  CHECK(device.bytes == host.bytes);
  CHECK(device.offset == host.offset);
  CHECK(device.size == host.size);
  CHECK(device.total == host.total);
  const auto decoded = zcoll_test::device_decoded(codec, host, input, workspace);
  const auto expected = zcoll_test::host_decoded<T>(codec, host);
  CHECK(std::memcmp(decoded.data(), expected.data(), decoded.size() * sizeof(T)) == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("cuda cast: device streams are the host's bytes and decode to its values", "[cuda][cast]", float, double) {
  check_against_host<zcoll::FP16, TestType>(zcoll::FP16{});
  check_against_host<zcoll::BF16, TestType>(zcoll::BF16{});
  check_against_host<zcoll::FP8E4M3, TestType>(zcoll::FP8E4M3{});
  check_against_host<zcoll::FP8E5M2, TestType>(zcoll::FP8E5M2{});
}

TEST_CASE("cuda cast: a truncated or foreign stream raises format_error from check_decoded", "[cuda][cast]") {
  const zcoll::exec::Cuda exec{};
  const std::vector<float> values = zcoll_test::mixed_input<float>(5000, -999.0f);
  const auto stream = zcoll::BF16{}.compress(std::span<const float>(values));
  device_bytes d_decoded(values.size() * sizeof(float));
  device_bytes workspace(zcoll::cuda::decompress_workspace_bytes(zcoll::BF16{}, std::vector<std::size_t>{values.size()}));
  const auto decode = [&](const zcoll::BF16& codec, std::span<const std::byte> bytes) {
    auto d_in = device_bytes::from(bytes);
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_in.span()), std::span<float>(d_decoded.as<float>(), values.size()),
                      workspace.span());
    zcoll::cuda::check_decoded(exec, workspace.span(), 1);
  };
  CHECK_NOTHROW(decode(zcoll::BF16{}, stream));
  CHECK_THROWS_AS(decode(zcoll::BF16{}, std::span<const std::byte>(stream).first(stream.size() - 1)), zcoll::format_error);
  CHECK_THROWS_AS(decode(zcoll::BF16{}, std::span<const std::byte>(stream).first(20)), zcoll::format_error);
  const auto fp16 = zcoll::FP16{}.compress(std::span<const float>(values));
  CHECK_THROWS_AS(decode(zcoll::BF16{}, fp16), zcoll::format_error);
}
