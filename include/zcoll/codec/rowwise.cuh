#pragma once
/// The CUDA driver of RowwiseQuantized<Bits> (Int8, Int4, Int2: FBGEMM's fused row-wise layout): a batch
/// of streams quantized in one launch into one output buffer (plus a one-block launch for the headers),
/// dequantized in one (plus one that checks each header's bound). The streams are the host driver's bytes
/// (codec/detail/rowwise_tile.hpp says how), so rows quantized here dequantize on the host, in FBGEMM or
/// TorchRec, and the other way round.
///
///     zcoll::Int4 codec{{.shape = {rows, dim}}};
///     // device buffers the caller allocates once: d_out of zcoll::batch_max_compressed_size<float>(codec, counts)
///     // bytes (exactly what is written), d_workspace of cuda::compress_workspace_bytes(codec, counts) bytes
///     zcoll::compress_batch(zcoll::exec::Cuda{stream}, codec, d_values, counts, d_out, d_workspace);
///     zcoll::cuda::check_quantized(exec, d_workspace, counts.size());   // waits; argument_error for a NaN row
///     zcoll::decompress_batch(exec, codec, d_in, offsets, sizes, d_values, counts, d_workspace);
///     zcoll::cuda::check_decoded(exec, d_workspace, counts.size());     // waits; format_error if one did not decode
///
/// As the pipeline driver (codec/pipeline.cuh): nothing allocates, copies back or synchronises; the
/// workspace has the same layout, so cuda::results_of and cuda::check_decoded serve all drivers. A row
/// the layout cannot hold (NaN, ±Inf, a range beyond f16 or f32) is recorded, not thrown: the host
/// driver's argument_error comes from cuda::check_quantized, which names the stream and one such row
/// (not necessarily the first: rows are quantized in parallel); the stream's other rows are written.

#include <cuda_runtime_api.h>

#include <cub/block/block_reduce.cuh>

#include <cstddef>
#include <cstdint>
#include <span>

#include "zcoll/codec/detail/rowwise_tile.hpp"
#include "zcoll/codec/detail/stream_kernels.cuh"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/core/exec.cuh"

namespace zcoll::cuda {

namespace detail {

/// Reduces the block's largest bounds into the stream's word and records the part's fault.
__device__ inline void gather(const zcoll::detail::row_part& part, unsigned long long* largest,
                              zcoll::detail::decode_fault* fault) {
  using reduce = cub::BlockReduce<unsigned long long, elementwise_threads>;
  __shared__ typename reduce::TempStorage storage;
  const unsigned long long block_largest = reduce(storage).Reduce(part.largest_bound, ::cuda::maximum<>{});
  if (threadIdx.x == 0 && block_largest != 0) atomicMax(largest, block_largest);
  if (part.fault.code != 0) report_fault(fault, part.fault);
}

template <int Bits, floating_value T>
__global__ void __launch_bounds__(elementwise_threads) rowwise_encode(zcoll::detail::rowwise_compress_job<T> job,
                                                                      zcoll::detail::decode_fault* fault) {
  const std::uint32_t s = blockIdx.y;
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * elementwise_threads + threadIdx.x;
  gather(zcoll::detail::rowwise_encode_part<Bits>(job, s, thread, std::uint64_t{gridDim.x} * elementwise_threads),
         &job.largest_bound[s], fault);
}

template <int Bits, floating_value T>
__global__ void rowwise_finish(zcoll::detail::rowwise_compress_job<T> job) {
  const std::uint32_t s = threadIdx.x;
  if (s < job.batch.streams) zcoll::detail::rowwise_finish_stream<Bits>(job, s, job.largest_bound[s]);
}

template <int Bits, floating_value T>
__global__ void __launch_bounds__(elementwise_threads) rowwise_decode(zcoll::detail::rowwise_decompress_job<T> job,
                                                                      zcoll::detail::decode_fault* fault) {
  const std::uint32_t s = blockIdx.y;
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * elementwise_threads + threadIdx.x;
  gather(zcoll::detail::rowwise_decode_part<Bits>(job, s, thread, std::uint64_t{gridDim.x} * elementwise_threads),
         &job.largest_bound[s], fault);
}

template <int Bits, floating_value T>
__global__ void rowwise_check_bounds(zcoll::detail::rowwise_decompress_job<T> job, zcoll::detail::decode_fault* fault) {
  const std::uint32_t s = threadIdx.x;
  if (s >= job.batch.streams) return;
  const auto f = zcoll::detail::rowwise_check_bound<Bits>(job, s, job.largest_bound[s]);
  if (f.code != 0) report_fault(fault, f);
}

}  // namespace detail

/// Workspace (device bytes) compress_batch and decompress_batch need for a batch of `counts`.
template <int Bits>
std::size_t compress_workspace_bytes(const RowwiseQuantized<Bits>&, std::span<const std::size_t> counts) {
  return detail::workspace_without_tiles(counts.size()).tile_states_at;
}
template <int Bits>
std::size_t decompress_workspace_bytes(const RowwiseQuantized<Bits>& codec, std::span<const std::size_t> counts) {
  return compress_workspace_bytes(codec, counts);
}

/// Waits for `exec`'s stream and raises argument_error, as the host driver would have, when the last
/// row-wise compress_batch into `workspace` met a row the layout cannot hold.
inline void check_quantized(const exec::Cuda& exec, std::span<const std::byte> workspace, std::size_t streams) {
  const zcoll::detail::decode_fault fault = detail::read_fault("check_quantized", exec, workspace, streams);
  if (fault.code != 0) throw argument_error("quantize_rows: " + describe(fault));
}

}  // namespace zcoll::cuda

