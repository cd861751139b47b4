#pragma once
// The test double of a faulty peer, over any byte transport (transport::Local, transport::Mpi): rank
// `bad_rank` passes every message it sends through damage(tag, bytes) while `armed` is set (always, when
// no flag is given). The damaged copies are kept until the transport is destroyed, so a transport whose
// sends complete later (MPI) still reads them.
#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/transport/concepts.hpp"

namespace zcoll_test {

/// Compressed's message tags: size words and hop headers, and block bytes.
inline constexpr int size_tag = 7001;
inline constexpr int data_tag = 7002;

template <zcoll::transport::byte_transport Inner>
class Faulty {
 public:
  using request = typename Inner::request;
  using damage_fn = std::function<void(int tag, std::vector<std::byte>&)>;

  Faulty(Inner inner, int bad_rank, damage_fn damage, std::shared_ptr<std::atomic<bool>> armed = nullptr)
      : inner_(std::move(inner)), bad_rank_(bad_rank), damage_(std::move(damage)), armed_(std::move(armed)) {}

  int rank() const { return inner_.rank(); }
  int size() const { return inner_.size(); }
  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    if (rank() != bad_rank_ || (armed_ && !*armed_)) return inner_.isend_async(peer, tag, bytes);
    auto& copy = sent_->emplace_back(bytes.begin(), bytes.end());
    damage_(tag, copy);
    return inner_.isend_async(peer, tag, copy);
  }
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) { return inner_.irecv_async(peer, tag, bytes); }
  void wait(request& r) { inner_.wait(r); }
  bool test(request& r) { return inner_.test(r); }
  Faulty split(int color, int key) { return Faulty(inner_.split(color, key), -1, damage_, armed_); }

 private:
  Inner inner_;
  int bad_rank_;
  damage_fn damage_;
  std::shared_ptr<std::atomic<bool>> armed_;
  std::shared_ptr<std::deque<std::vector<std::byte>>> sent_ = std::make_shared<std::deque<std::vector<std::byte>>>();
};

/// The message of the error E that `call` raises, or "" when it raises none.
template <class E, class Fn>
std::string error_of(Fn&& call) {
  try {
    call();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

/// A damage: the value-type byte of every stream (f32 <-> f64), on block bytes only.
inline void retype(int tag, std::vector<std::byte>& bytes) {
  if (tag == data_tag && bytes.size() > 6) bytes[6] = bytes[6] == std::byte{1} ? std::byte{2} : std::byte{1};
}

}  // namespace zcoll_test
