#pragma once
/// zcoll::add on device buffers: the stream of a + b from the streams of a and b, in one launch, the
/// same bytes as the host's zcoll::add (codec/add.hpp says what the sum holds, lane by lane;
/// codec/detail/pipeline_add_tile.hpp how a tile is added).
///
///     const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3)}};
///     // d_sum of codec.max_compressed_size<float>(count) bytes, d_workspace of
///     // zcoll::cuda::add_workspace_bytes(codec, count) bytes, both device memory
///     zcoll::add<float>(zcoll::exec::Cuda{stream}, codec, count, d_a, d_b, d_sum, d_workspace);
///     // the sum's size stays on the device: zcoll::cuda::added_bytes(d_workspace)
///     zcoll::cuda::check_added(exec, d_workspace);   // waits; raises as the host's add would
///
/// As the other CUDA calls: no allocation, no copy back, no synchronisation in the call. A sum of streams
/// that cannot be added is reported by check_added as the host's argument_error (error bound), a damaged
/// stream as format_error. The value type and count are the caller's (the device
/// reads the headers, the host does not wait for them); the codec's chunk length must be the streams'.
/// The sum must not overlap either input (tiles read the inputs while others write the sum).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/codec/add.hpp"
#include "zcoll/codec/detail/pipeline_add_tile.hpp"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/core/error.hpp"

namespace zcoll::cuda {

namespace detail {

template <class Q, class P, class E, floating_value T, unsigned Threads>
__global__ void __launch_bounds__(Threads) add_tiles(zcoll::detail::add_job job, tile_state inputs, tile_state sums,
                                                     zcoll::detail::decode_fault* fault) {
  __shared__ typename block_team<Threads>::storage shared;
  tile_state scans[2] = {inputs, sums};
  block_team<Threads> team(shared, scans, fault, blockIdx.x);
  // The 128-thread team stages both input chunks, each when it fits in 16 KiB (a coded f32 chunk is
  // smaller than its 16 KiB of values; larger chunks are read where they are); beside the 1024-thread
  // team's storage, the staging would not fit in a block's 48 KiB.
  if constexpr (Threads == 128) {
    __shared__ std::byte staging[max_staging_bytes];
    zcoll::detail::add_tile<Q, P, E, T>(team, job, blockIdx.x, staging, max_staging_bytes);
  } else {
    zcoll::detail::add_tile<Q, P, E, T>(team, job, blockIdx.x);
  }
}

/// The tiles of a sum of `count` values in chunks of `chunk_values`.
inline std::uint32_t add_tiles_for(std::size_t count, std::uint32_t chunk_values) {
  zcoll::detail::add_job job;
  job.count = count;
  job.chunk_values = chunk_values;
  return job.tiles();
}

}  // namespace detail

/// The codecs whose streams the CUDA driver adds: FZLight and the other Pipeline<quantize::Linear, P, E>
/// with P = predict::Lorenzo1D or predict::None and a block encoder (2-D/3-D Lorenzo add on the host).
template <class C>
inline constexpr bool device_addable = false;
template <class Q, class P, class E>
inline constexpr bool device_addable<Pipeline<Q, P, E>> = addable_codec<Pipeline<Q, P, E>> && zcoll::detail::scan_predictor<P>;

/// Workspace (device bytes, 256-byte aligned) zcoll::add needs for streams of `count` values.
template <class Q, class P, class E>
std::size_t add_workspace_bytes(const Pipeline<Q, P, E>& codec, std::size_t count) {
  const std::size_t counts[] = {count};
  zcoll::detail::make_layout("add_workspace_bytes", counts, codec.config().chunk_values);  // checks chunk and count
  return detail::workspace_layout(detail::add_tiles_for(count, codec.config().chunk_values), 1, 2).bytes;
}

/// Where the last zcoll::add into `workspace` left the sum's size (device memory, 8 bytes).
inline std::uint64_t* added_bytes(std::span<std::byte> workspace) { return results_of(workspace, 1).total_bytes; }

/// Waits for `exec`'s stream and raises what the host's add would have for the last zcoll::add into
/// `workspace`: argument_error for streams that differ in their error bound, format_error for a damaged
/// one.
inline void check_added(const exec::Cuda& exec, std::span<const std::byte> workspace) {
  const detail::workspace_layout w(1, 1);
  detail::check_workspace("check_added", workspace, w.tile_states_at);
  zcoll::detail::decode_fault fault;
  check_call(cudaMemcpyAsync(&fault, workspace.data() + w.fault_at, sizeof fault, cudaMemcpyDeviceToHost, exec.stream),
             "check_added: reading the fault record");
  check_call(cudaStreamSynchronize(exec.stream), "check_added: waiting for the stream");
  if (fault.code == static_cast<std::uint32_t>(zcoll::detail::decode_fault_code::streams_differ)) {
    throw argument_error(describe(fault));
  }
  if (fault.code != 0) throw format_error("add: stream " + std::string(fault.stream == 0 ? "a" : "b") + ": " + describe(fault));
}

}  // namespace zcoll::cuda

