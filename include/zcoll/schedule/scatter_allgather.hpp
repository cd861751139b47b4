#pragma once
/// The large-message bcast: a binomial scatter of p pieces, then a ring allgather of the pieces.

#include "zcoll/schedule/binomial_tree.hpp"
#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

/// bcast as scatter + allgather (van de Geijn; MPICH's MPIR_Bcast_intra_scatter_ring_allgather; Thakur,
/// Rabenseifner & Gropp (2005) §3): the buffer is cut into p blocks in relative order (block k is the
/// piece that relative rank k = (rank - root) mod p owns after the scatter); the first ceil(log2 p)
/// rounds are BinomialTree's scatter, the next p - 1 a ring allgather over relative ranks. The root's
/// link carries about 2 (p - 1)/p of the buffer instead of the binomial tree's log2(p) whole copies, so
/// for large messages it takes about 2 n/β where the tree takes log2(p)·n/β.
///
/// After the scatter, relative rank v > 0 holds its subtree's blocks [v, v + lowbit(v)) (the root holds
/// all); the ring leaves those out: in allgather round q, v sends block (v - q) mod p to v + 1 unless
/// v + 1 holds it already, and receives block (v - q - 1) mod p from v - 1 unless it holds it. So every
/// rank receives every block it lacks exactly once, and a rank only forwards blocks it has (it got
/// block (v - q) in the previous round, or held it from the scatter).
///
///     using zcoll::schedule::collective_op;
///     static_assert(zcoll::ScatterAllgather::blocks(collective_op::bcast, 6) == 6);
///     static_assert(zcoll::ScatterAllgather::rounds(collective_op::bcast, 6) == 3 + 5);
struct ScatterAllgather {
  static constexpr const char* name = "scatter_allgather";
  static constexpr bool supports(schedule::collective_op op) { return op == schedule::collective_op::bcast; }

  /// p blocks for bcast (the pieces), where schedule::block_count says 1.
  static constexpr int blocks(schedule::collective_op op, int ranks) {
    return supports(op) ? ranks : schedule::block_count(op, ranks);
  }

  /// ceil(log2 p) + p - 1 (0 for one rank or an unsupported operation).
  static constexpr int rounds(schedule::collective_op op, int ranks) {
    return supports(op) && ranks >= 1 ? schedule::detail::ceil_log2(ranks) + ranks - 1 : 0;
  }

  static constexpr schedule::step at(schedule::collective_op op, int ranks, int rank, int round, int root = 0) {
    using schedule::detail::wrap;
    if (!schedule::detail::valid_step(ranks, rank, round, rounds(op, ranks)) || root < 0 || root >= ranks) return {};
    const int scatter_rounds = schedule::detail::ceil_log2(ranks);
    if (round < scatter_rounds) return BinomialTree::at(schedule::collective_op::scatter, ranks, rank, round, root);
    const int q = round - scatter_rounds;
    const int v = wrap(rank - root, ranks);
    const int next = wrap(v + 1, ranks), previous = wrap(v - 1, ranks);
    const int sent = wrap(v - q, ranks), received = wrap(v - q - 1, ranks);
    schedule::step s;
    if (!holds_after_scatter(next, sent, ranks)) {
      s.send = {.peer = wrap(next + root, ranks), .first_block = sent, .block_count = 1};
    }
    if (!holds_after_scatter(v, received, ranks)) {
      s.recv = {.peer = wrap(previous + root, ranks), .first_block = received, .block_count = 1};
    }
    return s;
  }

  /// Whether relative rank v holds block b after the binomial scatter: the root every block, any other
  /// rank its subtree [v, v + lowbit(v)).
  static constexpr bool holds_after_scatter(int v, int b, int ranks) {
    if (v == 0) return true;
    const int lowbit = v & -v;
    return b >= v && b < v + lowbit && b < ranks;
  }
};

}  // namespace zcoll
