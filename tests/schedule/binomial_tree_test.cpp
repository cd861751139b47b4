#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/binomial_tree.hpp"

namespace {

using zcoll::BinomialTree;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

constexpr collective_op tree_ops[] = {collective_op::bcast, collective_op::reduce, collective_op::scatter,
                                      collective_op::gather};

static_assert(zcoll::schedule::schedule<BinomialTree>);
static_assert(!BinomialTree::supports(collective_op::allreduce) && !BinomialTree::supports(collective_op::allgather));
static_assert(BinomialTree::rounds(collective_op::bcast, 5) == 3);
// bcast over 5 ranks rooted at 3, round 2: relative rank 0 (rank 3) sends to relative 4 (rank 2).
static_assert(BinomialTree::at(collective_op::bcast, 5, 3, 2, 3) ==
              step{.send = {.peer = 2, .first_block = 0, .block_count = 1}, .recv = {}});
// The reduce mirrors it: relative 4 (rank 2) sends in round 0, and rank 3 reduces it in.
static_assert(BinomialTree::at(collective_op::reduce, 5, 3, 0, 3) ==
              step{.send = {}, .recv = {.peer = 2, .first_block = 0, .block_count = 1, .reduce = true}});
// scatter over 8 ranks rooted at 0, round 0: the root hands rank 4 its subtree, blocks [4, 8).
static_assert(BinomialTree::at(collective_op::scatter, 8, 0, 0, 0) ==
              step{.send = {.peer = 4, .first_block = 4, .block_count = 4}, .recv = {}});
// gather over 6 ranks rooted at 1, last round: relative 4 (rank 5) sends blocks [4, 6) to the root.
static_assert(BinomialTree::at(collective_op::gather, 6, 5, 2, 1) ==
              step{.send = {.peer = 1, .first_block = 4, .block_count = 2}, .recv = {}});
static_assert(zcoll_test::messages_match<BinomialTree>(collective_op::bcast, 13, 5));
static_assert(zcoll_test::messages_match<BinomialTree>(collective_op::reduce, 13, 12));
static_assert(zcoll_test::messages_match<BinomialTree>(collective_op::scatter, 13, 7));
static_assert(zcoll_test::messages_match<BinomialTree>(collective_op::gather, 13, 1));
static_assert(zcoll_test::idle_outside<BinomialTree>(collective_op::scatter, 9));
// A root out of range gives idle steps rather than undefined arithmetic.
static_assert(BinomialTree::at(collective_op::bcast, 4, 0, 0, 4) == step{});

}  // namespace

TEST_CASE("BinomialTree: ceil(log2 p) rounds", "[schedule][binomial_tree]") {
  for (int p = 1; p <= 64; ++p) {
    INFO(p << " ranks");
    for (collective_op op : tree_ops) CHECK(BinomialTree::rounds(op, p) == zcoll_test::reference_ceil_log2(p));
    for (collective_op op : zcoll_test::all_ops)
      if (!BinomialTree::supports(op)) CHECK(BinomialTree::rounds(op, p) == 0);
  }
  CHECK(BinomialTree::rounds(collective_op::bcast, 1) == 0);
  CHECK(BinomialTree::rounds(collective_op::bcast, 33) == 6);
}

TEST_CASE("BinomialTree bcast: every rank ends with the root's block", "[schedule][binomial_tree]") {
  zcoll_test::check_schedule<BinomialTree>(collective_op::bcast);
  CHECK(zcoll_test::simulate<BinomialTree>(collective_op::bcast, 13, 4).messages == 12);
}

TEST_CASE("BinomialTree reduce: the root ends with every contribution once", "[schedule][binomial_tree]") {
  zcoll_test::check_schedule<BinomialTree>(collective_op::reduce);
  CHECK(zcoll_test::simulate<BinomialTree>(collective_op::reduce, 13, 4).messages == 12);
}

TEST_CASE("BinomialTree scatter: rank (root + k) mod p ends with block k", "[schedule][binomial_tree]") {
  zcoll_test::check_schedule<BinomialTree>(collective_op::scatter);
  // p - 1 messages, and each block travels as many hops as its relative rank has set bits.
  for (int p : {8, 13}) {
    long long hops = 0;
    for (int k = 0; k < p; ++k) hops += __builtin_popcount(static_cast<unsigned>(k));
    const auto result = zcoll_test::simulate<BinomialTree>(collective_op::scatter, p, 2);
    CHECK(result.messages == p - 1);
    CHECK(result.blocks_sent == hops);
  }
}

TEST_CASE("BinomialTree gather: the root ends with every rank's block", "[schedule][binomial_tree]") {
  zcoll_test::check_schedule<BinomialTree>(collective_op::gather);
  CHECK(zcoll_test::simulate<BinomialTree>(collective_op::gather, 13, 12).messages == 12);
}
