#pragma once
/// What a schedule is: a constexpr answer to "in round r, what does rank p send to whom, and receive
/// from whom", for each collective operation it supports. No transport, no data.

#include <concepts>

namespace zcoll::schedule {

/// The operations a schedule may describe. allreduce is listed for schedules that do it directly
/// (recursive doubling); Compressed builds it from reduce_scatter + allgather otherwise.
enum class collective_op { allgather, reduce_scatter, allreduce, bcast, reduce, scatter, gather, alltoall };

/// One message: blocks [first_block, first_block + block_count) to or from `peer` (-1: no message).
/// On a receive, `reduce` says whether the incoming blocks are reduced into the local ones (true) or
/// replace them (false).
struct exchange {
  int peer = -1;
  int first_block = 0;
  int block_count = 0;
  bool reduce = false;

  constexpr bool active() const { return peer >= 0; }
  friend constexpr bool operator==(const exchange&, const exchange&) = default;
};

/// What one rank does in one round: at most one send and one receive (the receive may come from another
/// peer than the send goes to). The collective posts both, then waits for both.
struct step {
  exchange send;
  exchange recv;
  friend constexpr bool operator==(const step&, const step&) = default;
};

/// How many blocks an operation works on, for `ranks` ranks (a schedule may cut differently: blocks_of):
/// - allgather: `ranks` blocks, block b is rank b's contribution; at the end every rank has every block.
/// - reduce_scatter: `ranks` blocks, every rank starts with a partial of each; at the end rank b holds
///   block b reduced over all ranks.
/// - allreduce, bcast, reduce: 1 block, the whole buffer.
/// - scatter, gather: `ranks` blocks, block k belongs to rank (root + k) mod ranks (relative order, so a
///   subtree of a tree is a contiguous range).
/// - alltoall: `ranks` blocks; on a send, block b is the one destined to rank b; on a receive, block b is
///   the one coming from rank b. The rank's own block is copied locally, never sent.
constexpr int block_count(collective_op op, int ranks) {
  switch (op) {
    case collective_op::allreduce:
    case collective_op::bcast:
    case collective_op::reduce:
      return 1;
    default:
      return ranks;
  }
}

/// A schedule: S::supports(op), S::rounds(op, ranks) and S::at(op, ranks, rank, round, root), all
/// constexpr, and optionally S::blocks(op, ranks) where it cuts an operation into other blocks than
/// block_count says (blocks_of). For every ranks >= 1, every send of round r is matched by the receive of its peer in
/// round r with the same blocks (for alltoall, the same block_count: the sender names a block by its
/// destination and the receiver by its source, as block_count says, so the indices differ).
template <class S>
concept schedule = requires(collective_op op, int n) {
  { S::name } -> std::convertible_to<const char*>;
  { S::supports(op) } -> std::same_as<bool>;
  { S::rounds(op, n) } -> std::same_as<int>;
  { S::at(op, n, n, n, n) } -> std::same_as<step>;
};

/// The blocks S cuts `op` into: S::blocks(op, ranks) where the schedule defines it (ScatterAllgather cuts
/// a bcast into one block per rank), block_count(op, ranks) otherwise.
template <schedule S>
constexpr int blocks_of(collective_op op, int ranks) {
  if constexpr (requires { S::blocks(op, ranks); }) {
    return S::blocks(op, ranks);
  } else {
    return block_count(op, ranks);
  }
}

}  // namespace zcoll::schedule
