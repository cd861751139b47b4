#pragma once
/// The CUDA driver of TopK (DCT-DP's sparsifier): the exact top-K threshold by a radix select on the
/// device, the kept values compacted and the index written in the form the host driver picks, so the
/// stream is the host driver's byte for byte; and the decoder for both index forms. The algorithm and its
/// parts are in codec/detail/topk_tile.hpp (tested on the host against the host driver); this file
/// launches them and runs CUB's device scans between them.
///
///     const zcoll::TopK codec{{}, {.keep_fraction = 0.01, .threshold_life_span = 1000}};
///     zcoll::cuda::topk_schedule schedule;                 // one per tensor, on the host
///     // device buffers the caller allocates once: d_out of TopK::max_compressed_size<float>(n) bytes,
///     // d_workspace of cuda::compress_workspace_bytes(codec, n) bytes (one per tensor: it holds tau)
///     zcoll::compress(zcoll::exec::Cuda{stream}, codec, schedule, d_grad, d_out, d_workspace, d_residual);
///     // the size stays on the device: zcoll::cuda::results_of(d_workspace, 1).stream_bytes
///     zcoll::decompress(exec, codec, d_stream, d_values, d_decode_workspace);
///     zcoll::cuda::check_decoded(exec, d_decode_workspace, 1);  // waits; format_error if it did not decode
///
/// As the other device drivers: nothing allocates, copies back or synchronises. The threshold is
/// recomputed on the device on calls 0, L, 2L, ... of a tensor (L = threshold_life_span) and otherwise
/// reused from the workspace, where the last call left it: `topk_schedule` (host state, no device work)
/// decides, and starts over when the tensor's length, value type, the codec's settings or the workspace
/// change. What a call did (tau, kept count) is read by cuda::topk_report_of, which waits.
///
/// Only the exact threshold runs on the device: threshold_method::laplace is refused (argument_error).
/// Its fit ends in exp and log, whose device versions are not the host's correctly rounded ones, so a
/// device tau could differ from the host's in its last bit and the streams would no longer be the same.

#include <cuda_runtime_api.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/functional>
#include <cuda/std/functional>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/codec/detail/stream_kernels.cuh"
#include "zcoll/codec/detail/topk_tile.hpp"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/codec/topk.hpp"
#include "zcoll/core/exec.cuh"

namespace zcoll::cuda {

/// The threshold life span of one tensor on the device: which calls recompute tau. Host state only (tau
/// itself stays in the workspace); not thread-safe, one per tensor as TopK::state.
class topk_schedule {
 public:
  /// Whether the next call on `count` values of T, by `codec`, into `workspace` recomputes tau; counts the
  /// call. A change of length, type, settings or workspace starts the schedule over.
  template <floating_value T>
  bool next(const TopK& codec, std::size_t count, const std::byte* workspace) {
    const sparsify::threshold_schedule_config config{.keep_fraction = codec.sparsity().keep_fraction,
                                                      .threshold_life_span = codec.sparsity().threshold_life_span,
                                                      .method = codec.sparsity().threshold};
    if (!started_ || !(config_ == config) || type_ != value_type_of<T> || count_ != count || workspace_ != workspace) {
      started_ = true;
      config_ = config;
      type_ = value_type_of<T>;
      count_ = count;
      workspace_ = workspace;
      calls_ = 0;
    }
    return calls_++ % config_.threshold_life_span == 0;
  }

  /// Forgets tau: the next call recomputes it.
  void reset() { started_ = false; }

 private:
  bool started_ = false;
  sparsify::threshold_schedule_config config_;
  value_type type_ = value_type::f32;
  std::size_t count_ = 0;
  const std::byte* workspace_ = nullptr;
  std::uint64_t calls_ = 0;
};

namespace detail {

namespace zd = zcoll::detail;

inline constexpr unsigned topk_threads = 256;
inline constexpr unsigned topk_classify_threads = 128;
/// Bins each thread of the choosing block takes: 256 threads cover the 2048 bins of a digit.
inline constexpr unsigned topk_bins_per_thread = zd::topk_histogram_bins / topk_threads;

inline unsigned topk_blocks(std::uint64_t items, unsigned threads = topk_threads) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((items + threads - 1) / threads, 1, 65535u * 32));
}

