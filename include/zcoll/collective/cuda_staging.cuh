#pragma once
/// zcoll::cuda::Staging: the staging space (collective/staging.hpp) for device buffers — the CUDA stream a
/// collective's codec runs on, and the buffers that carry its compressed bytes between the device and
/// the transport, kept from call to call:
///
///     #include <zcoll/collective/cuda_staging.cuh>   // in a source nvcc compiles
///
///     zcoll::cuda::Staging staging{stream};
///     zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{zcoll::transport::Mpi{MPI_COMM_WORLD}, codec};
///     coll.alltoall(staging, std::span<const float>(d_in, n), std::span<float>(d_out, n));
///
/// Device areas come from cudaMalloc and host areas from cudaMallocHost (pinned, so the copies are
/// asynchronous DMA); each grows to the largest call it served and is then reused, so calls of one size
/// allocate nothing after the first. Over a CUDA-aware transport the compressed bytes go to it from the
/// device areas (device_transfer, staging.hpp). Every step is enqueued on the stream; a call waits for it three
/// times (the compressed sizes, the staged bytes, the decoded values with their fault record), which is
/// what moving the bytes through the transport needs (a reduction: once a hop, and once for a relative
/// bound's extent). Work the caller enqueued on the stream before the call
/// runs first (the values are read in stream order); the call returns with its values written.
///
/// The codec must have a CUDA driver: the Lorenzo1D/None pipelines with block encoders (FZLight),
/// the casts (FP16, BF16, FP8) and the row-wise quantizers (Int8, Int4, Int2).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "zcoll/codec/add.cuh"
#include "zcoll/codec/cast.cuh"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/codec/rowwise.cuh"
#include "zcoll/collective/staging.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.cuh"
#include "zcoll/core/half_value.hpp"
#include "zcoll/core/value_range.hpp"

namespace zcoll::cuda {

namespace detail {

/// Row-wise codecs report rows they cannot hold after compression (check_quantized).
template <class C>
inline constexpr bool quantizes_rows = false;
template <int Bits>
inline constexpr bool quantizes_rows<RowwiseQuantized<Bits>> = true;

struct device_free {
  void operator()(std::byte* p) const { cudaFree(p); }
};
struct pinned_free {
  void operator()(std::byte* p) const { cudaFreeHost(p); }
};

/// Device areas are cudaMalloc'd, host areas pinned.
inline bool on_device(staging_area area) {
  return area == staging_area::device_out || area == staging_area::device_in || area == staging_area::device_work ||
         area == staging_area::device_values || area == staging_area::device_incoming || area == staging_area::device_wide_in ||
         area == staging_area::device_wide_out || area == staging_area::device_wire_out || area == staging_area::device_wire_in;
}

inline constexpr unsigned combine_threads = 256;

/// target = op(target, incoming), element by element: the host's reduction operators, run per value.
template <class T, class Op>
__global__ void __launch_bounds__(combine_threads) combine_values(T* target, const T* incoming, std::uint64_t count, Op op) {
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * combine_threads + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * combine_threads) {
    target[i] = op(target[i], incoming[i]);
  }
}

/// The order keys of the finite, non-fill values of values[0, count) into *extent (reset before).
template <floating_value T>
__global__ void __launch_bounds__(zcoll::cuda::detail::range_threads) value_extent_keys(const T* values, std::uint64_t count,
                                                                                      bool has_fill, bits_of<T> fill,
                                                                                      zcoll::detail::extent_keys* extent) {
  zcoll::cuda::detail::accumulate_extent(values, count, has_fill, fill, *extent);
}

/// 16-bit codes widened to float (the host's widened()).
template <class Format>
__global__ void __launch_bounds__(combine_threads) widen_values(const std::uint16_t* from, float* to, std::uint64_t count) {
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * combine_threads + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * combine_threads) {
    to[i] = zcoll::detail::widened<Format>(from[i]);
  }
}

