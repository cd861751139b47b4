#pragma once
/// Recursive doubling allreduce and allgather: log2 p rounds of pairwise exchanges with rank XOR 2^j, plus a
/// fold-in and a fold-out round when p is not a power of two.

#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

/// Recursive doubling. With P = 2^k the largest power of two <= p and k = floor(log2 p), the core is k
/// rounds in which rank (or virtual rank) v exchanges with v XOR 2^j, j = 0..k-1. When p != P, a fold-in
/// round first reduces the p - P extra ranks onto partners among the P core ranks, and a fold-out round
/// returns the result to them at the end: rounds = k for p = P, k + 2 otherwise (0 for p = 1).
///
/// allreduce (1 block, the whole buffer n in every message): fold-in — rank r >= P sends its buffer to
/// r - P, which receives with reduce = true; core — ranks r < P send their buffer to r XOR 2^j and reduce
/// the partner's in; fold-out — rank r < p - P sends the result to r + P, which receives with
/// reduce = false. Every rank sends k·n (+ n when folded): latency optimal, log2 p error-carrying hops for
/// a lossy codec. A core round sends and reduces into the same block, so the receive goes to scratch
/// (it is a reduction anyway); the send carries the block as it was at the start of the round. Thakur, Rabenseifner & Gropp (2005) §5; the quantized-collectives paper §3.4.2 (Alg. 3–4,
/// powers of two) — whose intra-group stage is Hierarchical.
///
/// allgather (p blocks): in core round j, virtual rank v holds the blocks of the 2^j virtual ranks of its
/// aligned group (v with its low j bits cleared, 2^j of them) — one contiguous range — sends it to
/// v XOR 2^j and receives that rank's range: 2^j blocks (or a little more, below) in round j. For p != P the
/// extra ranks are paired with their left neighbours, not with r - P, so that a group stays one contiguous
/// range of blocks: for i < p - P, odd rank 2i + 1 sends block 2i + 1 to rank 2i in the fold-in round, and
/// virtual rank v is real rank 2v holding blocks [2v, 2v + 2) for v < p - P, real rank v + (p - P) holding
/// block v + (p - P) otherwise. In the fold-out round rank 2i sends all p blocks [0, p) in one message to
/// rank 2i + 1 (it already has its own block; one message cannot skip it), which receives with
/// reduce = false. Core rounds send disjoint blocks from what they receive; MPICH's
/// MPIR_Allgather_intra_recursive_doubling for powers of two.
///
///     using zcoll::schedule::collective_op;
///     static_assert(zcoll::RecursiveDoubling::rounds(collective_op::allreduce, 8) == 3);
///     static_assert(zcoll::RecursiveDoubling::rounds(collective_op::allreduce, 12) == 5);
struct RecursiveDoubling {
  static constexpr const char* name = "recursive_doubling";

  static constexpr bool supports(schedule::collective_op op) {
    return op == schedule::collective_op::allreduce || op == schedule::collective_op::allgather;
  }

  /// log2 p for a power of two, floor(log2 p) + 2 otherwise (0 for one rank or an unsupported operation).
  static constexpr int rounds(schedule::collective_op op, int ranks) {
    if (!supports(op) || ranks < 1) return 0;
    const int k = schedule::detail::floor_log2(ranks);
    return (1 << k) == ranks ? k : k + 2;
  }

  /// The step of `rank` in `round`; an idle step outside [0, rounds) or for an unsupported operation.
  /// `root` is ignored.
  static constexpr schedule::step at(schedule::collective_op op, int ranks, int rank, int round,
                                     [[maybe_unused]] int root = 0) {
    if (!schedule::detail::valid_step(ranks, rank, round, rounds(op, ranks))) return {};
    return op == schedule::collective_op::allreduce ? allreduce_at(ranks, rank, round)
                                                    : allgather_at(ranks, rank, round);
  }

 private:
  static constexpr schedule::step allreduce_at(int ranks, int rank, int round) {
    const int k = schedule::detail::floor_log2(ranks);
    const int core = 1 << k;
    const int extra = ranks - core;
    const schedule::exchange whole{.peer = -1, .first_block = 0, .block_count = 1};
    schedule::step s;
    if (extra > 0 && round == 0) {  // fold-in
      if (rank >= core) {
        s.send = whole;
        s.send.peer = rank - core;
      } else if (rank < extra) {
        s.recv = whole;
        s.recv.peer = rank + core;
        s.recv.reduce = true;
      }
      return s;
    }
    if (extra > 0 && round == k + 1) {  // fold-out
      if (rank >= core) {
        s.recv = whole;
        s.recv.peer = rank - core;
      } else if (rank < extra) {
        s.send = whole;
        s.send.peer = rank + core;
      }
      return s;
    }
    if (rank >= core) return s;  // folded in: idle in the core rounds
    const int j = extra > 0 ? round - 1 : round;
    const int partner = rank ^ (1 << j);
    s.send = whole;
    s.send.peer = partner;
    s.recv = whole;
    s.recv.peer = partner;
    s.recv.reduce = true;
    return s;
  }

  static constexpr schedule::step allgather_at(int ranks, int rank, int round) {
    const int k = schedule::detail::floor_log2(ranks);
    const int extra = ranks - (1 << k);
    schedule::step s;
    if (extra > 0 && round == 0) {  // fold-in: 2i + 1 hands its block to 2i
      if (rank < 2 * extra) {
        if (rank % 2 == 1) {
          s.send = {.peer = rank - 1, .first_block = rank, .block_count = 1};
        } else {
          s.recv = {.peer = rank + 1, .first_block = rank + 1, .block_count = 1};
        }
      }
      return s;
    }
    if (extra > 0 && round == k + 1) {  // fold-out: 2i hands everything to 2i + 1
      if (rank < 2 * extra) {
        if (rank % 2 == 0) {
          s.send = {.peer = rank + 1, .first_block = 0, .block_count = ranks};
        } else {
          s.recv = {.peer = rank - 1, .first_block = 0, .block_count = ranks};
        }
      }
      return s;
    }
    if (rank < 2 * extra && rank % 2 == 1) return s;  // folded in: idle in the core rounds
    const int v = rank < 2 * extra ? rank / 2 : rank - extra;
    const int j = extra > 0 ? round - 1 : round;
    const int width = 1 << j;
    const int partner = v ^ width;
    // First block of virtual rank w: the virtual ranks before it hold one block each, two if folded.
    const auto start = [extra](int w) { return w + (w < extra ? w : extra); };
    const auto real = [extra](int w) { return w < extra ? 2 * w : w + extra; };
    const int mine = v & ~(width - 1);
    const int theirs = partner & ~(width - 1);
    s.send = {.peer = real(partner), .first_block = start(mine), .block_count = start(mine + width) - start(mine)};
    s.recv = {.peer = real(partner),
              .first_block = start(theirs),
              .block_count = start(theirs + width) - start(theirs)};
    return s;
  }
};

}  // namespace zcoll
