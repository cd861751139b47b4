// The CUDA driver of TopK (codec/topk.cuh) on a device: its streams are the host driver's bytes and its
// residuals the host's, for every input of support/topk_inputs.hpp, both index forms, f32 and f64, a
// 16 Mi-value gradient, and a threshold reused over its life span; it decodes host streams to the host's
// values bit for bit; truncated and damaged streams raise format_error from check_decoded exactly when
// the host decoder raises one. The same algorithm runs on the host in codec/detail/topk_tile_test.cpp.

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "support/device_bytes.hpp"
#include "support/test_support.hpp"
#include "support/topk_inputs.hpp"
#include "zcoll/codec/topk.cuh"

namespace {

using zcoll_test::device_bytes;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// One tensor on the device: its values, residual, output and workspace, compressed call after call.
template <class T>
struct device_tensor {
  explicit device_tensor(const zcoll::TopK& codec, std::size_t n)
      : values(n * sizeof(T)),
        residual(n * sizeof(T)),
        out(zcoll::TopK::max_compressed_size<T>(n)),
        workspace(zcoll::cuda::compress_workspace_bytes(codec, n)),
        n(n) {}

  /// Compresses `x` with the tensor's schedule; the stream, and the residual written beside it.
  std::vector<std::byte> compress(const zcoll::TopK& codec, const std::vector<T>& x, std::vector<T>& residual_out) {
    zcoll::cuda::check_call(cudaMemcpy(values.span().data(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
    const zcoll::exec::Cuda exec{};
    zcoll::compress(exec, codec, schedule, std::span<const T>(values.as<T>(), n), out.span(), workspace.span(),
                    std::span<T>(residual.as<T>(), n));
    std::uint64_t bytes = 0;
    zcoll::cuda::check_call(cudaMemcpy(&bytes, zcoll::cuda::results_of(workspace.span(), 1).stream_bytes, sizeof bytes,
                                       cudaMemcpyDeviceToHost),
                            "cudaMemcpy");
    residual_out = residual.to_host<T>(n);
    return out.to_host<std::byte>(bytes);
  }

  device_bytes values, residual, out, workspace;
  std::size_t n;
  zcoll::cuda::topk_schedule schedule;
};

/// Decodes `stream` on the device into `count` values: the values, or nothing when check_decoded raised.
template <class T>
std::optional<std::vector<T>> device_decoded(const zcoll::TopK& codec, std::span<const std::byte> stream, std::size_t count) {
  device_bytes d_stream = device_bytes::from(stream);
  device_bytes d_values(count * sizeof(T));
  device_bytes workspace(zcoll::cuda::decompress_workspace_bytes(codec, count, stream.size()));
  const zcoll::exec::Cuda exec{};
  zcoll::decompress(exec, codec, std::span<const std::byte>(d_stream.span().data(), stream.size()),
                    std::span<T>(d_values.as<T>(), count), workspace.span());
  try {
    zcoll::cuda::check_decoded(exec, workspace.span(), 1);
  } catch (const zcoll::format_error&) {
    return std::nullopt;
  }
  return d_values.to_host<T>(count);
}

template <class T>
void check_inputs_against_host() {
  for (const double fraction : {0.001, 0.01, 0.1, 0.3, 1.0}) {
    const zcoll::TopK codec{{}, {.keep_fraction = fraction}};
    for (const auto& x : zcoll_test::topk_inputs<T>()) {
      INFO(zcoll_test::type_name<T>() << ", keep " << fraction << ", n = " << x.size());
      zcoll::TopK::state host_state;
      std::vector<T> host_residual(x.size());
      std::vector<std::byte> host(zcoll::TopK::max_compressed_size<T>(x.size()));
      const auto written = codec.compress_with_residual(zcoll::exec::Host{}, host_state, x, host, std::span<T>(host_residual));
      device_tensor<T> tensor(codec, x.size());
      std::vector<T> residual;
      const auto stream = tensor.compress(codec, x, residual);
      REQUIRE(stream == std::vector<std::byte>(written.begin(), written.end()));
      REQUIRE(same_bits(residual, host_residual));
      const auto report = zcoll::cuda::topk_report_of<T>(zcoll::exec::Cuda{}, codec, tensor.workspace.span(), x.size());
      CHECK(report.kept_count == host_state.last.kept_count);
      CHECK(report.threshold == host_state.last.threshold);
      CHECK(report.max_dropped_magnitude == host_state.last.max_dropped_magnitude);
      const auto decoded = device_decoded<T>(codec, stream, x.size());
      REQUIRE(decoded.has_value());
      REQUIRE(same_bits(*decoded, codec.decompress<T>(stream)));
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("cuda topk: device streams and residuals are the host's, and decode to its values", "[cuda][topk]", float,
                   double) {
  check_inputs_against_host<TestType>();
}

TEST_CASE("cuda topk: a 16 Mi-value gradient and a threshold reused over its life span", "[cuda][topk][large]") {
  const std::size_t n = std::size_t{1} << 24;
  const zcoll::TopK codec{{}, {.keep_fraction = 0.01, .threshold_life_span = 3}};
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  zcoll::TopK::state host_state;
  device_tensor<float> tensor(codec, n);
  for (int call = 0; call < 5; ++call) {
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng) * static_cast<float>(1 + call);
    std::vector<std::byte> host(zcoll::TopK::max_compressed_size<float>(n));
    std::vector<float> host_residual(n), residual;
    const auto written = codec.compress_with_residual(zcoll::exec::Host{}, host_state, x, host, std::span<float>(host_residual));
    const auto stream = tensor.compress(codec, x, residual);
    REQUIRE(stream == std::vector<std::byte>(written.begin(), written.end()));
    REQUIRE(same_bits(residual, host_residual));
    const auto report = zcoll::cuda::topk_report_of<float>(zcoll::exec::Cuda{}, codec, tensor.workspace.span(), n);
    CHECK(report.threshold_recomputed == (call % 3 == 0));
    CHECK(report.threshold == host_state.last.threshold);
  }
}

TEMPLATE_TEST_CASE("cuda topk: damaged and truncated streams raise format_error when the host's decoder does",
                   "[cuda][topk][corruption]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(17);
  for (const double fraction : {0.002, 0.3}) {
    const zcoll::TopK codec{{}, {.keep_fraction = fraction}};
    for (const auto& x : zcoll_test::topk_inputs<T>()) {
      if (x.size() > 6000) continue;
      const std::vector<std::byte> stream = codec.compress(x);
      const auto agree = [&](std::span<const std::byte> s) {
        std::optional<std::vector<T>> host;
        try {
          host = codec.decompress<T>(s);
          if (host->size() != x.size()) host.reset();
        } catch (const zcoll::format_error&) {
        }
        const auto device = device_decoded<T>(codec, s, x.size());
        REQUIRE(host.has_value() == device.has_value());
        if (host) REQUIRE(same_bits(*host, *device));
      };
      for (std::size_t cut = 0; cut < stream.size(); cut += 1 + stream.size() / 16) agree(std::span(stream).first(cut));
      for (int trial = 0; trial < 48 && !stream.empty(); ++trial) {
        auto damaged = stream;
        damaged[rng() % stream.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
        agree(damaged);
      }
    }
  }
}

TEST_CASE("cuda topk: arguments are checked at the call", "[cuda][topk]") {
  const zcoll::exec::Cuda exec{};
  const std::size_t n = 1000;
  device_bytes values(n * sizeof(float)), out(zcoll::TopK::max_compressed_size<float>(n));
  const zcoll::TopK laplace{{}, {.keep_fraction = 0.01, .threshold = zcoll::sparsify::threshold_method::laplace}};
  const zcoll::TopK exact{{}, {.keep_fraction = 0.01}};
  device_bytes workspace(zcoll::cuda::compress_workspace_bytes(exact, n));
  const std::span<const float> v(values.as<float>(), n);
  CHECK_THROWS_AS(zcoll::compress(exec, laplace, v, out.span(), workspace.span()), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::compress(exec, exact, v, out.span().first(100), workspace.span()), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::compress(exec, exact, v, out.span(), workspace.span().first(64)), zcoll::argument_error);
  zcoll::cuda::topk_schedule schedule;
  CHECK_THROWS_AS(zcoll::compress(exec, exact, schedule, v, out.span(), workspace.span(), std::span<float>(values.as<float>(), 10)),
                  zcoll::argument_error);
}
