#pragma once
// zcoll._zcoll_cuda's codecs and collectives on CUDA tensors, as its bindings (module.cpp, compiled by
// the host compiler) see them: device memory as addresses, a CUDA stream as torch hands it over (an
// integer handle: torch.cuda.current_stream().cuda_stream), no CUDA header. The parts nvcc compiles
// (codecs.cu, collectives.cu) run the library's device drivers: codec/*.cuh and cuda::Staging.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "../collective_face.hpp"
#include "../value_types.hpp"
#include "zcoll/codec/codec_config.hpp"

namespace zcoll::python::cuda_face {

/// Makes `device` the calling thread's CUDA device (the torch tensor's device index): zcoll's calls run
/// on zcoll.torch's worker thread, whose device is otherwise the first. argument_error for a device
/// that is not there.
void use_device(int device);

/// `device` as the calling thread's CUDA device for the scope's life, the thread's own device again after
/// it: a call on a tensor of cuda:1 leaves torch's current device as it found it.
class device_scope {
 public:
  explicit device_scope(int device);
  ~device_scope();
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int previous_ = 0;
};

/// One registered codec with a device driver, on device memory. Each call runs on `stream` of `device`
/// (the calling thread's device is restored after it) and waits for what the host must know (the
/// compressed size, whether the stream decoded); its workspace is kept from call to call on the device
/// of its first call (another device is an argument_error), so one object serves one thread at a time
/// (zcoll.Codec takes a lock).
class device_codec {
 public:
  virtual ~device_codec() = default;
  virtual std::size_t max_compressed_size(dtype d, std::size_t count) const = 0;
  /// Compresses `count` values of `d` at `in` into `out` (`out_bytes`, at least max_compressed_size);
  /// the stream's size. 16-bit values are widened to float on the device and travel as f32 streams, as
  /// on the host. Codecs the device only decodes (the Huffman and VectorLZ pipelines) raise
  /// argument_error.
  virtual std::size_t compress(dtype d, std::uintptr_t in, std::size_t count, std::uintptr_t out, std::size_t out_bytes,
                               int device, std::uintptr_t stream) = 0;
  /// Decodes the `stream_bytes` bytes at `in` into `count` values of `d` at `out`; format_error for a
  /// stream that does not decode (then `out` may be partly written). For 16-bit outputs, the largest
  /// error their final rounding added (else 0), as the host face returns it.
  virtual double decompress(dtype d, std::uintptr_t in, std::size_t stream_bytes, std::uintptr_t out, std::size_t count,
                            int device, std::uintptr_t stream) = 0;
};

/// The registered codec `name` with a device driver; argument_error naming the ones that have one.
std::unique_ptr<device_codec> make_device_codec(const std::string& name, const codec_config& config);

/// The names of the registered codecs with a device driver (a decoder at least).
std::string device_codec_names();

/// A collective on device memory: zcoll's staged calls through a cuda::Staging of its own, whose pinned
/// and device buffers are kept from call to call; the bytes cross to the host for the transport.
class device_collective {
 public:
  /// argument_error when `settings.codec` has no device driver or is not a collective's codec.
  device_collective(transport_maker transport, const collective_settings& settings);
  ~device_collective();
  device_collective(const device_collective&) = delete;
  device_collective& operator=(const device_collective&) = delete;

  /// The calls, after moving the staging space to `stream` on `device` (the space stays on the device
  /// of its first call: another one is an argument_error). Call it, and the calls and their requests'
  /// waits, inside a device_scope of device().
  collective_face& on_stream(int device, std::uintptr_t stream);
  /// The device of the staging space's buffers; -1 before the first call.
  int device() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace zcoll::python::cuda_face
