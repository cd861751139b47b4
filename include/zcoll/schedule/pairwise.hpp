#pragma once
/// Pairwise-exchange alltoall: p - 1 rounds, one block to (i + r) mod p and one from (i - r) mod p.

#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

/// Pairwise exchange: in round r (r = 0..p-2, offset s = r + 1), rank i sends block (i + s) mod p — the one
/// destined to that rank — to rank (i + s) mod p and receives block (i - s) mod p — the one coming from that
/// rank — from rank (i - s) mod p. p - 1 rounds of one block (1/p of the send buffer) each way; the rank's
/// own block is copied locally. Every block makes one hop, so a compressed block is decompressed once (the
/// quantized-collectives paper §3.3 emulates alltoall as one DQ for that reason). Thakur, Rabenseifner &
/// Gropp (2005) §7 (MPICH's long-message alltoall; its XOR pairing for powers of two is not used, so one
/// formula serves every p).
///
///     using zcoll::schedule::collective_op;
///     static_assert(zcoll::Pairwise::at(collective_op::alltoall, 4, 3, 0).send.peer == 0);
struct Pairwise {
  static constexpr const char* name = "pairwise";

  static constexpr bool supports(schedule::collective_op op) { return op == schedule::collective_op::alltoall; }

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
    const int to = wrap(rank + round + 1, ranks);
    const int from = wrap(rank - round - 1, ranks);
    return {.send = {.peer = to, .first_block = to, .block_count = 1},
            .recv = {.peer = from, .first_block = from, .block_count = 1}};
  }
};

}  // namespace zcoll