namespace zcoll {

/// Writes the stream of a + b (device memory, `count` values of T each) into `out` (device memory,
/// room for codec.max_compressed_size<T>(count)) in one launch; its size goes to
/// cuda::added_bytes(workspace), faults to cuda::check_added. Does not wait.
template <floating_value T, class Q, class P, class E>
void add(const exec::Cuda& exec, const Pipeline<Q, P, E>& codec, std::size_t count, std::span<const std::byte> a,
         std::span<const std::byte> b, std::span<std::byte> out, std::span<std::byte> workspace) {
  static_assert(cuda::device_addable<Pipeline<Q, P, E>>,
                "zcoll::add(exec::Cuda, ...): the CUDA driver adds Pipeline<quantize::Linear, P, E> streams with "
                "P = predict::Lorenzo1D or predict::None and a block encoder (encode::BitShuffle, encode::Raw), "
                "e.g. zcoll::FZLight; for 2-D/3-D Lorenzo add on the host");
  namespace cd = cuda::detail;
  const std::uint32_t chunk_values = codec.config().chunk_values;
  const std::size_t needed = cuda::add_workspace_bytes(codec, count);
  cd::check_workspace("add", workspace, needed);
  const std::size_t room = Pipeline<Q, P, E>::template max_compressed_size<T>(count, chunk_values);
  if (out.size() < room) {
    throw argument_error("add: out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" + std::to_string(count) +
                         ") = " + std::to_string(room) + " are needed");
  }
  const auto overlaps = [&](std::span<const std::byte> in) {
    return out.data() < in.data() + in.size() && in.data() < out.data() + out.size();
  };
  if (overlaps(a) || overlaps(b)) throw argument_error("add: out overlaps stream a or b; add into a separate buffer");

  detail::add_job job;
  job.count = count;
  job.chunk_values = chunk_values;
  job.a = a.data();
  job.a_bytes = a.size();
  job.b = b.data();
  job.b_bytes = b.size();
  job.out = out.data();
  job.total_bytes = cuda::added_bytes(workspace);
  const std::uint32_t tiles = job.tiles();
  const cd::workspace_layout w(tiles, 1, 2);
  auto* fault = reinterpret_cast<detail::decode_fault*>(workspace.data() + w.fault_at);
  cuda::check_call(cudaMemsetAsync(fault, 0, sizeof *fault, exec.stream), "add: clearing the fault record");
  cd::tile_state scans[2] = {w.tiles_of(workspace, tiles, 0), w.tiles_of(workspace, tiles, 1)};
  const unsigned reset_blocks = (tiles + cd::init_threads - 1) / cd::init_threads;
  for (const cd::tile_state& states : scans) {
    cd::reset_batch<cd::tile_state><<<reset_blocks, cd::init_threads, 0, exec.stream>>>(states, static_cast<int>(tiles), nullptr, 0);
  }
  cuda::check_call(cudaGetLastError(), "add: reset kernel");
  cd::with_team_threads(chunk_values, [&]<unsigned Threads>() {
    cd::add_tiles<Q, P, E, T, Threads><<<tiles, Threads, 0, exec.stream>>>(job, scans[0], scans[1], fault);
  });
  cuda::check_call(cudaGetLastError(), "add: addition kernel");
}

}  // namespace zcoll
