#pragma once
/// What the CUDA drivers of codecs without a chunk index (casts, row-wise quantizers) share: the grid of
/// their element-wise and row-wise kernels and their workspace. Their batch layout is
/// codec/detail/stream_batch.hpp.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/codec/detail/stream_batch.hpp"
#include "zcoll/codec/pipeline.cuh"

namespace zcoll::cuda::detail {

/// Threads of a block of the element-wise kernels, and values each thread takes per grid pass at least.
inline constexpr unsigned elementwise_threads = 256;
inline constexpr std::uint64_t values_per_thread = 16;

/// Blocks per stream (gridDim.x) for streams of up to `longest` values: about values_per_thread values a
/// thread, at most 4096 blocks (a grid-stride loop covers the rest).
inline unsigned elementwise_blocks(const zcoll::detail::stream_batch& batch) {
  std::uint64_t longest = 0;
  for (std::uint32_t s = 0; s < batch.streams; ++s) longest = std::max(longest, batch.count(s));
  const std::uint64_t per_block = elementwise_threads * values_per_thread;
  return static_cast<unsigned>(std::clamp<std::uint64_t>((longest + per_block - 1) / per_block, 1, 4096));
}

/// Blocks per stream (gridDim.x) for a batch whose longest stream has `rows` rows: a thread per row, at
/// most 4096 blocks (a grid-stride loop covers the rest).
inline unsigned row_blocks(const zcoll::detail::stream_batch& batch, std::size_t dim) {
  std::uint64_t longest = 0;
  for (std::uint32_t s = 0; s < batch.streams; ++s) longest = std::max(longest, batch.count(s) / dim);
  return static_cast<unsigned>(std::clamp<std::uint64_t>((longest + elementwise_threads - 1) / elementwise_threads, 1, 4096));
}

/// The workspace of these drivers: the pipeline driver's layout without its tile states (results, then a
/// word per stream where the kernels reduce a largest magnitude or bound, then the fault record), so
/// results_of and check_decoded serve every driver. Its size is the layout's tile_states_at.
inline workspace_layout workspace_without_tiles(std::size_t streams) { return workspace_layout(1, streams); }

/// A launch's view of such a workspace: the results, one word per stream and the fault record, the words
/// and the record cleared on `exec`'s stream.
struct stream_workspace {
  batch_results results;
  unsigned long long* words;
  zcoll::detail::decode_fault* fault;
};

inline stream_workspace prepare_workspace(const char* caller, const exec::Cuda& exec, std::span<std::byte> workspace,
                                          std::size_t streams) {
  const workspace_layout w = workspace_without_tiles(streams);
  check_workspace(caller, workspace, w.tile_states_at);
  const auto words = reinterpret_cast<unsigned long long*>(workspace.data() + w.extents_at);
  const auto fault = reinterpret_cast<zcoll::detail::decode_fault*>(workspace.data() + w.fault_at);
  check_call(cudaMemsetAsync(words, 0, streams * sizeof(unsigned long long), exec.stream),
             (std::string(caller) + ": clearing the workspace").c_str());
  check_call(cudaMemsetAsync(fault, 0, sizeof *fault, exec.stream), (std::string(caller) + ": clearing the fault record").c_str());
  return {results_of(workspace, streams), words, fault};
}

}  // namespace zcoll::cuda::detail
