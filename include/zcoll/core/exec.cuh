#pragma once
/// The CUDA execution space: codec calls on device buffers take exec::Cuda{stream}.

#include <cuda_runtime_api.h>

#include <string>

#include "zcoll/core/error.hpp"

namespace zcoll::exec {

/// Work is enqueued on `stream` and nothing waits for it: calls allocate nothing, copy nothing back to
/// the host and do not synchronise; results (compressed sizes, decoding faults) stay on the device until
/// the caller reads them.
struct Cuda {
  cudaStream_t stream = nullptr;
};

}  // namespace zcoll::exec

namespace zcoll::cuda {

/// Raises zcoll::error naming `what` when a CUDA runtime call failed.
inline void check_call(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw error(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
}

/// Whether this process sees a CUDA device (false on machines without one or without a driver).
inline bool device_present() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

}  // namespace zcoll::cuda