/// Floats rounded to 16-bit codes (the host's round_to_half()); the largest rounding goes into *worst as
/// the bits of a non-negative double, whose order is the integers' (so atomicMax takes it).
template <class Format>
__global__ void __launch_bounds__(combine_threads) narrow_values(const float* from, std::uint16_t* to, std::uint64_t count,
                                                                 unsigned long long* worst) {
  double largest = 0.0;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * combine_threads + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * combine_threads) {
    const zcoll::detail::rounded_half r = zcoll::detail::round_to_half<Format>(from[i]);
    to[i] = r.code;
    largest = r.error > largest ? r.error : largest;
  }
  using reduce = cub::BlockReduce<double, combine_threads>;
  __shared__ typename reduce::TempStorage storage;
  largest = reduce(storage).Reduce(largest, ::cuda::maximum<>{});
  if (threadIdx.x == 0) atomicMax(worst, static_cast<unsigned long long>(__double_as_longlong(largest)));
}

/// Blocks for a grid-stride pass over `count` values, `threads` a block: enough to fill a GPU, no more.
inline unsigned grid_blocks(std::uint64_t count, unsigned threads) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((count + threads - 1) / threads, 1, 4096));
}

}  // namespace detail

class Staging {
 public:
  /// `transfer`: where the compressed bytes meet the transport (staging.hpp) — by default the device
  /// buffers for a CUDA-aware transport (transport::Mpi::takes_device_memory), the pinned host buffers
  /// for any other.
  explicit Staging(cudaStream_t stream = nullptr, device_transfer transfer = device_transfer::automatic)
      : exec_{stream}, transfer_(transfer) {}

  static constexpr bool device_memory_is_host_memory = false;
  device_transfer transfer() const { return transfer_; }

  exec::Cuda exec() const { return exec_; }

  /// Runs the calls that follow on `stream` (a caller whose stream changes between calls, such as
  /// torch's current stream): waits for the space's old stream first, so no step of an earlier call is
  /// left running beside the next call's. argument_error while a call is in flight on the space.
  void use_stream(cudaStream_t stream) {
    if (in_use_) throw argument_error("Staging::use_stream: the space is lent to a call still in flight");
    if (stream == exec_.stream) return;
    wait();
    exec_.stream = stream;
  }

  /// `bytes` bytes of `area`, reallocated (contents not kept) when it holds fewer.
  std::span<std::byte> area(staging_area which, std::size_t bytes) {
    const auto index = static_cast<std::size_t>(which);
    if (capacity_[index] < bytes) {
      device_[index].reset();
      pinned_[index].reset();
      void* memory = nullptr;
      if (detail::on_device(which)) {
        check_call(cudaMalloc(&memory, bytes), "Staging: cudaMalloc");
        device_[index].reset(static_cast<std::byte*>(memory));
      } else {
        check_call(cudaMallocHost(&memory, bytes), "Staging: cudaMallocHost");
        pinned_[index].reset(static_cast<std::byte*>(memory));
      }
      capacity_[index] = bytes;
    }
    std::byte* base = detail::on_device(which) ? device_[index].get() : pinned_[index].get();
    return {base, bytes};
  }

  /// Enqueues a copy in any direction (unified addressing tells device from host memory).
  void copy(std::span<std::byte> to, std::span<const std::byte> from) {
    if (to.size() != from.size()) {
      throw argument_error("Staging::copy: " + std::to_string(from.size()) + " bytes into " + std::to_string(to.size()));
    }
    if (from.empty()) return;
    check_call(cudaMemcpyAsync(to.data(), from.data(), from.size(), cudaMemcpyDefault, exec_.stream), "Staging: cudaMemcpyAsync");
  }

  void wait() { check_call(cudaStreamSynchronize(exec_.stream), "Staging: cudaStreamSynchronize"); }

  /// A launch takes this many streams (their layout travels as kernel parameters).
  static constexpr std::size_t max_batch_streams() { return zcoll::detail::max_batch_streams; }
  bool& in_use() { return in_use_; }

  template <codec C>
  std::size_t workspace_bytes(const C& codec, std::span<const std::size_t> counts) const {
    return std::max(compress_workspace_bytes(codec, counts), decompress_workspace_bytes(codec, counts));
  }

