#pragma once
// The test double of a CUDA-aware transport, over any byte transport: it says whether it takes device
// memory (takes_device_memory, as transport::Mpi does after MPIX_Query_cuda_support) and records every
// block message (Compressed's data tag) it is given, so a test can check which buffers met it.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "support/faulty_transport.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll_test {

template <zcoll::transport::byte_transport Inner>
class DeviceMemoryTransport {
 public:
  using request = typename Inner::request;
  using messages = std::vector<std::span<const std::byte>>;

  DeviceMemoryTransport(Inner inner, bool takes_device_memory, std::shared_ptr<messages> blocks)
      : inner_(std::move(inner)), takes_(takes_device_memory), blocks_(std::move(blocks)) {}

  bool takes_device_memory() const { return takes_; }
  int rank() const { return inner_.rank(); }
  int size() const { return inner_.size(); }
  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    if (tag == data_tag && !bytes.empty()) blocks_->push_back(bytes);
    return inner_.isend_async(peer, tag, bytes);
  }
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    if (tag == data_tag && !bytes.empty()) blocks_->push_back(bytes);
    return inner_.irecv_async(peer, tag, bytes);
  }
  void wait(request& r) { inner_.wait(r); }
  bool test(request& r) { return inner_.test(r); }
  DeviceMemoryTransport split(int color, int key) { return {inner_.split(color, key), takes_, blocks_}; }

 private:
  Inner inner_;
  bool takes_;
  std::shared_ptr<messages> blocks_;
};

}  // namespace zcoll_test
