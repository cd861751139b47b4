#pragma once
/// The CUDA driver of Pipeline<Q, P, E> for block encoders (FZLight = Linear + Lorenzo1D + BitShuffle, and
/// every pipeline of Lorenzo1D or None with a block encoder): one kernel compresses every chunk of a batch
/// of streams into one output buffer, one kernel decompresses them. The bytes are the host driver's
/// (codec/detail/pipeline_tile.hpp says how), so a stream compressed here decompresses on the host and
/// the other way round.
///
///     zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-4)}};
///     // device buffers the caller allocates once: d_out of zcoll::batch_max_compressed_size<float>(codec, counts)
///     // bytes, d_workspace of cuda::compress_workspace_bytes(codec, counts) bytes, 256-byte aligned
///     zcoll::compress_batch(zcoll::exec::Cuda{stream}, codec, d_values, counts, d_out, d_workspace);
///     // sizes stay on the device: zcoll::cuda::results_of(d_workspace, counts.size())
///
/// Nothing here allocates, copies back to the host or synchronises: the caller gives a workspace sized by
/// compress_workspace_bytes / decompress_workspace_bytes (device memory), the compressed sizes stay in it,
/// and a decoding fault is raised by cuda::check_decoded() when the caller chooses to wait. The calls are
/// zcoll::compress / decompress and their batch forms with exec::Cuda first (codec/compress.hpp has the
/// host's); the sizing and result helpers are in zcoll::cuda.
///
/// Sources that include this file must not be compiled with nvcc's -use_fast_math, --ftz=true or
/// --prec-div=false: flushing denormals on the device would make its codes differ from the host's near
/// the denormal range (nvcc defines no macro for these flags, so this cannot be checked here).
///
/// The chunk offsets are a decoupled look-back scan over the tiles (CUB's ScanTileState and
/// TilePrefixCallbackOp, the machinery of cub::DeviceScan; CUB documents them as its agents' building
/// blocks rather than a stable interface, so a CCCL upgrade may need this file adjusted).

#include <cuda_runtime_api.h>

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/detail/pipeline_tile.hpp"
#include "zcoll/codec/detail/topk_tile.hpp"  // the TopK driver's index faults, which describe() words
#include "zcoll/codec/pipeline.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.cuh"
#include "zcoll/quantize/rowwise.hpp"  // the row-wise drivers' faults, which describe() words

namespace zcoll::cuda {

namespace detail {

using zcoll::detail::placement;
using tile_state = cub::ScanTileState<placement>;
static_assert(sizeof(cub::Uninitialized<placement>) == 24, "max_batch_tiles assumes 24-byte tile states");

/// Records `f` as the launch's fault unless another was recorded first.
__device__ inline void report_fault(zcoll::detail::decode_fault* record, const zcoll::detail::decode_fault& f) {
  if (atomicCAS(&record->code, 0u, f.code) == 0u) {
    record->stream = f.stream;
    record->chunk = f.chunk;
    record->detail = f.detail;
  }
}

/// The team of codec/detail/pipeline_tile.hpp as a CUDA block: one thread per 32-value block.
template <unsigned Threads>
class block_team {
  using prefix_op = cub::TilePrefixCallbackOp<placement, zcoll::detail::place_after, tile_state>;
  template <class V>
  using scan = cub::BlockScan<V, Threads>;

 public:
  struct storage {
    union {
      typename scan<zcoll::detail::kept_code>::TempStorage kept;
      typename scan<zcoll::detail::chunk_sizes>::TempStorage sizes;
      typename scan<std::uint32_t>::TempStorage words;
      typename scan<zcoll::detail::huffman_share>::TempStorage shares;
      typename prefix_op::TempStorage prefix;
    } scans;
    std::uint8_t flags[Threads];
    std::uint32_t words[2 * Threads + 4];
    placement tile_before;
  };

  /// `tiles` holds the tile states of each scan the kernel runs (compression and decompression one,
  /// zcoll::add two).
  __device__ block_team(storage& shared, tile_state* tiles, zcoll::detail::decode_fault* fault, unsigned tile)
      : shared_(shared), tiles_(tiles), fault_(fault), tile_(tile) {}

