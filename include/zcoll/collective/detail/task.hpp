#pragma once
/// task<T>: the coroutine the collective engines are written as. One collective call is one tree of
/// tasks; a task starts when it is awaited and gives its value (or rethrows its exception) to the task
/// that awaited it. Where the call must wait for a message it suspends (call_context::until_complete),
/// and control goes back to whoever resumed the tree: a request's test() or wait(), or the progress
/// thread. Written as straight-line code, a call can so be progressed a step at a time without a thread
/// of its own.
///
///     detail::task<int> child() { co_return 7; }
///     detail::task<> parent() { const int v = co_await child(); ... }

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace zcoll::detail {

template <class T = void>
class task;

/// What every task's promise holds: the task that awaits it, and the exception it ended with.
struct task_promise_base {
  std::coroutine_handle<> continuation;  // none for the root of a call
  std::exception_ptr error;

  /// Lazy: a task runs when it is awaited (or, the root, resumed), never on creation.
  std::suspend_always initial_suspend() noexcept { return {}; }

  /// At its end a task goes on with the one that awaited it (symmetric transfer: no stack grows);
  /// the root returns to whoever resumed it.
  struct final_awaiter {
    bool await_ready() noexcept { return false; }
    template <class Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> done) noexcept {
      const std::coroutine_handle<> next = done.promise().continuation;
      return next ? next : std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  final_awaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() { error = std::current_exception(); }
};

template <class T>
struct task_promise : task_promise_base {
  std::optional<T> value;
  task<T> get_return_object();
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
};

template <>
struct task_promise<void> : task_promise_base {
  task<void> get_return_object();
  void return_void() {}
};

/// A lazily started coroutine that owns its frame (destroyed with the task, suspended or not).
template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = task_promise<T>;
  using handle = std::coroutine_handle<promise_type>;

  task() = default;
  explicit task(handle h) : handle_(h) {}
  task(task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { reset(); }

  // Awaited: the awaiting task suspends and this one runs until its end.
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    handle_.promise().continuation = awaiting;
    return handle_;
  }
  T await_resume() {
    promise_type& p = handle_.promise();
    if (p.error) std::rethrow_exception(p.error);
    if constexpr (!std::is_void_v<T>) return std::move(*p.value);
  }

  /// The root of a call: its handle (resumed by the request), whether it has ended, and how.
  std::coroutine_handle<> root() const { return handle_; }
  bool done() const { return !handle_ || handle_.done(); }
  std::exception_ptr error() const { return handle_ ? handle_.promise().error : nullptr; }
  void reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = {};
  }

 private:
  handle handle_;
};

template <class T>
task<T> task_promise<T>::get_return_object() {
  return task<T>(std::coroutine_handle<task_promise<T>>::from_promise(*this));
}
inline task<void> task_promise<void>::get_return_object() {
  return task<void>(std::coroutine_handle<task_promise<void>>::from_promise(*this));
}

}  // namespace zcoll::detail
