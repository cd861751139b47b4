// bfloat16 and float16 values in the collectives (core/half_value.hpp): widened to float, reduced in
// float, rounded once; every element within the stated bound of the exact result, on adversarial values
// (±largest finite value of the type, subnormals, NaN), on 1, 2, 3, 4 and 7 ranks of transport::Local;
// and the same calls staged in a space (HostStaging) against the host calls, bit for bit.
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
#include "zcoll/collective/host_staging.hpp"
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

/// Equal bits, element by element.
template <class H>
void require_same_bits(const std::vector<H>& got, const std::vector<H>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) FAIL(what << ": element " << i << " has bits " << got[i].bits << ", the host call's " << want[i].bits);
  }
}

/// Every staged call on 16-bit values (zcoll::HostStaging: widened in the space, rounded back at the end)
/// against the host call: the same bits, the same stated bound and raw bytes.
template <class H, class Codec>
void check_staged_operations(const Codec& codec) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      const int me = t.rank();
      const auto ranks = static_cast<std::size_t>(p);
      const std::string what = std::string(Codec::name()) + (std::is_same_v<H, zcoll::bfloat16> ? " bf16" : " f16") + " p=" +
                               std::to_string(p) + " rank " + std::to_string(me) + " staged ";
      zcoll::HostStaging staging;
      // (A staged alltoall's wire is alltoallv's: a {values, bytes} pair of words where the host call sends
      // one size word, so its compressed bytes differ by design.)
      const auto same_report = [&](const zcoll::collective_report& staged, const zcoll::collective_report& host, const std::string& call) {
        const bool same_wire = call == "alltoall" || staged.bytes_sent == host.bytes_sent;
        if (staged.error_bound != host.error_bound || staged.raw_bytes_sent != host.raw_bytes_sent || !same_wire) {
          FAIL(what << call << ": staged report bound " << staged.error_bound << ", raw " << staged.raw_bytes_sent << ", sent "
                    << staged.bytes_sent << "; host " << host.error_bound << ", " << host.raw_bytes_sent << ", " << host.bytes_sent);
        }
      };
      // Runs `call(staged?)` into two outputs and compares them.
      const auto compare = [&](auto& coll, const std::string& call, std::vector<H> staged, auto run) {
        std::vector<H> host = staged;
        run(&staging, staged);
        const zcoll::collective_report staged_report = coll.last_report();
        run(nullptr, host);
        require_same_bits<H>(staged, host, what + call);
        same_report(staged_report, coll.last_report(), call);
      };
      zcoll::Compressed<zcoll::Ring, Codec> ring{t, codec, {.pipeline_values = 1000}};
      const std::size_t n = 1500 * ranks + 8 * ranks;
      const auto in = zcoll_test::half_values<H>(me, n);
      compare(ring, "allreduce", in, [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? ring.allreduce(*s, std::span<H>(out), zcoll::op::sum) : ring.allreduce(std::span<H>(out), zcoll::op::sum);
      });
      compare(ring, "allreduce from in", std::vector<H>(n), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? ring.allreduce(*s, std::span<const H>(in), std::span<H>(out), zcoll::op::max)
          : ring.allreduce(std::span<const H>(in), std::span<H>(out), zcoll::op::max);
      });
      compare(ring, "reduce_scatter", std::vector<H>(n / ranks), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? ring.reduce_scatter(*s, std::span<const H>(in), std::span<H>(out), zcoll::op::sum)
          : ring.reduce_scatter(std::span<const H>(in), std::span<H>(out), zcoll::op::sum);
      });
      const int root = p - 1;
      compare(ring, "reduce", std::vector<H>(me == root ? n : 0), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? ring.reduce(*s, std::span<const H>(in), std::span<H>(out), zcoll::op::sum, root)
          : ring.reduce(std::span<const H>(in), std::span<H>(out), zcoll::op::sum, root);
      });
      const auto mine = zcoll_test::half_values<H>(me + 10, 999);
      compare(ring, "allgather", std::vector<H>(999 * ranks), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? ring.allgather(*s, std::span<const H>(mine), std::span<H>(out)) : ring.allgather(std::span<const H>(mine), std::span<H>(out));
      });
      zcoll::Compressed<zcoll::BinomialTree, Codec> tree{t, codec};
      compare(tree, "bcast", zcoll_test::half_values<H>(me == 0 ? 5 : 6, 777), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? tree.bcast(*s, std::span<H>(out), 0) : tree.bcast(std::span<H>(out), 0);
      });
      const auto all = zcoll_test::half_values<H>(20, me == root ? 300 * ranks : 0);
      compare(tree, "scatter", std::vector<H>(300), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? tree.scatter(*s, std::span<const H>(all), std::span<H>(out), root) : tree.scatter(std::span<const H>(all), std::span<H>(out), root);
      });
      compare(tree, "gather", std::vector<H>(me == root ? 999 * ranks : 0), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? tree.gather(*s, std::span<const H>(mine), std::span<H>(out), root) : tree.gather(std::span<const H>(mine), std::span<H>(out), root);
      });
      zcoll::Compressed<zcoll::Pairwise, Codec> pairwise{t, codec};
      const auto send = zcoll_test::half_values<H>(me, 640 * ranks);
      compare(pairwise, "alltoall", std::vector<H>(send.size()), [&](zcoll::HostStaging* s, std::vector<H>& out) {
        s ? pairwise.alltoall(*s, std::span<const H>(send), std::span<H>(out)) : pairwise.alltoall(std::span<const H>(send), std::span<H>(out));
      });
      REQUIRE(pairwise.last_report().raw_bytes_sent == 640 * 2 * (ranks - 1));
    });
  }
}

}  // namespace

TEST_CASE("bf16 and fp16 collectives staged in a space: every call gives the host call's bits and bound",
          "[collective][half][staged]") {
  const zcoll::FZLight fz{{.error_bound = zcoll::absolute(1.0 / 64)}};
  check_staged_operations<zcoll::bfloat16>(fz);
  check_staged_operations<zcoll::float16>(fz);
  check_staged_operations<zcoll::bfloat16>(zcoll::Identity{});
}

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