  __device__ unsigned rank() const { return threadIdx.x; }
  __device__ unsigned size() const { return Threads; }
  __device__ void sync() { __syncthreads(); }
  __device__ std::uint8_t* flags() { return shared_.flags; }
  __device__ std::uint32_t* words() { return shared_.words; }

  template <class V, class Op>
  __device__ V exclusive_scan(V mine, Op op, V initial, V& aggregate) {
    __syncthreads();  // the scans share their temporary storage
    V out;
    scan<V>(temp_storage<V>()).ExclusiveScan(mine, out, initial, op, aggregate);
    return out;
  }

  __device__ placement tile_prefix(placement mine, unsigned scan) {
    __syncthreads();
    if (tile_ == 0) {
      if (threadIdx.x == 0) {
        tiles_[scan].SetInclusive(0, mine);
        shared_.tile_before = placement{};
      }
    } else if (threadIdx.x < 32) {
      prefix_op look_back(tiles_[scan], shared_.scans.prefix, zcoll::detail::place_after{}, static_cast<int>(tile_));
      const placement before = look_back(mine);
      if (threadIdx.x == 0) shared_.tile_before = before;
    }
    __syncthreads();
    return shared_.tile_before;
  }

  __device__ void report(const zcoll::detail::decode_fault& f) { report_fault(fault_, f); }

 private:
  template <class V>
  __device__ typename scan<V>::TempStorage& temp_storage() {
    if constexpr (std::is_same_v<V, zcoll::detail::kept_code>) {
      return shared_.scans.kept;
    } else if constexpr (std::is_same_v<V, zcoll::detail::chunk_sizes>) {
      return shared_.scans.sizes;
    } else if constexpr (std::is_same_v<V, zcoll::detail::huffman_share>) {
      return shared_.scans.shares;
    } else {
      static_assert(std::is_same_v<V, std::uint32_t>, "block_team: a scan of a type with no storage here");
      return shared_.scans.words;
    }
  }

