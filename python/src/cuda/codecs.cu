// zcoll._zcoll_cuda's codecs (device_faces.hpp): the registered codecs with a device driver, on the
// addresses of CUDA tensors, through the library's calls on exec::Cuda (codec/pipeline.cuh, cast.cuh,
// rowwise.cuh, topk.cuh). A cuda::Staging gives each codec its workspace and the 16-bit values' float
// copies, kept from call to call, and the widening and rounding kernels the staged collectives use.

#include "device_faces.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "zcoll/codec/cast.cuh"
#include "zcoll/codec/pipeline.cuh"
#include "zcoll/codec/registry.hpp"
#include "zcoll/codec/rowwise.cuh"
#include "zcoll/codec/topk.cuh"
#include "zcoll/collective/cuda_staging.cuh"
#include "zcoll/core/error.hpp"
#include "zcoll/core/half_value.hpp"

namespace zcoll::python::cuda_face {

namespace {

cudaStream_t as_stream(std::uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

template <class T>
std::span<T> device_values(std::uintptr_t address, std::size_t count) {
  return {reinterpret_cast<T*>(address), count};
}

template <class T>
std::span<T> float_area(cuda::Staging& space, staging_area area, std::size_t count) {
  return {reinterpret_cast<T*>(space.area(area, count * sizeof(T)).data()), count};
}

template <class Entry>
class device_codec_model final : public device_codec {
  using Codec = typename Entry::type;
  static constexpr bool encodes = Entry::traits.device;  // else the device decodes only

 public:
  explicit device_codec_model(const codec_config& config) : codec_(config) {}

  std::size_t max_compressed_size(dtype d, std::size_t count) const override {
    if (d == dtype::float64) return codec_.template max_compressed_size<double>(count);
    return codec_.template max_compressed_size<float>(count);  // 16-bit values travel as f32 streams
  }

  std::size_t compress(dtype d, std::uintptr_t in, std::size_t count, std::uintptr_t out, std::size_t out_bytes, int device,
                       std::uintptr_t stream) override {
    if constexpr (!encodes) {
      (void)d, (void)in, (void)count, (void)out, (void)out_bytes, (void)device, (void)stream;
      throw argument_error("compress: codec '" + std::string(Entry::name) +
                           "' is encoded on the host (its code is built from the whole stream's statistics; "
                           "docs/cuda.md); compress a CPU tensor, the device decodes the stream");
    } else {
      check_device(device);
      const device_scope on_device(device);
      use(device, stream);
      const std::span<std::byte> to{reinterpret_cast<std::byte*>(out), out_bytes};
      return with_dtype(d, [&]<class T>(T) -> std::size_t {
        if constexpr (half_value<T>) {
          const std::span<float> wide = float_area<float>(space_, staging_area::device_wide_in, count);
          space_.widen(device_values<const T>(in, count), wide);
          return compress_values(std::span<const float>(wide), to);
        } else {
          return compress_values(device_values<const T>(in, count), to);
        }
      });
    }
  }

  double decompress(dtype d, std::uintptr_t in, std::size_t stream_bytes, std::uintptr_t out, std::size_t count, int device,
                    std::uintptr_t stream) override {
    check_device(device);
    const device_scope on_device(device);
    use(device, stream);
    const std::span<const std::byte> from{reinterpret_cast<const std::byte*>(in), stream_bytes};
    return with_dtype(d, [&]<class T>(T) -> double {
      if constexpr (half_value<T>) {
        const std::span<float> wide = float_area<float>(space_, staging_area::device_wide_out, count);
        decompress_values(from, wide);
        return space_.narrow(std::span<const float>(wide), device_values<T>(out, count));
      } else {
        decompress_values(from, device_values<T>(out, count));
        return 0.0;
      }
    });
  }

 private:
  /// argument_error unless `device` is the workspace's (its first call's, recorded by use()).
  void check_device(int device) const {
    if (device_ >= 0 && device != device_) {
      throw argument_error("a CUDA tensor on cuda:" + std::to_string(device) + "; this Codec's device workspace is on cuda:" +
                           std::to_string(device_) + " (make a Codec per device)");
    }
  }
  /// Inside the call's device_scope: records the device and moves the space to `stream`.
  void use(int device, std::uintptr_t stream) {
    device_ = device;
    space_.use_stream(as_stream(stream));
  }

  template <class T>
  std::size_t compress_values(std::span<const T> values, std::span<std::byte> out) {
    const std::size_t needed = codec_.template max_compressed_size<T>(values.size());
    if (out.size() < needed) {
      throw argument_error("compress: out has " + std::to_string(out.size()) + " bytes; max_compressed_size = " +
                           std::to_string(needed) + " are needed");
    }
    const exec::Cuda exec = space_.exec();
    const std::span<std::byte> work = space_.area(staging_area::device_work, compress_workspace(values.size()));
    zcoll::compress(exec, codec_, values, out, work);
    auto* size = reinterpret_cast<std::uint64_t*>(space_.area(staging_area::host_words, sizeof(std::uint64_t)).data());
    cuda::check_call(cudaMemcpyAsync(size, cuda::results_of(work, 1).total_bytes, sizeof *size, cudaMemcpyDeviceToHost, exec.stream),
                     "compress: reading the compressed size");
    space_.wait();
    space_.check_compressed(codec_, work, 1);  // a NaN row of a row-wise codec: the host's argument_error
    return static_cast<std::size_t>(*size);
  }

  template <class T>
  void decompress_values(std::span<const std::byte> in, std::span<T> values) {
    const exec::Cuda exec = space_.exec();
    const std::span<std::byte> work = space_.area(staging_area::device_work, decompress_workspace(values.size(), in.size()));
    zcoll::decompress(exec, codec_, in, values, work);
    cuda::check_decoded(exec, work, 1);  // waits; format_error for a stream that does not decode
  }

  std::size_t compress_workspace(std::size_t count) const {
    if constexpr (std::is_same_v<Codec, TopK>) {
      return cuda::compress_workspace_bytes(codec_, count);
    } else {
      const std::size_t counts[] = {count};
      return cuda::compress_workspace_bytes(codec_, std::span<const std::size_t>(counts));
    }
  }

  std::size_t decompress_workspace(std::size_t count, std::size_t stream_bytes) const {
    if constexpr (std::is_same_v<Codec, TopK>) {
      return cuda::decompress_workspace_bytes(codec_, count, stream_bytes);
    } else {
      const std::size_t counts[] = {count};
      return cuda::decompress_workspace_bytes(codec_, std::span<const std::size_t>(counts));
    }
  }

  Codec codec_;
  cuda::Staging space_;
  int device_ = -1;  // the device of space_'s buffers, from the first call
};

template <class Entry>
inline constexpr bool on_device = Entry::traits.device || Entry::traits.device_decode;

}  // namespace

void use_device(int device) {
  int devices = 0;
  cuda::check_call(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (device < 0 || device >= devices) {
    throw argument_error("device: cuda:" + std::to_string(device) + "; this process sees " + std::to_string(devices) +
                         " CUDA devices");
  }
  cuda::check_call(cudaSetDevice(device), "cudaSetDevice");
}

device_scope::device_scope(int device) {
  cuda::check_call(cudaGetDevice(&previous_), "cudaGetDevice");
  use_device(device);
}

device_scope::~device_scope() { cudaSetDevice(previous_); }

std::string device_codec_names() {
  std::string names;
  for_each_registered_codec([&]<class Entry>() {
    if constexpr (on_device<Entry>) names += (names.empty() ? "" : ", ") + std::string(Entry::name);
  });
  return names;
}

std::unique_ptr<device_codec> make_device_codec(const std::string& name, const codec_config& config) {
  std::unique_ptr<device_codec> made;
  for_each_registered_codec([&]<class Entry>() {
    if constexpr (on_device<Entry>) {
      if (!made && Entry::name == name) made = std::make_unique<device_codec_model<Entry>>(config);
    }
  });
  if (!made) {
    throw argument_error("Codec('" + name + "') on a CUDA tensor: the codec has no device driver; the device codes " +
                         device_codec_names() + " (or pass a CPU tensor)");
  }
  return made;
}

}  // namespace zcoll::python::cuda_face
