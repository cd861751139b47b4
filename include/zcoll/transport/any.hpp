#pragma once
/// AnyTransport: any byte_transport behind one type, so that Compressed<Schedule, Codec> is named by its
/// schedule and codec alone. One virtual call per message, never per value.

#include <memory>
#include <span>
#include <utility>

#include "zcoll/core/error.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll::transport {

class AnyTransport {
  struct request_base {
    virtual ~request_base() = default;
  };
  template <class T>
  struct request_model final : request_base {
    explicit request_model(typename T::request r) : request(std::move(r)) {}
    typename T::request request;
  };

  struct transport_base {
    virtual ~transport_base() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual std::unique_ptr<request_base> isend(int peer, int tag, std::span<const std::byte> bytes) = 0;
    virtual std::unique_ptr<request_base> irecv(int peer, int tag, std::span<std::byte> bytes) = 0;
    virtual void wait(request_base& r) = 0;
    virtual bool test(request_base& r) = 0;
    virtual std::unique_ptr<transport_base> split(int color, int key) = 0;
    virtual bool takes_device_memory() const = 0;
  };

  template <class T>
  struct transport_model final : transport_base {
    explicit transport_model(T t) : transport(std::move(t)) {}
    int rank() const override { return transport.rank(); }
    int size() const override { return transport.size(); }
    std::unique_ptr<request_base> isend(int peer, int tag, std::span<const std::byte> bytes) override {
      return std::make_unique<request_model<T>>(transport.isend_async(peer, tag, bytes));
    }
    std::unique_ptr<request_base> irecv(int peer, int tag, std::span<std::byte> bytes) override {
      return std::make_unique<request_model<T>>(transport.irecv_async(peer, tag, bytes));
    }
    void wait(request_base& r) override { transport.wait(static_cast<request_model<T>&>(r).request); }
    bool test(request_base& r) override { return transport.test(static_cast<request_model<T>&>(r).request); }
    std::unique_ptr<transport_base> split(int color, int key) override {
      return std::make_unique<transport_model<T>>(transport.split(color, key));
    }
    bool takes_device_memory() const override { return transport::takes_device_memory(transport); }
    T transport;
  };

  explicit AnyTransport(std::unique_ptr<transport_base> impl) : impl_(std::move(impl)) {}

 public:
  /// A pending operation of the wrapped transport.
  class request {
   public:
    request() = default;

   private:
    friend class AnyTransport;
    explicit request(std::unique_ptr<request_base> impl) : impl_(std::move(impl)) {}
    std::unique_ptr<request_base> impl_;
  };

  // AnyTransport itself is ruled out first: checking byte_transport<AnyTransport> asks whether it is
  // movable, which would consider this constructor again (clang 14 recursed without end).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, AnyTransport> && byte_transport<T>)
  explicit AnyTransport(T transport)
      : impl_(std::make_unique<transport_model<std::remove_cvref_t<T>>>(std::move(transport))) {}

  int rank() const { return impl_->rank(); }
  int size() const { return impl_->size(); }
  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    return request(impl_->isend(peer, tag, bytes));
  }
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    return request(impl_->irecv(peer, tag, bytes));
  }
  void wait(request& r) {
    if (r.impl_) impl_->wait(*r.impl_);
  }
  bool test(request& r) { return !r.impl_ || impl_->test(*r.impl_); }
  AnyTransport split(int color, int key) { return AnyTransport(impl_->split(color, key)); }
  /// Whether the wrapped transport takes CUDA device memory (transport::takes_device_memory).
  bool takes_device_memory() const { return impl_->takes_device_memory(); }

 private:
  std::unique_ptr<transport_base> impl_;
};

}  // namespace zcoll::transport