  /// Enqueues the batch's compression and the copy of its sizes into `sizes` (a host_words slice).
  template <codec C, floating_value T>
  void compress(const C& codec, std::span<const T> values, std::span<const std::size_t> counts, std::span<std::byte> out,
                std::span<std::byte> work, std::span<std::uint64_t> sizes) {
    compress_batch(exec_, codec, values, counts, out, work);
    const batch_results results = results_of(work, counts.size());
    check_call(cudaMemcpyAsync(sizes.data(), results.stream_bytes, sizes.size_bytes(), cudaMemcpyDeviceToHost, exec_.stream),
               "Staging: copying the compressed sizes");
  }

  /// After wait(): the argument_error the host driver raises for values the codec cannot hold (a NaN
  /// row of a row-wise codec); the other device codecs take every value.
  template <codec C>
  void check_compressed(const C&, std::span<const std::byte> work, std::size_t streams) {
    if constexpr (detail::quantizes_rows<C>) check_quantized(exec_, work, streams);
  }

  /// Decodes the batch and waits for it; returns the stream whose fault the launch recorded.
  template <codec C, floating_value T>
  std::optional<batch_fault> decompress(const C& codec, std::span<const std::byte> in, std::span<const std::uint64_t> offsets,
                                        std::span<const std::uint64_t> sizes, std::span<T> values,
                                        std::span<const std::size_t> counts, std::span<std::byte> work) {
    decompress_batch(exec_, codec, in, offsets, sizes, values, counts, work);
    const zcoll::detail::decode_fault fault = detail::read_fault("Staging::decompress", exec_, work, counts.size());
    if (fault.code == 0) return std::nullopt;
    return batch_fault{fault.stream, describe(fault)};
  }

  /// The smallest and largest finite value of `values` (device memory) other than the fill value: one
  /// pass on the stream, and a wait for its two words.
  template <floating_value T>
  value_extent<double> extent(std::span<const T> values, std::optional<bits_of<T>> fill_bits) {
    if (values.empty()) return {};
    using keys = zcoll::detail::extent_keys;
    auto* device_keys = reinterpret_cast<keys*>(area(staging_area::device_work, sizeof(keys)).data());
    auto* host_keys = reinterpret_cast<keys*>(area(staging_area::host_words, sizeof(keys)).data());
    *host_keys = keys{};
    check_call(cudaMemcpyAsync(device_keys, host_keys, sizeof(keys), cudaMemcpyHostToDevice, exec_.stream), "Staging: resetting the extent");
    detail::value_extent_keys<T><<<detail::grid_blocks(values.size(), zcoll::cuda::detail::range_threads),
                                   zcoll::cuda::detail::range_threads, 0, exec_.stream>>>(values.data(), values.size(), fill_bits.has_value(),
                                                                                          fill_bits.value_or(0), device_keys);
    check_call(cudaGetLastError(), "Staging: the extent kernel");
    check_call(cudaMemcpyAsync(host_keys, device_keys, sizeof(keys), cudaMemcpyDeviceToHost, exec_.stream), "Staging: reading the extent");
    wait();
    const value_extent<T> found = zcoll::detail::extent_of_keys<T>(*host_keys);
    return {found.lowest, found.highest};
  }

  /// Enqueues target = op(target, incoming) element-wise (a copy of incoming where `reduce` is false).
  template <floating_value T, class Op>
  void combine(Op op, std::span<T> target, std::span<const T> incoming, bool reduce) {
    check_staging_lengths("Staging::combine", incoming.size(), target.size());
    if (!reduce) {
      copy(std::as_writable_bytes(target), std::as_bytes(incoming));
      return;
    }
    if (target.empty()) return;
    detail::combine_values<T, Op><<<detail::grid_blocks(target.size(), detail::combine_threads), detail::combine_threads, 0, exec_.stream>>>(
        target.data(), incoming.data(), target.size(), op);
    check_call(cudaGetLastError(), "Staging: the combine kernel");
  }

