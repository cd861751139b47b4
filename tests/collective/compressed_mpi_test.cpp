// Compressed<Schedule, Codec> over transport::Mpi: run by zcoll-mpi-tests under mpirun with 1, 2, 3, 4
// and 7 ranks; every rank runs every case and checks its own result against an exact reference.
#include <catch2/catch.hpp>

#include "support/collective_data.hpp"
#include "support/faulty_transport.hpp"
#include "support/half_data.hpp"
#include "support/homomorphic_checks.hpp"

#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/serialization/string.hpp>

#include <cmath>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/collective/host_staging.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/mpi.hpp"

using zcoll_test::contribution;
using zcoll_test::eb;
using zcoll_test::require_within;

namespace {

zcoll::transport::Mpi world() { return zcoll::transport::Mpi{boost::mpi::communicator{}}; }

}  // namespace

TEST_CASE("MPI: Compressed allgather, Ring and RecursiveDoubling, Identity exact and FZLight within eb",
          "[collective][mpi]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4099}}) {
    std::vector<float> want;
    for (int r = 0; r < p; ++r) {
      const auto c = contribution<float>(r, n);
      want.insert(want.end(), c.begin(), c.end());
    }
    const auto mine = contribution<float>(me, n);
    std::vector<float> all(want.size());
    zcoll::Compressed<zcoll::Ring, zcoll::Identity> plain{world()};
    plain.allgather(std::span<const float>(mine), std::span<float>(all));
    require_within<float>(all, want, 0.0, "Identity ring allgather n=" + std::to_string(n));
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    ring.allgather(std::span<const float>(mine), std::span<float>(all));
    require_within<float>(all, want, eb, "FZLight ring allgather n=" + std::to_string(n));
    zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> rd{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    rd.allgather(std::span<const float>(mine), std::span<float>(all));
    require_within<float>(all, want, eb, "FZLight recursive-doubling allgather n=" + std::to_string(n));
  }
}

TEST_CASE("MPI: Compressed allreduce and reduce_scatter within the reported bound", "[collective][mpi]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{10007}}) {
    std::vector<float> want(n, 0.0f);
    for (int r = 0; r < p; ++r) {
      const auto c = contribution<float>(r, n);
      for (std::size_t i = 0; i < n; ++i) want[i] += c[i];
    }
    auto data = contribution<float>(me, n);
    zcoll::Compressed<zcoll::Ring, zcoll::Identity> plain{world()};
    plain.allreduce(std::span<float>(data), zcoll::op::sum);
    require_within<float>(data, want, 0.0, "Identity ring allreduce n=" + std::to_string(n));

    data = contribution<float>(me, n);
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    ring.allreduce(std::span<float>(data), zcoll::op::sum);
    if (p > 1 && n > 0) REQUIRE(ring.last_report().error_bound == p * eb);
    require_within<float>(data, want, ring.last_report().error_bound, "FZLight ring allreduce n=" + std::to_string(n));

    data = contribution<float>(me, n);
    zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> rd{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    rd.allreduce(std::span<float>(data), zcoll::op::sum);
    require_within<float>(data, want, rd.last_report().error_bound, "FZLight recursive-doubling allreduce n=" + std::to_string(n));

    // Pipelined hops (segments of 100 values) give the same bits as one stream per hop.
    const auto whole = data;
    data = contribution<float>(me, n);
    zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> piped{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.pipeline_values = 100}};
    piped.allreduce(std::span<float>(data), zcoll::op::sum);
    require_within<float>(data, whole, 0.0, "FZLight recursive-doubling allreduce in segments of 100, n=" + std::to_string(n));
  }
  const std::size_t block = 999;
  const auto in = contribution<float>(me, block * static_cast<std::size_t>(p));
  std::vector<float> out(block), want(block, 0.0f);
  for (int r = 0; r < p; ++r) {
    const auto c = contribution<float>(r, block * static_cast<std::size_t>(p));
    for (std::size_t i = 0; i < block; ++i) want[i] += c[block * static_cast<std::size_t>(me) + i];
  }
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
  ring.reduce_scatter(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
  require_within<float>(out, want, (p - 1) * eb, "FZLight ring reduce_scatter");
}

