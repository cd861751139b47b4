#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/ring.hpp"

namespace {

using zcoll::Ring;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

static_assert(zcoll::schedule::schedule<Ring>);
static_assert(Ring::supports(collective_op::allgather) && Ring::supports(collective_op::reduce_scatter));
static_assert(!Ring::supports(collective_op::allreduce) && !Ring::supports(collective_op::bcast) &&
              !Ring::supports(collective_op::alltoall));
// Round 0 of a 4-rank allgather at rank 1: its own block right, block 0 from the left.
static_assert(Ring::at(collective_op::allgather, 4, 1, 0) ==
              step{.send = {.peer = 2, .first_block = 1, .block_count = 1},
                   .recv = {.peer = 0, .first_block = 0, .block_count = 1}});
// The last round of a 4-rank reduce_scatter at rank 1: block 1 arrives, reduced.
static_assert(Ring::at(collective_op::reduce_scatter, 4, 1, 2) ==
              step{.send = {.peer = 2, .first_block = 2, .block_count = 1},
                   .recv = {.peer = 0, .first_block = 1, .block_count = 1, .reduce = true}});
static_assert(zcoll_test::messages_match<Ring>(collective_op::allgather, 7));
static_assert(zcoll_test::messages_match<Ring>(collective_op::reduce_scatter, 16));
static_assert(zcoll_test::idle_outside<Ring>(collective_op::allgather, 9));
static_assert(zcoll_test::idle_outside<Ring>(collective_op::allreduce, 9));

}  // namespace

TEST_CASE("Ring: p - 1 rounds, none for unsupported operations", "[schedule][ring]") {
  for (int p = 1; p <= 64; ++p) {
    INFO(p << " ranks");
    CHECK(Ring::rounds(collective_op::allgather, p) == p - 1);
    CHECK(Ring::rounds(collective_op::reduce_scatter, p) == p - 1);
    for (collective_op op : zcoll_test::all_ops)
      if (!Ring::supports(op)) CHECK(Ring::rounds(op, p) == 0);
  }
}

TEST_CASE("Ring allgather: every rank ends with every block, one block per message", "[schedule][ring]") {
  zcoll_test::check_schedule<Ring>(collective_op::allgather);
  const auto result = zcoll_test::simulate<Ring>(collective_op::allgather, 12);
  CHECK(result.messages == 12 * 11);
  CHECK(result.blocks_sent == 12 * 11);
}

TEST_CASE("Ring reduce_scatter: rank b ends with block b reduced over every rank once", "[schedule][ring]") {
  zcoll_test::check_schedule<Ring>(collective_op::reduce_scatter);
}