  storage& shared_;
  tile_state* tiles_;
  zcoll::detail::decode_fault* fault_;
  unsigned tile_;
};

inline constexpr unsigned init_threads = 256;
inline constexpr unsigned range_threads = 256;

/// Resets the tile states and the range of every stream. (A template, as every kernel here: a non-template
/// __global__ function in a header would be defined again by each source that includes it.)
template <class TileState>
__global__ void reset_batch(TileState tiles, int tile_count, zcoll::detail::extent_keys* extents, unsigned streams) {
  tiles.InitializeStatus(tile_count);
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (extents != nullptr && i < streams) extents[i] = zcoll::detail::extent_keys{};
}

/// Folds the order keys of the finite, non-fill values of values[0, count) that this thread block visits
/// (the grid's x dimension strides over them) into `extent`: a block reduction, then one atomic each for
/// the smallest and the largest. Every thread of the block calls it.
template <floating_value T>
__device__ void accumulate_extent(const T* values, std::uint64_t count, bool has_fill, bits_of<T> fill,
                                  zcoll::detail::extent_keys& extent) {
  long long lowest = zcoll::detail::extent_keys{}.lowest, highest = zcoll::detail::extent_keys{}.highest;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * range_threads + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * range_threads) {
    const T v = values[i];
    if (zcoll::detail::in_value_range(v, has_fill, fill)) {
      const long long key = order_key(v);
      lowest = key < lowest ? key : lowest;
      highest = key > highest ? key : highest;
    }
  }
  using reduce = cub::BlockReduce<long long, range_threads>;
  __shared__ typename reduce::TempStorage storage;
  lowest = reduce(storage).Reduce(lowest, ::cuda::minimum<>{});
  __syncthreads();
  highest = reduce(storage).Reduce(highest, ::cuda::maximum<>{});
  if (threadIdx.x == 0) {
    atomicMin(&extent.lowest, lowest);
    atomicMax(&extent.highest, highest);
  }
}

/// The order-key range of each stream's finite, non-fill values (blockIdx.y is the stream).
template <floating_value T>
__global__ void __launch_bounds__(range_threads) find_ranges(zcoll::detail::compress_job<T> job,
                                                             zcoll::detail::extent_keys* extents) {
  const unsigned s = blockIdx.y;
  accumulate_extent(job.values + job.layout.first_value[s], job.layout.count(s), job.has_fill, job.fill, extents[s]);
}

template <class Q, class P, class E, floating_value T, unsigned Threads>
__global__ void __launch_bounds__(Threads) compress_tiles(zcoll::detail::compress_job<T> job, tile_state tiles) {
  __shared__ typename block_team<Threads>::storage shared;
  block_team<Threads> team(shared, &tiles, nullptr, blockIdx.x);
  zcoll::detail::compress_tile<Q, P, E>(team, job, blockIdx.x);
}

/// Decoded chunks are staged in shared memory up to this size (the 128-thread team's chunks of 4096 values
/// take 16 KiB of f32, 32 KiB of f64; the 1024-thread team's would not fit beside the team's storage).
inline constexpr std::size_t max_staging_bytes = 32 * 1024;

template <class Q, class P, class E, floating_value T, unsigned Threads>
__global__ void __launch_bounds__(Threads) decompress_tiles(zcoll::detail::decompress_job<T> job, tile_state tiles,
                                                            zcoll::detail::decode_fault* fault) {
  __shared__ typename block_team<Threads>::storage shared;
  block_team<Threads> team(shared, &tiles, fault, blockIdx.x);
  constexpr std::size_t chunk_values = std::size_t{Threads} * zcoll::block_values;
  if constexpr (chunk_values * sizeof(T) <= max_staging_bytes) {
    __shared__ T staging[chunk_values];
    zcoll::detail::decompress_tile<Q, P, E>(team, job, blockIdx.x, staging);
  } else {
    zcoll::detail::decompress_tile<Q, P, E>(team, job, blockIdx.x);
  }
}

/// Reads each stream's Huffman model (VectorLZ's, with its literals' Huffman model, where `vector_lz`)
/// into its decode table, a thread per stream (the host reader's checks; a model that does not read is
/// the stream's fault, and its tiles then decode nothing).
template <floating_value T>
__global__ void read_models(zcoll::detail::decompress_job<T> job, codec_id codec, bool vector_lz,
                            zcoll::detail::huffman_device_model* models, zcoll::detail::decode_fault* fault) {
  const std::uint32_t s = threadIdx.x;
  if (s >= job.layout.streams) return;
  std::uint8_t lengths[encode::detail::huffman_table_entries];
  const zcoll::detail::decode_fault f =
      zcoll::detail::read_huffman_device_model(job.in + job.stream_offset[s], job.stream_bytes[s], job.layout.chunks(s), s,
                                               codec, value_type_of<T>, lengths, models[s], vector_lz);
  if (f.code != 0) report_fault(fault, f);
}

/// Runs `launch.template operator()<Threads>()` with the team size for chunks of `chunk_values`.
template <class Launch>
void with_team_threads(std::uint32_t chunk_values, Launch&& launch) {
  if (zcoll::detail::team_threads_for(chunk_values) == 128) return launch.template operator()<128>();
  return launch.template operator()<1024>();
}

inline std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The workspace: the per-stream results, ranges and the decoding fault (at offsets that depend on the
/// stream count only, so results_of finds them), then the tile states.
struct workspace_layout {
  std::size_t results_at = 0;        // offsets, sizes (u64 per stream), total (u64)
  std::size_t extents_at = 0;        // extent_keys per stream
  std::size_t fault_at = 0;          // decode_fault
  std::size_t tile_states_at = 0;    // scan s's tile states at tile_states_at + s * aligned(tile_state_bytes)
  std::size_t tile_state_bytes = 0;
  std::size_t bytes = 0;

  /// `scans`: the scans over the tiles a kernel runs (zcoll::add runs two).
  workspace_layout(std::size_t tiles, std::size_t streams, unsigned scans = 1) {
    extents_at = results_at + aligned((2 * streams + 1) * sizeof(std::uint64_t));
    fault_at = extents_at + aligned(streams * sizeof(zcoll::detail::extent_keys));
    tile_states_at = fault_at + aligned(sizeof(zcoll::detail::decode_fault));
    check_call(tile_state::AllocationSize(static_cast<int>(tiles), tile_state_bytes), "cub::ScanTileState::AllocationSize");
    bytes = tile_states_at + scans * aligned(tile_state_bytes);
  }

  /// The tile states of scan `scan`, initialised for `tiles` tiles.
  tile_state tiles_of(std::span<std::byte> workspace, std::size_t tiles, unsigned scan) const {
    tile_state states;
    check_call(states.Init(static_cast<int>(tiles), workspace.data() + tile_states_at + scan * aligned(tile_state_bytes),
                           tile_state_bytes),
               "cub::ScanTileState::Init");
    return states;
  }
};

/// Workspace alignment: results, ranges and tile states are 8-byte words and atomics, CUB wants 256.
inline constexpr std::size_t workspace_alignment = 256;

/// Checks a workspace the caller gives for `streams` streams: aligned, and at least `needed` bytes.
inline void check_workspace(const char* caller, std::span<const std::byte> workspace, std::size_t needed) {
  if (reinterpret_cast<std::uintptr_t>(workspace.data()) % workspace_alignment != 0) {
    throw argument_error(std::string(caller) + ": workspace must be " + std::to_string(workspace_alignment) +
                         "-byte aligned (cudaMalloc's pointers are)");
  }
  if (workspace.size() < needed) {
    throw argument_error(std::string(caller) + ": workspace has " + std::to_string(workspace.size()) + " bytes, " +
                         std::to_string(needed) + " are needed (compress_workspace_bytes / decompress_workspace_bytes)");
  }
}

/// decompress_batch refuses to decode in place: tiles read their stream's header and index while others
/// write values, so overlapping buffers would race.
template <floating_value T>
void check_apart(std::span<const std::byte> in, std::span<const T> values) {
  const auto* values_begin = reinterpret_cast<const std::byte*>(values.data());
  const auto* values_end = values_begin + values.size() * sizeof(T);
  if (values_begin < in.data() + in.size() && in.data() < values_end) {
    throw argument_error("decompress_batch: values overlap `in`; decompress into a separate buffer");
  }
}

}  // namespace detail

/// Where the compressed batch is, in the workspace (device memory): per stream its offset in the output
/// and its size, and the total.
struct batch_results {
  std::uint64_t* stream_offset;
  std::uint64_t* stream_bytes;
  std::uint64_t* total_bytes;
};

/// Workspace (device bytes) compress_batch needs for streams of `counts` values.
template <class Q, class P, class E>
std::size_t compress_workspace_bytes(const Pipeline<Q, P, E>& codec, std::span<const std::size_t> counts) {
  const auto layout = zcoll::detail::make_layout("compress_workspace_bytes", counts, codec.config().chunk_values);
  return detail::workspace_layout(layout.tiles(), layout.streams).bytes;
}

/// The results of the last compress_batch into `workspace` for `streams` streams.
inline batch_results results_of(std::span<std::byte> workspace, std::size_t streams) {
  const detail::workspace_layout w(1, streams);
  detail::check_workspace("results_of", workspace, w.extents_at);
  auto* results = reinterpret_cast<std::uint64_t*>(workspace.data() + w.results_at);
  return {results, results + streams, results + 2 * streams};
}

/// Workspace (device bytes) decompress_batch needs for streams of `counts` values: compression's, and
/// for a Huffman pipeline each stream's decode table after it.
template <class Q, class P, class E>
std::size_t decompress_workspace_bytes(const Pipeline<Q, P, E>& codec, std::span<const std::size_t> counts) {
  const auto layout = zcoll::detail::make_layout("decompress_workspace_bytes", counts, codec.config().chunk_values);
  const std::size_t bytes = detail::workspace_layout(layout.tiles(), layout.streams).bytes;
  if constexpr (encode::chunk_encoder<E>) return bytes + detail::aligned(counts.size() * sizeof(zcoll::detail::huffman_device_model));
  return bytes;
}

/// Describes a decoding fault the way the host decoder's format_error does.
inline std::string describe(const zcoll::detail::decode_fault& f) {
  using code = zcoll::detail::decode_fault_code;
  const std::string where = "stream " + std::to_string(f.stream) + ", chunk " + std::to_string(f.chunk) + ": ";
  switch (static_cast<code>(f.code)) {
    case code::none: return "";
    case code::short_stream: return where + "stream shorter than its header and chunk size index";
    case code::bad_header: return where + to_string(static_cast<header_fault>(f.detail));
    case code::wrong_codec: return where + "the stream's codec id or value type is not the decoder's";
    case code::wrong_count: return where + "the stream's value count is not the output's";
    case code::wrong_chunking: return where + "the stream's chunk length or count is not the codec's";
    case code::bad_error_bound: return where + "error bound is not finite, or admits no quantizer step for coded chunks";
    case code::wrong_length: return where + "header, index and chunks make " + std::to_string(f.detail) + " bytes, not the stream's length";
    case code::bad_chunk_kind: return where + "unknown chunk kind " + std::to_string(f.detail);
    case code::bad_verbatim_chunk: return where + "verbatim chunk of " + std::to_string(f.detail) + " bytes does not hold its values";
    case code::bad_block: return where + "bad or truncated block at byte " + std::to_string(f.detail);
    case code::bad_exceptions:
      return where + "exception section at byte " + std::to_string(f.detail >> 8) + ": " +
             zcoll::detail::to_string(static_cast<zcoll::detail::exception_fault>(f.detail & 0xFF));
    case code::bytes_left: return where + std::to_string(f.detail) + " bytes left after the last block";
    case code::not_unchunked: return where + "the stream declares chunks or a fill value; this codec writes neither";
    case code::wrong_body_length: return where + "a body of " + std::to_string(f.detail) + " bytes does not hold the stream's values";
    case code::bad_row:
      return "stream " + std::to_string(f.stream) + ", row " + std::to_string(f.detail) + ": " +
             quantize::detail::to_string(static_cast<quantize::detail::stored_row_fault>(f.chunk));
    case code::unrepresentable_row:
      return "stream " + std::to_string(f.stream) + ", row " + std::to_string(f.detail) + " cannot be held by the fused row-wise layout: " +
             quantize::detail::to_string(static_cast<quantize::detail::row_fault>(f.chunk));
    case code::bad_parameters:
      return where + (f.detail == 0 ? std::string("parameter section does not fit the stream, or has bytes left after its model")
                                    : std::string("huffman model: ") +
                                          encode::detail::to_string(static_cast<encode::detail::huffman_model_fault>(f.detail)));
    case code::bad_vector_token:
      return where + "vector-lz: the token of vector " + std::to_string(f.detail) +
             " reaches before the chunk's start or past the window, or a partial last vector is not a literal";
    case code::bad_sparse_index:
      return "stream " + std::to_string(f.stream) + ": topk " + zcoll::detail::to_string(static_cast<zcoll::detail::topk_index_fault>(f.detail));
    case code::wrong_row_bound: return "stream " + std::to_string(f.stream) + ": the header's error bound is not the rows' largest bound";
    case code::streams_differ:
      return f.detail == static_cast<std::uint64_t>(zcoll::detail::streams_differ_in::error_bound)
                 ? "add: the streams differ in absolute error bound (the bin width is twice it)"
                 : "add: the streams differ in setting " + std::to_string(f.detail);
  }
  return where + "unknown fault " + std::to_string(f.code);
}

namespace detail {

/// Waits for `exec`'s stream and reads the fault record of the last launch into `workspace`.
inline zcoll::detail::decode_fault read_fault(const char* caller, const exec::Cuda& exec, std::span<const std::byte> workspace,
                                              std::size_t streams) {
  const workspace_layout w(1, streams);
  check_workspace(caller, workspace, w.tile_states_at);
  zcoll::detail::decode_fault fault;
  check_call(cudaMemcpyAsync(&fault, workspace.data() + w.fault_at, sizeof fault, cudaMemcpyDeviceToHost, exec.stream),
             (std::string(caller) + ": reading the fault record").c_str());
  check_call(cudaStreamSynchronize(exec.stream), (std::string(caller) + ": waiting for the stream").c_str());
  return fault;
}

}  // namespace detail

/// Waits for `exec`'s stream and raises format_error when the last decompress_batch into `workspace`
/// met a stream it could not decode (the first fault of the launch).
inline void check_decoded(const exec::Cuda& exec, std::span<const std::byte> workspace, std::size_t streams) {
  const zcoll::detail::decode_fault fault = detail::read_fault("check_decoded", exec, workspace, streams);
  if (fault.code != 0) throw format_error(describe(fault));
}

}  // namespace zcoll::cuda

