// The CUDA driver of the pipeline (codec/pipeline.cuh) on a device: its streams are the host driver's
// byte for byte, one stream or a batch in one launch; it decodes host streams to the host's values; a
// truncated or damaged stream raises format_error from check_decoded. The same tile algorithm runs on a
// host team in codec/detail/pipeline_tile_test.cpp, where there is no GPU.

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "support/device_batch.hpp"
#include "support/device_bytes.hpp"
#include "support/huffman_inputs.hpp"
#include "support/vector_lz_inputs.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll_test::device_bytes;

template <class T>
std::vector<std::vector<T>> inputs() {
  using lim = std::numeric_limits<T>;
  std::vector<std::vector<T>> all{{}, {T(1.5)}, std::vector<T>(100, T(3.25))};
  std::vector<T> specials(3000);
  for (std::size_t i = 0; i < specials.size(); ++i) {
    const T special[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
    specials[i] = i % 7 == 0 ? special[(i / 7) % 6] : static_cast<T>(std::sin(0.01 * static_cast<double>(i)));
  }
  all.push_back(specials);
  all.push_back(zcoll_test::mixed_input<T>(100'003, T(-999)));
  all.push_back(zcoll_test::mixed_input<T>(20'000, T(-999), false));
  return all;
}

template <class Codec, class T>
void check_against_host(const Codec& codec) {
  cudaStream_t stream;
  zcoll::cuda::check_call(cudaStreamCreate(&stream), "cudaStreamCreate");
  const zcoll::exec::Cuda exec{stream};
  for (const auto& values : inputs<T>()) {
    INFO(values.size() << " values of " << zcoll_test::type_name<T>() << ", bound "
                       << zcoll::to_string(codec.config().error_bound) << ", chunk " << codec.config().chunk_values);
    const auto expected = zcoll::compress(codec, std::span<const T>(values));
    const std::size_t counts[] = {values.size()};
    auto d_values = device_bytes::from(std::span<const T>(values));
    device_bytes d_out(zcoll::batch_max_compressed_size<T>(codec, counts));
    device_bytes workspace(zcoll::cuda::compress_workspace_bytes(codec, counts));
    zcoll::compress(exec, codec, std::span<const T>(d_values.template as<T>(), values.size()), d_out.span(), workspace.span());
    const auto results = zcoll::cuda::results_of(workspace.span(), 1);
    std::uint64_t total = 0;
    zcoll::cuda::check_call(cudaMemcpyAsync(&total, results.total_bytes, 8, cudaMemcpyDeviceToHost, stream), "size");
    zcoll::cuda::check_call(cudaStreamSynchronize(stream), "compress");
    REQUIRE(total == expected.size());
    REQUIRE(d_out.template to_host<std::byte>(total) == expected);

    // The host's stream decoded on the device.
    auto d_stream = device_bytes::from(std::span<const std::byte>(expected));
    device_bytes d_decoded(values.size() * sizeof(T));
    const std::uint64_t offset[] = {0};
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_stream.span()),
                      std::span<T>(d_decoded.template as<T>(), values.size()), workspace.span());
    zcoll::cuda::check_decoded(exec, workspace.span(), 1);
    const auto decoded = d_decoded.template to_host<T>(values.size());
    const auto host = codec.template decompress<T>(std::span<const std::byte>(expected));
    for (std::size_t i = 0; i < values.size(); ++i) {
      INFO("value " << i);
      REQUIRE(zcoll_test::same_bits(host[i], decoded[i]));
    }

    // Truncated by one byte: a format_error, not a hang or a fault.
    if (!expected.empty()) {
      const std::uint64_t short_bytes[] = {expected.size() - 1};
      zcoll::decompress_batch(exec, codec, std::span<const std::byte>(d_stream.span()), offset, short_bytes,
                              std::span<T>(d_decoded.template as<T>(), values.size()), counts, workspace.span());
      REQUIRE_THROWS_AS(zcoll::cuda::check_decoded(exec, workspace.span(), 1), zcoll::format_error);
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace

TEST_CASE("CUDA FZLight: device streams are the host's and decode to the host's values", "[cuda][pipeline]") {
  for (const std::uint32_t chunk : {256u, 4096u, 32768u}) {
    for (const auto eb : {zcoll::absolute(1e-3), zcoll::absolute(0), zcoll::relative(1e-4)}) {
      zcoll::codec_config config{.error_bound = eb, .chunk_values = chunk};
      check_against_host<zcoll::FZLight, float>(zcoll::FZLight{config});
      check_against_host<zcoll::FZLight, double>(zcoll::FZLight{config});
      config.fill_value = -999.0;
      check_against_host<zcoll::FZLight, float>(zcoll::FZLight{config});
    }
  }
}

TEST_CASE("CUDA FZLight: an all-to-all's blocks compress in one launch, packed as the host writes them",
          "[cuda][pipeline][batch]") {
  const zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-4)}};
  std::vector<float> values;
  std::vector<std::size_t> counts;
  for (std::size_t s = 0; s < 7; ++s) {
    auto block = zcoll_test::mixed_input<float>(1000 + 4093 * s, -1.0f, s % 2 == 0, s);
    if (s == 3) block.clear();
    counts.push_back(block.size());
    values.insert(values.end(), block.begin(), block.end());
  }
  const zcoll::exec::Cuda exec{};
  auto d_values = device_bytes::from(std::span<const float>(values));
  device_bytes d_out(zcoll::batch_max_compressed_size<float>(codec, counts));
  device_bytes workspace(zcoll::cuda::compress_workspace_bytes(codec, counts));
  zcoll::compress_batch(exec, codec, std::span<const float>(d_values.as<float>(), values.size()), counts, d_out.span(),
                        workspace.span());
  const auto results = zcoll::cuda::results_of(workspace.span(), counts.size());
  std::vector<std::uint64_t> offset(counts.size()), bytes(counts.size());
  zcoll::cuda::check_call(cudaMemcpy(offset.data(), results.stream_offset, 8 * counts.size(), cudaMemcpyDeviceToHost), "offsets");
  zcoll::cuda::check_call(cudaMemcpy(bytes.data(), results.stream_bytes, 8 * counts.size(), cudaMemcpyDeviceToHost), "sizes");
  std::size_t first = 0, at = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    INFO("block " << s);
    const auto expected = zcoll::compress(codec, std::span<const float>(values).subspan(first, counts[s]));
    REQUIRE(offset[s] == at);
    REQUIRE(bytes[s] == expected.size());
    REQUIRE(d_out.to_host<std::byte>(expected.size(), at) == expected);
    first += counts[s];
    at += expected.size();
  }
  device_bytes d_decoded(values.size() * sizeof(float));
  zcoll::decompress_batch(exec, codec, std::span<const std::byte>(d_out.span()), offset, bytes,
                          std::span<float>(d_decoded.as<float>(), values.size()), counts, workspace.span());
  zcoll::cuda::check_decoded(exec, workspace.span(), counts.size());
  const auto decoded = d_decoded.to_host<float>(values.size());
  first = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    const auto host = codec.decompress<float>(std::span<const std::byte>(d_out.to_host<std::byte>(bytes[s], offset[s])));
    for (std::size_t i = 0; i < counts[s]; ++i) REQUIRE(zcoll_test::same_bits(host[i], decoded[first + i]));
    first += counts[s];
  }
}

namespace {

/// Pipelines encoded on the host (Huffman, VectorLZ) on the device: host streams of every input in one
/// batch decode in one launch (plus the model kernel) to the host decoder's values, bit for bit.
template <class Codec, class T>
void check_host_encoded_batch(const zcoll::codec_config& config, const std::vector<std::vector<T>>& inputs) {
  const Codec codec(config);
  INFO(codec.name() << " on " << zcoll_test::type_name<T>() << ", chunk " << config.chunk_values);
  const zcoll_test::batch_input<T> input(inputs);
  const auto host = zcoll_test::host_batch(codec, input);
  device_bytes workspace(zcoll::cuda::decompress_workspace_bytes(codec, std::span<const std::size_t>(input.counts)));
  const auto decoded = zcoll_test::device_decoded(codec, host, input, workspace);
  const auto expected = zcoll_test::host_decoded<T>(codec, host);
  REQUIRE(decoded.size() == expected.size());
  CHECK(std::memcmp(decoded.data(), expected.data(), decoded.size() * sizeof(T)) == 0);
}

/// Damaged and truncated streams of `x`: the device refuses them (format_error) exactly when the host
/// decoder does, and otherwise decodes the host's values.
template <class Codec>
void check_damaged_streams(const Codec& codec, const std::vector<float>& x) {
  const auto stream = zcoll::compress_to_vector(codec, std::span<const float>(x));
  std::mt19937_64 rng(zcoll_test::seed);
  const zcoll::exec::Cuda exec{};
  const std::size_t counts[] = {x.size()};
  device_bytes workspace(zcoll::cuda::decompress_workspace_bytes(codec, counts));
  device_bytes d_values(x.size() * sizeof(float));
  int refused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    auto damaged = stream;
    if (trial % 4 == 3) {
      damaged.resize(rng() % stream.size());
    } else {
      damaged[rng() % std::min<std::size_t>(damaged.size(), 600)] ^= static_cast<std::byte>(1u << (rng() % 8));
    }
    zcoll::stream_header h;
    if (zcoll::parse_stream_header(damaged.data(), damaged.size(), h) == zcoll::header_fault::none &&
        h.chunk_values != codec.config().chunk_values) {
      continue;  // the device decodes with the codec's chunk length; the host follows the header
    }
    const bool host_refuses = zcoll_test::host_refuses<float>(codec, damaged, x.size());
    device_bytes d_in = device_bytes::from(std::span<const std::byte>(damaged));
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_in.span().data(), damaged.size()),
                      std::span<float>(d_values.as<float>(), x.size()), workspace.span());
    bool device_refuses = false;
    try {
      zcoll::cuda::check_decoded(exec, workspace.span(), 1);
    } catch (const zcoll::format_error&) {
      device_refuses = true;
    }
    INFO("trial " << trial);
    REQUIRE(device_refuses == host_refuses);
    if (!host_refuses) {
      const auto host = codec.template decompress<float>(std::span<const std::byte>(damaged));
      const auto device = d_values.to_host<float>(x.size());
      REQUIRE(std::memcmp(host.data(), device.data(), x.size() * sizeof(float)) == 0);
    }
    refused += device_refuses;
  }
  CHECK(refused > 50);
}

}  // namespace

