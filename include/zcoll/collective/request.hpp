#pragma once
/// zcoll::request: a non-blocking collective call in flight, as Compressed<S, C>::allreduce_async and
/// the other *_async calls return it. It owns the call's scratch and state; test() progresses the call
/// and says whether it has completed, wait() completes it; either raises the call's error.
///
///     auto req = coll.allreduce_async(std::span<float>(grad), zcoll::op::sum);
///     compute();                    // overlap (test() now and then, or collective_config::progress_thread)
///     req.wait();
///     const zcoll::collective_report& rep = req.report();
///
/// Several requests may be outstanding on one collective; they must be started in the same order on
/// every rank (as MPI requires of its non-blocking collectives) and may be completed in any order: the
/// calls of one collective progress in the order they were started, so waiting on a later one first
/// completes the earlier ones (each then reports its own result and error when it is waited on).
/// Destroying a request whose call has not completed completes the call first (the other ranks are in
/// it, and its messages use the caller's buffers), and drops its error, as a std::future's destructor
/// drops an exception nobody asked for; wait() on it to see the error.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "zcoll/collective/collective_report.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll {

namespace detail {

/// One started call: its context (which owns the coroutine), whether it has ended and how.
struct started_call {
  explicit started_call(call_context c) : context(std::move(c)) {}
  call_context context;
  bool ended = false;  // guarded by the queue's mutex when a progress thread runs
  std::exception_ptr error;
};

/// The calls of one collective, in the order they were started. Without a progress thread they advance
/// on the caller's thread, inside test() and wait(); with one, that thread runs them and test() and
/// wait() only look. The progress thread tests the messages a call waits for and sleeps a moment when
/// none has arrived, rather than blocking in the transport's wait: MPI implementations spin in MPI_Wait,
/// which would take a core from the computation the thread is there to overlap.
class call_queue {
 public:
  explicit call_queue(bool progress_thread) {
    if (progress_thread) progress_ = std::thread([this] { run(); });
  }
  call_queue(const call_queue&) = delete;
  call_queue& operator=(const call_queue&) = delete;
  ~call_queue() {
    complete_all();
    if (progress_.joinable()) {
      {
        std::lock_guard lock(mutex_);
        stopping_ = true;
      }
      changed_.notify_all();
      progress_.join();
    }
  }

  /// Appends a call (started on every rank in the same order).
  void push(std::shared_ptr<started_call> call) {
    {
      std::lock_guard lock(mutex_);
      calls_.push_back(std::move(call));
    }
    changed_.notify_all();
  }

  /// Advances the calls without blocking; whether `target` has ended.
  bool test(started_call& target) {
    if (progress_.joinable()) {
      std::lock_guard lock(mutex_);
      return target.ended;
    }
    while (!calls_.empty() && advance(*calls_.front(), false)) calls_.pop_front();
    return target.ended;
  }

  /// Completes the calls up to `target`.
  void wait(started_call& target) {
    if (progress_.joinable()) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return target.ended; });
      return;
    }
    while (!target.ended) {
      advance(*calls_.front(), true);
      calls_.pop_front();
    }
  }

  /// Completes every call started.
  void complete_all() {
    if (progress_.joinable()) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return calls_.empty(); });
      return;
    }
    while (!calls_.empty()) {
      advance(*calls_.front(), true);
      calls_.pop_front();
    }
  }

  /// Scratch for a new call: one a finished call gave back, or a new one.
  std::unique_ptr<call_scratch> take_scratch() {
    std::lock_guard lock(mutex_);
    if (spare_.empty()) return std::make_unique<call_scratch>();
    auto s = std::move(spare_.back());
    spare_.pop_back();
    return s;
  }

 private:
  /// Runs `call` one step (or to its end, blocking); on its end records how and keeps its scratch.
  bool advance(started_call& call, bool blocking) {
    if (!call.context.advance(blocking)) return false;
    std::lock_guard lock(mutex_);
    call.error = call.context.error();
    call.context.drop();
    spare_.push_back(call.context.release_scratch());
    call.ended = true;
    return true;
  }

  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
      if (calls_.empty()) return;  // stopping, nothing left
      std::shared_ptr<started_call> call = calls_.front();
      lock.unlock();
      while (!advance(*call, false)) std::this_thread::sleep_for(poll_interval);
      lock.lock();
      calls_.pop_front();
      changed_.notify_all();
    }
  }

  /// How long the progress thread sleeps when a call's messages have not arrived: at 1 Gbit/s a 256 KiB
  /// segment takes 2 ms, so the delay it adds stays below 2 %; Linux wakes a sleeper 50-60 us late anyway.
  static constexpr std::chrono::microseconds poll_interval{20};

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<started_call>> calls_;
  std::vector<std::unique_ptr<call_scratch>> spare_;
  bool stopping_ = false;
  std::thread progress_;  // last: started once the rest is built, joined before it goes
};

}  // namespace detail

class request {
 public:
  /// A request for nothing: complete.
  request() = default;
  request(std::shared_ptr<detail::call_queue> queue, std::shared_ptr<detail::started_call> call)
      : queue_(std::move(queue)), call_(std::move(call)) {}
  request(request&&) noexcept = default;
  request& operator=(request&& other) noexcept {
    if (this != &other) {
      abandon();
      queue_ = std::move(other.queue_);
      call_ = std::move(other.call_);
    }
    return *this;
  }
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request() { abandon(); }

  /// Progresses the call (and those started before it) without blocking; true once it has completed.
  /// Raises the call's error on the test that finds it complete.
  bool test() {
    if (!call_) return true;
    if (!queue_->test(*call_)) return false;
    rethrow();
    return true;
  }

  /// Completes the call (and those started before it); raises its error.
  void wait() {
    if (!call_) return;
    queue_->wait(*call_);
    rethrow();
  }

  /// What the call did on this rank: valid once it has completed.
  const collective_report& report() const {
    if (!call_ || !call_->ended) throw argument_error("request::report: the call has not completed; wait() on it first");
    return call_->context.report;
  }

 private:
  void rethrow() {
    if (call_->error) std::rethrow_exception(std::exchange(call_->error, nullptr));
  }

  void abandon() noexcept {
    if (!call_ || !queue_) return;
    try {
      queue_->wait(*call_);
    } catch (...) {  // completing a call does not throw; its own error stays in it, dropped with it
    }
    call_.reset();
    queue_.reset();
  }

  std::shared_ptr<detail::call_queue> queue_;
  std::shared_ptr<detail::started_call> call_;
};

}  // namespace zcoll
