#pragma once
// Device memory for the CUDA tests (the library allocates none): a buffer, filled from and read back to
// host vectors. Only sources nvcc compiles include this.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "zcoll/core/exec.cuh"

namespace zcoll_test {

/// Device memory for a test (the library allocates none).
class device_bytes {
 public:
  explicit device_bytes(std::size_t size) : size_(size) {
    zcoll::cuda::check_call(cudaMalloc(&data_, size == 0 ? 1 : size), "cudaMalloc");
  }
  ~device_bytes() { cudaFree(data_); }
  device_bytes(device_bytes&& other) noexcept : data_(std::exchange(other.data_, nullptr)), size_(other.size_) {}
  device_bytes& operator=(device_bytes&&) = delete;

  std::span<std::byte> span() { return {static_cast<std::byte*>(data_), size_}; }
  template <class T>
  T* as() { return static_cast<T*>(data_); }

  template <class T>
  static device_bytes from(std::span<const T> host) {
    device_bytes d(host.size_bytes());
    zcoll::cuda::check_call(cudaMemcpy(d.data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
    return d;
  }
  template <class T>
  std::vector<T> to_host(std::size_t count, std::size_t offset_bytes = 0) const {
    std::vector<T> host(count);
    zcoll::cuda::check_call(cudaMemcpy(host.data(), static_cast<const std::byte*>(data_) + offset_bytes, count * sizeof(T),
                                       cudaMemcpyDeviceToHost),
                            "cudaMemcpy");
    return host;
  }

 private:
  void* data_ = nullptr;
  std::size_t size_;
};

}  // namespace zcoll_test
