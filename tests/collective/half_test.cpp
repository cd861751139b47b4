// bfloat16 and float16 values in the collectives (core/half_value.hpp): widened to float, reduced in
// float, rounded once; every element within the stated bound of the exact result, on adversarial values
// (±largest finite value of the type, subnormals, NaN), on 1, 2, 3, 4 and 7 ranks of transport::Local.
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/half_data.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "zcoll/collective/compressed.hpp"
#include "zcoll/core/half_value.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;

namespace {

const std::vector<int> rank_counts = {1, 2, 3, 4, 7};

template <class H, class Codec>
void check_every_operation(const Codec& codec) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      const int me = t.rank();
      const auto ranks = static_cast<std::size_t>(p);
      const std::string what = std::string(Codec::name()) + (sizeof(H) == 2 && std::is_same_v<H, zcoll::bfloat16> ? " bf16" : " f16") +
                               " p=" + std::to_string(p) + " rank " + std::to_string(me);
      zcoll::Compressed<zcoll::Ring, Codec> ring{t, codec, {.pipeline_values = 1000}};
      const std::size_t n = 1500 * ranks + 8;
      std::vector<double> sum(n, 0.0);
      for (int r = 0; r < p; ++r) {
        const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, n));
        for (std::size_t i = 0; i < n; ++i) sum[i] += c[i];
      }
      // allreduce (in place): the sum, rounded once.
      auto data = zcoll_test::half_values<H>(me, n);
      ring.allreduce(std::span<H>(data), zcoll::op::sum);
      zcoll_test::require_half_within<H>(data, sum, ring.last_report().error_bound, what + " allreduce");
      // reduce_scatter: block `me` of the sum.
      const std::size_t block = n / ranks;
      const auto in = zcoll_test::half_values<H>(me, block * ranks);
      std::vector<H> out(block);
      ring.reduce_scatter(std::span<const H>(in), std::span<H>(out), zcoll::op::sum);
      std::vector<double> want_block(block, 0.0);
      for (int r = 0; r < p; ++r) {
        const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, block * ranks));
        for (std::size_t i = 0; i < block; ++i) want_block[i] += c[block * static_cast<std::size_t>(me) + i];
      }
      zcoll_test::require_half_within<H>(out, want_block, ring.last_report().error_bound, what + " reduce_scatter");
      // allgather: every rank's values.
      const auto mine = zcoll_test::half_values<H>(me, 999);
      std::vector<H> all(999 * ranks);
      ring.allgather(std::span<const H>(mine), std::span<H>(all));
      std::vector<double> want_all;
      for (int r = 0; r < p; ++r) {
        const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, 999));
        want_all.insert(want_all.end(), c.begin(), c.end());
      }
      zcoll_test::require_half_within<H>(all, want_all, ring.last_report().error_bound, what + " allgather");
      // alltoall: block b of rank b's input.
      zcoll::Compressed<zcoll::Pairwise, Codec> pairwise{t, codec};
      const auto send = zcoll_test::half_values<H>(me, 640 * ranks);
      std::vector<H> received(send.size());
      pairwise.alltoall(std::span<const H>(send), std::span<H>(received));
      std::vector<double> want_received;
      for (int r = 0; r < p; ++r) {
        const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, 640 * ranks));
        want_received.insert(want_received.end(), c.begin() + 640 * me, c.begin() + 640 * (me + 1));
      }
      zcoll_test::require_half_within<H>(received, want_received, pairwise.last_report().error_bound, what + " alltoall");
      REQUIRE(pairwise.last_report().raw_bytes_sent == 640 * 2 * (ranks - 1));  // counted as 16-bit values
    });
  }
}

}  // namespace

TEST_CASE("bf16 and fp16 collectives: allreduce, reduce_scatter, allgather, alltoall within the stated bound",
          "[collective][half]") {
  const zcoll::FZLight fz{{.error_bound = zcoll::absolute(1.0 / 64)}};
  check_every_operation<zcoll::bfloat16>(fz);
  check_every_operation<zcoll::float16>(fz);
  check_every_operation<zcoll::bfloat16>(zcoll::Identity{});
  check_every_operation<zcoll::float16>(zcoll::Identity{});
}

TEST_CASE("bf16 and fp16 values: conversions round to nearest even, keep NaN and ±Inf, and widen exactly", "[core][half]") {
  CHECK(static_cast<float>(zcoll::bfloat16(1.0f + 1.0f / 256)) == 1.0f);  // a tie: to even
  CHECK(static_cast<float>(zcoll::bfloat16(1.0f + 3.0f / 256)) == 1.0f + 1.0f / 64);
  CHECK(static_cast<float>(zcoll::float16(65504.0f)) == 65504.0f);
  CHECK(std::isinf(static_cast<float>(zcoll::float16(65520.0f))));  // past the last finite value's half ulp
  CHECK(std::isnan(static_cast<float>(zcoll::bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(static_cast<float>(zcoll::float16(-std::numeric_limits<float>::infinity())) == -std::numeric_limits<float>::infinity());
  CHECK(static_cast<float>(zcoll::float16::from_bits(1)) == std::ldexp(1.0f, -24));
  std::vector<float> wide{1.0f, 1.0f + 1.0f / 4096, 70000.0f};
  std::vector<zcoll::float16> narrow(3);
  CHECK(zcoll::narrow<zcoll::float16>(wide, narrow) == std::numeric_limits<double>::infinity());  // 70000 overflowed
  CHECK(zcoll::narrow<zcoll::float16>(std::span<const float>(wide).first(2), std::span<zcoll::float16>(narrow).first(2)) ==
        1.0 / 4096);
}