/// Bytes CUB's scans over `items` u64 words need (sum, max and saturating sum; the largest).
inline std::size_t topk_scan_bytes(std::uint64_t items) {
  std::size_t sum = 0, max = 0, saturating = 0;
  auto* words = static_cast<std::uint64_t*>(nullptr);
  check_call(cub::DeviceScan::InclusiveSum(nullptr, sum, words, words, static_cast<std::int64_t>(items)), "cub::DeviceScan sizing");
  check_call(cub::DeviceScan::InclusiveScan(nullptr, max, words, words, ::cuda::maximum<>{}, static_cast<std::int64_t>(items)),
             "cub::DeviceScan sizing");
  check_call(cub::DeviceScan::InclusiveScan(nullptr, saturating, words, words, zd::topk_saturating_add{},
                                            static_cast<std::int64_t>(items)),
             "cub::DeviceScan sizing");
  return std::max({sum, max, saturating, std::size_t{1}});
}

/// Compression's workspace: the common prefix (results, fault), the record, the select's state and
/// histogram, four words per 32 values, CUB's scratch.
struct topk_compress_layout {
  std::size_t record_at, select_at, histogram_at, masks_at, kept_at, last_at, gaps_at, scratch_at, scratch_bytes, bytes;

  explicit topk_compress_layout(std::uint64_t count) {
    const std::uint64_t words = zd::topk_words(count);
    record_at = workspace_without_tiles(1).tile_states_at;
    select_at = record_at + aligned(sizeof(zd::topk_record));
    histogram_at = select_at + aligned(sizeof(zd::topk_select_state));
    masks_at = histogram_at + aligned(zd::topk_histogram_bins * sizeof(unsigned long long));
    kept_at = masks_at + aligned(words * sizeof(std::uint32_t));
    last_at = kept_at + aligned(words * sizeof(std::uint64_t));
    gaps_at = last_at + aligned(words * sizeof(std::uint64_t));
    scratch_at = gaps_at + aligned(words * sizeof(std::uint64_t));
    scratch_bytes = topk_scan_bytes(words);
    bytes = scratch_at + aligned(scratch_bytes);
  }
};

/// Decompression's workspace: the prefix, the plan, a word per 32 values (bitmap) and two per 8 index
/// bytes (gaps), CUB's scratch.
struct topk_decompress_layout {
  std::size_t plan_at, selected_at, ends_at, advance_at, scratch_at, scratch_bytes, bytes;

  topk_decompress_layout(std::uint64_t count, std::uint64_t stream_bytes) {
    const std::uint64_t words = zd::topk_words(count), index_words = topk_index_words(stream_bytes);
    plan_at = workspace_without_tiles(1).tile_states_at;
    selected_at = plan_at + aligned(sizeof(zd::topk_plan));
    ends_at = selected_at + aligned(words * sizeof(std::uint64_t));
    advance_at = ends_at + aligned(index_words * sizeof(std::uint64_t));
    scratch_at = advance_at + aligned(index_words * sizeof(std::uint64_t));
    scratch_bytes = topk_scan_bytes(std::max(words, index_words));
    bytes = scratch_at + aligned(scratch_bytes);
  }

  /// Words of 8 index bytes a stream of `stream_bytes` may have (its index is at most what follows the
  /// kept count).
  static std::uint64_t topk_index_words(std::uint64_t stream_bytes) {
    const std::uint64_t index = stream_bytes > zd::topk::values_offset ? stream_bytes - zd::topk::values_offset : 0;
    return (index + zd::topk_index_word_bytes - 1) / zd::topk_index_word_bytes;
  }
};

template <class W>
W* at(std::span<std::byte> workspace, std::size_t offset) {
  return reinterpret_cast<W*>(workspace.data() + offset);
}

// --- compression kernels -----------------------------------------------------------------------------

/// Starts a call: the select at rank K, the record's per-call fields cleared (its threshold kept when
/// the call reuses it).
__global__ inline void topk_start(zd::topk_record* record, zd::topk_select_state* select, std::uint64_t rank,
                                  bool recompute) {
  *select = {0, rank};
  if (recompute) record->threshold_key = 0;  // K = 0 (no values) leaves tau = 0
  record->recomputed = recompute ? 1 : 0;
  record->max_dropped_key = 0;
}