TEST_CASE("MPI: homomorphic sums (allreduce, reduce_scatter, reduce) within the reported bound, every other "
          "contribution quantized once, never a larger bound than the decompress-reduce-compress chain",
          "[collective][mpi][homomorphic]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  const std::size_t n = 12011;
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb), .chunk_values = 1024}};
  const auto want = zcoll_test::sum_of_contributions<float>(p, n);
  const auto run = [&]<class Schedule>(Schedule, const char* name) {
    for (const std::size_t segment : {std::size_t{0}, std::size_t{1500}}) {
      zcoll::Compressed<Schedule, zcoll::FZLight> on{world(), codec, {.pipeline_values = segment, .homomorphic = true}};
      zcoll::Compressed<Schedule, zcoll::FZLight> off{world(), codec, {.pipeline_values = segment, .homomorphic = false}};
      const std::string what = std::string(name) + " segments of " + std::to_string(segment);
      auto data = contribution<float>(me, n), same = data;
      on.allreduce(std::span<float>(data), zcoll::op::sum);
      off.allreduce(std::span<float>(same), zcoll::op::sum);
      require_within<float>(data, want, on.last_report().error_bound, what);
      REQUIRE(on.last_report().error_bound <= off.last_report().error_bound);
      auto smooth = zcoll_test::smooth_contribution<float>(me, n);
      on.allreduce(std::span<float>(smooth), zcoll::op::sum);
      // One piece per block: with segments, a block's last piece may hold a few values, stored verbatim
      // (smaller so), and verbatim chunks add as floats.
      if (p > 1 && segment == 0) zcoll_test::require_codes_summed_once<float>(smooth, p, me, 0, n, eb, what);
      for (int root = 0; root < p; ++root) {
        std::vector<float> result(me == root ? n : 0);
        const auto mine = contribution<float>(me, n);
        on.reduce(std::span<const float>(mine), std::span<float>(result), zcoll::op::sum, root);
        if (me == root) require_within<float>(result, want, on.last_report().error_bound, what + " reduce");
      }
    }
  };
  run(zcoll::Ring{}, "ring");
  run(zcoll::RecursiveDoubling{}, "recursive doubling");
  run(zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, 2>{}, "hierarchical");
  const std::size_t block = 3001;
  const auto in = zcoll_test::smooth_contribution<float>(me, block * static_cast<std::size_t>(p));
  std::vector<float> out(block);
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{world(), codec, {.homomorphic = true}};
  ring.reduce_scatter(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
  if (p > 1) {
    zcoll_test::require_codes_summed_once<float>(out, p, me, block * static_cast<std::size_t>(me), block * static_cast<std::size_t>(p),
                                                 eb, "ring reduce_scatter");
  }
}

