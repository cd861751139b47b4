#pragma once
/// Two-level allreduce: reduce inside groups of GroupSize consecutive ranks, allreduce among the group
/// leaders, broadcast inside the groups, as one flat sequence of rounds.

#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

namespace schedule::detail {
/// Whether S is a schedule serving `op`; true for a non-schedule so that only the concept's
/// static_assert fires for it.
template <class S>
constexpr bool serves(collective_op op) {
  if constexpr (schedule<S>) {
    return S::supports(op);
  } else {
    return true;
  }
}
}  // namespace schedule::detail

/// Hierarchical allreduce after the quantized-collectives paper (§3.4.2, Alg. 5): nodes of GroupSize
/// fully connected ranks (8 GPUs behind an NVSwitch) first sum inside the group, then run recursive
/// doubling across groups. Groups are consecutive ranks [g·G, min((g+1)·G, p)), the last one possibly
/// smaller; local rank 0 of each is its leader. Three phases, one after the other in one flat sequence of
/// rounds over the whole communicator (a rank with nothing to do in a round has an idle step):
///
/// 1. Intra's reduce to local rank 0 inside every group, all groups in the same rounds:
///    max over group sizes of Intra::rounds(reduce, size) rounds (ceil(log2 G) for BinomialTree);
/// 2. Inter's allreduce among the ceil(p / G) leaders, leader g standing for rank g of Inter:
///    Inter::rounds(allreduce, ceil(p / G)) rounds;
/// 3. Intra's bcast from local rank 0 inside every group: max over group sizes of Intra::rounds(bcast,
///    size) rounds.
///
/// One block, the whole buffer, in every message. With BinomialTree and RecursiveDoubling, p = 64, G = 8:
/// 3 + 3 + 3 = 9 rounds, and a value makes at most 3 + 3 + 3 hops. Ranks that are not leaders are idle in
/// phase 2. The paper's own intra-group stage is a one-shot reduce_scatter (every rank sends the i-th
/// eighth of its buffer to rank i of the group) followed by recursive doubling per eighth among the i-th
/// ranks of the groups; the contract has allreduce on one block and one receive per round, so here the
/// group sum is Intra's tree reduce to the leader instead, and only leaders talk across groups.
///
///     using Schedule = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling>;
///     static_assert(Schedule::rounds(zcoll::schedule::collective_op::allreduce, 64) == 9);
template <class Intra, class Inter, int GroupSize = 8>
struct Hierarchical {
  static_assert(schedule::schedule<Intra>,
                "Hierarchical: Intra must model zcoll::schedule::schedule (name, supports, rounds and at)");
  static_assert(schedule::schedule<Inter>,
                "Hierarchical: Inter must model zcoll::schedule::schedule (name, supports, rounds and at)");
  static_assert(schedule::detail::serves<Intra>(schedule::collective_op::reduce) &&
                    schedule::detail::serves<Intra>(schedule::collective_op::bcast),
                "Hierarchical: Intra must support reduce and bcast (BinomialTree does)");
  static_assert(schedule::detail::serves<Inter>(schedule::collective_op::allreduce),
                "Hierarchical: Inter must support allreduce (RecursiveDoubling does)");
  static_assert(GroupSize >= 1, "Hierarchical: GroupSize must be at least 1");

  using intra_schedule = Intra;
  using inter_schedule = Inter;
  static constexpr int group_size = GroupSize;
  static constexpr const char* name = "hierarchical";

  static constexpr bool supports(schedule::collective_op op) { return op == schedule::collective_op::allreduce; }

  /// reduce_rounds + Inter::rounds(allreduce, ceil(p / G)) + bcast_rounds (0 for an unsupported operation).
  static constexpr int rounds(schedule::collective_op op, int ranks) {
    if (!supports(op) || ranks < 1) return 0;
    return intra_rounds(schedule::collective_op::reduce, ranks) +
           Inter::rounds(schedule::collective_op::allreduce, groups(ranks)) +
           intra_rounds(schedule::collective_op::bcast, ranks);
  }

  /// The step of `rank` in `round`; an idle step outside [0, rounds) or for an unsupported operation.
  /// `root` is ignored.
  static constexpr schedule::step at(schedule::collective_op op, int ranks, int rank, int round,
                                     [[maybe_unused]] int root = 0) {
    using schedule::collective_op;
    if (!schedule::detail::valid_step(ranks, rank, round, rounds(op, ranks))) return {};
    const int group = rank / GroupSize;
    const int base = group * GroupSize;
    const int size = group_ranks(ranks, group);
    const int local = rank - base;
    const int reduce_rounds = intra_rounds(collective_op::reduce, ranks);
    const int inter_rounds = Inter::rounds(collective_op::allreduce, groups(ranks));
    if (round < reduce_rounds) return intra_at(collective_op::reduce, size, local, round, base);
    round -= reduce_rounds;
    if (round < inter_rounds) {
      if (local != 0) return {};
      return shift(Inter::at(collective_op::allreduce, groups(ranks), group, round, 0), 0, GroupSize);
    }
    return intra_at(collective_op::bcast, size, local, round - inter_rounds, base);
  }

 private:
  static constexpr int groups(int ranks) { return (ranks + GroupSize - 1) / GroupSize; }

  static constexpr int group_ranks(int ranks, int group) {
    const int rest = ranks - group * GroupSize;
    return rest < GroupSize ? rest : GroupSize;
  }

  /// Rounds of an intra-group phase: the longest over the full groups and the last one.
  static constexpr int intra_rounds(schedule::collective_op op, int ranks) {
    const int full = Intra::rounds(op, group_ranks(ranks, 0));
    const int last = Intra::rounds(op, group_ranks(ranks, groups(ranks) - 1));
    return full > last ? full : last;
  }

  /// Intra's step rooted at local rank 0 of a group of `size` starting at `base`; idle once a smaller
  /// group has run out of rounds.
  static constexpr schedule::step intra_at(schedule::collective_op op, int size, int local, int round, int base) {
    if (round >= Intra::rounds(op, size)) return {};
    return shift(Intra::at(op, size, local, round, 0), base, 1);
  }

  /// A step of a sub-schedule with its peers p mapped to base + p·stride; idle exchanges stay idle.
  static constexpr schedule::step shift(schedule::step s, int base, int stride) {
    if (s.send.active()) s.send.peer = base + s.send.peer * stride;
    if (s.recv.active()) s.recv.peer = base + s.recv.peer * stride;
    return s;
  }
};

}  // namespace zcoll
