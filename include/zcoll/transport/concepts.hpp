#pragma once
/// What a transport is: point-to-point byte messages between the ranks of a group.

#include <concepts>
#include <cstddef>
#include <span>

namespace zcoll::transport {

/// A byte transport moves raw bytes between ranks 0..size()-1 of a group.
///
/// - isend_async(peer, tag, bytes) starts sending; `bytes` must stay alive and unchanged until the
///   request completes. irecv_async(peer, tag, bytes) starts receiving a message of exactly
///   bytes.size() bytes; a message of another size is a transport_error.
/// - wait(request) blocks until the request completes; test(request) says whether it has, without
///   blocking. Messages between one pair of ranks with one tag arrive in the order they were sent.
/// - split(color, key) makes the sub-group of the ranks that passed the same color, ordered by key
///   (MPI_Comm_split); every rank of the group must call it.
/// - abort(): this rank failed; the transport makes the other ranks' waits fail (transport_error)
///   instead of hanging on messages that will never come, where it can.
/// - takes_device_memory() (optional, const): whether isend_async/irecv_async take CUDA device memory
///   (CUDA-aware MPI); absent means no. The staged collectives hand such a transport their device
///   buffers (collective/staging.hpp, device_transfer).
template <class T>
concept byte_transport = std::movable<T> &&
                         requires(T& t, const T& ct, int peer, int tag, std::span<const std::byte> out,
                                  std::span<std::byte> in, typename T::request r) {
                           typename T::request;
                           { ct.rank() } -> std::same_as<int>;
                           { ct.size() } -> std::same_as<int>;
                           { t.isend_async(peer, tag, out) } -> std::same_as<typename T::request>;
                           { t.irecv_async(peer, tag, in) } -> std::same_as<typename T::request>;
                           t.wait(r);
                           { t.test(r) } -> std::same_as<bool>;
                           { t.split(peer, tag) } -> std::same_as<T>;
                         };

/// Whether `t` takes CUDA device memory (its takes_device_memory(), false where it has none).
template <byte_transport T>
bool takes_device_memory(const T& t) {
  if constexpr (requires { { t.takes_device_memory() } -> std::convertible_to<bool>; }) {
    return t.takes_device_memory();
  } else {
    return false;
  }
}

}  // namespace zcoll::transport
