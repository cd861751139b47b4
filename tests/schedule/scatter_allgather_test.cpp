#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/scatter_allgather.hpp"

namespace {

using zcoll::ScatterAllgather;
using zcoll::schedule::collective_op;
using zcoll::schedule::step;

static_assert(zcoll::schedule::schedule<ScatterAllgather>);
static_assert(ScatterAllgather::supports(collective_op::bcast) && !ScatterAllgather::supports(collective_op::scatter));
static_assert(zcoll::schedule::blocks_of<ScatterAllgather>(collective_op::bcast, 7) == 7);
static_assert(zcoll::schedule::blocks_of<zcoll::BinomialTree>(collective_op::bcast, 7) == 1);
static_assert(ScatterAllgather::rounds(collective_op::bcast, 1) == 0);
static_assert(ScatterAllgather::rounds(collective_op::bcast, 5) == 3 + 4);
// 4 ranks rooted at 0, round 0: the root hands relative rank 2 its subtree, blocks [2, 4).
static_assert(ScatterAllgather::at(collective_op::bcast, 4, 0, 0, 0) ==
              step{.send = {.peer = 2, .first_block = 2, .block_count = 2}, .recv = {}});
// First ring round on 4 ranks: rank 1 sends its block 1 to rank 2, which holds only [2, 4); rank 2 sends
// block 2 to rank 3, which holds block 3 alone; rank 3 does not send block 3 to the root, which has it.
static_assert(ScatterAllgather::at(collective_op::bcast, 4, 1, 2, 0).send ==
              zcoll::schedule::exchange{.peer = 2, .first_block = 1, .block_count = 1});
static_assert(ScatterAllgather::at(collective_op::bcast, 4, 2, 2, 0).send ==
              zcoll::schedule::exchange{.peer = 3, .first_block = 2, .block_count = 1});
static_assert(!ScatterAllgather::at(collective_op::bcast, 4, 3, 2, 0).send.active());
static_assert(zcoll_test::messages_match<ScatterAllgather>(collective_op::bcast, 13, 5));
static_assert(zcoll_test::idle_outside<ScatterAllgather>(collective_op::bcast, 9));
static_assert(ScatterAllgather::at(collective_op::bcast, 4, 0, 0, 4) == step{});

}  // namespace

TEST_CASE("ScatterAllgather bcast: every rank ends with every piece of the root's buffer, each received once",
          "[schedule][scatter_allgather]") {
  zcoll_test::check_schedule<ScatterAllgather>(collective_op::bcast);
  // Every rank but the root receives each of the p pieces once: p - 1 ranks × p pieces in all.
  for (int p = 1; p <= 64; ++p) {
    for (int root : {0, p / 2, p - 1}) {
      const auto result = zcoll_test::simulate<ScatterAllgather>(collective_op::bcast, p, root);
      INFO(result.failure);
      REQUIRE(result.ok());
      CHECK(result.blocks_sent == static_cast<long long>(p - 1) * p);
    }
  }
}

TEST_CASE("ScatterAllgather: the root's link carries fewer pieces than the binomial tree's whole copies",
          "[schedule][scatter_allgather]") {
  // The root sends p - 1 pieces in the scatter and at most p - 1 in the ring, so under 2 buffers; the
  // binomial tree's root sends ceil(log2 p) whole buffers.
  for (int p : {4, 8, 13, 64}) {
    int root_pieces = 0;
    for (int r = 0; r < ScatterAllgather::rounds(collective_op::bcast, p); ++r) {
      root_pieces += ScatterAllgather::at(collective_op::bcast, p, 0, r, 0).send.block_count;
    }
    INFO(p << " ranks");
    CHECK(root_pieces < 2 * p);
    CHECK(root_pieces >= p - 1);
  }
}
