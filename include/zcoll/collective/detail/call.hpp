#pragma once
/// call_context: the state of one collective call — its report, whether it compresses, the fault it
/// holds in verify mode, its scratch — and the message steps every engine is written with. A call is a
/// coroutine (detail::task) over one call_context; the engines take the context as an argument and never
/// reach the collective that started the call, so several calls can be outstanding on one collective.
///
///     co_await call.exchange(step.send, out, step.recv, in, wire::data_tag, raw_bytes);
///     co_await call.until_complete(request, peer);   // suspends (non-blocking) or waits (blocking)

#include <algorithm>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "zcoll/collective/collective_config.hpp"
#include "zcoll/collective/collective_report.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/collective/verify.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/ring.hpp"
#include "zcoll/transport/any.hpp"

namespace zcoll::detail {

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point start) {
  return std::chrono::duration<double>(clock::now() - start).count();
}

/// Where each block of a data-movement call is: in the arena, in the caller's buffers, or staged.
struct block_location {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  int from = -1;  // the rank it was received from
};

/// An allocator whose resize() leaves new bytes uninitialized: a stream buffer is sized for the most a
/// codec may write and then written, and zero-filling it first cost more than adding two streams.
template <class T>
struct default_init_allocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  using std::allocator<T>::allocator;
  template <class U>
  void construct(U* at) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(at)) U;
  }
  template <class U, class... Args>
  void construct(U* at, Args&&... args) {
    ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
  }
};

/// A codec stream's bytes in a homomorphic reduction (detail/homomorphic.hpp).
using stream_buffer = std::vector<std::byte, default_init_allocator<std::byte>>;

/// The buffers of one call. The collective keeps them between calls (the hot path allocates nothing
/// once they have grown) and lends them to a call while it runs.
struct call_scratch {
  /// Stream buffers a homomorphic reduction gave back, with their capacity, for the next one to take.
  std::vector<stream_buffer> spare_streams;
  /// An empty buffer with room for `bytes` (every piece's buffers are sized for the most its codec may
  /// write, so after the first call nothing is allocated, and no page is faulted in again).
  stream_buffer take_stream(std::size_t bytes) {
    stream_buffer buffer;
    if (!spare_streams.empty()) {
      buffer = std::move(spare_streams.back());
      spare_streams.pop_back();
      buffer.clear();
    }
    buffer.reserve(bytes);
    return buffer;
  }
  void give_back(stream_buffer&& buffer) {
    if (buffer.capacity() > 0) spare_streams.push_back(std::move(buffer));
  }

  std::vector<std::byte> arena, staging;
  std::vector<wire::hop_header> out_headers, in_headers;  // a pipelined hop's (stable while in flight)
  std::vector<stream_buffer> in_bytes;                    // each received segment's stream
  std::vector<block_location> blocks;
  std::vector<std::size_t> held_offsets;
  std::vector<std::span<std::byte>> direct;
  std::vector<std::uint64_t> sizes;
  std::vector<float> work_f, incoming_f;
  std::vector<double> work_d, incoming_d;

  // work and incoming hold floats or doubles; both kinds are kept so either type reuses its scratch.
  template <floating_value T>
  std::vector<T>& work() {
    if constexpr (std::is_same_v<T, float>) return work_f; else return work_d;
  }
  template <floating_value T>
  std::vector<T>& incoming() {
    if constexpr (std::is_same_v<T, float>) return incoming_f; else return incoming_d;
  }
};

class call_context {
 public:
  using request = transport::AnyTransport::request;

  call_context(transport::AnyTransport& transport, const collective_config& config, std::unique_ptr<call_scratch> scratch)
      : transport_(transport),
        config_(config),
        rank_(transport.rank()),
        size_(transport.size()),
        scratch_(std::move(scratch)) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  const collective_config& config() const { return config_; }
  exec::Host exec() const { return exec::Host{.threads = config_.threads}; }
  call_scratch& scratch() { return *scratch_; }
  std::unique_ptr<call_scratch> release_scratch() { return std::move(scratch_); }
  transport::AnyTransport& transport() { return transport_; }

  collective_report report;
  bool compress_now = false;     ///< the call's blocks travel compressed (else raw)
  double max_block_bound = 0.0;  ///< data movement: the largest bound of a block decoded
  bool reduction = false;        ///< the call reduces (the bound comes from the hops), or only moves data
  clock::time_point started = clock::now();

  // ---- faults (verify mode holds them) -------------------------------------------------------------

  /// Raises `e`; in verify mode, between preflight and settle, holds it instead (the first one the call
  /// meets), for every rank to raise after the call. `from` is the rank whose message it was in, or -1.
  template <class E>
  void fail(const E& e, int from) {
    if (!holding_faults) throw e;
    if (fault) return;
    constexpr auto kind = std::is_same_v<E, argument_error> ? verify::fault_kind::argument
                          : std::is_same_v<E, format_error> ? verify::fault_kind::format
                                                            : verify::fault_kind::transport;
    fault = verify::fault_record::of(kind, rank_, from, without_prefix(e.what()));
  }

  /// Runs `step`; an error of zcoll's that it raises goes to fail(). Returns whether it succeeded.
  template <class Step>
  bool guarded(int from, Step&& step) {
    try {
      step();
      return true;
    } catch (const argument_error& e) {
      fail(e, from);
    } catch (const format_error& e) {
      fail(e, from);
    } catch (const transport_error& e) {
      fail(e, from);
    }
    return false;
  }

