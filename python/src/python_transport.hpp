#pragma once
// python_transport: a zcoll byte_transport whose messages a Python object moves — in zcoll.torch, a
// torch.distributed process group's send and recv (gloo here, NCCL on GPU clusters). zcoll's engine
// codes and reduces in C++; only the bytes go through Python.
//
// The Python object has rank, size, and isend(peer, tag, memoryview) / irecv(peer, tag, memoryview),
// which return a handle, wait(handle) and test(handle) -> bool (zcoll/torch.py: _GroupTransport). The
// engine calls them with the GIL released (it codes without it), so each call takes the GIL for its
// length. Each collective object gets a tag space of its own (tag_base), as the MPI faces get a
// communicator of their own: two collectives on one process group never take each other's messages.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "zcoll/core/error.hpp"

namespace zcoll::python {

namespace py = pybind11;

/// A Python object that may be moved and destroyed without the GIL: the reference is dropped under it.
class gil_safe_object {
 public:
  gil_safe_object() = default;
  explicit gil_safe_object(py::object o) : object_(std::move(o)) {}
  gil_safe_object(gil_safe_object&&) noexcept = default;
  gil_safe_object& operator=(gil_safe_object&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = std::move(other.object_);
    }
    return *this;
  }
  ~gil_safe_object() { reset(); }

  /// The object; only with the GIL held.
  const py::object& get() const { return object_; }
  explicit operator bool() const { return static_cast<bool>(object_); }

 private:
  void reset() {
    if (!object_) return;
    if (!Py_IsInitialized()) {  // after the interpreter's end the reference is gone with it
      object_.release();
      return;
    }
    py::gil_scoped_acquire locked;
    object_ = py::object();
  }
  py::object object_;
};

/// Messages a rank sends to itself, which process groups do not carry (gloo has no pair to itself):
/// a send waits here for its receive, or a receive for its send, and whichever comes second copies the
/// bytes and completes both. Both are posted before either is waited on (zcoll's schedules post a
/// round's receive and send, then wait), so a single thread never waits on a half.
class loopback {
 public:
  struct message {
    int tag = 0;
    std::byte* data = nullptr;
    std::size_t size = 0;
    std::shared_ptr<bool> done;
  };

  std::shared_ptr<bool> post_send(int tag, const std::byte* data, std::size_t size) {
    return post(receives_, sends_, tag, const_cast<std::byte*>(data), size, true);
  }
  std::shared_ptr<bool> post_receive(int tag, std::byte* data, std::size_t size) {
    return post(sends_, receives_, tag, data, size, false);
  }

 private:
  std::shared_ptr<bool> post(std::deque<message>& others, std::deque<message>& mine, int tag, std::byte* data,
                             std::size_t size, bool sending) {
    auto done = std::make_shared<bool>(false);
    for (auto it = others.begin(); it != others.end(); ++it) {
      if (it->tag != tag) continue;
      if (it->size != size) {
        throw transport_error("message to self of " + std::to_string(sending ? size : it->size) +
                              " bytes, received into " + std::to_string(sending ? it->size : size));
      }
      if (size != 0) std::memcpy(sending ? it->data : data, sending ? data : it->data, size);
      *it->done = true;
      *done = true;
      others.erase(it);
      return done;
    }
    mine.push_back({tag, data, size, done});
    return done;
  }

  std::deque<message> sends_;
  std::deque<message> receives_;
};

class python_transport {
 public:
  /// A message in flight: a process group's handle, or a message to self; neither for a zero-byte
  /// message, which nothing needs to move (both sides know its length: the engine sends sizes before
  /// variable-length blocks).
  struct request {
    gil_safe_object handle;
    std::shared_ptr<bool> to_self_done;
  };

  python_transport(py::object impl, int tag_base)
      : impl_(std::move(impl)), tag_base_(tag_base), self_(std::make_shared<loopback>()) {
    rank_ = impl_.get().attr("rank").cast<int>();
    size_ = impl_.get().attr("size").cast<int>();
  }

  int rank() const { return rank_; }
  int size() const { return size_; }

  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    if (bytes.empty()) return {};
    if (peer == rank_) return {{}, self_->post_send(tag, bytes.data(), bytes.size())};
    // The receiving side may not write into a send buffer; Python's memoryview only has to be writable
    // because torch.frombuffer warns on read-only buffers.
    return post("isend", peer, tag, const_cast<std::byte*>(bytes.data()), bytes.size());
  }
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    if (bytes.empty()) return {};
    if (peer == rank_) return {{}, self_->post_receive(tag, bytes.data(), bytes.size())};
    return post("irecv", peer, tag, bytes.data(), bytes.size());
  }
  void wait(request& r) {
    if (r.to_self_done) {
      if (!*r.to_self_done) throw transport_error("waited on a message to self whose other half was never posted");
      return;
    }
    if (!r.handle) return;
    call([&] { impl_.get().attr("wait")(r.handle.get()); });
  }
  bool test(request& r) {
    if (r.to_self_done) return *r.to_self_done;
    if (!r.handle) return true;
    bool done = false;
    call([&] { done = impl_.get().attr("test")(r.handle.get()).cast<bool>(); });
    return done;
  }
  python_transport split(int, int) {
    throw argument_error(
        "zcoll over a torch process group: this schedule splits the group (Hierarchical); use Ring or "
        "RecursiveDoubling, or pass the sub-group as a process group of its own");
  }

 private:
  request post(const char* method, int peer, int tag, std::byte* data, std::size_t size) {
    request r;
    call([&] {
      auto view = py::memoryview::from_memory(data, static_cast<py::ssize_t>(size), false);
      r.handle = gil_safe_object(impl_.get().attr(method)(peer, tag_base_ + tag, view));
    });
    return r;
  }

  /// Runs `f` under the GIL; a Python exception becomes a transport_error (the engine's kind of failure
  /// of a message), its text kept.
  template <class F>
  static void call(F&& f) {
    py::gil_scoped_acquire locked;
    try {
      f();
    } catch (py::error_already_set& e) {
      throw transport_error(std::string("torch.distributed: ") + e.what());
    }
  }

  gil_safe_object impl_;
  int tag_base_ = 0;
  int rank_ = 0;
  int size_ = 0;
  std::shared_ptr<loopback> self_;  // shared by moved-from copies: the engine moves its transport once
};

}  // namespace zcoll::python