TEST_CASE("MPI: Compressed bcast, scatter, gather, alltoall and alltoallv", "[collective][mpi]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  const std::size_t n = 2049;
  zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> tree{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
  for (int root = 0; root < p; ++root) {
    const auto root_data = contribution<float>(root + 50, n);
    auto data = me == root ? root_data : std::vector<float>(n, 0.0f);
    tree.bcast(std::span<float>(data), root);
    require_within<float>(data, root_data, me == root ? 0.0 : eb, "bcast root " + std::to_string(root));
    data = me == root ? root_data : std::vector<float>(n, 0.0f);
    zcoll::Compressed<zcoll::ScatterAllgather, zcoll::FZLight> pieces{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    pieces.bcast(std::span<float>(data), root);
    require_within<float>(data, root_data, me == root ? 0.0 : eb, "scatter-allgather bcast root " + std::to_string(root));
    data = me == root ? root_data : std::vector<float>(n, 0.0f);
    zcoll::Compressed<zcoll::ScatterAllgather, zcoll::Identity> plain_pieces{world()};
    plain_pieces.bcast(std::span<float>(data), root);
    require_within<float>(data, root_data, 0.0, "uncompressed scatter-allgather bcast root " + std::to_string(root));
    data = me == root ? root_data : std::vector<float>(n, 0.0f);
    zcoll::Compressed<zcoll::Chain<8>, zcoll::FZLight> chain{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    chain.bcast(std::span<float>(data), root);
    require_within<float>(data, root_data, me == root ? 0.0 : eb, "chain bcast root " + std::to_string(root));

    std::vector<float> all;
    for (int r = 0; r < p; ++r) {
      const auto c = contribution<float>(r + 70, n);
      all.insert(all.end(), c.begin(), c.end());
    }
    std::vector<float> mine(n);
    tree.scatter(me == root ? std::span<const float>(all) : std::span<const float>{}, std::span<float>(mine), root);
    require_within<float>(mine, std::span<const float>(all).subspan(n * static_cast<std::size_t>(me), n), me == root ? 0.0 : eb,
                   "scatter root " + std::to_string(root));

    std::vector<float> gathered(me == root ? all.size() : 0);
    const auto own = contribution<float>(me + 70, n);
    tree.gather(std::span<const float>(own), std::span<float>(gathered), root);
    if (me == root) require_within<float>(gathered, all, eb, "gather root " + std::to_string(root));
  }
  zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
  const auto in = contribution<float>(me, n * static_cast<std::size_t>(p));
  std::vector<float> out(in.size());
  pairwise.alltoall(std::span<const float>(in), std::span<float>(out));
  for (int src = 0; src < p; ++src) {
    const auto theirs = contribution<float>(src, n * static_cast<std::size_t>(p));
    require_within<float>(std::span<const float>(out).subspan(n * static_cast<std::size_t>(src), n),
                   std::span<const float>(theirs).subspan(n * static_cast<std::size_t>(me), n), src == me ? 0.0 : eb,
                   "alltoall from " + std::to_string(src));
  }

  // alltoallv: rank i sends (i + 2b) % 4 * 700 values to rank b (some blocks empty).
  const auto count = [](int from, int to) { return static_cast<std::size_t>((from + 2 * to) % 4) * 700; };
  std::vector<std::size_t> send_counts, recv_counts;
  std::vector<float> v_in;
  for (int b = 0; b < p; ++b) {
    send_counts.push_back(count(me, b));
    recv_counts.push_back(count(b, me));
    const auto block = contribution<float>(me * 100 + b, count(me, b));
    v_in.insert(v_in.end(), block.begin(), block.end());
  }
  std::size_t total = 0;
  for (const auto c : recv_counts) total += c;
  std::vector<float> v_out(total);
  pairwise.alltoallv(std::span<const float>(v_in), std::span<const std::size_t>(send_counts), std::span<float>(v_out),
                     std::span<const std::size_t>(recv_counts));
  std::size_t at = 0;
  for (int src = 0; src < p; ++src) {
    const auto want = contribution<float>(src * 100 + me, count(src, me));
    require_within<float>(std::span<const float>(v_out).subspan(at, want.size()), want, src == me ? 0.0 : eb,
                   "alltoallv from " + std::to_string(src));
    at += want.size();
  }
}

TEST_CASE("MPI: staged alltoall and alltoallv (the device path's steps on HostStaging, through the host and with the "
          "device transfer) give the host calls' values",
          "[collective][mpi][staged]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}},
                                                              {.min_compressed_bytes = 4000}};
  const auto transfer = GENERATE(zcoll::device_transfer::through_host, zcoll::device_transfer::direct);
  zcoll::HostStaging staging{{}, transfer};
  // Block b of rank i: (i + 2b) % 5 * 600 values (some empty, some under 1000 values: raw).
  const auto count = [](int from, int to) { return static_cast<std::size_t>((from + 2 * to) % 5) * 600; };
  std::vector<std::size_t> send_counts, recv_counts;
  std::vector<float> in;
  for (int b = 0; b < p; ++b) {
    send_counts.push_back(count(me, b));
    recv_counts.push_back(count(b, me));
    const auto block = contribution<float>(me * 100 + b, count(me, b));
    in.insert(in.end(), block.begin(), block.end());
  }
  std::size_t total = 0;
  for (const auto c : recv_counts) total += c;
  std::vector<float> staged(total, -1.0f), host(total, -2.0f);
  pairwise.alltoallv(staging, std::span<const float>(in), std::span<const std::size_t>(send_counts), std::span<float>(staged),
                     std::span<const std::size_t>(recv_counts));
  pairwise.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send_counts), std::span<float>(host),
                     std::span<const std::size_t>(recv_counts));
  zcoll_test::require_equal<float>(staged, host, "staged alltoallv");
  std::size_t at = 0;
  for (int src = 0; src < p; ++src) {
    const auto want = contribution<float>(src * 100 + me, count(src, me));
    const bool raw = src == me || want.size() * sizeof(float) < 4000;
    require_within<float>(std::span<const float>(staged).subspan(at, want.size()), want, raw ? 0.0 : eb,
                          "staged alltoallv from " + std::to_string(src));
    at += want.size();
  }
  const std::size_t n = 3001;
  const auto values = contribution<double>(me, n * static_cast<std::size_t>(p));
  std::vector<double> staged_all(values.size()), host_all(values.size());
  pairwise.alltoall(staging, std::span<const double>(values), std::span<double>(staged_all));
  pairwise.alltoall(std::span<const double>(values), std::span<double>(host_all));
  zcoll_test::require_equal<double>(staged_all, host_all, "staged alltoall");
}

