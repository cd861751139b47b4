#pragma once
/// The α–β cost of a schedule, read off its steps: what a round costs on a link, and a whole operation.

#include <algorithm>

#include "zcoll/schedule/concepts.hpp"

namespace zcoll::schedule {

/// A link: every message costs latency_s, and bytes_per_s is the rate of each rank's full-duplex link
/// into a non-blocking switch (a rank's sends share its outgoing link, its receives the incoming one).
struct link_cost {
  double latency_s = 0.0;
  double bytes_per_s = 1.25e8;  ///< 1 Gbit/s
};

/// The most blocks any rank sends or receives in `round` (0 when the round moves nothing): the
/// collectives wait for every message of a round before the next, so this rank's link sets the round's
/// length.
template <schedule S>
constexpr int busiest_blocks(collective_op op, int ranks, int round, int root = 0) {
  int most = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const step s = S::at(op, ranks, rank, round, root);
    most = std::max({most, s.send.active() ? s.send.block_count : 0, s.recv.active() ? s.recv.block_count : 0});
  }
  return most;
}

/// The α–β time of the whole operation with blocks of `block_bytes`: per round with a message, the
/// latency plus the busiest rank's bytes over the link rate.
template <schedule S>
constexpr double transfer_seconds(collective_op op, int ranks, double block_bytes, link_cost link, int root = 0) {
  double seconds = 0.0;
  for (int r = 0; r < S::rounds(op, ranks); ++r) {
    const int blocks = busiest_blocks<S>(op, ranks, r, root);
    if (blocks > 0) seconds += link.latency_s + blocks * block_bytes / link.bytes_per_s;
  }
  return seconds;
}

/// The least time any algorithm needs for `op` on a buffer of `bytes` (the operation's large buffer:
/// allreduce and bcast the buffer, allgather and gather the result, reduce_scatter, scatter and alltoall
/// the input of a rank): what crosses the busiest link at the link rate, latency left out. allreduce
/// 2(p − 1)/p·n, bcast n, the others (p − 1)/p·n (Thakur, Rabenseifner & Gropp 2005; Chan et al. 2007).
/// The reference a measured native call is held against.
constexpr double lower_bound_seconds(collective_op op, int ranks, double bytes, link_cost link) {
  if (ranks <= 1) return 0.0;
  const double share = static_cast<double>(ranks - 1) / ranks;
  switch (op) {
    case collective_op::allreduce: return 2.0 * share * bytes / link.bytes_per_s;
    case collective_op::bcast:
    case collective_op::reduce: return bytes / link.bytes_per_s;
    default: return share * bytes / link.bytes_per_s;
  }
}

}  // namespace zcoll::schedule
