#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/schedules.hpp"

namespace {

using zcoll::BinomialTree;
using zcoll::Hierarchical;
using zcoll::RecursiveDoubling;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

using Paper = Hierarchical<BinomialTree, RecursiveDoubling>;

static_assert(zcoll::schedule::schedule<Paper>);
static_assert(Paper::supports(collective_op::allreduce) && !Paper::supports(collective_op::reduce));
static_assert(Paper::rounds(collective_op::allreduce, 64) == 9);
// 20 ranks: groups of 8, 8 and 4, so 3 reduce rounds, 3 inter-group rounds among 3 leaders, 3 bcast
// rounds. Rank 17, local rank 1 of the 4-rank group, sends to its leader 16 in round 1, is done by round 2
// (the smaller group's tree is shallower) and idle while the leaders talk.
static_assert(Paper::rounds(collective_op::allreduce, 20) == 9);
static_assert(Paper::at(collective_op::allreduce, 20, 17, 1) ==
              step{.send = {.peer = 16, .first_block = 0, .block_count = 1}, .recv = {}});
static_assert(Paper::at(collective_op::allreduce, 20, 17, 2) == step{});
static_assert(Paper::at(collective_op::allreduce, 20, 17, 3) == step{});
// Leader 16 (group 2 of 3) folds into leader 0 in the first inter-group round.
static_assert(Paper::at(collective_op::allreduce, 20, 16, 3) ==
              step{.send = {.peer = 0, .first_block = 0, .block_count = 1}, .recv = {}});
static_assert(zcoll_test::messages_match<Paper>(collective_op::allreduce, 21));
static_assert(zcoll_test::messages_match<Hierarchical<BinomialTree, Paper, 3>>(collective_op::allreduce, 40));
static_assert(zcoll_test::idle_outside<Paper>(collective_op::allreduce, 20));

/// rounds() of Hierarchical<BinomialTree, RecursiveDoubling, g>, from the three phases.
int expected_rounds(int p, int g) {
  const int intra = zcoll_test::reference_ceil_log2(p < g ? p : g);
  return intra + RecursiveDoubling::rounds(collective_op::allreduce, (p + g - 1) / g) + intra;
}

template <int G>
void check_group_size() {
  using S = Hierarchical<BinomialTree, RecursiveDoubling, G>;
  INFO("GroupSize " << G);
  for (int p = 1; p <= 64; ++p) {
    INFO(p << " ranks");
    CHECK(S::rounds(collective_op::allreduce, p) == expected_rounds(p, G));
    for (collective_op op : zcoll_test::all_ops)
      if (op != collective_op::allreduce) CHECK(S::rounds(op, p) == 0);
  }
  zcoll_test::check_schedule<S>(collective_op::allreduce);
}

}  // namespace

TEST_CASE("Hierarchical: reduce in groups, allreduce among leaders, bcast in groups", "[schedule][hierarchical]") {
  check_group_size<8>();
  check_group_size<1>();  // no groups to speak of: RecursiveDoubling alone
  check_group_size<2>();
  check_group_size<3>();
  check_group_size<5>();
  check_group_size<64>();  // one group: a reduce and a bcast
  for (int p = 1; p <= 64; ++p)
    CHECK(Hierarchical<BinomialTree, RecursiveDoubling, 1>::rounds(collective_op::allreduce, p) ==
          RecursiveDoubling::rounds(collective_op::allreduce, p));
}

TEST_CASE("Hierarchical nests: leaders may run a Hierarchical allreduce themselves", "[schedule][hierarchical]") {
  using Nested = Hierarchical<BinomialTree, Hierarchical<BinomialTree, RecursiveDoubling, 4>, 8>;
  zcoll_test::check_schedule<Nested>(collective_op::allreduce);
  // 64 ranks: 3 rounds to the 8 leaders; among them 2 + 1 + 2; 3 rounds back.
  CHECK(Nested::rounds(collective_op::allreduce, 64) == 3 + 5 + 3);
}

TEST_CASE("Hierarchical: only leaders cross groups", "[schedule][hierarchical]") {
  for (int p = 1; p <= 64; ++p) {
    for (int r = 0; r < Paper::rounds(collective_op::allreduce, p); ++r) {
      for (int i = 0; i < p; ++i) {
        const step s = Paper::at(collective_op::allreduce, p, i, r);
        for (int peer : {s.send.peer, s.recv.peer}) {
          if (peer >= 0 && peer / 8 != i / 8) {
            INFO(p << " ranks, round " << r << ", rank " << i << ", peer " << peer);
            CHECK(i % 8 == 0);
            CHECK(peer % 8 == 0);
          }
        }
      }
    }
  }
}