namespace zcoll {

/// Quantizes the streams of a batch: stream s is values [sum(counts[0..s)), + counts[s]) of `values`
/// (whole rows of the codec's row length), written as the host driver writes it right after stream s - 1
/// in `out`. Two launches, no synchronisation; sizes and offsets land in `workspace` (cuda::results_of);
/// unrepresentable rows are raised by cuda::check_quantized.
template <int Bits, floating_value T>
void compress_batch(const exec::Cuda& exec, const RowwiseQuantized<Bits>& codec, std::span<const T> values,
                    std::span<const std::size_t> counts, std::span<std::byte> out, std::span<std::byte> workspace) {
  namespace cd = cuda::detail;
  detail::rowwise_compress_job<T> job;
  job.batch = detail::compression_batch<T>("compress_batch", codec, counts, values.size(), out.size());
  job.dim = static_cast<std::uint32_t>(codec.dim());
  const cd::stream_workspace w = cd::prepare_workspace("compress_batch", exec, workspace, counts.size());
  job.values = values.data();
  job.out = out.data();
  job.largest_bound = w.words;
  job.results = {w.results.stream_offset, w.results.stream_bytes, w.results.total_bytes};
  cd::rowwise_encode<Bits, T><<<dim3(cd::row_blocks(job.batch, job.dim), job.batch.streams), cd::elementwise_threads, 0,
                                exec.stream>>>(job, w.fault);
  cuda::check_call(cudaGetLastError(), "compress_batch: row-wise kernel");
  cd::rowwise_finish<Bits, T><<<1, detail::max_batch_streams, 0, exec.stream>>>(job);
  cuda::check_call(cudaGetLastError(), "compress_batch: header kernel");
}

/// Dequantizes stream s, the `stream_bytes[s]` bytes at `in` + `stream_offset[s]` (host arrays), into
/// values [sum(counts[0..s)), + counts[s]) of `values`; the row length is each stream's own, as on the
/// host. A stream that does not decode is reported by cuda::check_decoded().
template <int Bits, floating_value T>
void decompress_batch(const exec::Cuda& exec, const RowwiseQuantized<Bits>&, std::span<const std::byte> in,
                      std::span<const std::uint64_t> stream_offset, std::span<const std::uint64_t> stream_bytes,
                      std::span<T> values, std::span<const std::size_t> counts, std::span<std::byte> workspace) {
  namespace cd = cuda::detail;
  detail::rowwise_decompress_job<T> job;
  job.batch = detail::decompression_batch("decompress_batch", counts, values.size(), in.size(), stream_offset, stream_bytes);
  cd::check_apart(in, std::span<const T>(values));
  const cd::stream_workspace w = cd::prepare_workspace("decompress_batch", exec, workspace, counts.size());
  job.in = in.data();
  job.values = values.data();
  job.largest_bound = w.words;
  // Rows per stream are only known on the device (each stream states its row length): size the grid by
  // the values, a thread per row of length 1 at most.
  cd::rowwise_decode<Bits, T><<<dim3(cd::row_blocks(job.batch, 1), job.batch.streams), cd::elementwise_threads, 0,
                                exec.stream>>>(job, w.fault);
  cuda::check_call(cudaGetLastError(), "decompress_batch: row-wise kernel");
  cd::rowwise_check_bounds<Bits, T><<<1, detail::max_batch_streams, 0, exec.stream>>>(job, w.fault);
  cuda::check_call(cudaGetLastError(), "decompress_batch: bound check kernel");
}

}  // namespace zcoll
