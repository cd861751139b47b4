#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/chain.hpp"

namespace {

using zcoll::Chain;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

static_assert(zcoll::schedule::schedule<Chain<>>);
static_assert(Chain<8>::supports(collective_op::bcast) && !Chain<8>::supports(collective_op::allgather));
static_assert(zcoll::schedule::blocks_of<Chain<8>>(collective_op::bcast, 3) == 8);
static_assert(Chain<8>::rounds(collective_op::bcast, 1) == 0);
static_assert(Chain<8>::rounds(collective_op::bcast, 5) == 8 + 3);
// 4 ranks rooted at 2, round 3: relative rank 1 (rank 3) passes segment 2 on to rank 0 and receives
// segment 3 from the root.
static_assert(Chain<8>::at(collective_op::bcast, 4, 3, 3, 2) ==
              step{.send = {.peer = 0, .first_block = 2, .block_count = 1},
                   .recv = {.peer = 2, .first_block = 3, .block_count = 1}});
// The last rank of the chain only receives; the root only sends.
static_assert(!Chain<8>::at(collective_op::bcast, 4, 1, 5, 2).send.active());
static_assert(!Chain<8>::at(collective_op::bcast, 4, 2, 0, 2).recv.active());
static_assert(zcoll_test::messages_match<Chain<5>>(collective_op::bcast, 13, 5));
static_assert(zcoll_test::idle_outside<Chain<3>>(collective_op::bcast, 9));
static_assert(Chain<8>::at(collective_op::bcast, 4, 0, 0, 4) == step{});

}  // namespace

TEST_CASE("Chain bcast: every rank ends with every segment, each received once, each link used once per segment",
          "[schedule][chain]") {
  zcoll_test::check_schedule<Chain<1>>(collective_op::bcast);
  zcoll_test::check_schedule<Chain<7>>(collective_op::bcast);
  zcoll_test::check_schedule<Chain<32>>(collective_op::bcast);
  for (int p = 1; p <= 64; ++p) {
    const auto result = zcoll_test::simulate<Chain<7>>(collective_op::bcast, p, p / 2);
    INFO(result.failure);
    REQUIRE(result.ok());
    CHECK(result.blocks_sent == static_cast<long long>(p - 1) * 7);
    CHECK(result.messages == static_cast<long long>(p - 1) * 7);
  }
}
