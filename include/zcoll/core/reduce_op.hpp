#pragma once
/// Reduction operations as tag objects: coll.allreduce(data, zcoll::op::sum).

#include <algorithm>
#include <concepts>
#include <cstddef>

namespace zcoll::op {

struct sum_t {
  static constexpr const char* name = "sum";
  template <class T>
  constexpr T operator()(T a, T b) const {
    return a + b;
  }
};

/// Minimum; NaN propagates (a NaN on any rank gives NaN), as it would in a sum.
struct min_t {
  static constexpr const char* name = "min";
  template <class T>
  constexpr T operator()(T a, T b) const {
    return a != a ? a : (b != b ? b : std::min(a, b));
  }
};

/// Maximum; NaN propagates.
struct max_t {
  static constexpr const char* name = "max";
  template <class T>
  constexpr T operator()(T a, T b) const {
    return a != a ? a : (b != b ? b : std::max(a, b));
  }
};

inline constexpr sum_t sum{};
inline constexpr min_t min{};
inline constexpr max_t max{};

/// One of the reduction tags above.
template <class Op>
concept reduction = std::same_as<Op, sum_t> || std::same_as<Op, min_t> || std::same_as<Op, max_t>;

}  // namespace zcoll::op

namespace zcoll::detail {

/// target = op(target, incoming) element-wise, or a copy of incoming when the schedule replaces (a
/// reduction hop's last step on the host; a staging space's combine runs the same op per element).
template <class T, class Op>
void combine_into(T* target, const T* incoming, std::size_t count, bool reduce, Op op) {
  if (!reduce) {
    std::copy_n(incoming, count, target);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) target[i] = op(target[i], incoming[i]);
}

}  // namespace zcoll::detail