TEST_CASE("MPI: staged allreduce and reduce (the device path's steps on HostStaging, through the host and with the "
          "device transfer) give the host calls' values and bounds",
          "[collective][mpi][staged]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{world(), zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}},
                                                      {.pipeline_values = 2000}};
  const auto transfer = GENERATE(zcoll::device_transfer::through_host, zcoll::device_transfer::direct);
  zcoll::HostStaging staging{{}, transfer};
  const std::size_t n = 7001 * static_cast<std::size_t>(p);
  const auto in = contribution<float>(me, n);
  std::vector<float> staged = in, host = in;
  ring.allreduce(staging, std::span<float>(staged), zcoll::op::sum);
  const zcoll::collective_report staged_report = ring.last_report();
  ring.allreduce(std::span<float>(host), zcoll::op::sum);
  zcoll_test::require_equal<float>(staged, host, "staged allreduce");
  REQUIRE(staged_report.error_bound == ring.last_report().error_bound);
  require_within<float>(staged, zcoll_test::sum_of_contributions<float>(p, n), staged_report.error_bound, "staged allreduce");
  const int root = p / 2;
  std::vector<float> staged_root(me == root ? n : 0), host_root(me == root ? n : 0);
  ring.reduce(staging, std::span<const float>(in), std::span<float>(staged_root), zcoll::op::max, root);
  ring.reduce(std::span<const float>(in), std::span<float>(host_root), zcoll::op::max, root);
  zcoll_test::require_equal<float>(staged_root, host_root, "staged reduce");
}

TEST_CASE("MPI: quantized allreduce, Int4 with and without error feedback, within the reported bound",
          "[collective][mpi][quantized]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  constexpr std::size_t row = 64;
  const std::size_t n = static_cast<std::size_t>(p) * 3 * row;
  std::vector<double> want(n, 0.0), magnitude(n, 0.0);
  for (int r = 0; r < p; ++r) {
    const auto c = contribution<float>(r + 5, n);
    for (std::size_t i = 0; i < n; ++i) {
      want[i] += c[i];
      magnitude[i] += std::abs(static_cast<double>(c[i]));
    }
  }
  const auto check = [&](auto& coll, const std::string& what) {
    for (int step = 0; step < 3; ++step) {
      auto data = contribution<float>(me + 5, n);
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
      const double bound = coll.last_report().error_bound;
      if (p > 1) REQUIRE(bound > 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        // The stated compression bound, plus the float rounding of p additions.
        const double slack = 2.0 * p * std::ldexp(1.0, -24) * (magnitude[i] + bound);
        if (!(std::abs(static_cast<double>(data[i]) - want[i]) <= bound + slack)) {
          FAIL(what << " step " << step << ": element " << i << " is " << data[i] << ", exact " << want[i]
                    << ", bound " << bound);
        }
      }
    }
  };
  zcoll::Compressed<zcoll::Ring, zcoll::Int4> ring{world(), zcoll::Int4{{.shape = {row}}}};
  check(ring, "Int4 ring");
  zcoll::Compressed<zcoll::Ring, zcoll::ErrorFeedback<zcoll::Int4>> feedback{world(), zcoll::ErrorFeedback<zcoll::Int4>{{.shape = {row}}}};
  check(feedback, "ErrorFeedback<Int4> ring");
  zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::Int4> rd{world(), zcoll::Int4{{.shape = {row}}}};
  check(rd, "Int4 recursive doubling");
}