TEMPLATE_TEST_CASE("CUDA Huffman pipelines: host streams decode on the device to the host's values", "[cuda][pipeline][huffman]",
                   float, double) {
  zcoll_test::for_each_huffman_config([]<class Codec>(const zcoll::codec_config& config) {
    check_host_encoded_batch<Codec, TestType>(config, zcoll_test::huffman_inputs<TestType>());
  });
}

TEST_CASE("CUDA Huffman pipelines: damaged streams raise format_error when the host decoder refuses them",
          "[cuda][pipeline][huffman][corruption]") {
  check_damaged_streams(zcoll::EmbeddingHuffman({.error_bound = zcoll::absolute(1e-3), .chunk_values = 512, .fill_value = -999.0}),
                        zcoll_test::mixed_input<float>(4001, -999.0f));
}

TEMPLATE_TEST_CASE("CUDA VectorLZ pipelines: host streams decode on the device to the host's values", "[cuda][pipeline][vector-lz]",
                   float, double) {
  zcoll_test::for_each_vector_lz_config([](const zcoll::codec_config& config) {
    check_host_encoded_batch<zcoll::EmbeddingLZ, TestType>(config, zcoll_test::vector_lz_inputs<TestType>(config.shape.back()));
  });
}

TEST_CASE("CUDA VectorLZ pipelines: damaged streams raise format_error when the host decoder refuses them",
          "[cuda][pipeline][vector-lz][corruption]") {
  std::mt19937_64 rng(zcoll_test::seed);
  for (const std::size_t dim : {std::size_t{4}, std::size_t{32}}) {
    auto x = zcoll_test::lookups<float>(dim, 4000 / dim, 20, dim / 2, 0.05, rng);
    for (std::size_t i = 0; i < x.size(); i += 29) x[i] = -999.0f;
    check_damaged_streams(zcoll::EmbeddingLZ(zcoll_test::lz_config(512, dim, true)), x);
  }
}