  std::optional<verify::fault_record> fault;  ///< verify mode: the first error this call met, held
  bool holding_faults = false;                ///< verify mode, while the operation runs

  // ---- messages ------------------------------------------------------------------------------------

  /// transport wait and test through guarded(): in verify mode a failed message is held, and counts as
  /// complete.
  void wait_held(request& r, int peer) {
    guarded(peer, [&] { transport_.wait(r); });
  }
  bool test_held(request& r, int peer) {
    bool done = true;
    guarded(peer, [&] { done = transport_.test(r); });
    return done;
  }

  /// co_await until_complete(r, peer): when the call is driven blocking (wait(), or a progress thread),
  /// waits for `r`; otherwise tests it and, while it is in flight, suspends the call until the next
  /// advance() finds it complete.
  struct until_complete_awaiter {
    call_context& call;
    request& r;
    int peer;
    bool await_ready() { return call.blocking_ ? (call.wait_held(r, peer), true) : call.test_held(r, peer); }
    void await_suspend(std::coroutine_handle<> suspended) { call.suspended_ = suspension{suspended, &r, peer}; }
    void await_resume() {
      if (call.resumed_error_) std::rethrow_exception(std::exchange(call.resumed_error_, nullptr));
    }
  };
  until_complete_awaiter until_complete(request& r, int peer) { return {*this, r, peer}; }

  /// Posts the receive and the send of one step, completes both, and counts the bytes.
  task<> exchange(schedule::exchange send, std::span<const std::byte> out, schedule::exchange recv,
                  std::span<std::byte> in, int tag, std::size_t raw_bytes) {
    const auto start = clock::now();
    request r, s;
    if (recv.active()) guarded(recv.peer, [&] { r = transport_.irecv_async(recv.peer, tag, in); });
    if (send.active()) {
      guarded(send.peer, [&] { s = transport_.isend_async(send.peer, tag, out); });
      report.bytes_sent += out.size();
      report.raw_bytes_sent += raw_bytes;
    }
    co_await until_complete(s, send.peer);
    co_await until_complete(r, recv.peer);
    report.communicate_s += seconds_since(start);
  }

  /// Exact allgather of one record per rank (all[rank()] filled in) over the Ring schedule, whatever the
  /// collective's schedule is: value ranges, error bounds, verify mode's signatures and faults.
  template <class Record>
  task<> exact_allgather(std::span<Record> all, int tag = wire::size_tag) {
    static_assert(std::is_trivially_copyable_v<Record>);
    const auto block = [&](const schedule::exchange& e) {
      return e.active() ? all.subspan(static_cast<std::size_t>(e.first_block), 1) : std::span<Record>{};
    };
    for (int r = 0; r < Ring::rounds(schedule::collective_op::allgather, size_); ++r) {
      const schedule::step st = Ring::at(schedule::collective_op::allgather, size_, rank_, r);
      co_await exchange(st.send, std::as_bytes(block(st.send)), st.recv, std::as_writable_bytes(block(st.recv)), tag, 0);
    }
  }

  // ---- progress ------------------------------------------------------------------------------------

  /// Starts the call's coroutine (root: a task over this context), not yet run.
  void start(task<> root) {
    root_ = std::move(root);
    resume_point_ = root_.root();
  }

  /// Runs the call until it must wait for a message in flight (blocking = false) or to its end
  /// (blocking = true). Returns whether it has ended; error() then says how.
  bool advance(bool blocking) {
    if (root_.done()) return true;
    blocking_ = blocking;
    if (suspended_) {
      bool ready = true;
      try {
        if (blocking) {
          wait_held(*suspended_->r, suspended_->peer);
        } else {
          ready = test_held(*suspended_->r, suspended_->peer);
        }
      } catch (...) {
        resumed_error_ = std::current_exception();  // raised inside the call, which unwinds as usual
      }
      if (!ready) return false;
      resume_point_ = suspended_->handle;
      suspended_.reset();
    }
    // Blocking, every await waits and none suspends: one resume runs the call to its end.
    resume_point_.resume();
    return !suspended_;
  }

  bool ended() const { return root_.done(); }
  std::exception_ptr error() const { return root_.error(); }
  /// Destroys the coroutine (suspended or ended): its requests in flight are cancelled.
  void drop() { root_.reset(); }

  /// An exception's text without the "zcoll ... error: " its class puts first (it is raised again).
  static std::string without_prefix(std::string_view what) {
    const auto colon = what.find(": ");
    return what.substr(0, 6) == "zcoll " && colon != std::string_view::npos ? std::string(what.substr(colon + 2))
                                                                            : std::string(what);
  }

 private:
  struct suspension {
    std::coroutine_handle<> handle;
    request* r = nullptr;
    int peer = -1;
  };

  transport::AnyTransport& transport_;
  const collective_config& config_;
  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<call_scratch> scratch_;
  task<> root_;
  std::coroutine_handle<> resume_point_;
  std::optional<suspension> suspended_;  // the await the call is suspended at, and the request it awaits
  std::exception_ptr resumed_error_;     // what completing that request raised, for the call to rethrow
  bool blocking_ = true;
};

}  // namespace zcoll::detail
