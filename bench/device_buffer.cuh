#pragma once
/// Device memory owned by zcoll-bench (the library allocates none): the buffers of the CUDA benchmarks.
/// Only sources nvcc compiles include this.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>

#include "zcoll/core/exec.cuh"

namespace zcoll_bench {

class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) : bytes_(bytes) {
    zcoll::cuda::check_call(cudaMalloc(&data_, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
  }
  ~device_buffer() { cudaFree(data_); }
  device_buffer(device_buffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)), bytes_(other.bytes_) {}
  device_buffer& operator=(device_buffer&&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(data_); }
  std::span<std::byte> span() const { return {data(), bytes_}; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
};

}  // namespace zcoll_bench