template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_histogram(const T* x, std::uint64_t n, unsigned d,
                                                               const zd::topk_select_state* select,
                                                               unsigned long long* histogram) {
  __shared__ unsigned bins[zd::topk_histogram_bins];
  for (unsigned b = threadIdx.x; b < zd::topk_histogram_bins; b += topk_threads) bins[b] = 0;
  __syncthreads();
  const zd::topk_select_state state = *select;
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x;
  zd::topk_histogram_part(x, n, d, state, thread, std::uint64_t{gridDim.x} * topk_threads,
                          [&](std::uint32_t bin) { atomicAdd(&bins[bin], 1u); });
  __syncthreads();
  for (unsigned b = threadIdx.x; b < zd::topk_histogram_bins; b += topk_threads) {
    if (bins[b] != 0) atomicAdd(&histogram[b], static_cast<unsigned long long>(bins[b]));
  }
}

/// One block settles digit d: thread t takes bins from the top down, t-th group of eight; a scan gives
/// each the keys in the bins above its group, and the thread whose group holds the rank settles it.
template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_choose(const unsigned long long* histogram, unsigned d,
                                                            zd::topk_select_state* select, zd::topk_record* record) {
  using scan = cub::BlockScan<unsigned long long, topk_threads>;
  __shared__ typename scan::TempStorage storage;
  const unsigned bins = 1u << zd::topk_digit_of<T>(d).width;
  const unsigned high = bins > topk_bins_per_thread * threadIdx.x ? bins - topk_bins_per_thread * threadIdx.x : 0;
  const unsigned low = high > topk_bins_per_thread ? high - topk_bins_per_thread : 0;
  unsigned long long mine = 0;
  for (unsigned b = low; b < high; ++b) mine += histogram[b];
  unsigned long long above = 0;
  scan(storage).ExclusiveSum(mine, above);
  zd::topk_select_state state = *select;
  __syncthreads();  // every thread has read the state before the chooser writes it
  if (zd::topk_choose_in<T>(histogram, d, low, high, above, state)) {
    *select = state;
    if (d + 1 == zd::topk_digits<T>) record->threshold_key = state.prefix;
  }
}

/// The threshold pass: a block stages 128 words (4096 values) in shared memory, read coalesced, then
/// each thread classifies its word there. (A thread reading its 32 values from x directly made a warp
/// touch 32 cache lines a load; measured on an H100, that kernel alone took 340 us of a 64 MB call.)
/// The staged words are 33 values apart, so the threads of a warp read distinct banks.
template <floating_value T>
__global__ void __launch_bounds__(topk_classify_threads) topk_classify(const T* x, std::uint64_t n, zd::topk_record* record,
                                                                       std::uint32_t* masks, std::uint64_t* kept,
                                                                       std::uint64_t* last) {
  using reduce = cub::BlockReduce<unsigned long long, topk_classify_threads>;
  __shared__ typename reduce::TempStorage storage;
  constexpr unsigned stride = zd::topk_word_values + 1;
  __shared__ T staged[topk_classify_threads * stride];
  const std::uint64_t words = zd::topk_words(n);
  const auto floor = sparsify::kept_key_floor(sparsify::magnitude_of_key<T>(static_cast<bits_of<T>>(record->threshold_key)));
  unsigned long long dropped = 0;
  for (std::uint64_t base = std::uint64_t{blockIdx.x} * topk_classify_threads; base < words;
       base += std::uint64_t{gridDim.x} * topk_classify_threads) {
    const std::uint64_t first = base * zd::topk_word_values;
    const std::uint64_t tile = n - first < topk_classify_threads * zd::topk_word_values ? n - first
                                                                                          : topk_classify_threads * zd::topk_word_values;
    for (std::uint64_t i = threadIdx.x; i < tile; i += topk_classify_threads) {
      staged[i + i / zd::topk_word_values] = x[first + i];
    }
    __syncthreads();
    const std::uint64_t w = base + threadIdx.x;
    if (w < words) {
      const zd::topk_word word = zd::topk_classify_word(staged + stride * threadIdx.x, zd::topk_lanes_of_word(n, w), w, floor);
      masks[w] = word.mask;
      kept[w] = word.kept;
      last[w] = word.last_plus_one;
      dropped = dropped > word.max_dropped_key ? dropped : word.max_dropped_key;
    }
    __syncthreads();  // before the next tile is staged
  }
  const unsigned long long largest = reduce(storage).Reduce(dropped, ::cuda::maximum<>{});
  if (threadIdx.x == 0 && largest != 0) atomicMax(reinterpret_cast<unsigned long long*>(&record->max_dropped_key), largest);
}

