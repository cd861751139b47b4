#pragma once
// A CUDA stream of a test's own (a rank's thread, or two streams in turn), destroyed with it.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "zcoll/core/exec.cuh"

namespace zcoll_test {

class cuda_stream {
 public:
  cuda_stream() { zcoll::cuda::check_call(cudaStreamCreate(&stream_), "cudaStreamCreate"); }
  ~cuda_stream() { cudaStreamDestroy(stream_); }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  cudaStream_t get() const { return stream_; }
  /// The stream as torch hands it over (torch.cuda.Stream.cuda_stream).
  std::uintptr_t handle() const { return reinterpret_cast<std::uintptr_t>(stream_); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace zcoll_test
