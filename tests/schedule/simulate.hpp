#pragma once
/// A data-free simulator of schedules (include/zcoll/schedule/): runs every round of every rank, checks
/// that the messages match and stay in range, and follows what each block holds as the multiset of the
/// ranks (or, for alltoall, the (source, destination) items) that contributed to it, so that a block lost,
/// sent before it arrived, reduced in twice or moved to a rank twice is a failure with a sentence saying
/// where.
///
///     const auto result = zcoll_test::simulate<zcoll::Ring>(collective_op::allgather, 7);
///     INFO(result.failure);
///     CHECK(result.ok());
///
/// The semantics simulated are the contract's: in a round every rank posts its send and its receive,
/// then waits for both, so a send carries the blocks as they were at the start of the round and the
/// receives land after all sends have been taken. A send and its receive name the same blocks, except in
/// an alltoall, where the sender names a block by its destination and the receiver by its source: there
/// only the counts must agree, and the final state shows whether each item reached its destination.
/// On top of the contract the simulator requires what the collectives rely on to receive in place: a
/// receive with reduce = false never overlaps the blocks the same rank sends in the same round, and an
/// alltoall never sends or receives a rank's own block.

#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "zcoll/schedule/concepts.hpp"

namespace zcoll_test {

using zcoll::schedule::collective_op;

inline const char* op_name(collective_op op) {
  switch (op) {
    case collective_op::allgather: return "allgather";
    case collective_op::reduce_scatter: return "reduce_scatter";
    case collective_op::allreduce: return "allreduce";
    case collective_op::bcast: return "bcast";
    case collective_op::reduce: return "reduce";
    case collective_op::scatter: return "scatter";
    case collective_op::gather: return "gather";
    case collective_op::alltoall: return "alltoall";
  }
  return "?";
}

inline constexpr collective_op all_ops[] = {collective_op::allgather, collective_op::reduce_scatter,
                                            collective_op::allreduce, collective_op::bcast,
                                            collective_op::reduce,    collective_op::scatter,
                                            collective_op::gather,    collective_op::alltoall};

inline constexpr bool is_rooted(collective_op op) {
  return op == collective_op::bcast || op == collective_op::reduce || op == collective_op::scatter ||
         op == collective_op::gather;
}

/// Data movement: every block reaches every rank that needs it exactly once — a second receive of a
/// block is a failure (a reduction's fold-out replaces a partial by design; recursive doubling's
/// allgather fold-out also returns the folded rank its own block, which it holds from the start).
inline constexpr bool moves_data(collective_op op) {
  return op == collective_op::allgather || op == collective_op::bcast || op == collective_op::scatter ||
         op == collective_op::gather || op == collective_op::alltoall;
}

/// The outcome of one simulation: empty `failure` when every check passed.
struct simulation {
  std::string failure;
  int rounds = 0;
  long long messages = 0;      ///< active sends over all rounds
  long long blocks_sent = 0;   ///< blocks over all messages
  bool ok() const { return failure.empty(); }
};

namespace detail {

/// What a block holds: the contributions reduced into it (sorted on comparison), or nothing yet.
struct block_state {
  bool held = false;
  std::vector<int> contributions;
  bool received = false;  // arrived in a message (not held from the start)
};

inline bool overlaps(const zcoll::schedule::exchange& a, const zcoll::schedule::exchange& b) {
  return a.first_block < b.first_block + b.block_count && b.first_block < a.first_block + a.block_count;
}

inline bool holds_exactly(const block_state& s, std::vector<int> expected) {
  if (!s.held) return false;
  std::vector<int> got = s.contributions;
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  return got == expected;
}

inline std::string describe(const block_state& s) {
  if (!s.held) return "nothing";
  std::vector<int> got = s.contributions;
  std::sort(got.begin(), got.end());
  std::ostringstream out;
  out << '{';
  for (std::size_t i = 0; i < got.size(); ++i) out << (i ? "," : "") << got[i];
  out << '}';
  return out.str();
}

}  // namespace detail

/// Runs S for `op` on `ranks` ranks rooted at `root` (ignored for unrooted operations).
template <zcoll::schedule::schedule S>
simulation simulate(collective_op op, int ranks, int root = 0) {
  using zcoll::schedule::exchange;
  using zcoll::schedule::step;
  using detail::block_state;
  simulation result;
  std::ostringstream where;
  where << S::name << ' ' << op_name(op) << " on " << ranks << " ranks";
  if (is_rooted(op)) where << " rooted at " << root;
  const auto fail = [&](int round, int rank, const std::string& what) {
    if (!result.failure.empty()) return;
    std::ostringstream out;
    out << where.str();
    if (round >= 0) out << ", round " << round;
    if (rank >= 0) out << ", rank " << rank;
    out << ": " << what;
    result.failure = out.str();
  };

  const int blocks = zcoll::schedule::blocks_of<S>(op, ranks);
  const bool alltoall = op == collective_op::alltoall;
  // held[rank][block]: the rank's blocks; for alltoall the receive buffer, `outbox` the send buffer.
  std::vector<std::vector<block_state>> held(ranks, std::vector<block_state>(blocks));
  std::vector<std::vector<block_state>> outbox;
  const auto relative_owner = [&](int k) { return (root + k) % ranks; };
  for (int i = 0; i < ranks; ++i) {
    switch (op) {
      case collective_op::allgather: held[i][i] = {true, {i}}; break;
      case collective_op::reduce_scatter:
        for (int b = 0; b < blocks; ++b) held[i][b] = {true, {i}};
        break;
      case collective_op::allreduce:
      case collective_op::reduce: held[i][0] = {true, {i}}; break;
      case collective_op::bcast:
        if (i == root)
          for (int b = 0; b < blocks; ++b) held[i][b] = {true, {root}};
        break;
      case collective_op::scatter:
        if (i == root)
          for (int k = 0; k < blocks; ++k) held[i][k] = {true, {k}};
        break;
      case collective_op::gather:
        for (int k = 0; k < blocks; ++k)
          if (relative_owner(k) == i) held[i][k] = {true, {i}};
        break;
      case collective_op::alltoall: break;
    }
  }
  if (alltoall) {
    outbox.assign(ranks, std::vector<block_state>(blocks));
    for (int i = 0; i < ranks; ++i)
      for (int b = 0; b < blocks; ++b) outbox[i][b] = {true, {i * ranks + b}};
  }

  if (!S::supports(op)) {
    fail(-1, -1, "not supported");
    return result;
  }
  result.rounds = S::rounds(op, ranks);
  std::vector<step> steps(ranks);
  std::vector<std::vector<block_state>> in_flight(ranks);
  for (int r = 0; r < result.rounds && result.ok(); ++r) {
    for (int i = 0; i < ranks; ++i) steps[i] = S::at(op, ranks, i, r, root);
    // Shape: peers and blocks in range, messages matched both ways.
    for (int i = 0; i < ranks && result.ok(); ++i) {
      const step& s = steps[i];
      for (const exchange* e : {&s.send, &s.recv}) {
        if (!e->active()) continue;
        const char* kind = e == &s.send ? "send" : "receive";
        std::ostringstream msg;
        msg << kind << " with peer " << e->peer << ", blocks [" << e->first_block << ", "
            << e->first_block + e->block_count << ")";
        if (e->peer >= ranks || e->peer == i) fail(r, i, msg.str() + ": peer out of range or self");
        else if (e->block_count < 1 || e->first_block < 0 || e->first_block + e->block_count > blocks)
          fail(r, i, msg.str() + ": blocks outside [0, " + std::to_string(blocks) + ")");
        else if (alltoall && e->first_block <= i && i < e->first_block + e->block_count)
          fail(r, i, msg.str() + ": alltoall moves the rank's own block");
      }
      if (!result.ok()) break;
      if (s.send.active()) {
        const exchange& other = steps[s.send.peer].recv;
        if (other.peer != i || other.block_count != s.send.block_count ||
            (!alltoall && other.first_block != s.send.first_block)) {
          std::ostringstream msg;
          msg << "sends blocks [" << s.send.first_block << ", " << s.send.first_block + s.send.block_count
              << ") to " << s.send.peer << ", which receives blocks [" << other.first_block << ", "
              << other.first_block + other.block_count << ") from " << other.peer;
          fail(r, i, msg.str());
        }
      }
      if (s.recv.active() && steps[s.recv.peer].send.peer != i) {
        std::ostringstream msg;
        msg << "receives from " << s.recv.peer << ", which sends to " << steps[s.recv.peer].send.peer;
        fail(r, i, msg.str());
      }
      if (!alltoall && s.send.active() && s.recv.active() && !s.recv.reduce && detail::overlaps(s.send, s.recv))
        fail(r, i, "receives with reduce = false over blocks it sends in the same round");
    }
    if (!result.ok()) break;
    // Sends carry the blocks as they are at the start of the round.
    for (int i = 0; i < ranks && result.ok(); ++i) {
      const exchange& e = steps[i].send;
      in_flight[i].clear();
      if (!e.active()) continue;
      ++result.messages;
      result.blocks_sent += e.block_count;
      for (int b = e.first_block; b < e.first_block + e.block_count; ++b) {
        const block_state& source = alltoall ? outbox[i][b] : held[i][b];
        if (!source.held) fail(r, i, "sends block " + std::to_string(b) + ", which it does not hold");
        in_flight[i].push_back(source);
      }
    }
    for (int i = 0; i < ranks && result.ok(); ++i) {
      const exchange& e = steps[i].recv;
      if (!e.active()) continue;
      for (int k = 0; k < e.block_count; ++k) {
        block_state& target = held[i][e.first_block + k];
        const block_state& incoming = in_flight[e.peer][k];
        if (!e.reduce && target.received && moves_data(op)) {
          fail(r, i, "receives block " + std::to_string(e.first_block + k) + " a second time");
        } else if (!e.reduce) {
          target = incoming;
          target.received = true;
        } else if (!target.held) {
          fail(r, i, "reduces into block " + std::to_string(e.first_block + k) + ", which it does not hold");
        } else {
          target.contributions.insert(target.contributions.end(), incoming.contributions.begin(),
                                      incoming.contributions.end());
        }
      }
    }
  }
  if (!result.ok()) return result;

  std::vector<int> everyone(ranks);
  for (int i = 0; i < ranks; ++i) everyone[i] = i;
  const auto expect = [&](int rank, int block, const std::vector<int>& expected) {
    if (!result.ok() || detail::holds_exactly(held[rank][block], expected)) return;
    std::ostringstream msg;
    msg << "ends with block " << block << " = " << detail::describe(held[rank][block]) << ", expected "
        << detail::describe({true, expected});
    fail(-1, rank, msg.str());
  };
  switch (op) {
    case collective_op::allgather:
      for (int i = 0; i < ranks; ++i)
        for (int b = 0; b < blocks; ++b) expect(i, b, {b});
      break;
    case collective_op::reduce_scatter:
      for (int i = 0; i < ranks; ++i) expect(i, i, everyone);
      break;
    case collective_op::allreduce:
      for (int i = 0; i < ranks; ++i) expect(i, 0, everyone);
      break;
    case collective_op::bcast:
      for (int i = 0; i < ranks; ++i)
        for (int b = 0; b < blocks; ++b) expect(i, b, {root});
      break;
    case collective_op::reduce: expect(root, 0, everyone); break;
    case collective_op::scatter:
      for (int k = 0; k < blocks; ++k) expect(relative_owner(k), k, {k});
      break;
    case collective_op::gather:
      for (int k = 0; k < blocks; ++k) expect(root, k, {relative_owner(k)});
      break;
    case collective_op::alltoall:
      for (int j = 0; j < ranks; ++j) {
        held[j][j] = outbox[j][j];  // the local copy
        for (int i = 0; i < ranks; ++i) expect(j, i, {i * ranks + j});
      }
      break;
  }
  return result;
}

/// The part of the checks that needs no containers, usable in a constant expression: every active
/// exchange in range and matched by its peer with the same blocks (for alltoall the same number: the
/// sender names a block by its destination, the receiver by its source), in every round of every rank.
template <zcoll::schedule::schedule S>
constexpr bool messages_match(collective_op op, int ranks, int root = 0) {
  const int blocks = zcoll::schedule::blocks_of<S>(op, ranks);
  const bool alltoall = op == collective_op::alltoall;
  const auto in_range = [&](const zcoll::schedule::exchange& e, int self) {
    return !e.active() || (e.peer < ranks && e.peer != self && e.block_count >= 1 && e.first_block >= 0 &&
                           e.first_block + e.block_count <= blocks);
  };
  for (int r = 0; r < S::rounds(op, ranks); ++r) {
    for (int i = 0; i < ranks; ++i) {
      const zcoll::schedule::step s = S::at(op, ranks, i, r, root);
      if (!in_range(s.send, i) || !in_range(s.recv, i)) return false;
      if (s.send.active()) {
        const zcoll::schedule::exchange other = S::at(op, ranks, s.send.peer, r, root).recv;
        if (other.peer != i || other.block_count != s.send.block_count ||
            (!alltoall && other.first_block != s.send.first_block))
          return false;
      }
      if (s.recv.active() && S::at(op, ranks, s.recv.peer, r, root).send.peer != i) return false;
    }
  }
  return true;
}

/// Every step outside [0, rounds) idle, for ranks 1..max_ranks: what a caller looping one round too far sees.
template <zcoll::schedule::schedule S>
constexpr bool idle_outside(collective_op op, int max_ranks) {
  for (int p = 1; p <= max_ranks; ++p) {
    const int n = S::rounds(op, p);
    for (int i = 0; i < p; ++i) {
      if (S::at(op, p, i, -1, 0) != zcoll::schedule::step{} || S::at(op, p, i, n, 0) != zcoll::schedule::step{})
        return false;
    }
  }
  return true;
}

/// ceil(log2 n) and floor(log2 n), written independently of the library's.
inline constexpr int reference_ceil_log2(int n) {
  int k = 0;
  for (long long v = 1; v < n; v *= 2) ++k;
  return k;
}
inline constexpr int reference_floor_log2(int n) { return reference_ceil_log2(n + 1) - 1; }

/// Runs S for `op` on 1..max_ranks ranks: every root up to `all_roots_up_to` ranks, then roots 0, p/2
/// and p - 1; Catch reports the first failure of each size.
template <zcoll::schedule::schedule S>
void check_schedule(collective_op op, int max_ranks = 64, int all_roots_up_to = 16) {
  for (int p = 1; p <= max_ranks; ++p) {
    std::vector<int> roots{0};
    if (is_rooted(op)) {
      if (p <= all_roots_up_to) {
        for (int root = 1; root < p; ++root) roots.push_back(root);
      } else {
        roots = {0, p / 2, p - 1};
      }
    }
    for (int root : roots) {
      const simulation result = simulate<S>(op, p, root);
      if (!result.ok()) {
        FAIL_CHECK(result.failure);
        break;
      }
    }
  }
}

}  // namespace zcoll_test
