#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/recursive_doubling.hpp"

namespace {

using zcoll::RecursiveDoubling;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

static_assert(zcoll::schedule::schedule<RecursiveDoubling>);
static_assert(RecursiveDoubling::supports(collective_op::allreduce) &&
              RecursiveDoubling::supports(collective_op::allgather) &&
              !RecursiveDoubling::supports(collective_op::reduce_scatter));
static_assert(RecursiveDoubling::rounds(collective_op::allreduce, 8) == 3);
static_assert(RecursiveDoubling::rounds(collective_op::allreduce, 12) == 5);
// 6 ranks, allreduce: rank 5 folds into rank 1, which reduces it in.
static_assert(RecursiveDoubling::at(collective_op::allreduce, 6, 5, 0) ==
              step{.send = {.peer = 1, .first_block = 0, .block_count = 1}, .recv = {}});
static_assert(RecursiveDoubling::at(collective_op::allreduce, 6, 1, 0) ==
              step{.send = {}, .recv = {.peer = 5, .first_block = 0, .block_count = 1, .reduce = true}});
// 8 ranks, allgather, round 2: rank 5 sends its group [4, 8) to rank 1 and receives [0, 4).
static_assert(RecursiveDoubling::at(collective_op::allgather, 8, 5, 2) ==
              step{.send = {.peer = 1, .first_block = 4, .block_count = 4},
                   .recv = {.peer = 1, .first_block = 0, .block_count = 4}});
static_assert(zcoll_test::messages_match<RecursiveDoubling>(collective_op::allreduce, 13));
static_assert(zcoll_test::messages_match<RecursiveDoubling>(collective_op::allgather, 13));
static_assert(zcoll_test::idle_outside<RecursiveDoubling>(collective_op::allgather, 9));
static_assert(zcoll_test::idle_outside<RecursiveDoubling>(collective_op::bcast, 9));

int expected_rounds(int p) {
  const int k = zcoll_test::reference_floor_log2(p);
  return (1 << k) == p ? k : k + 2;
}

}  // namespace

TEST_CASE("RecursiveDoubling: log2 p rounds, 2 more when p is not a power of two", "[schedule][recursive_doubling]") {
  for (int p = 1; p <= 64; ++p) {
    INFO(p << " ranks");
    CHECK(RecursiveDoubling::rounds(collective_op::allreduce, p) == expected_rounds(p));
    CHECK(RecursiveDoubling::rounds(collective_op::allgather, p) == expected_rounds(p));
    for (collective_op op : zcoll_test::all_ops)
      if (!RecursiveDoubling::supports(op)) CHECK(RecursiveDoubling::rounds(op, p) == 0);
  }
  CHECK(RecursiveDoubling::rounds(collective_op::allreduce, 1) == 0);
  CHECK(RecursiveDoubling::rounds(collective_op::allreduce, 64) == 6);
  CHECK(RecursiveDoubling::rounds(collective_op::allreduce, 63) == 7);
}

TEST_CASE("RecursiveDoubling allreduce: every rank ends with every contribution once",
          "[schedule][recursive_doubling]") {
  zcoll_test::check_schedule<RecursiveDoubling>(collective_op::allreduce);
  // The whole buffer in every message: k exchanges per core rank, plus one each way per extra rank.
  CHECK(zcoll_test::simulate<RecursiveDoubling>(collective_op::allreduce, 16).blocks_sent == 16 * 4);
  CHECK(zcoll_test::simulate<RecursiveDoubling>(collective_op::allreduce, 11).blocks_sent == 8 * 3 + 2 * 3);
}

TEST_CASE("RecursiveDoubling allgather: every rank ends with every block, contiguous groups",
          "[schedule][recursive_doubling]") {
  zcoll_test::check_schedule<RecursiveDoubling>(collective_op::allgather);
  // A power of two moves each block to each other rank once: p (p - 1) blocks.
  CHECK(zcoll_test::simulate<RecursiveDoubling>(collective_op::allgather, 32).blocks_sent == 32 * 31);
  // Otherwise the P core ranks each receive the blocks they lack, p P - p in all; the fold-in moves one
  // block per extra rank, the fold-out p.
  CHECK(zcoll_test::simulate<RecursiveDoubling>(collective_op::allgather, 11).blocks_sent == 11 * 7 + 3 + 3 * 11);
}