// ---- faults (docs/reliability.md): verify mode over MPI --------------------------------------------------

namespace {

/// Every rank's text equals rank 0's (one small exchange of lengths and bytes over Boost.MPI).
void require_same_on_every_rank(const std::string& mine, const std::string& what) {
  boost::mpi::communicator comm;
  std::vector<std::string> all;
  boost::mpi::all_gather(comm, mine, all);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] != all[0]) FAIL(what << ": rank " << r << " raised '" << all[r] << "', rank 0 '" << all[0] << "'");
  }
}

}  // namespace

TEST_CASE("MPI verify mode: different counts, a damaged block, a codec that refuses a rank's values: every "
          "rank raises the same error, and the next call succeeds",
          "[collective][mpi][fault]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  if (p == 1) return;  // no peer to disagree with or to damage a block
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb)}};
  const zcoll::collective_config config{.pipeline_values = 500, .verify = true};
  const std::size_t n = static_cast<std::size_t>(p) * 600;
  std::vector<float> want(n, 0.0f);
  for (int r = 0; r < p; ++r) {
    const auto c = contribution<float>(r, n);
    for (std::size_t i = 0; i < n; ++i) want[i] += c[i];
  }
  const auto good_call = [&](auto& coll) {
    auto data = contribution<float>(me, n);
    coll.allreduce(std::span<float>(data), zcoll::op::sum);
    require_within<float>(data, want, coll.last_report().error_bound, "allreduce after a failed call");
  };
  {  // the last rank passes more values
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{world(), codec, config};
    auto data = contribution<float>(me, me == p - 1 ? n + 7 : n);
    const std::string raised = zcoll_test::error_of<zcoll::argument_error>([&] { coll.allreduce(std::span<float>(data), zcoll::op::sum); });
    require_same_on_every_rank(raised, "different counts");
    REQUIRE(raised.find("rank " + std::to_string(p - 1) + " passed count " + std::to_string(n + 7)) != std::string::npos);
    good_call(coll);
  }
  {  // rank 1 damages every block it sends while armed
    auto armed = std::make_shared<std::atomic<bool>>(true);
    zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> coll{
        zcoll_test::Faulty<zcoll::transport::Mpi>(world(), 1, zcoll_test::retype, armed), codec, config};
    auto data = contribution<float>(me, n);
    const std::string raised = zcoll_test::error_of<zcoll::format_error>([&] { coll.allreduce(std::span<float>(data), zcoll::op::sum); });
    require_same_on_every_rank(raised, "damaged block");
    REQUIRE(raised.find("block from rank 1") != std::string::npos);
    *armed = false;
    good_call(coll);
  }
  {  // Int8 cannot scale rank 0's row that spans -3e38 .. 3e38
    zcoll::Compressed<zcoll::Ring, zcoll::Int8> coll{world(), zcoll::Int8{{.shape = {8}}}, {.verify = true}};
    auto data = contribution<float>(me, n);
    if (me == 0) data[3] = -3e38f, data[4] = 3e38f;
    const std::string raised = zcoll_test::error_of<zcoll::argument_error>([&] { coll.allreduce(std::span<float>(data), zcoll::op::sum); });
    require_same_on_every_rank(raised, "refused values");
    REQUIRE(raised.find("allreduce (verify): rank 0 failed") != std::string::npos);
  }
}