/// Compaction: each thread copies its word's kept values and counts its gap bytes; then the block writes
/// its tile's residual value by value (coalesced), after every kept value of the tile is copied.
template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_scatter(const T* x, std::uint64_t n, const std::uint32_t* masks,
                                                             const std::uint64_t* kept, const std::uint64_t* last,
                                                             std::uint64_t* gaps, std::byte* out, T* residual) {
  __shared__ std::uint32_t tile_masks[topk_threads];
  const std::uint64_t words = zd::topk_words(n);
  for (std::uint64_t base = std::uint64_t{blockIdx.x} * topk_threads; base < words; base += std::uint64_t{gridDim.x} * topk_threads) {
    const std::uint64_t w = base + threadIdx.x;
    const std::uint32_t mask = w < words ? masks[w] : 0;
    if (w < words) {
      gaps[w] = zd::topk_scatter_word(x, w, mask, w == 0 ? 0 : kept[w - 1], w == 0 ? 0 : last[w - 1],
                                      out + zd::topk::values_offset);
    }
    if (residual == nullptr) continue;  // the same for every thread of the block
    tile_masks[threadIdx.x] = mask;
    __syncthreads();
    const std::uint64_t first = base * zd::topk_word_values;
    const std::uint64_t tile = n - first < topk_threads * zd::topk_word_values ? n - first : topk_threads * zd::topk_word_values;
    for (std::uint64_t i = threadIdx.x; i < tile; i += topk_threads) {
      zd::topk_write_residual(x, first + i, ((tile_masks[i / zd::topk_word_values] >> (i % zd::topk_word_values)) & 1u) != 0,
                              residual);
    }
    __syncthreads();  // before the next tile's masks
  }
}

template <floating_value T>
__global__ void topk_finish_kernel(std::uint64_t n, const std::uint64_t* kept, const std::uint64_t* last, const std::uint64_t* gaps,
                            std::byte* out, zd::topk_record* record, batch_results results) {
  const std::uint64_t words = zd::topk_words(n);
  zd::topk_finish<T>(n, words == 0 ? 0 : kept[words - 1], words == 0 ? 0 : last[words - 1],
                     words == 0 ? 0 : gaps[words - 1], out, *record);
  results.stream_offset[0] = 0;
  results.stream_bytes[0] = record->stream_bytes;
  *results.total_bytes = record->stream_bytes;
}

template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_index(std::uint64_t n, const std::uint32_t* masks,
                                                           const std::uint64_t* last, const std::uint64_t* gaps,
                                                           const zd::topk_record* record, std::byte* out) {
  const std::uint64_t words = zd::topk_words(n);
  const auto form = static_cast<zd::topk::index_form>(record->form);
  std::byte* index = out + zd::topk::values_offset + record->kept * sizeof(T);
  for (std::uint64_t w = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x; w < words;
       w += std::uint64_t{gridDim.x} * topk_threads) {
    zd::topk_index_word(n, w, masks[w], form, w == 0 ? 0 : last[w - 1], w == 0 ? 0 : gaps[w - 1], index);
  }
}

// --- decompression kernels ---------------------------------------------------------------------------

/// A plan whose form is this names a stream that did not check out: every later kernel skips it.
inline constexpr std::uint32_t topk_no_form = 0xFF;

template <floating_value T>
__global__ void topk_plan_kernel(const std::byte* stream, std::uint64_t length, std::uint64_t count, zd::topk_plan* plan,
                          zd::decode_fault* fault) {
  zd::topk_plan p{topk_no_form, 0, 0, 0, 0};
  const zd::decode_fault f = zd::topk_plan_of<T>(stream, length, count, p);
  if (f.code != 0) {
    p.form = topk_no_form;
    report_fault(fault, f);
  }
  *plan = p;
}

template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_zero_for_gaps(const zd::topk_plan* plan, T* out, std::uint64_t count) {
  if (plan->form != static_cast<std::uint32_t>(zd::topk::index_form::gaps)) return;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x; i < count; i += std::uint64_t{gridDim.x} * topk_threads) {
    out[i] = T(0);
  }
}

