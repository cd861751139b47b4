// The simulator must fail broken schedules, or the schedule tests prove nothing: each mutant below breaks
// one rule, and the failure sentence must name it.
#include <catch2/catch.hpp>

#include <string>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/schedules.hpp"

namespace {

using zcoll::schedule::collective_op;
using zcoll::schedule::step;

/// Base for a mutant: Base's answers everywhere, except where the mutant overrides them.
template <class Base>
struct Mutant {
  static constexpr const char* name = "mutant";
  static constexpr bool supports(collective_op op) { return Base::supports(op); }
  static constexpr int rounds(collective_op op, int ranks) { return Base::rounds(op, ranks); }
};

/// Ring allgather whose receiver expects the wrong block in round 1.
struct WrongBlock : Mutant<zcoll::Ring> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    step s = zcoll::Ring::at(op, ranks, rank, round, root);
    if (round == 1 && rank == 0) s.recv.first_block = (s.recv.first_block + 2) % ranks;
    return s;
  }
};

/// Ring allgather one round short: nobody gets the last block.
struct ShortRing : Mutant<zcoll::Ring> {
  static constexpr int rounds(collective_op op, int ranks) { return zcoll::Ring::rounds(op, ranks) - 1; }
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    return zcoll::Ring::at(op, ranks, rank, round, root);
  }
};

/// Recursive doubling allreduce that repeats its first exchange: contributions reduced in twice.
struct TwiceReduced : Mutant<zcoll::RecursiveDoubling> {
  static constexpr int rounds(collective_op op, int ranks) { return zcoll::RecursiveDoubling::rounds(op, ranks) + 1; }
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    return zcoll::RecursiveDoubling::at(op, ranks, rank, round == 0 ? 0 : round - 1, root);
  }
};

/// Binomial bcast run backwards in time: ranks forward the block before they have it.
struct EarlyForward : Mutant<zcoll::BinomialTree> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    return zcoll::BinomialTree::at(op, ranks, rank, rounds(op, ranks) - 1 - round, root);
  }
};

/// Ring reduce_scatter whose rank 2 skips its send in round 0, leaving rank 3's receive unmatched.
struct UnmatchedReceive : Mutant<zcoll::Ring> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    step s = zcoll::Ring::at(op, ranks, rank, round, root);
    if (round == 0 && rank == 2) s.send = {};
    return s;
  }
};

/// Ring allgather whose rank 1 names a block past the end.
struct OutOfRange : Mutant<zcoll::Ring> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    step s = zcoll::Ring::at(op, ranks, rank, round, root);
    if (round == 0 && rank == 1) s.send.block_count = ranks;
    if (round == 0 && rank == 2) s.recv.block_count = ranks;
    return s;
  }
};

/// Ring allgather receiving in place over the block it is sending.
struct InPlaceOverlap : Mutant<zcoll::Ring> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    step s = zcoll::Ring::at(op, ranks, rank, round, root);
    s.send.first_block = s.recv.first_block = 0;
    s.send.block_count = s.recv.block_count = ranks;
    return s;
  }
};

/// Pairwise alltoall that sends its own block instead of the peer's (the peer receives it as block i).
struct OwnBlock : Mutant<zcoll::Pairwise> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    step s = zcoll::Pairwise::at(op, ranks, rank, round, root);
    s.send.first_block = rank;
    return s;
  }
};

/// Binomial reduce that forgets to reduce: the root receives with reduce = false.
struct Replaces : Mutant<zcoll::BinomialTree> {
  static constexpr step at(collective_op op, int ranks, int rank, int round, int root = 0) {
    step s = zcoll::BinomialTree::at(op, ranks, rank, round, root);
    s.recv.reduce = false;
    return s;
  }
};

static_assert(!zcoll_test::messages_match<WrongBlock>(collective_op::allgather, 5));
static_assert(!zcoll_test::messages_match<UnmatchedReceive>(collective_op::reduce_scatter, 5));
static_assert(!zcoll_test::messages_match<OutOfRange>(collective_op::allgather, 5));

void expect_failure(const zcoll_test::simulation& result, const std::string& words) {
  INFO(result.failure);
  CHECK_FALSE(result.ok());
  CHECK(result.failure.find(words) != std::string::npos);
}

}  // namespace

TEST_CASE("The schedule simulator catches broken schedules", "[schedule][simulate]") {
  using zcoll_test::simulate;
  expect_failure(simulate<WrongBlock>(collective_op::allgather, 5), "which receives blocks [0, 1) from 4");
  expect_failure(simulate<ShortRing>(collective_op::allgather, 5), "ends with block");
  expect_failure(simulate<TwiceReduced>(collective_op::allreduce, 4), "expected {0,1,2,3}");
  expect_failure(simulate<EarlyForward>(collective_op::bcast, 8, 3), "which it does not hold");
  expect_failure(simulate<UnmatchedReceive>(collective_op::reduce_scatter, 5), "receives from 2, which sends to -1");
  expect_failure(simulate<OutOfRange>(collective_op::allgather, 5), "blocks outside [0, 5)");
  expect_failure(simulate<InPlaceOverlap>(collective_op::allgather, 5), "reduce = false over blocks it sends");
  expect_failure(simulate<OwnBlock>(collective_op::alltoall, 5), "own block");
  expect_failure(simulate<Replaces>(collective_op::reduce, 8, 2), "ends with block 0");
  expect_failure(simulate<zcoll::Ring>(collective_op::bcast, 4), "not supported");
  // One rank: no rounds, nothing to send, and the state is already right.
  CHECK(simulate<zcoll::Ring>(collective_op::allgather, 1).ok());
  CHECK(simulate<zcoll::Pairwise>(collective_op::alltoall, 1).ok());
}
