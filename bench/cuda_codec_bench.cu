// zcoll-bench codec --device cuda (cuda_codec_bench.hpp): device timings from CUDA events, medians of
// `repeat` runs after one warm-up.

#include "cuda_codec_bench.hpp"
#include "device_buffer.cuh"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#include "zcoll/codec/add.cuh"
#include "zcoll/codec/cast.cuh"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/codec/rowwise.cuh"
#include "zcoll/codec/topk.cuh"
#include "zcoll/codec/presets.hpp"
#include "zcoll/codec/registry.hpp"

namespace zcoll_bench {

namespace {

using zcoll::cuda::check_call;

class event_timer {
 public:
  event_timer() {
    check_call(cudaEventCreate(&start_), "cudaEventCreate");
    check_call(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~event_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  /// Median seconds of `repeat` runs of fn (which enqueues work on `stream`), after one warm-up.
  template <class Fn>
  double median_seconds(cudaStream_t stream, unsigned repeat, Fn&& fn) {
    fn();
    std::vector<double> samples;
    for (unsigned r = 0; r < repeat; ++r) {
      check_call(cudaEventRecord(start_, stream), "cudaEventRecord");
      fn();
      check_call(cudaEventRecord(stop_, stream), "cudaEventRecord");
      check_call(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0;
      check_call(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      samples.push_back(ms / 1e3);
    }
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return samples[samples.size() / 2];
  }

 private:
  cudaEvent_t start_, stop_;
};

template <class T>
device_buffer to_device(std::span<const T> values) {
  device_buffer d(values.size_bytes());
  check_call(cudaMemcpy(d.data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}

/// The device calls of a codec with a batch driver (pipelines, row-wise, casts), one stream.
template <class Codec, class T>
struct batched_calls {
  batched_calls(const zcoll::codec_config& config, std::size_t count)
      : codec(config), counts{count}, workspace(zcoll::cuda::compress_workspace_bytes(codec, counts)) {}
  std::size_t max_compressed_size() const { return zcoll::batch_max_compressed_size<T>(codec, counts); }
  void compress(const zcoll::exec::Cuda& exec, std::span<const T> values, std::span<std::byte> out) {
    zcoll::compress(exec, codec, values, out, workspace.span());
  }
  std::uint64_t* compressed_size() { return zcoll::cuda::results_of(workspace.span(), 1).total_bytes; }
  void prepare_decompress(std::size_t /*stream_bytes*/) {}
  void decompress(const zcoll::exec::Cuda& exec, std::span<const std::byte> in, std::span<T> values) {
    zcoll::decompress(exec, codec, in, values, workspace.span());
  }
  void check_decoded(const zcoll::exec::Cuda& exec) { zcoll::cuda::check_decoded(exec, workspace.span(), 1); }

  Codec codec;
  std::size_t counts[1];
  device_buffer workspace;
};

/// TopK's device calls: a workspace of its own each way (compression's holds tau; decompression's is
/// sized by the stream), the exact threshold computed on every call (a fresh schedule each time, as the
/// host row's life span of 1).
template <class T>
struct topk_calls {
  topk_calls(const zcoll::codec_config& config, std::size_t count)
      : codec(config), count(count), workspace(zcoll::cuda::compress_workspace_bytes(codec, count)) {}
  std::size_t max_compressed_size() const { return zcoll::TopK::max_compressed_size<T>(count); }
  void compress(const zcoll::exec::Cuda& exec, std::span<const T> values, std::span<std::byte> out) {
    zcoll::compress(exec, codec, values, out, workspace.span());
  }
  std::uint64_t* compressed_size() { return zcoll::cuda::results_of(workspace.span(), 1).total_bytes; }
  void prepare_decompress(std::size_t stream_bytes) {
    decode_workspace.emplace(zcoll::cuda::decompress_workspace_bytes(codec, count, stream_bytes));
  }
  void decompress(const zcoll::exec::Cuda& exec, std::span<const std::byte> in, std::span<T> values) {
    zcoll::decompress(exec, codec, in, values, decode_workspace->span());
  }
  void check_decoded(const zcoll::exec::Cuda& exec) { zcoll::cuda::check_decoded(exec, decode_workspace->span(), 1); }

  zcoll::TopK codec;
  std::size_t count;
  device_buffer workspace;
  std::optional<device_buffer> decode_workspace;
};

/// A Huffman pipeline: the host driver encodes (one thread; the stream then crosses to the device, as in
/// a staged collective), the CUDA driver decodes. Compression is timed the same way, between two events
/// on the stream, so its row is the host's encoding plus the copy.
template <class Codec, class T>
struct host_encoded_calls {
  host_encoded_calls(const zcoll::codec_config& config, std::span<const T> values)
      : codec(config), values(values), counts{values.size()},
        host_stream(codec.template max_compressed_size<T>(values.size())),
        workspace(zcoll::cuda::decompress_workspace_bytes(codec, counts)), size_word(8) {}
  std::size_t max_compressed_size() const { return host_stream.size(); }
  void compress(const zcoll::exec::Cuda& exec, std::span<const T> /*device values: the host's copy is encoded*/,
                std::span<std::byte> out) {
    const std::uint64_t bytes = codec.compress(zcoll::exec::Host{}, values, std::span<std::byte>(host_stream)).size();
    check_call(cudaMemcpyAsync(out.data(), host_stream.data(), bytes, cudaMemcpyHostToDevice, exec.stream), "cudaMemcpyAsync");
    check_call(cudaMemcpyAsync(size_word.data(), &bytes, 8, cudaMemcpyHostToDevice, exec.stream), "cudaMemcpyAsync");
    check_call(cudaStreamSynchronize(exec.stream), "cudaStreamSynchronize");  // `bytes` is a local
  }
  std::uint64_t* compressed_size() { return reinterpret_cast<std::uint64_t*>(size_word.data()); }
  void prepare_decompress(std::size_t /*stream_bytes*/) {}
  void decompress(const zcoll::exec::Cuda& exec, std::span<const std::byte> in, std::span<T> out) {
    zcoll::decompress(exec, codec, in, out, workspace.span());
  }
  void check_decoded(const zcoll::exec::Cuda& exec) { zcoll::cuda::check_decoded(exec, workspace.span(), 1); }

  Codec codec;
  std::span<const T> values;
  std::size_t counts[1];
  std::vector<std::byte> host_stream;
  device_buffer workspace, size_word;
};

template <class Codec>
constexpr bool encoded_on_the_host() {
  if constexpr (requires { typename Codec::encoder_type; }) {
    return zcoll::encode::chunk_encoder<typename Codec::encoder_type>;  // Huffman, VectorLZ
  } else {
    return false;
  }
}
template <class Codec>
inline constexpr bool host_encoded = encoded_on_the_host<Codec>();

template <class Calls, class T>
cuda_codec_result<T> measure_calls(Calls&& calls, std::span<const T> values, unsigned repeat) {
  const zcoll::exec::Cuda exec{};
  const auto d_values = to_device(values);
  device_buffer d_stream(calls.max_compressed_size());
  device_buffer d_restored(values.size_bytes());
  const std::span<const T> d(reinterpret_cast<const T*>(d_values.data()), values.size());
  const std::span<T> restored(reinterpret_cast<T*>(d_restored.data()), values.size());
  event_timer timer;
  cuda_codec_result<T> result;
  result.compress_s = timer.median_seconds(exec.stream, repeat, [&] { calls.compress(exec, d, d_stream.span()); });
  std::uint64_t bytes = 0;
  check_call(cudaMemcpy(&bytes, calls.compressed_size(), 8, cudaMemcpyDeviceToHost), "reading the compressed size");
  result.compressed_bytes = static_cast<std::size_t>(bytes);
  calls.prepare_decompress(result.compressed_bytes);
  result.decompress_s = timer.median_seconds(exec.stream, repeat, [&] {
    calls.decompress(exec, std::span<const std::byte>(d_stream.span().first(bytes)), restored);
  });
  calls.check_decoded(exec);
  result.restored.resize(values.size());
  check_call(cudaMemcpy(result.restored.data(), d_restored.data(), values.size_bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::byte prefix[zcoll::stream_header_size_bytes];
  check_call(cudaMemcpy(prefix, d_stream.data(), sizeof prefix, cudaMemcpyDeviceToHost), "cudaMemcpy");
  result.error_bound = zcoll::read_stream_header(std::span<const std::byte>(prefix, sizeof prefix)).error_bound;
  return result;
}

template <class Codec, class T>
cuda_batch_result measure_codec_batch(const zcoll::codec_config& config, std::span<const T> values, std::size_t blocks,
                                      unsigned repeat) {
  const Codec codec(config);
  // Blocks of whole rows for the row-wise quantizers.
  std::size_t unit = 1;
  if constexpr (requires { codec.dim(); }) unit = codec.dim();
  const std::size_t units = values.size() / unit;
  std::vector<std::size_t> counts(blocks);
  for (std::size_t b = 0; b < blocks; ++b) counts[b] = (units * (b + 1) / blocks - units * b / blocks) * unit;
  const zcoll::exec::Cuda exec{};
  const auto d_values = to_device(values);
  device_buffer d_out(zcoll::batch_max_compressed_size<T>(codec, counts));
  device_buffer workspace(zcoll::cuda::compress_workspace_bytes(codec, counts));
  // One workspace per block for the launch-per-block loop, each sized for the largest block: each
  // launch's results stay where they are.
  const std::size_t one[] = {*std::max_element(counts.begin(), counts.end())};
  const std::size_t block_workspace = zcoll::cuda::compress_workspace_bytes(codec, std::span<const std::size_t>(one));
  device_buffer workspaces(block_workspace * blocks);
  std::vector<std::size_t> out_at(blocks + 1, 0), value_at(blocks + 1, 0);
  for (std::size_t b = 0; b < blocks; ++b) {
    out_at[b + 1] = out_at[b] + codec.template max_compressed_size<T>(counts[b]);
    value_at[b + 1] = value_at[b] + counts[b];
  }
  event_timer timer;
  cuda_batch_result result;
  const std::span<const T> d(reinterpret_cast<const T*>(d_values.data()), values.size());
  result.one_launch_s = timer.median_seconds(exec.stream, repeat, [&] {
    zcoll::compress_batch(exec, codec, d, std::span<const std::size_t>(counts), d_out.span(), workspace.span());
  });
  std::uint64_t bytes = 0;
  check_call(cudaMemcpy(&bytes, zcoll::cuda::results_of(workspace.span(), blocks).total_bytes, 8, cudaMemcpyDeviceToHost),
             "reading the compressed size");
  result.compressed_bytes = static_cast<std::size_t>(bytes);
  result.launch_per_block_s = timer.median_seconds(exec.stream, repeat, [&] {
    for (std::size_t b = 0; b < blocks; ++b) {
      zcoll::compress(exec, codec, d.subspan(value_at[b], counts[b]), d_out.span().subspan(out_at[b], out_at[b + 1] - out_at[b]),
                      workspaces.span().subspan(b * block_workspace, block_workspace));
    }
  });
  return result;
}

template <class Codec, class T>
cuda_codec_result<T> measure_codec(const zcoll::codec_config& config, std::span<const T> values, unsigned repeat) {
  if constexpr (std::is_same_v<Codec, zcoll::TopK>) {
    return measure_calls(topk_calls<T>(config, values.size()), values, repeat);
  } else if constexpr (host_encoded<Codec>) {
    return measure_calls(host_encoded_calls<Codec, T>(config, values), values, repeat);
  } else {
    return measure_calls(batched_calls<Codec, T>(config, values.size()), values, repeat);
  }
}

/// x += y, element by element: the add of decompress-add-compress.
template <class T>
__global__ void add_values(T* x, const T* y, std::size_t n) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    x[i] += y[i];
  }
}

template <class Codec, class T>
cuda_add_result measure_codec_add(const zcoll::codec_config& config, std::span<const std::byte> a, std::span<const std::byte> b,
                                  std::size_t count, unsigned repeat) {
  const Codec codec(config);
  const std::size_t counts[] = {count};
  const zcoll::exec::Cuda exec{};
  const auto d_a = to_device(a), d_b = to_device(b);
  const std::size_t room = codec.template max_compressed_size<T>(count);
  device_buffer d_sum(room), d_doc(room), d_x(count * sizeof(T)), d_y(count * sizeof(T));
  device_buffer add_workspace(zcoll::cuda::add_workspace_bytes(codec, count));
  device_buffer workspace(zcoll::cuda::compress_workspace_bytes(codec, counts));
  const std::span<T> x(reinterpret_cast<T*>(d_x.data()), count), y(reinterpret_cast<T*>(d_y.data()), count);
  event_timer timer;
  cuda_add_result result;
  result.add_s = timer.median_seconds(exec.stream, repeat, [&] {
    zcoll::add<T>(exec, codec, count, d_a.span(), d_b.span(), d_sum.span(), add_workspace.span());
  });
  zcoll::cuda::check_added(exec, add_workspace.span());
  std::uint64_t bytes = 0;
  check_call(cudaMemcpy(&bytes, zcoll::cuda::added_bytes(add_workspace.span()), 8, cudaMemcpyDeviceToHost), "reading the sum's size");
  result.sum.resize(static_cast<std::size_t>(bytes));
  check_call(cudaMemcpy(result.sum.data(), d_sum.data(), result.sum.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  const unsigned add_blocks = static_cast<unsigned>(std::clamp<std::size_t>((count + 255) / 256, 1, 65535));
  result.doc_s = timer.median_seconds(exec.stream, repeat, [&] {
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_a.span()), x, workspace.span());
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_b.span()), y, workspace.span());
    add_values<<<add_blocks, 256, 0, exec.stream>>>(x.data(), y.data(), count);
    zcoll::compress(exec, codec, std::span<const T>(x), d_doc.span(), workspace.span());
  });
  check_call(cudaMemcpy(&bytes, zcoll::cuda::results_of(workspace.span(), 1).total_bytes, 8, cudaMemcpyDeviceToHost),
             "reading DOC's size");
  result.doc_bytes = static_cast<std::size_t>(bytes);
  result.decompress_s = timer.median_seconds(exec.stream, repeat, [&] {
    zcoll::decompress(exec, codec, std::span<const std::byte>(d_a.span()), x, workspace.span());
  });
  zcoll::cuda::check_decoded(exec, workspace.span(), 1);
  return result;
}

/// The registered codecs marked for the device (zcoll/codec/registry.hpp): FZLight, the row-wise
/// quantizers, the casts and TopK; and EmbeddingHuffman and EmbeddingLZ, decoded there (encoded on the host). The other pipelines the CUDA driver takes (linear-bitshuffle, lorenzo-raw)
/// are not: each costs this file 16 kernels of nvcc time (2 types x 2 team sizes x 2 directions), and they
/// differ from FZLight in the per-block math alone, which the host benchmark measures.
std::vector<std::string> device_codec_names() {
  std::vector<std::string> names;
  zcoll::for_each_registered_codec([&]<class Entry>() {
    if constexpr (Entry::traits.device || Entry::traits.device_decode) names.emplace_back(Entry::name);
  });
  return names;
}

template <class Fn>
auto with_codec(const std::string& name, Fn&& fn) {
  using result = decltype(fn.template operator()<zcoll::FZLight>());
  return zcoll::with_registered_codec(name, [&]<class Entry>() -> result {
    if constexpr (Entry::traits.device || Entry::traits.device_decode) {
      return fn.template operator()<typename Entry::type>();
    } else {
      std::string list;
      for (const auto& device_codec : device_codec_names()) list += (list.empty() ? "" : ", ") + device_codec;
      throw std::invalid_argument("--device cuda: zcoll-bench measures " + list + " on the device, not '" + name + "'");
    }
  });
}

}  // namespace

std::vector<std::string> cuda_codec_names() { return device_codec_names(); }

double cuda_memcpy_seconds(std::size_t bytes, unsigned repeat, std::string& device_name) {
  int device = 0;
  check_call(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties{};
  check_call(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  device_name = properties.name;
  device_buffer from(bytes), to(bytes);
  check_call(cudaMemset(from.data(), 0, bytes), "cudaMemset");
  event_timer timer;
  return timer.median_seconds(nullptr, repeat, [&] {
    check_call(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync");
  });
}

template <class T>
cuda_codec_result<T> cuda_measure(const std::string& codec, const zcoll::codec_config& config, std::span<const T> values,
                                  unsigned repeat) {
  return with_codec(codec, [&]<class Codec>() { return measure_codec<Codec, T>(config, values, repeat); });
}

template <class T>
cuda_batch_result cuda_measure_batch(const std::string& codec, const zcoll::codec_config& config,
                                     std::span<const T> values, std::size_t blocks, unsigned repeat) {
  return with_codec(codec, [&]<class Codec>() -> cuda_batch_result {
    if constexpr (std::is_same_v<Codec, zcoll::TopK>) {
      throw std::invalid_argument("--blocks: topk has no batch driver on the device (one tensor a call)");
    } else if constexpr (host_encoded<Codec>) {
      throw std::invalid_argument("--blocks: " + codec + " is encoded on the host; the device only decodes it");
    } else {
      return measure_codec_batch<Codec, T>(config, values, blocks, repeat);
    }
  });
}

template <class T>
cuda_add_result cuda_measure_add(const std::string& codec, const zcoll::codec_config& config, std::span<const std::byte> a,
                                 std::span<const std::byte> b, std::size_t count, unsigned repeat) {
  return with_codec(codec, [&]<class Codec>() -> cuda_add_result {
    if constexpr (zcoll::addable_codec<Codec>) {
      return measure_codec_add<Codec, T>(config, a, b, count, repeat);
    } else {
      throw std::invalid_argument("--add: " + codec + " streams do not add");
    }
  });
}

template cuda_add_result cuda_measure_add<float>(const std::string&, const zcoll::codec_config&, std::span<const std::byte>,
                                                 std::span<const std::byte>, std::size_t, unsigned);
template cuda_add_result cuda_measure_add<double>(const std::string&, const zcoll::codec_config&, std::span<const std::byte>,
                                                  std::span<const std::byte>, std::size_t, unsigned);
template cuda_codec_result<float> cuda_measure(const std::string&, const zcoll::codec_config&, std::span<const float>, unsigned);
template cuda_codec_result<double> cuda_measure(const std::string&, const zcoll::codec_config&, std::span<const double>, unsigned);
template cuda_batch_result cuda_measure_batch(const std::string&, const zcoll::codec_config&, std::span<const float>, std::size_t, unsigned);
template cuda_batch_result cuda_measure_batch(const std::string&, const zcoll::codec_config&, std::span<const double>, std::size_t, unsigned);

}  // namespace zcoll_bench
