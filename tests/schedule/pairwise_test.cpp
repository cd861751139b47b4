#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/pairwise.hpp"

namespace {

using zcoll::Pairwise;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

static_assert(zcoll::schedule::schedule<Pairwise>);
static_assert(Pairwise::supports(collective_op::alltoall) && !Pairwise::supports(collective_op::allgather));
// Round 1 (offset 2) of a 5-rank alltoall at rank 4: block 1 to rank 1, block 2 from rank 2.
static_assert(Pairwise::at(collective_op::alltoall, 5, 4, 1) ==
              step{.send = {.peer = 1, .first_block = 1, .block_count = 1},
                   .recv = {.peer = 2, .first_block = 2, .block_count = 1}});
static_assert(zcoll_test::messages_match<Pairwise>(collective_op::alltoall, 9));
static_assert(zcoll_test::idle_outside<Pairwise>(collective_op::alltoall, 9));

}  // namespace

TEST_CASE("Pairwise: p - 1 rounds", "[schedule][pairwise]") {
  for (int p = 1; p <= 64; ++p) {
    INFO(p << " ranks");
    CHECK(Pairwise::rounds(collective_op::alltoall, p) == p - 1);
    for (collective_op op : zcoll_test::all_ops)
      if (op != collective_op::alltoall) CHECK(Pairwise::rounds(op, p) == 0);
  }
}

TEST_CASE("Pairwise alltoall: rank j ends with block (i, j) of every rank i", "[schedule][pairwise]") {
  zcoll_test::check_schedule<Pairwise>(collective_op::alltoall);
  const auto result = zcoll_test::simulate<Pairwise>(collective_op::alltoall, 10);
  CHECK(result.blocks_sent == 10 * 9);
}
