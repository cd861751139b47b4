#pragma once
/// Ring allgather and ring reduce_scatter: p - 1 rounds of one block to the right-hand neighbour.

#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

/// The ring: rank i sends to i + 1 and receives from i - 1 (mod p) in every round, one block (1/p of the
/// buffer) each way, p - 1 rounds, so every rank sends and receives (p - 1)/p of the buffer — bandwidth
/// optimal, latency linear in p. The schedule the ZCCL paper builds its data movement (Fig. 2, allgather)
/// and computation (Fig. 4, reduce_scatter) frameworks on; Thakur, Rabenseifner & Gropp, "Optimization of
/// Collective Communication Operations in MPICH" (2005) §4 for the allgather; Patarasuk & Yuan (2009) and
/// the quantized-collectives paper (Alg. 2) for the reduce_scatter half of ring allreduce.
///
///     allgather, round r:      send block (i - r) mod p,     receive block (i - r - 1) mod p
///     reduce_scatter, round r: send block (i - r - 1) mod p, receive block (i - r - 2) mod p, reduced in
///
/// In the reduce_scatter, block b leaves rank b + 1 in round 0 and gathers one contribution per hop, so rank
/// b receives it, fully reduced, in the last round. A rank never receives blocks it sends in the same round.
/// Ring supports exactly allgather and reduce_scatter; Compressed builds allreduce from the two.
///
///     static_assert(zcoll::Ring::rounds(zcoll::schedule::collective_op::allgather, 8) == 7);
struct Ring {
  static constexpr const char* name = "ring";

  static constexpr bool supports(schedule::collective_op op) {
    return op == schedule::collective_op::allgather || op == schedule::collective_op::reduce_scatter;
  }

  /// p - 1 (0 for one rank or an unsupported operation).
  static constexpr int rounds(schedule::collective_op op, int ranks) {
    return supports(op) && ranks >= 1 ? ranks - 1 : 0;
  }

  /// The step of `rank` in `round`; an idle step outside [0, rounds) or for an unsupported operation.
  /// `root` is ignored.
  static constexpr schedule::step at(schedule::collective_op op, int ranks, int rank, int round,
                                     [[maybe_unused]] int root = 0) {
    using schedule::detail::wrap;
    if (!schedule::detail::valid_step(ranks, rank, round, rounds(op, ranks))) return {};
    const bool reduce = op == schedule::collective_op::reduce_scatter;
    // reduce_scatter runs one block behind allgather so that rank i's last receive is block i.
    const int lag = reduce ? 1 : 0;
    return {.send = {.peer = wrap(rank + 1, ranks), .first_block = wrap(rank - round - lag, ranks), .block_count = 1},
            .recv = {.peer = wrap(rank - 1, ranks),
                     .first_block = wrap(rank - round - lag - 1, ranks),
                     .block_count = 1,
                     .reduce = reduce}};
  }
};

}  // namespace zcoll
