#pragma once
/// Binomial trees rooted anywhere: bcast, reduce, scatter and gather in ceil(log2 p) rounds.

#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

/// Binomial trees over the relative rank v = (rank - root) mod p, R = ceil(log2 p) rounds (0 for p = 1):
/// the number of ranks holding the data doubles every round, so the depth — and the number of lossy hops a
/// compressed block would make if it were recompressed per hop — is R. The ZCCL paper's data movement
/// framework is shown on this bcast (Fig. 3); Thakur, Rabenseifner & Gropp (2005) §3 and §6.
///
/// bcast (1 block, the whole buffer per message): in round r, v < 2^r sends to v + 2^r when that is < p,
/// and 2^r <= v < 2^(r+1) receives from v - 2^r. Nobody sends and receives in the same round.
/// reduce (1 block): the same tree backwards — round r plays bcast round R - 1 - r with the messages
/// reversed, so v receives from v + 2^(R-1-r) with reduce = true after that child has heard from its own
/// subtree; the root ends with every contribution once.
///
/// scatter (p blocks in relative order, block k for rank (root + k) mod p): the tree must hand each child
/// its whole subtree as one contiguous range of blocks, so these two run the tree in MPICH's order
/// (MPIR_Scatter_intra_binomial / MPIR_Gather_intra_binomial), farthest child first: in round r, with
/// m = 2^(R-1-r), v ≡ 0 (mod 2m) sends blocks [v + m, min(v + 2m, p)) to v + m when that is < p, and
/// v ≡ m (mod 2m) receives them from v - m; the subtree of v is [v, v + lowest set bit of v). The root
/// sends about p/2, p/4, ..., 1 blocks (p - 1 in all); every other rank forwards its subtree but its own block.
/// gather (p blocks): scatter backwards — in round r, with m = 2^r, v ≡ m (mod 2m) sends its subtree
/// [v, min(v + m, p)) to v - m, which receives it with reduce = false; the root ends with all p blocks.
///
///     using zcoll::schedule::collective_op;
///     static_assert(zcoll::BinomialTree::rounds(collective_op::bcast, 5) == 3);
///     static_assert(zcoll::BinomialTree::at(collective_op::bcast, 5, 3, 0, 3).send.peer == 4);
struct BinomialTree {
  static constexpr const char* name = "binomial_tree";

  static constexpr bool supports(schedule::collective_op op) {
    return op == schedule::collective_op::bcast || op == schedule::collective_op::reduce ||
           op == schedule::collective_op::scatter || op == schedule::collective_op::gather;
  }

  /// ceil(log2 p) (0 for one rank or an unsupported operation).
  static constexpr int rounds(schedule::collective_op op, int ranks) {
    return supports(op) && ranks >= 1 ? schedule::detail::ceil_log2(ranks) : 0;
  }

  /// The step of `rank` in `round` for a tree rooted at `root` in [0, ranks); an idle step for a root out
  /// of range, outside [0, rounds) or for an unsupported operation.
  static constexpr schedule::step at(schedule::collective_op op, int ranks, int rank, int round, int root = 0) {
    using schedule::collective_op;
    using schedule::detail::wrap;
    const int depth = rounds(op, ranks);
    if (!schedule::detail::valid_step(ranks, rank, round, depth) || root < 0 || root >= ranks) return {};
    const int v = wrap(rank - root, ranks);
    const auto real = [&](int w) { return wrap(w + root, ranks); };
    schedule::step s;
    switch (op) {
      case collective_op::bcast:
      case collective_op::reduce: {
        const bool down = op == collective_op::bcast;
        const int m = 1 << (down ? round : depth - 1 - round);
        if (v < m && v + m < ranks) {  // parent of v + m
          schedule::exchange& e = down ? s.send : s.recv;
          e = {.peer = real(v + m), .first_block = 0, .block_count = 1, .reduce = !down};
        } else if (v >= m && v < 2 * m) {  // child of v - m
          schedule::exchange& e = down ? s.recv : s.send;
          e = {.peer = real(v - m), .first_block = 0, .block_count = 1};
        }
        return s;
      }
      case collective_op::scatter:
      case collective_op::gather: {
        const bool down = op == collective_op::scatter;
        const int m = 1 << (down ? depth - 1 - round : round);
        if (v % (2 * m) == 0 && v + m < ranks) {  // parent of the subtree [v + m, v + 2m)
          schedule::exchange& e = down ? s.send : s.recv;
          e = {.peer = real(v + m), .first_block = v + m, .block_count = min(m, ranks - v - m)};
        } else if (v % (2 * m) == m) {  // root of the subtree [v, v + m)
          schedule::exchange& e = down ? s.recv : s.send;
          e = {.peer = real(v - m), .first_block = v, .block_count = min(m, ranks - v)};
        }
        return s;
      }
      default:
        return s;
    }
  }

 private:
  static constexpr int min(int a, int b) { return a < b ? a : b; }
};

}  // namespace zcoll