TEST_CASE("MPI without verify: the rank that meets a damaged block ends the job, which does not hang",
          "[.mpi-fault-aborts]") {
  // The pattern docs/reliability.md gives for jobs without verify mode: catch zcoll::error, say it,
  // MPI_Abort. Rank 1 damages every block it sends; its receivers raise and abort with status 3, and the
  // ranks waiting for them end with the job (ctest's expect_failure checks the status).
  const auto mpi = world();
  zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> coll{zcoll_test::Faulty<zcoll::transport::Mpi>(world(), 1, zcoll_test::retype), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
  auto data = contribution<float>(mpi.rank(), 3000);
  try {
    coll.allreduce(std::span<float>(data), zcoll::op::sum);
  } catch (const zcoll::error& e) {
    std::fprintf(stderr, "rank %d: %s\n", mpi.rank(), e.what());
    std::fflush(stderr);
    mpi.abort(3);
  }
  // Rank 1 (the damaging sender) meets no error: it waits here for the others, as a job's next
  // collective would, until the abort ends it. Without this it went on into MPI_Finalize while the
  // others aborted, and Open MPI 4.1.4's mpirun sometimes crashed or hung in that race.
  boost::mpi::communicator().barrier();
}

TEST_CASE("MPI: the program's own messages on its communicator, with the tags zcoll used to use, arrive untouched "
          "between zcoll calls; its error handler is unchanged",
          "[collective][mpi]") {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);  // the program's communicator
  // Boost.MPI's environment gives MPI_COMM_WORLD (and so the duplicate) MPI_ERRORS_RETURN; the program's
  // choice here is MPI's default, which zcoll used to replace.
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler before = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(comm, &before);
  int p = 0, me = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{zcoll::transport::Mpi{comm},
                                                        zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}},
                                                        {.pipeline_values = 1000}};
    const std::size_t n = 3000 * static_cast<std::size_t>(p);
    for (const int tag : {7001, 7002, 7003}) {
      // The program posts its message before zcoll's call and receives it after: a zcoll receive on the
      // same communicator and tag would take it.
      std::vector<int> out(64, me * 1000 + tag), in(64, -1);
      MPI_Request send = MPI_REQUEST_NULL;
      MPI_Isend(out.data(), 64, MPI_INT, next, tag, comm, &send);
      auto data = contribution<float>(me, n);
      auto pending = coll.allreduce_async(std::span<float>(data), zcoll::op::sum);
      std::vector<float> mine = contribution<float>(me + 5, 777), all(777 * static_cast<std::size_t>(p));
      coll.allgather(std::span<const float>(mine), std::span<float>(all));  // completes `pending` first
      MPI_Recv(in.data(), 64, MPI_INT, prev, tag, comm, MPI_STATUS_IGNORE);
      MPI_Wait(&send, MPI_STATUS_IGNORE);
      for (const int v : in) REQUIRE(v == prev * 1000 + tag);
      pending.wait();
      require_within<float>(data, zcoll_test::sum_of_contributions<float>(p, n), pending.report().error_bound, "allreduce");
    }
  }
  MPI_Errhandler after = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(comm, &after);
  CHECK(after == before);
  CHECK(after == MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&before);
  MPI_Errhandler_free(&after);
  MPI_Comm_free(&comm);
}

TEST_CASE("MPI: three requests outstanding, completed in reverse order; reduce at every root; out-of-place allreduce",
          "[collective][mpi]") {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}},
                                                      {.pipeline_values = 800}};
  const std::size_t n = 2000 * static_cast<std::size_t>(p) + 1;
  auto a = contribution<float>(me, n), b = contribution<float>(me + 1, n), c = contribution<float>(me + 2, n);
  auto first = coll.allreduce_async(std::span<float>(a), zcoll::op::sum);
  auto second = coll.allreduce_async(std::span<float>(b), zcoll::op::sum);
  auto third = coll.allreduce_async(std::span<float>(c), zcoll::op::sum);
  third.wait();
  second.wait();
  first.wait();
  const auto sum_from = [&](int offset) {
    std::vector<float> s(n, 0.0f);
    for (int r = 0; r < p; ++r) {
      const auto x = contribution<float>(r + offset, n);
      for (std::size_t i = 0; i < n; ++i) s[i] += x[i];
    }
    return s;
  };
  require_within<float>(a, sum_from(0), first.report().error_bound, "first");
  require_within<float>(b, sum_from(1), second.report().error_bound, "second");
  require_within<float>(c, sum_from(2), third.report().error_bound, "third");

  const auto in = contribution<float>(me, n);
  for (int root = 0; root < p; ++root) {
    std::vector<float> out(me == root ? n : 0);
    coll.reduce(std::span<const float>(in), std::span<float>(out), zcoll::op::sum, root);
    if (me == root) require_within<float>(out, sum_from(0), coll.last_report().error_bound, "reduce at root " + std::to_string(root));
  }
  std::vector<float> out(n);
  coll.allreduce(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
  REQUIRE(in == contribution<float>(me, n));
  require_within<float>(out, sum_from(0), coll.last_report().error_bound, "out of place");
}

