#pragma once
// The test double of a CUDA-aware transport on one machine: a byte transport (transport::Local) that
// takes device memory — a send's bytes are copied to a host buffer when it is posted, a receive lands in
// a host buffer and is copied to its destination when it completes (cudaMemcpyDefault: host or device).
// It is what lets the GPU tests run the staged calls' device wire (device_transfer) without an MPI
// built with CUDA. Compile with nvcc.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "zcoll/core/exec.cuh"
#include "zcoll/transport/concepts.hpp"

namespace zcoll_test {

template <zcoll::transport::byte_transport Inner>
class CudaAwareLocal {
 public:
  class request {
   public:
    request() = default;

   private:
    friend class CudaAwareLocal;
    typename Inner::request inner;
    std::shared_ptr<std::vector<std::byte>> bounce;  // the bytes on the host, alive while in flight
    std::byte* destination = nullptr;                // a receive's, copied to when it completes
  };

  explicit CudaAwareLocal(Inner inner) : inner_(std::move(inner)) {}

  bool takes_device_memory() const { return true; }
  int rank() const { return inner_.rank(); }
  int size() const { return inner_.size(); }

  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    request r;
    r.bounce = std::make_shared<std::vector<std::byte>>(bytes.size());
    copy(r.bounce->data(), bytes.data(), bytes.size());
    r.inner = inner_.isend_async(peer, tag, std::span<const std::byte>(*r.bounce));
    return r;
  }
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    request r;
    r.bounce = std::make_shared<std::vector<std::byte>>(bytes.size());
    r.destination = bytes.data();
    r.inner = inner_.irecv_async(peer, tag, std::span<std::byte>(*r.bounce));
    return r;
  }
  void wait(request& r) {
    inner_.wait(r.inner);
    finish(r);
  }
  bool test(request& r) {
    if (!inner_.test(r.inner)) return false;
    finish(r);
    return true;
  }
  CudaAwareLocal split(int color, int key) { return CudaAwareLocal(inner_.split(color, key)); }

 private:
  static void copy(std::byte* to, const std::byte* from, std::size_t bytes) {
    if (bytes > 0) zcoll::cuda::check_call(cudaMemcpy(to, from, bytes, cudaMemcpyDefault), "CudaAwareLocal: cudaMemcpy");
  }
  static void finish(request& r) {
    if (r.destination != nullptr && r.bounce) copy(r.destination, r.bounce->data(), r.bounce->size());
    r.destination = nullptr;
  }

  Inner inner_;
};

}  // namespace zcoll_test