  /// The stream of a + b (zcoll::add) from streams a and b of `count` values in host memory, into `out`
  /// (host memory, room for max_compressed_size): the streams are copied to the device, added there by
  /// the add kernel, and the sum copied back; waits. Raises what the host's add raises for streams that do
  /// not add. A codec the device does not add (2-D/3-D Lorenzo) is added on the host. Returns the sum.
  template <floating_value T, codec C>
  std::span<std::byte> add(const C& codec, std::span<const std::byte> a, std::span<const std::byte> b, std::span<std::byte> out,
                           std::size_t count) {
    if constexpr (device_addable<C>) {
      const std::size_t b_at = detail::aligned(a.size());  // b starts on 256 bytes, as the add reads it
      const std::span<std::byte> in = area(staging_area::device_in, b_at + b.size());
      copy(in.first(a.size()), a);
      copy(in.subspan(b_at, b.size()), b);
      const std::span<std::byte> sum = area(staging_area::device_out, out.size());
      const std::span<std::byte> work = area(staging_area::device_work, add_workspace_bytes(codec, count));
      zcoll::add<T>(exec_, codec, count, std::span<const std::byte>(in.first(a.size())),
                    std::span<const std::byte>(in.subspan(b_at, b.size())), sum, work);
      auto* size = reinterpret_cast<std::uint64_t*>(area(staging_area::host_words, sizeof(std::uint64_t)).data());
      check_call(cudaMemcpyAsync(size, added_bytes(work), sizeof *size, cudaMemcpyDeviceToHost, exec_.stream),
                 "Staging: reading the sum's size");
      check_added(exec_, work);  // waits
      const auto bytes = static_cast<std::size_t>(*size);
      copy(out.first(bytes), sum.first(bytes));
      wait();
      return out.first(bytes);
    } else {
      return zcoll::add(exec::Host{}, codec, a, b, out);
    }
  }

  /// Enqueues the widening of 16-bit values to float.
  template <half_value H>
  void widen(std::span<const H> from, std::span<float> to) {
    check_staging_lengths("Staging::widen", from.size(), to.size());
    if (from.empty()) return;
    detail::widen_values<typename H::format><<<detail::grid_blocks(from.size(), detail::combine_threads), detail::combine_threads, 0,
                                               exec_.stream>>>(reinterpret_cast<const std::uint16_t*>(from.data()), to.data(), from.size());
    check_call(cudaGetLastError(), "Staging: the widening kernel");
  }

  /// Rounds float values to 16 bits on the stream and waits; returns the largest rounding |H(x) - x| over
  /// finite x (+Inf where one overflowed), as the host's narrow() does.
  template <half_value H>
  double narrow(std::span<const float> from, std::span<H> to) {
    check_staging_lengths("Staging::narrow", from.size(), to.size());
    if (from.empty()) return 0.0;
    auto* device_worst = reinterpret_cast<unsigned long long*>(area(staging_area::device_work, sizeof(unsigned long long)).data());
    auto* host_worst = reinterpret_cast<unsigned long long*>(area(staging_area::host_words, sizeof(unsigned long long)).data());
    check_call(cudaMemsetAsync(device_worst, 0, sizeof(unsigned long long), exec_.stream), "Staging: resetting the rounding");
    detail::narrow_values<typename H::format><<<detail::grid_blocks(from.size(), detail::combine_threads), detail::combine_threads, 0,
                                                exec_.stream>>>(from.data(), reinterpret_cast<std::uint16_t*>(to.data()), from.size(),
                                                                device_worst);
    check_call(cudaGetLastError(), "Staging: the narrowing kernel");
    check_call(cudaMemcpyAsync(host_worst, device_worst, sizeof(unsigned long long), cudaMemcpyDeviceToHost, exec_.stream),
               "Staging: reading the rounding");
    wait();
    return std::bit_cast<double>(static_cast<std::uint64_t>(*host_worst));
  }

 private:
  exec::Cuda exec_;
  device_transfer transfer_;
  std::array<std::unique_ptr<std::byte, detail::device_free>, staging_areas> device_;
  std::array<std::unique_ptr<std::byte, detail::pinned_free>, staging_areas> pinned_;
  std::array<std::size_t, staging_areas> capacity_{};
  bool in_use_ = false;
};

}  // namespace zcoll::cuda
