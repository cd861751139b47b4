#pragma once
// The device drivers' compress_batch and decompress_batch on a batch_input (support/batch_streams.hpp),
// with the results read back to the host, for the CUDA tests to hold against the host driver's.
// Only sources nvcc compiles include this. The calls are unqualified: argument-dependent lookup finds
// the driver of each codec, whichever .cuh declares it.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "support/batch_streams.hpp"
#include "support/device_bytes.hpp"
#include "zcoll/codec/pipeline.cuh"

namespace zcoll_test {

/// compress_batch on the device into a buffer of the host's size; the bytes, offsets and sizes read back.
/// `workspace` keeps what the launch left (a fault record for check_quantized).
template <class C, class T>
batch_streams device_batch(const C& codec, const batch_input<T>& input, device_bytes& workspace) {
  const zcoll::exec::Cuda exec{};
  const std::span<const std::size_t> counts(input.counts);
  device_bytes d_values = device_bytes::from(std::span<const T>(input.values));
  device_bytes d_out(zcoll::batch_max_compressed_size<T>(codec, counts));
  compress_batch(exec, codec, std::span<const T>(d_values.as<T>(), input.values.size()), counts, d_out.span(),
                 workspace.span());
  batch_streams out;
  out.bytes = d_out.to_host<std::byte>(d_out.span().size());
  const auto results = zcoll::cuda::results_of(workspace.span(), counts.size());
  out.offset.resize(counts.size());
  out.size.resize(counts.size());
  zcoll::cuda::check_call(cudaMemcpy(out.offset.data(), results.stream_offset, 8 * counts.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  zcoll::cuda::check_call(cudaMemcpy(out.size.data(), results.stream_bytes, 8 * counts.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  zcoll::cuda::check_call(cudaMemcpy(&out.total, results.total_bytes, 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return out;
}

/// decompress_batch on the device of the streams of `batch`, after check_decoded; the values read back.
template <class T, class C>
std::vector<T> device_decoded(const C& codec, const batch_streams& batch, const batch_input<T>& input, device_bytes& workspace) {
  const zcoll::exec::Cuda exec{};
  device_bytes d_in = device_bytes::from(std::span<const std::byte>(batch.bytes));
  device_bytes d_values(input.values.size() * sizeof(T));
  decompress_batch(exec, codec, d_in.span(), std::span<const std::uint64_t>(batch.offset),
                   std::span<const std::uint64_t>(batch.size), std::span<T>(d_values.as<T>(), input.values.size()),
                   std::span<const std::size_t>(input.counts), workspace.span());
  zcoll::cuda::check_decoded(exec, workspace.span(), input.counts.size());
  return d_values.to_host<T>(input.values.size());
}

}  // namespace zcoll_test