__device__ inline void report_index_fault(zd::decode_fault* fault, zd::topk_index_fault f) {
  report_fault(fault, {static_cast<std::uint32_t>(zd::decode_fault_code::bad_sparse_index), 0, 0, static_cast<std::uint64_t>(f)});
}

__global__ inline void __launch_bounds__(topk_threads) topk_bitmap_count(const std::byte* stream, const zd::topk_plan* plan,
                                                                         std::uint64_t count, std::uint64_t* selected,
                                                                         zd::decode_fault* fault) {
  const std::uint64_t words = zd::topk_words(count);
  const zd::topk_plan p = *plan;
  for (std::uint64_t w = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x; w < words; w += std::uint64_t{gridDim.x} * topk_threads) {
    std::uint32_t bits = 0;
    if (p.form == static_cast<std::uint32_t>(zd::topk::index_form::bitmap) &&
        !zd::topk_bitmap_word(stream + p.index_at, count, w, bits)) {
      report_index_fault(fault, zd::topk_index_fault::bitmap_padding);
    }
    selected[w] = static_cast<std::uint64_t>(zcoll::popcount(bits));
  }
}

__global__ inline void __launch_bounds__(topk_threads) topk_gap_count(const std::byte* stream, const zd::topk_plan* plan,
                                                                      std::uint64_t count, std::uint64_t index_words,
                                                                      std::uint64_t* ends, std::uint64_t* advance,
                                                                      zd::decode_fault* fault) {
  const zd::topk_plan p = *plan;
  const bool gaps = p.form == static_cast<std::uint32_t>(zd::topk::index_form::gaps);
  for (std::uint64_t v = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x; v < index_words;
       v += std::uint64_t{gridDim.x} * topk_threads) {
    zd::topk_gap_word word{0, 0};
    if (gaps && v * zd::topk_index_word_bytes < p.index_bytes) {
      const zd::topk_index_fault f = zd::topk_gap_word_of(stream + p.index_at, p.index_bytes, count, v, word);
      if (f != zd::topk_index_fault{}) report_index_fault(fault, f);
    }
    ends[v] = word.ends;
    advance[v] = word.advance;
  }
}

__global__ inline void topk_verify_kernel(const zd::topk_plan* plan, std::uint64_t count, const std::uint64_t* selected,
                                   std::uint64_t words, const std::uint64_t* ends, const std::uint64_t* advance,
                                   std::uint64_t index_words, zd::decode_fault* fault) {
  if (plan->form == topk_no_form || fault->code != 0) return;
  const zd::topk_index_fault f =
      zd::topk_verify(*plan, count, words == 0 ? 0 : selected[words - 1], index_words == 0 ? 0 : ends[index_words - 1],
                      index_words == 0 ? 0 : advance[index_words - 1]);
  if (f != zd::topk_index_fault{}) report_index_fault(fault, f);
}

template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_bitmap_scatter(const std::byte* stream, const zd::topk_plan* plan,
                                                                    std::uint64_t count, const std::uint64_t* selected,
                                                                    const zd::decode_fault* fault, T* out) {
  const zd::topk_plan p = *plan;
  if (p.form != static_cast<std::uint32_t>(zd::topk::index_form::bitmap) || fault->code != 0) return;
  const std::uint64_t words = zd::topk_words(count);
  for (std::uint64_t w = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x; w < words; w += std::uint64_t{gridDim.x} * topk_threads) {
    std::uint32_t bits = 0;
    zd::topk_bitmap_word(stream + p.index_at, count, w, bits);
    const std::uint64_t before = selected[w] - static_cast<std::uint64_t>(zcoll::popcount(bits));  // inclusive scan
    zd::topk_bitmap_scatter_word(stream + p.values_at, count, w, bits, before, out);
  }
}