namespace zcoll {

/// Compresses the streams of a batch in one launch (plus a reset and, for a relative bound, a range
/// pass): stream s is values [sum(counts[0..s)), + counts[s]) of `values` and is written, as the host
/// driver writes it, right after stream s - 1 in `out` — the per-destination blocks of an all-to-all land
/// packed in the send buffer. Sizes and offsets stay in `workspace` (results_of).
template <class Q, class P, class E, floating_value T>
void compress_batch(const exec::Cuda& exec, const Pipeline<Q, P, E>& codec, std::span<const T> values,
                    std::span<const std::size_t> counts, std::span<std::byte> out, std::span<std::byte> workspace) {
  static_assert(encode::encoder<E> && detail::scan_predictor<P>,
                "zcoll::compress_batch(exec::Cuda, ...): the CUDA driver takes block encoders and the Lorenzo1D or None predictor");
  namespace cd = cuda::detail;
  const auto& config = codec.config();
  detail::compress_job<T> job;
  job.layout = detail::make_layout("compress_batch", counts, config.chunk_values);
  const cd::workspace_layout w(job.layout.tiles(), job.layout.streams);
  cd::check_workspace("compress_batch", workspace, w.bytes);
  const std::size_t needed = batch_max_compressed_size<T>(codec, counts);
  if (out.size() < needed) {
    throw argument_error("compress_batch: out has " + std::to_string(out.size()) + " bytes, batch_max_compressed_size() = " +
                         std::to_string(needed) + " are needed");
  }
  detail::batch_values("compress_batch", counts, values.size());
  if (const auto fill = codec.template fill_bits<T>()) {
    job.has_fill = true;
    job.fill = *fill;
  }
  job.values = values.data();
  job.out = out.data();
  job.error_bound = config.error_bound;
  const cuda::batch_results results = cuda::results_of(workspace, job.layout.streams);
  job.stream_offset = results.stream_offset;
  job.stream_bytes = results.stream_bytes;
  job.total_bytes = results.total_bytes;
  job.extents = reinterpret_cast<const detail::extent_keys*>(workspace.data() + w.extents_at);

  cd::tile_state tiles;
  cuda::check_call(tiles.Init(static_cast<int>(job.layout.tiles()), workspace.data() + w.tile_states_at, w.tile_state_bytes), "cub::ScanTileState::Init");
  auto* extents = reinterpret_cast<detail::extent_keys*>(workspace.data() + w.extents_at);
  const unsigned reset_blocks = (std::max(job.layout.tiles(), job.layout.streams) + cd::init_threads - 1) / cd::init_threads;
  cd::reset_batch<cd::tile_state><<<reset_blocks, cd::init_threads, 0, exec.stream>>>(tiles, static_cast<int>(job.layout.tiles()), extents,
                                                                              job.layout.streams);
  cuda::check_call(cudaGetLastError(), "compress_batch: reset kernel");
  if (Q::uses_error_bound && config.error_bound.mode == bound_mode::relative) {
    std::uint64_t longest = 0;
    for (const std::size_t count : counts) longest = std::max<std::uint64_t>(longest, count);
    const unsigned parts = static_cast<unsigned>(std::clamp<std::uint64_t>((longest + 8 * cd::range_threads - 1) /
                                                                               (8 * cd::range_threads), 1, 4096));
    cd::find_ranges<T><<<dim3(parts, job.layout.streams), cd::range_threads, 0, exec.stream>>>(job, extents);
    cuda::check_call(cudaGetLastError(), "compress_batch: range kernel");
  }
  cd::with_team_threads(config.chunk_values, [&]<unsigned Threads>() {
    cd::compress_tiles<Q, P, E, T, Threads><<<job.layout.tiles(), Threads, 0, exec.stream>>>(job, tiles);
  });
  cuda::check_call(cudaGetLastError(), "compress_batch: compression kernel");
}

/// Decompresses stream s, the `stream_bytes[s]` bytes at `in` + `stream_offset[s]` (host arrays, as a
/// size exchange delivers them), into values [sum(counts[0..s)), + counts[s]) of `values`, all streams in
/// one launch. Streams must have been written with the codec's chunk length. A stream that does not
/// decode is reported by cuda::check_decoded(); the call itself does not wait.
template <class Q, class P, class E, floating_value T>
void decompress_batch(const exec::Cuda& exec, const Pipeline<Q, P, E>& codec, std::span<const std::byte> in,
                      std::span<const std::uint64_t> stream_offset, std::span<const std::uint64_t> stream_bytes,
                      std::span<T> values, std::span<const std::size_t> counts, std::span<std::byte> workspace) {
  static_assert((encode::encoder<E> || std::is_same_v<E, encode::Huffman> || std::is_same_v<E, encode::VectorLZ>) &&
                    detail::scan_predictor<P>,
                "zcoll::decompress_batch(exec::Cuda, ...): the CUDA driver takes block encoders, Huffman or VectorLZ, the "
                "Lorenzo1D or None predictor, and no lossless back end");
  namespace cd = cuda::detail;
  detail::decompress_job<T> job;
  job.layout = detail::make_layout("decompress_batch", counts, codec.config().chunk_values);
  detail::check_batch_streams(in.size(), stream_offset, stream_bytes, counts.size());
  for (std::size_t s = 0; s < counts.size(); ++s) {
    job.stream_offset[s] = stream_offset[s];
    job.stream_bytes[s] = stream_bytes[s];
  }
  const cd::workspace_layout w(job.layout.tiles(), job.layout.streams);
  cd::check_workspace("decompress_batch", workspace, w.bytes);
  const std::uint64_t total_values = detail::batch_values("decompress_batch", counts, values.size());
  cd::check_apart(in, std::span<const T>(values.data(), total_values));
  job.in = in.data();
  job.values = values.data();
  auto* fault = reinterpret_cast<detail::decode_fault*>(workspace.data() + w.fault_at);
  cuda::check_call(cudaMemsetAsync(fault, 0, sizeof *fault, exec.stream), "decompress_batch: clearing the fault record");
  cd::tile_state tiles;
  cuda::check_call(tiles.Init(static_cast<int>(job.layout.tiles()), workspace.data() + w.tile_states_at, w.tile_state_bytes), "cub::ScanTileState::Init");
  const unsigned reset_blocks = (job.layout.tiles() + cd::init_threads - 1) / cd::init_threads;
  cd::reset_batch<cd::tile_state><<<reset_blocks, cd::init_threads, 0, exec.stream>>>(tiles, static_cast<int>(job.layout.tiles()), nullptr, 0);
  cuda::check_call(cudaGetLastError(), "decompress_batch: reset kernel");
  if constexpr (encode::chunk_encoder<E>) {
    cd::check_workspace("decompress_batch", workspace, cuda::decompress_workspace_bytes(codec, counts));
    auto* const models = reinterpret_cast<detail::huffman_device_model*>(workspace.data() + w.bytes);
    cd::read_models<<<1, detail::max_batch_streams, 0, exec.stream>>>(job, Pipeline<Q, P, E>::id,
                                                                        std::is_same_v<E, encode::VectorLZ>, models, fault);
    cuda::check_call(cudaGetLastError(), "decompress_batch: model kernel");
    job.models = models;
  }
  cd::with_team_threads(codec.config().chunk_values, [&]<unsigned Threads>() {
    cd::decompress_tiles<Q, P, E, T, Threads><<<job.layout.tiles(), Threads, 0, exec.stream>>>(job, tiles, fault);
  });
  cuda::check_call(cudaGetLastError(), "decompress_batch: decompression kernel");
}

/// One stream: compress_batch of one, for every codec with a CUDA driver (this file's pipelines,
/// codec/cast.cuh, codec/rowwise.cuh). Its size stays on the device: cuda::results_of(workspace, 1).
template <codec C, floating_value T>
void compress(const exec::Cuda& exec, const C& codec, std::span<const T> values, std::span<std::byte> out,
              std::span<std::byte> workspace) {
  const std::size_t counts[] = {values.size()};
  compress_batch(exec, codec, values, std::span<const std::size_t>(counts), out, workspace);
}

/// One stream, all of `in`: decompress_batch of one, for every codec with a CUDA driver; a fault is
/// reported by cuda::check_decoded(.., 1).
template <codec C, floating_value T>
void decompress(const exec::Cuda& exec, const C& codec, std::span<const std::byte> in, std::span<T> values,
                std::span<std::byte> workspace) {
  const std::size_t counts[] = {values.size()};
  const std::uint64_t offset[] = {0}, bytes[] = {in.size()};
  decompress_batch(exec, codec, in, std::span<const std::uint64_t>(offset), std::span<const std::uint64_t>(bytes), values,
                   std::span<const std::size_t>(counts), workspace);
}

}  // namespace zcoll
