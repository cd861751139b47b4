#pragma once
/// Reduction operations as tag objects: coll.allreduce(data, zcoll::op::sum).

#include <algorithm>
#include <concepts>

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