template <floating_value T>
__global__ void __launch_bounds__(topk_threads) topk_gap_scatter(const std::byte* stream, const zd::topk_plan* plan,
                                                                 std::uint64_t count, std::uint64_t index_words,
                                                                 const std::uint64_t* ends, const std::uint64_t* advance,
                                                                 const zd::decode_fault* fault, T* out) {
  const zd::topk_plan p = *plan;
  if (p.form != static_cast<std::uint32_t>(zd::topk::index_form::gaps) || fault->code != 0) return;
  for (std::uint64_t v = std::uint64_t{blockIdx.x} * topk_threads + threadIdx.x; v < index_words;
       v += std::uint64_t{gridDim.x} * topk_threads) {
    if (v * zd::topk_index_word_bytes >= p.index_bytes) continue;
    zd::topk_gap_scatter_word(stream + p.index_at, p.index_bytes, stream + p.values_at, p.kept, count, v,
                              v == 0 ? 0 : ends[v - 1], v == 0 ? 0 : advance[v - 1], out);
  }
}

/// Runs a CUB inclusive scan in place on `exec`'s stream.
template <class Op>
void topk_scan(const exec::Cuda& exec, std::span<std::byte> scratch, std::uint64_t* words, std::uint64_t items, Op op,
               const char* what) {
  if (items == 0) return;
  std::size_t bytes = scratch.size();
  check_call(cub::DeviceScan::InclusiveScan(scratch.data(), bytes, words, words, op, static_cast<std::int64_t>(items), exec.stream),
             what);
}

}  // namespace detail

/// Workspace (device bytes) compress needs for `count` values; it also holds the tensor's threshold
/// between calls, so give each tensor its own.
inline std::size_t compress_workspace_bytes(const TopK&, std::size_t count) { return detail::topk_compress_layout(count).bytes; }

/// Workspace (device bytes) decompress needs for a stream of `stream_bytes` bytes holding `count` values.
inline std::size_t decompress_workspace_bytes(const TopK&, std::size_t count, std::size_t stream_bytes) {
  return detail::topk_decompress_layout(count, stream_bytes).bytes;
}

/// Waits for `exec`'s stream and reads what the last compress of `count` values into `workspace` did.
template <floating_value T>
topk_report topk_report_of(const exec::Cuda& exec, const TopK& codec, std::span<const std::byte> workspace, std::size_t count) {
  const detail::topk_compress_layout layout(count);
  detail::check_workspace("topk_report_of", workspace, layout.bytes);
  zcoll::detail::topk_record record;
  check_call(cudaMemcpyAsync(&record, workspace.data() + layout.record_at, sizeof record, cudaMemcpyDeviceToHost, exec.stream),
             "topk_report_of: reading the record");
  check_call(cudaStreamSynchronize(exec.stream), "topk_report_of: waiting for the stream");
  topk_report report;
  report.count = count;
  report.kept_count = record.kept;
  report.target_keep_fraction = codec.sparsity().keep_fraction;
  report.threshold = static_cast<double>(sparsify::magnitude_of_key<T>(static_cast<bits_of<T>>(record.threshold_key)));
  report.threshold_recomputed = record.recomputed != 0;
  report.method_used = sparsify::threshold_method::exact;
  report.max_dropped_magnitude =
      static_cast<double>(sparsify::magnitude_of_key<T>(static_cast<bits_of<T>>(record.max_dropped_key)));
  return report;
}

}  // namespace zcoll::cuda

