// zcoll::add on a device (codec/add.cuh): the sum of two streams is the host add's bytes, for streams
// written on either side; streams that differ raise argument_error and damaged ones format_error from
// check_added. The same tile algorithm runs on a host team in codec/detail/pipeline_add_tile_test.cpp.

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/add.cuh"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll::cuda::check_call;

/// A device copy of host bytes (the library allocates none).
class device_copy {
 public:
  explicit device_copy(std::size_t bytes) : bytes_(bytes) { check_call(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
  explicit device_copy(std::span<const std::byte> host) : device_copy(host.size()) {
    check_call(cudaMemcpy(data_, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~device_copy() { cudaFree(data_); }
  device_copy(const device_copy&) = delete;
  device_copy& operator=(const device_copy&) = delete;
  std::span<std::byte> span() const { return {static_cast<std::byte*>(data_), bytes_}; }
  std::vector<std::byte> to_host(std::size_t bytes) const {
    std::vector<std::byte> host(bytes);
    check_call(cudaMemcpy(host.data(), data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return host;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
};

/// The device's sum of a and b (host bytes), after check_added.
template <class T, class Codec>
std::vector<std::byte> device_sum(const Codec& codec, std::size_t count, std::span<const std::byte> a, std::span<const std::byte> b) {
  const zcoll::exec::Cuda exec{};
  const device_copy d_a(a), d_b(b);
  const device_copy d_sum(codec.template max_compressed_size<T>(count));
  const device_copy workspace(zcoll::cuda::add_workspace_bytes(codec, count));
  zcoll::add<T>(exec, codec, count, d_a.span(), d_b.span(), d_sum.span(), workspace.span());
  zcoll::cuda::check_added(exec, workspace.span());
  std::uint64_t bytes = 0;
  check_call(cudaMemcpy(&bytes, zcoll::cuda::added_bytes(workspace.span()), 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return d_sum.to_host(static_cast<std::size_t>(bytes));
}

template <class T>
void check_pairs(const zcoll::FZLight& codec) {
  using lim = std::numeric_limits<T>;
  std::vector<std::pair<std::vector<T>, std::vector<T>>> pairs;
  pairs.push_back({{}, {}});
  pairs.push_back({{T(1.5)}, {T(2.25)}});
  std::vector<T> specials(3000), smooth(3000), negated(3000);
  for (std::size_t i = 0; i < specials.size(); ++i) {
    const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
    smooth[i] = static_cast<T>(std::sin(0.01 * static_cast<double>(i)) * 10.0);
    negated[i] = -smooth[i];
    specials[i] = i % 7 == 0 ? special[(i / 7) % 6] : smooth[i];
  }
  pairs.push_back({specials, smooth});
  pairs.push_back({smooth, negated});
  pairs.push_back({zcoll_test::mixed_input<T>(100'003, T(-999)), zcoll_test::mixed_input<T>(100'003, T(-999), true, 1)});
  pairs.push_back({zcoll_test::mixed_input<T>(20'000, T(-999), false), zcoll_test::mixed_input<T>(20'000, T(-999), false, 2)});
  for (const auto& [x, y] : pairs) {
    INFO(x.size() << " values of " << zcoll_test::type_name<T>() << ", chunk " << codec.config().chunk_values
                  << (codec.config().fill_value ? ", fill value" : ""));
    const auto a = zcoll::compress_to_vector(codec, std::span<const T>(x));
    const auto b = zcoll::compress_to_vector(codec, std::span<const T>(y));
    const auto expected = zcoll::add(zcoll::exec::Host{}, codec, std::span<const std::byte>(a), std::span<const std::byte>(b));
    REQUIRE(device_sum<T>(codec, x.size(), a, b) == expected);
    REQUIRE(device_sum<T>(codec, x.size(), b, a) == expected);
  }
}

}  // namespace

TEST_CASE("CUDA add: device sums are the host add's bytes", "[cuda][add]") {
  for (const std::uint32_t chunk : {256u, 4096u, 32768u}) {
    for (const double eb : {1e-3, 0.0}) {
      zcoll::codec_config config{.error_bound = zcoll::absolute(eb), .chunk_values = chunk};
      check_pairs<float>(zcoll::FZLight{config});
      check_pairs<double>(zcoll::FZLight{config});
      config.fill_value = -999.0;
      check_pairs<float>(zcoll::FZLight{config});
    }
  }
}

TEST_CASE("CUDA add: streams that differ raise argument_error, damaged ones format_error", "[cuda][add]") {
  const auto values = zcoll_test::mixed_input<float>(10'000, -999.0f, false);
  zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3)};
  const zcoll::FZLight codec{config};
  const auto a = zcoll::compress_to_vector(codec, std::span<const float>(values));
  config.error_bound = zcoll::absolute(2e-3);
  const auto other = zcoll::compress_to_vector(zcoll::FZLight{config}, std::span<const float>(values));
  REQUIRE_THROWS_AS(device_sum<float>(codec, values.size(), a, other), zcoll::argument_error);
  const std::span<const std::byte> cut(a.data(), a.size() - 1);
  REQUIRE_THROWS_AS(device_sum<float>(codec, values.size(), a, cut), zcoll::format_error);
  REQUIRE_THROWS_AS(device_sum<float>(codec, values.size() + 1, a, a), zcoll::format_error);
}
