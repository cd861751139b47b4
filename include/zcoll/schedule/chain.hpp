#pragma once
/// The pipelined chain bcast: the buffer in Segments pieces flows down the chain of ranks root, root + 1, ...

#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/rank_math.hpp"

namespace zcoll {

/// bcast down a chain (Open MPI's tuned "pipeline" bcast, Thakur, Rabenseifner & Gropp (2005) §3 on
/// pipelining): the buffer is cut into Segments blocks; relative rank v = (rank - root) mod p receives
/// segment s from v - 1 in round s + v - 1 and passes it to v + 1 in round s + v, so after p - 2 rounds of
/// filling every link carries one segment per round. Segments + p - 2 rounds of n / Segments each: about
/// (1 + (p - 2)/Segments)·n/β for a message of n bytes — close to the n/β lower bound for large messages
/// on few ranks, where BinomialTree takes ceil(log2 p)·n/β and ScatterAllgather about 2 n/β. Each link
/// carries every segment once; latency grows with p, so for many ranks or small messages prefer the
/// tree.
///
///     using zcoll::schedule::collective_op;
///     static_assert(zcoll::Chain<16>::blocks(collective_op::bcast, 4) == 16);
///     static_assert(zcoll::Chain<16>::rounds(collective_op::bcast, 4) == 16 + 2);
template <int Segments = 32>
struct Chain {
  static_assert(Segments >= 1, "Chain: Segments must be at least 1");
  static constexpr const char* name = "chain";
  static constexpr bool supports(schedule::collective_op op) { return op == schedule::collective_op::bcast; }

  /// Segments blocks for bcast, where schedule::block_count says 1.
  static constexpr int blocks(schedule::collective_op op, int ranks) {
    return supports(op) ? Segments : schedule::block_count(op, ranks);
  }

  /// Segments + p - 2 (0 for one rank or an unsupported operation).
  static constexpr int rounds(schedule::collective_op op, int ranks) {
    return supports(op) && ranks >= 2 ? Segments + ranks - 2 : 0;
  }

  static constexpr schedule::step at(schedule::collective_op op, int ranks, int rank, int round, int root = 0) {
    using schedule::detail::wrap;
    if (!schedule::detail::valid_step(ranks, rank, round, rounds(op, ranks)) || root < 0 || root >= ranks) return {};
    const int v = wrap(rank - root, ranks);
    schedule::step s;
    if (const int sent = round - v; v + 1 < ranks && sent >= 0 && sent < Segments) {
      s.send = {.peer = wrap(rank + 1, ranks), .first_block = sent, .block_count = 1};
    }
    if (const int received = round - (v - 1); v > 0 && received >= 0 && received < Segments) {
      s.recv = {.peer = wrap(rank - 1, ranks), .first_block = received, .block_count = 1};
    }
    return s;
  }
};

}  // namespace zcoll
