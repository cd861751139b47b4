#include <catch2/catch.hpp>

#include "schedule/simulate.hpp"
#include "zcoll/schedule/cost.hpp"
#include "zcoll/schedule/schedules.hpp"

namespace {

using zcoll::schedule::collective_op;
using zcoll::schedule::link_cost;

constexpr link_cost test_link{.latency_s = 1e-5, .bytes_per_s = 1e8};

// The binomial scatter's root hands half the blocks to its farthest child first.
static_assert(zcoll::schedule::busiest_blocks<zcoll::BinomialTree>(collective_op::scatter, 8, 0) == 4);
static_assert(zcoll::schedule::busiest_blocks<zcoll::Ring>(collective_op::allgather, 1, 0) == 0);

}  // namespace

TEST_CASE("transfer_seconds: the α–β time of a schedule's own rounds", "[schedule][cost]") {
  for (int p = 1; p <= 16; ++p) {
    INFO(p << " ranks");
    const double block = 1e6;
    // Ring: p - 1 rounds of one block.
    CHECK(zcoll::schedule::transfer_seconds<zcoll::Ring>(collective_op::allgather, p, block, test_link) ==
          Approx((p - 1) * (test_link.latency_s + block / test_link.bytes_per_s)));
    // Binomial bcast: ceil(log2 p) rounds of the whole buffer.
    CHECK(zcoll::schedule::transfer_seconds<zcoll::BinomialTree>(collective_op::bcast, p, block, test_link) ==
          Approx(zcoll_test::reference_ceil_log2(p) * (test_link.latency_s + block / test_link.bytes_per_s)));
    // Chain of 8 segments: 8 + p - 2 rounds of one segment (none for one rank).
    const double chain = p == 1 ? 0.0 : (8 + p - 2) * (test_link.latency_s + block / test_link.bytes_per_s);
    CHECK(zcoll::schedule::transfer_seconds<zcoll::Chain<8>>(collective_op::bcast, p, block, test_link) == Approx(chain));
    // Binomial scatter: the root's rounds carry p/2, p/4, ... blocks: p - 1 blocks in all for p = 2^k.
    if ((p & (p - 1)) == 0) {
      CHECK(zcoll::schedule::transfer_seconds<zcoll::BinomialTree>(collective_op::scatter, p, block, test_link) ==
            Approx(zcoll_test::reference_ceil_log2(p) * test_link.latency_s + (p - 1) * block / test_link.bytes_per_s));
    }
  }
}

TEST_CASE("lower_bound_seconds: the busiest test_link's bytes of the best algorithm", "[schedule][cost]") {
  const double n = 64e6;
  CHECK(zcoll::schedule::lower_bound_seconds(collective_op::allreduce, 4, n, test_link) == Approx(2 * 0.75 * n / 1e8));
  CHECK(zcoll::schedule::lower_bound_seconds(collective_op::bcast, 4, n, test_link) == Approx(n / 1e8));
  CHECK(zcoll::schedule::lower_bound_seconds(collective_op::allgather, 4, n, test_link) == Approx(0.75 * n / 1e8));
  CHECK(zcoll::schedule::lower_bound_seconds(collective_op::allreduce, 1, n, test_link) == 0.0);
  // The ring allreduce (reduce_scatter + allgather) meets it, latency aside.
  const link_cost no_latency{.latency_s = 0.0, .bytes_per_s = 1e8};
  CHECK(zcoll::schedule::transfer_seconds<zcoll::Ring>(collective_op::reduce_scatter, 4, n / 4, no_latency) +
            zcoll::schedule::transfer_seconds<zcoll::Ring>(collective_op::allgather, 4, n / 4, no_latency) ==
        Approx(zcoll::schedule::lower_bound_seconds(collective_op::allreduce, 4, n, no_latency)));
}