TEST_CASE("MPI: a progress thread needs MPI_THREAD_MULTIPLE, and says so", "[collective][mpi]") {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  const auto make = [] {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{world(), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}},
                                                        {.progress_thread = true}};
    auto data = contribution<float>(coll.rank(), 1000);
    coll.allreduce(std::span<float>(data), zcoll::op::sum);
  };
  if (level == MPI_THREAD_MULTIPLE) {
    make();
  } else {
    REQUIRE_THROWS_WITH(make(), Catch::Contains("MPI_THREAD_MULTIPLE"));
  }
}

namespace {

template <class H>
void check_half_collectives() {
  const auto mpi = world();
  const int p = mpi.size(), me = mpi.rank();
  const auto ranks = static_cast<std::size_t>(p);
  const zcoll::FZLight fz{{.error_bound = zcoll::absolute(1.0 / 32)}};
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{world(), fz, {.pipeline_values = 700}};
  const std::size_t block = 1200, n = block * ranks;
  std::vector<double> sum(n, 0.0);
  for (int r = 0; r < p; ++r) {
    const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, n));
    for (std::size_t i = 0; i < n; ++i) sum[i] += c[i];
  }
  auto data = zcoll_test::half_values<H>(me, n);
  ring.allreduce(std::span<H>(data), zcoll::op::sum);
  zcoll_test::require_half_within<H>(data, sum, ring.last_report().error_bound, "allreduce");
  const auto in = zcoll_test::half_values<H>(me, n);
  std::vector<H> out(block);
  ring.reduce_scatter(std::span<const H>(in), std::span<H>(out), zcoll::op::sum);
  zcoll_test::require_half_within<H>(out, std::span<const double>(sum).subspan(block * static_cast<std::size_t>(me), block),
                         ring.last_report().error_bound, "reduce_scatter");
  std::vector<H> all(n);
  const auto mine = zcoll_test::half_values<H>(me, block);
  ring.allgather(std::span<const H>(mine), std::span<H>(all));
  std::vector<double> want_all;
  for (int r = 0; r < p; ++r) {
    const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, block));
    want_all.insert(want_all.end(), c.begin(), c.end());
  }
  zcoll_test::require_half_within<H>(all, want_all, ring.last_report().error_bound, "allgather");
  zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{world(), fz};
  std::vector<H> received(n);
  pairwise.alltoall(std::span<const H>(in), std::span<H>(received));
  std::vector<double> want_received;
  for (int r = 0; r < p; ++r) {
    const auto c = zcoll_test::as_double(zcoll_test::half_values<H>(r, n));
    want_received.insert(want_received.end(), c.begin() + static_cast<std::ptrdiff_t>(block * static_cast<std::size_t>(me)),
                         c.begin() + static_cast<std::ptrdiff_t>(block * static_cast<std::size_t>(me + 1)));
  }
  zcoll_test::require_half_within<H>(received, want_received, pairwise.last_report().error_bound, "alltoall");
}

}  // namespace

TEST_CASE("MPI: bf16 and fp16 allreduce, reduce_scatter, allgather and alltoall within the stated bound",
          "[collective][mpi][half]") {
  check_half_collectives<zcoll::bfloat16>();
  check_half_collectives<zcoll::float16>();
}
