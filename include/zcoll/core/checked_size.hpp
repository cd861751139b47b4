#pragma once
/// Size arithmetic that refuses to wrap: every entry point that multiplies or adds caller counts (buffer
/// sizes, per-rank counts, stream bounds) goes through these, so a count near SIZE_MAX / sizeof(T) is an
/// argument_error naming the call instead of a small wrapped size that lets a copy run past a buffer.
///
///     const std::size_t bytes = zcoll::checked_multiply(count, sizeof(T), "max_compressed_size", "count");

#include <cstddef>
#include <string>

#include "zcoll/core/error.hpp"

namespace zcoll {

namespace detail {
[[noreturn]] inline void throw_wrapped(const char* call, const char* what, std::size_t a, const char* op, std::size_t b) {
  throw argument_error(std::string(call) + ": " + what + " " + std::to_string(a) + op + std::to_string(b) +
                       " exceeds the addressable size");
}
}  // namespace detail

/// a * b; argument_error "<call>: <what> A x B exceeds the addressable size" when it does not fit in size_t.
inline std::size_t checked_multiply(std::size_t a, std::size_t b, const char* call, const char* what) {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) detail::throw_wrapped(call, what, a, " x ", b);
  return product;
}

/// a + b, likewise.
inline std::size_t checked_add(std::size_t a, std::size_t b, const char* call, const char* what) {
  std::size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) detail::throw_wrapped(call, what, a, " + ", b);
  return sum;
}

/// The sum of `counts`, likewise (per-rank counts of a variable-size exchange).
template <class Counts>
std::size_t checked_sum(const Counts& counts, const char* call, const char* what) {
  std::size_t sum = 0;
  for (std::size_t n : counts) sum = checked_add(sum, n, call, what);
  return sum;
}

}  // namespace zcoll
