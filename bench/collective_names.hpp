#pragma once
// The operations and schedules zcoll-bench knows by name, shared by `coll` and `model`: which operations
// each schedule serves, and a dispatch from a name to the schedule type.

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "zcoll/schedule/schedules.hpp"

namespace zcoll_bench {

/// alltoallv is no schedule operation of its own: it runs the alltoall schedule with variable blocks.
struct op_entry {
  const char* name;
  zcoll::schedule::collective_op op;
  bool variable_blocks = false;
};

constexpr std::array<op_entry, 8> op_table = {{{"allreduce", zcoll::schedule::collective_op::allreduce},
                                               {"reduce_scatter", zcoll::schedule::collective_op::reduce_scatter},
                                               {"allgather", zcoll::schedule::collective_op::allgather},
                                               {"bcast", zcoll::schedule::collective_op::bcast},
                                               {"scatter", zcoll::schedule::collective_op::scatter},
                                               {"gather", zcoll::schedule::collective_op::gather},
                                               {"alltoall", zcoll::schedule::collective_op::alltoall},
                                               {"alltoallv", zcoll::schedule::collective_op::alltoall, true}}};

/// The schedule operation called `name` (alltoallv: alltoall), or nothing.
inline std::optional<zcoll::schedule::collective_op> parse_op(std::string_view name) {
  const auto entry = std::find_if(op_table.begin(), op_table.end(), [&](const op_entry& e) { return name == e.name; });
  if (entry == op_table.end()) return std::nullopt;
  return entry->op;
}

/// The hierarchical schedule's two levels: a tree inside groups of G consecutive ranks, recursive
/// doubling among the group leaders.
template <int GroupSize>
using Hierarchical = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, GroupSize>;

/// Whether Compressed<S, ...> has the operation: allreduce also from reduce_scatter + allgather.
template <class S>
constexpr bool serves(zcoll::schedule::collective_op op) {
  using zcoll::schedule::collective_op;
  if (op == collective_op::allreduce) {
    return S::supports(op) || (S::supports(collective_op::reduce_scatter) && S::supports(collective_op::allgather));
  }
  return S::supports(op);
}

struct schedule_entry {
  const char* name;
  bool (*serves)(zcoll::schedule::collective_op);
};

constexpr std::array<schedule_entry, 7> schedule_table = {{{"ring", &serves<zcoll::Ring>},
                                                           {"recursive_doubling", &serves<zcoll::RecursiveDoubling>},
                                                           {"binomial_tree", &serves<zcoll::BinomialTree>},
                                                           {"scatter_allgather", &serves<zcoll::ScatterAllgather>},
                                                           {"chain", &serves<zcoll::Chain<>>},
                                                           {"pairwise", &serves<zcoll::Pairwise>},
                                                           {"hierarchical", &serves<Hierarchical<8>>}}};

template <class S>
struct schedule_tag {
  using type = S;
};

/// fn(schedule_tag<S>{}) for the schedule called `name` (hierarchical with groups of `group_size`: 2, 4
/// or 8); std::invalid_argument for a name not in schedule_table.
template <class Fn>
decltype(auto) with_schedule(std::string_view name, int group_size, Fn&& fn) {
  if (name == "ring") return fn(schedule_tag<zcoll::Ring>{});
  if (name == "recursive_doubling") return fn(schedule_tag<zcoll::RecursiveDoubling>{});
  if (name == "binomial_tree") return fn(schedule_tag<zcoll::BinomialTree>{});
  if (name == "scatter_allgather") return fn(schedule_tag<zcoll::ScatterAllgather>{});
  if (name == "chain") return fn(schedule_tag<zcoll::Chain<>>{});
  if (name == "pairwise") return fn(schedule_tag<zcoll::Pairwise>{});
  if (name != "hierarchical") throw std::invalid_argument("unknown schedule '" + std::string(name) + "'");
  if (group_size == 2) return fn(schedule_tag<Hierarchical<2>>{});
  if (group_size == 4) return fn(schedule_tag<Hierarchical<4>>{});
  return fn(schedule_tag<Hierarchical<8>>{});
}

}  // namespace zcoll_bench