namespace zcoll {

/// Compresses `values` (device memory) into `out` (at least TopK::max_compressed_size<T>(n) bytes), as
/// the host driver writes it; writes residual[i] = values[i] - decoded[i] when `residual` is not empty
/// (then exactly n values; it may be `values` itself). The threshold follows `schedule`; the size lands
/// in `workspace` (cuda::results_of(workspace, 1)), what the call did in cuda::topk_report_of.
template <floating_value T>
void compress(const exec::Cuda& exec, const TopK& codec, cuda::topk_schedule& schedule, std::span<const T> values,
              std::span<std::byte> out, std::span<std::byte> workspace, std::span<T> residual = {}) {
  namespace cd = cuda::detail;
  namespace zd = zcoll::detail;
  const std::uint64_t n = values.size();
  if (codec.sparsity().threshold != sparsify::threshold_method::exact) {
    throw argument_error("compress(exec::Cuda, TopK): threshold method " + std::string(sparsify::to_string(codec.sparsity().threshold)) +
                         " runs on the host only; the device computes the exact threshold (threshold_method::exact)");
  }
  if (out.size() < TopK::max_compressed_size<T>(n)) {
    throw argument_error("compress(exec::Cuda, TopK): out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" +
                         std::to_string(n) + ") = " + std::to_string(TopK::max_compressed_size<T>(n)) + " are needed");
  }
  if (!residual.empty() && residual.size() != n) {
    throw argument_error("compress(exec::Cuda, TopK): residual holds " + std::to_string(residual.size()) +
                         " values, the input has " + std::to_string(n) + " (or pass none)");
  }
  cd::check_apart(std::span<const std::byte>(out), values);
  const cd::topk_compress_layout layout(n);
  cd::check_workspace("compress(exec::Cuda, TopK)", workspace, layout.bytes);
  auto* record = cd::at<zd::topk_record>(workspace, layout.record_at);
  auto* select = cd::at<zd::topk_select_state>(workspace, layout.select_at);
  auto* histogram = cd::at<unsigned long long>(workspace, layout.histogram_at);
  auto* masks = cd::at<std::uint32_t>(workspace, layout.masks_at);
  auto* kept = cd::at<std::uint64_t>(workspace, layout.kept_at);
  auto* last = cd::at<std::uint64_t>(workspace, layout.last_at);
  auto* gaps = cd::at<std::uint64_t>(workspace, layout.gaps_at);
  const std::span<std::byte> scratch = workspace.subspan(layout.scratch_at, layout.scratch_bytes);
  const bool recompute = schedule.next<T>(codec, n, workspace.data());
  const std::uint64_t words = zd::topk_words(n);
  const auto check = [](const char* what) { cuda::check_call(cudaGetLastError(), what); };

  cd::topk_start<<<1, 1, 0, exec.stream>>>(record, select, sparsify::topk_count(n, codec.sparsity().keep_fraction), recompute);
  check("compress(exec::Cuda, TopK): start kernel");
  if (recompute && n > 0) {
    for (unsigned d = 0; d < zd::topk_digits<T>; ++d) {
      cuda::check_call(cudaMemsetAsync(histogram, 0, zd::topk_histogram_bins * sizeof(unsigned long long), exec.stream),
                       "compress(exec::Cuda, TopK): clearing the histogram");
      cd::topk_histogram<T><<<cd::topk_blocks(std::max<std::uint64_t>(n / cd::values_per_thread, 1)), cd::topk_threads, 0,
                              exec.stream>>>(values.data(), n, d, select, histogram);
      check("compress(exec::Cuda, TopK): histogram kernel");
      cd::topk_choose<T><<<1, cd::topk_threads, 0, exec.stream>>>(histogram, d, select, record);
      check("compress(exec::Cuda, TopK): digit kernel");
    }
  }
  if (words > 0) {
    cd::topk_classify<T><<<cd::topk_blocks(words, cd::topk_classify_threads), cd::topk_classify_threads, 0, exec.stream>>>(
        values.data(), n, record, masks, kept, last);
    check("compress(exec::Cuda, TopK): threshold kernel");
    cd::topk_scan(exec, scratch, kept, words, ::cuda::std::plus<>{}, "compress(exec::Cuda, TopK): scan of the kept counts");
    cd::topk_scan(exec, scratch, last, words, ::cuda::maximum<>{}, "compress(exec::Cuda, TopK): scan of the last indices");
    cd::topk_scatter<T><<<cd::topk_blocks(words), cd::topk_threads, 0, exec.stream>>>(values.data(), n, masks, kept, last,
                                                                                      gaps, out.data(),
                                                                                      residual.empty() ? nullptr : residual.data());
    check("compress(exec::Cuda, TopK): compaction kernel");
    cd::topk_scan(exec, scratch, gaps, words, ::cuda::std::plus<>{}, "compress(exec::Cuda, TopK): scan of the gap bytes");
  }
  cd::topk_finish_kernel<T><<<1, 1, 0, exec.stream>>>(n, kept, last, gaps, out.data(), record, cuda::results_of(workspace, 1));
  check("compress(exec::Cuda, TopK): header kernel");
  if (words > 0) {
    cd::topk_index<T><<<cd::topk_blocks(words), cd::topk_threads, 0, exec.stream>>>(n, masks, last, gaps, record, out.data());
    check("compress(exec::Cuda, TopK): index kernel");
  }
}

/// compress with a schedule of its own: tau is computed on this input.
template <floating_value T>
void compress(const exec::Cuda& exec, const TopK& codec, std::span<const T> values, std::span<std::byte> out,
              std::span<std::byte> workspace) {
  cuda::topk_schedule fresh;
  compress(exec, codec, fresh, values, out, workspace);
}

/// Decodes the stream `in` (device memory, exactly its bytes) into `values` (its value count); a stream
/// that does not decode is reported by cuda::check_decoded(exec, workspace, 1), and then no value is
/// written (zeros may be, for the gaps form).
template <floating_value T>
void decompress(const exec::Cuda& exec, const TopK&, std::span<const std::byte> in, std::span<T> values,
                std::span<std::byte> workspace) {
  namespace cd = cuda::detail;
  namespace zd = zcoll::detail;
  const std::uint64_t count = values.size();
  cd::check_apart(in, std::span<const T>(values));
  const cd::topk_decompress_layout layout(count, in.size());
  cd::check_workspace("decompress(exec::Cuda, TopK)", workspace, layout.bytes);
  auto* fault = cd::at<zd::decode_fault>(workspace, cd::workspace_without_tiles(1).fault_at);
  auto* plan = cd::at<zd::topk_plan>(workspace, layout.plan_at);
  auto* selected = cd::at<std::uint64_t>(workspace, layout.selected_at);
  auto* ends = cd::at<std::uint64_t>(workspace, layout.ends_at);
  auto* advance = cd::at<std::uint64_t>(workspace, layout.advance_at);
  const std::span<std::byte> scratch = workspace.subspan(layout.scratch_at, layout.scratch_bytes);
  const std::uint64_t words = zd::topk_words(count);
  const std::uint64_t index_words = cd::topk_decompress_layout::topk_index_words(in.size());
  const auto check = [](const char* what) { cuda::check_call(cudaGetLastError(), what); };

  cuda::check_call(cudaMemsetAsync(fault, 0, sizeof *fault, exec.stream), "decompress(exec::Cuda, TopK): clearing the fault record");
  cd::topk_plan_kernel<T><<<1, 1, 0, exec.stream>>>(in.data(), in.size(), count, plan, fault);
  check("decompress(exec::Cuda, TopK): header kernel");
  if (words > 0) {
    cd::topk_zero_for_gaps<T><<<cd::topk_blocks(count / cd::values_per_thread + 1), cd::topk_threads, 0, exec.stream>>>(plan, values.data(), count);
    check("decompress(exec::Cuda, TopK): zero kernel");
    cd::topk_bitmap_count<<<cd::topk_blocks(words), cd::topk_threads, 0, exec.stream>>>(in.data(), plan, count, selected, fault);
    check("decompress(exec::Cuda, TopK): bitmap kernel");
    cd::topk_scan(exec, scratch, selected, words, ::cuda::std::plus<>{}, "decompress(exec::Cuda, TopK): scan of the bitmap");
  }
  if (index_words > 0) {
    cd::topk_gap_count<<<cd::topk_blocks(index_words), cd::topk_threads, 0, exec.stream>>>(in.data(), plan, count, index_words,
                                                                                           ends, advance, fault);
    check("decompress(exec::Cuda, TopK): gap kernel");
    cd::topk_scan(exec, scratch, ends, index_words, ::cuda::std::plus<>{}, "decompress(exec::Cuda, TopK): scan of the gaps");
    cd::topk_scan(exec, scratch, advance, index_words, zd::topk_saturating_add{}, "decompress(exec::Cuda, TopK): scan of the gaps");
  }
  cd::topk_verify_kernel<<<1, 1, 0, exec.stream>>>(plan, count, selected, words, ends, advance, index_words, fault);
  check("decompress(exec::Cuda, TopK): check kernel");
  if (words > 0) {
    cd::topk_bitmap_scatter<T><<<cd::topk_blocks(words), cd::topk_threads, 0, exec.stream>>>(in.data(), plan, count, selected, fault,
                                                                                            values.data());
    check("decompress(exec::Cuda, TopK): bitmap scatter kernel");
  }
  if (index_words > 0) {
    cd::topk_gap_scatter<T><<<cd::topk_blocks(index_words), cd::topk_threads, 0, exec.stream>>>(in.data(), plan, count, index_words,
                                                                                               ends, advance, fault, values.data());
    check("decompress(exec::Cuda, TopK): gap scatter kernel");
  }
}

}  // namespace zcoll
