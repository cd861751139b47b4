#pragma once
/// The CUDA driver of Cast<Format> (FP16, BF16, FP8E4M3, FP8E5M2): a batch of streams compressed in one
/// launch into one output buffer (plus a one-block launch that writes the headers), decompressed in one.
/// The streams are the host driver's bytes (codec/detail/cast_tile.hpp says how), so a stream cast here
/// decodes on the host and the other way round.
///
///     zcoll::FP16 codec;
///     // device buffers the caller allocates once: d_out of zcoll::batch_max_compressed_size<float>(codec, counts)
///     // bytes (exactly what is written), d_workspace of cuda::compress_workspace_bytes(codec, counts) bytes
///     zcoll::compress_batch(zcoll::exec::Cuda{stream}, codec, d_values, counts, d_out, d_workspace);
///     zcoll::decompress_batch(exec, codec, d_in, offsets, sizes, d_values, counts, d_workspace);
///     zcoll::cuda::check_decoded(exec, d_workspace, counts.size());   // waits; format_error if one did not decode
///
/// As the pipeline driver (codec/pipeline.cuh): nothing allocates, copies back or synchronises; the
/// workspace has the same layout, so cuda::results_of and cuda::check_decoded serve both. The sizes are
/// known on the host too (max_compressed_size is exact for a cast).

#include <cuda_runtime_api.h>

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/detail/cast_tile.hpp"
#include "zcoll/codec/detail/stream_kernels.cuh"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/core/exec.cuh"

namespace zcoll::cuda {

namespace detail {

template <class Format, floating_value T>
__global__ void __launch_bounds__(elementwise_threads) cast_encode(zcoll::detail::cast_compress_job<T> job) {
  const std::uint32_t s = blockIdx.y;
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * elementwise_threads + threadIdx.x;
  const std::uint64_t threads = std::uint64_t{gridDim.x} * elementwise_threads;
  const unsigned long long mine = zcoll::detail::cast_encode_part<Format>(job, s, thread, threads);
  using reduce = cub::BlockReduce<unsigned long long, elementwise_threads>;
  __shared__ typename reduce::TempStorage storage;
  const unsigned long long largest = reduce(storage).Reduce(mine, ::cuda::maximum<>{});
  if (threadIdx.x == 0 && largest != 0) atomicMax(&job.largest[s], largest);
}

template <class Format, floating_value T>
__global__ void cast_finish(zcoll::detail::cast_compress_job<T> job) {
  const std::uint32_t s = threadIdx.x;
  if (s < job.batch.streams) zcoll::detail::cast_finish_stream<Format>(job, s, static_cast<bits_of<T>>(job.largest[s]));
}

template <class Format, floating_value T>
__global__ void __launch_bounds__(elementwise_threads) cast_decode(zcoll::detail::cast_decompress_job<T> job,
                                                                   zcoll::detail::decode_fault* fault) {
  const std::uint32_t s = blockIdx.y;
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * elementwise_threads + threadIdx.x;
  const auto f = zcoll::detail::cast_decode_part<Format>(job, s, thread, std::uint64_t{gridDim.x} * elementwise_threads);
  if (f.code != 0 && thread == 0) report_fault(fault, f);
}

}  // namespace detail

/// Workspace (device bytes) compress_batch and decompress_batch need for a batch of `counts`.
template <class Format>
std::size_t compress_workspace_bytes(const Cast<Format>&, std::span<const std::size_t> counts) {
  return detail::workspace_without_tiles(counts.size()).tile_states_at;
}
template <class Format>
std::size_t decompress_workspace_bytes(const Cast<Format>& codec, std::span<const std::size_t> counts) {
  return compress_workspace_bytes(codec, counts);
}

}  // namespace zcoll::cuda

namespace zcoll {

/// Casts the streams of a batch: stream s is values [sum(counts[0..s)), + counts[s]) of `values`, written
/// as the host driver writes it right after stream s - 1 in `out`. Two launches, no synchronisation;
/// sizes and offsets also land in `workspace` (cuda::results_of), as the pipeline driver's do.
template <class Format, floating_value T>
void compress_batch(const exec::Cuda& exec, const Cast<Format>& codec, std::span<const T> values,
                    std::span<const std::size_t> counts, std::span<std::byte> out, std::span<std::byte> workspace) {
  namespace cd = cuda::detail;
  detail::cast_compress_job<T> job;
  job.batch = detail::compression_batch<T>("compress_batch", codec, counts, values.size(), out.size());
  const cd::stream_workspace w = cd::prepare_workspace("compress_batch", exec, workspace, counts.size());
  job.values = values.data();
  job.out = out.data();
  job.largest = w.words;
  job.results = {w.results.stream_offset, w.results.stream_bytes, w.results.total_bytes};
  cd::cast_encode<Format, T><<<dim3(cd::elementwise_blocks(job.batch), job.batch.streams), cd::elementwise_threads, 0,
                               exec.stream>>>(job);
  cuda::check_call(cudaGetLastError(), "compress_batch: cast kernel");
  cd::cast_finish<Format, T><<<1, detail::max_batch_streams, 0, exec.stream>>>(job);
  cuda::check_call(cudaGetLastError(), "compress_batch: header kernel");
}

/// Decodes stream s, the `stream_bytes[s]` bytes at `in` + `stream_offset[s]` (host arrays), into values
/// [sum(counts[0..s)), + counts[s]) of `values`, all streams in one launch; a stream that does not decode
/// is reported by cuda::check_decoded() (its values are not written).
template <class Format, floating_value T>
void decompress_batch(const exec::Cuda& exec, const Cast<Format>&, std::span<const std::byte> in,
                      std::span<const std::uint64_t> stream_offset, std::span<const std::uint64_t> stream_bytes,
                      std::span<T> values, std::span<const std::size_t> counts, std::span<std::byte> workspace) {
  namespace cd = cuda::detail;
  detail::cast_decompress_job<T> job;
  job.batch = detail::decompression_batch("decompress_batch", counts, values.size(), in.size(), stream_offset, stream_bytes);
  cd::check_apart(in, std::span<const T>(values));
  const cd::stream_workspace w = cd::prepare_workspace("decompress_batch", exec, workspace, counts.size());
  job.in = in.data();
  job.values = values.data();
  cd::cast_decode<Format, T><<<dim3(cd::elementwise_blocks(job.batch), job.batch.streams), cd::elementwise_threads, 0,
                               exec.stream>>>(job, w.fault);
  cuda::check_call(cudaGetLastError(), "decompress_batch: cast kernel");
}

}  // namespace zcoll
