#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/collective_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/rowwise.hpp"
#include "zcoll/codec/topk.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"
#include "zcoll/transport/throttled.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;
using zcoll_test::contribution;
using zcoll_test::dyadic;
using zcoll_test::eb;
using zcoll_test::require_equal;
using zcoll_test::require_within;

namespace {

const std::vector<int> rank_counts = {1, 2, 3, 4, 5, 7, 8, 16};

template <class Schedule, class Codec>
zcoll::Compressed<Schedule, Codec> make(Local& t) {
  return zcoll::Compressed<Schedule, Codec>{t, Codec{{.error_bound = zcoll::absolute(eb)}}};
}

/// Runs an allgather on every rank count and checks it against the exact reference.
template <class Schedule, class Codec>
void check_allgather(std::size_t n) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      auto coll = make<Schedule, Codec>(t);
      const auto mine = contribution<float>(t.rank(), n);
      std::vector<float> all(n * static_cast<std::size_t>(p)), want;
      for (int r = 0; r < p; ++r) {
        const auto c = contribution<float>(r, n);
        want.insert(want.end(), c.begin(), c.end());
      }
      coll.allgather(std::span<const float>(mine), std::span<float>(all));
      const auto& report = coll.last_report();
      const std::string what = std::string("allgather ") + Schedule::name + " " + Codec::name() + " p=" +
                               std::to_string(p) + " n=" + std::to_string(n) + " rank " + std::to_string(t.rank());
      // Compressed once: eb, however many hops; the own block exact.
      require_within<float>(all, want, std::is_same_v<Codec, zcoll::Identity> ? 0.0 : eb, what);
      require_equal<float>(std::span<const float>(all).subspan(n * static_cast<std::size_t>(t.rank()), n), mine, what);
      REQUIRE(report.error_bound <= eb);
      REQUIRE(report.compressed == (!std::is_same_v<Codec, zcoll::Identity> && n > 0));
    });
  }
}

template <class Schedule, class Codec, class Op>
void check_allreduce(std::size_t n, Op op) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      auto coll = make<Schedule, Codec>(t);
      auto data = contribution<float>(t.rank(), n);
      std::vector<float> want = contribution<float>(0, n);
      for (int r = 1; r < p; ++r) {
        const auto c = contribution<float>(r, n);
        for (std::size_t i = 0; i < n; ++i) want[i] = op(want[i], c[i]);
      }
      coll.allreduce(std::span<float>(data), op);
      const auto& report = coll.last_report();
      const std::string what = std::string("allreduce ") + Op::name + " " + Schedule::name + " " + Codec::name() +
                               " p=" + std::to_string(p) + " n=" + std::to_string(n) + " rank " + std::to_string(t.rank());
      if (std::is_same_v<Codec, zcoll::Identity> || p == 1 || n == 0) {
        require_equal<float>(data, want, what);
        REQUIRE(report.error_bound == 0.0);
      } else {
        REQUIRE(report.compressions_in_chain >= 1);
        // A ring value is compressed p - 1 times on its way round and once more by the allgather; a
        // recursive-doubling butterfly gathers p - 1 compressed messages into each result.
        if (std::is_same_v<Schedule, zcoll::Ring> && std::is_same_v<Op, zcoll::op::sum_t>) {
          REQUIRE(report.compressions_in_chain == p);
        }
        if (std::is_same_v<Schedule, zcoll::RecursiveDoubling> && std::is_same_v<Op, zcoll::op::sum_t> && (p & (p - 1)) == 0) {
          REQUIRE(report.compressions_in_chain == p - 1);
        }
        // Sums add every compression's error; min and max are off by at most the largest chain's.
        if (std::is_same_v<Op, zcoll::op::sum_t>) {
          REQUIRE(report.error_bound == report.compressions_in_chain * eb);
        } else {
          REQUIRE(report.error_bound <= report.compressions_in_chain * eb);
        }
        require_within<float>(data, want, report.error_bound, what);
        REQUIRE(report.statistical_error_bound <= report.error_bound);
      }
    });
  }
}

}  // namespace

TEST_CASE("Compressed allgather: Ring and RecursiveDoubling, Identity exact, FZLight within eb on every element",
          "[collective][allgather]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{5000}}) {
    check_allgather<zcoll::Ring, zcoll::Identity>(n);
    check_allgather<zcoll::Ring, zcoll::FZLight>(n);
    check_allgather<zcoll::RecursiveDoubling, zcoll::FZLight>(n);
  }
}

TEST_CASE("Compressed allgather on 16 ranks: the error stays within eb after 15 hops", "[collective][allgather]") {
  run_local(16, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::relative(1e-3)}}};
    std::vector<double> mine(2000), all(2000 * 16);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = std::sin(0.003 * static_cast<double>(i) + t.rank()) * 50;
    coll.allgather(std::span<const double>(mine), std::span<double>(all));
    for (int r = 0; r < 16; ++r) {
      std::vector<double> want(2000);
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::sin(0.003 * static_cast<double>(i) + r) * 50;
      // Each block's own relative bound: 1e-3 of its own range, rounded down.
      const double block_eb = zcoll::absolute_bound(zcoll::relative(1e-3), *std::max_element(want.begin(), want.end()) -
                                                                               *std::min_element(want.begin(), want.end()));
      require_within<double>(std::span<const double>(all).subspan(2000 * static_cast<std::size_t>(r), 2000), want,
                             block_eb, "16-rank allgather block " + std::to_string(r));
    }
    REQUIRE(coll.last_report().compressions_in_chain == 1);
    REQUIRE(coll.last_report().ratio > 2.0);
  });
}

TEST_CASE("Compressed allreduce: Ring (Z-Allreduce), RecursiveDoubling and Hierarchical; sum, min, max",
          "[collective][allreduce]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{10007}}) {
    check_allreduce<zcoll::Ring, zcoll::Identity>(n, zcoll::op::sum);
    check_allreduce<zcoll::Ring, zcoll::FZLight>(n, zcoll::op::sum);
    check_allreduce<zcoll::RecursiveDoubling, zcoll::FZLight>(n, zcoll::op::sum);
    check_allreduce<zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, 4>, zcoll::FZLight>(n,
                                                                                                          zcoll::op::sum);
  }
  check_allreduce<zcoll::Ring, zcoll::FZLight>(3001, zcoll::op::min);
  check_allreduce<zcoll::RecursiveDoubling, zcoll::Identity>(3001, zcoll::op::max);
  check_allreduce<zcoll::RecursiveDoubling, zcoll::FZLight>(3001, zcoll::op::max);
}

namespace {

// At an absolute bound a value's reconstruction does not depend on where its stream starts, so segmenting
// changes the messages, not the result. Segments of 5, 64 and 1000 values (about 200, 16 and 1 per
// block); recursive doubling sends and receives the same range in a round (the receive side must not
// reduce into values not yet compressed). One test case per schedule: under the thread sanitizer each
// takes tens of seconds, and ctest runs separate cases side by side.
template <class Schedule, class Codec, class Op>
std::vector<std::vector<float>> segmented_allreduce(Op op, int p, std::size_t n, std::size_t segment, std::size_t row) {
  std::vector<std::vector<float>> results(static_cast<std::size_t>(p));
  run_local(p, [&](Local& t) {
    zcoll::codec_config settings{.error_bound = row > 0 ? zcoll::bound{} : zcoll::absolute(eb)};
    if (row > 0) settings.shape = {row};
    zcoll::Compressed<Schedule, Codec> coll{t, Codec{settings}, {.pipeline_values = segment}};
    auto data = contribution<float>(t.rank(), n);
    for (int step = 0; step < 2; ++step) {  // twice: error feedback carries per segment
      data = contribution<float>(t.rank(), n);
      coll.allreduce(std::span<float>(data), op);
    }
    results[static_cast<std::size_t>(t.rank())] = data;
  });
  return results;
}

template <class Schedule, class Codec, class Op>
void require_same_bits_segmented(Op op, std::size_t row) {
  for (int p : {2, 3, 4, 7}) {
    const std::size_t n = static_cast<std::size_t>(p) * (row > 0 ? 3 * row : 1001);
    const auto whole = segmented_allreduce<Schedule, Codec>(op, p, n, 0, row);
    for (std::size_t segment : {std::size_t{5}, std::size_t{64}, std::size_t{1000}}) {
      const auto pieces = segmented_allreduce<Schedule, Codec>(op, p, n, segment, row);
      for (int r = 0; r < p; ++r) {
        const auto& a = whole[static_cast<std::size_t>(r)];
        const auto& b = pieces[static_cast<std::size_t>(r)];
        INFO(Schedule::name << " " << Codec::name() << " p=" << p << " segment " << segment << " rank " << r);
        REQUIRE(a.size() == b.size());
        REQUIRE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("PIPE-fZ-light: ring reduction hops sent in segments give the same bits as one stream per hop",
          "[collective][allreduce][pipeline]") {
  require_same_bits_segmented<zcoll::Ring, zcoll::FZLight>(zcoll::op::sum, 0);
}

TEST_CASE("PIPE-fZ-light: recursive-doubling hops (sum) sent in segments give the same bits as one stream per hop",
          "[collective][allreduce][pipeline]") {
  require_same_bits_segmented<zcoll::RecursiveDoubling, zcoll::FZLight>(zcoll::op::sum, 0);
}

TEST_CASE("PIPE-fZ-light: recursive-doubling hops (max) sent in segments give the same bits as one stream per hop",
          "[collective][allreduce][pipeline]") {
  require_same_bits_segmented<zcoll::RecursiveDoubling, zcoll::FZLight>(zcoll::op::max, 0);
}

TEST_CASE("PIPE-fZ-light: hierarchical hops (min) sent in segments give the same bits as one stream per hop",
          "[collective][allreduce][pipeline]") {
  require_same_bits_segmented<zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, 4>, zcoll::FZLight>(
      zcoll::op::min, 0);
}

TEST_CASE("PIPE: Int4 ring hops in segments of whole rows give the same bits as one stream per hop, with and "
          "without error feedback",
          "[collective][allreduce][pipeline]") {
  require_same_bits_segmented<zcoll::Ring, zcoll::Int4>(zcoll::op::sum, 64);
  require_same_bits_segmented<zcoll::Ring, zcoll::ErrorFeedback<zcoll::Int4>>(zcoll::op::sum, 64);
}

TEST_CASE("PIPE-fZ-light over a modelled link: segments overlap, every element within the reported bound",
          "[collective][allreduce][pipeline]") {
  using zcoll::transport::Throttled;
  for (int p : {2, 3, 5}) {
    run_local(p, [&](Local& t) {
      Throttled link(t, {.latency_s = 20e-6, .bandwidth_bytes_per_s = 200e6});
      zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> coll{link, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.pipeline_values = 4096}};
      const std::size_t n = 50'000;
      auto data = contribution<float>(t.rank(), n);
      std::vector<float> want(n, 0.0f);
      for (int r = 0; r < p; ++r) {
        const auto c = contribution<float>(r, n);
        for (std::size_t i = 0; i < n; ++i) want[i] += c[i];
      }
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
      require_within<float>(data, want, coll.last_report().error_bound, "p=" + std::to_string(p));
    });
  }
}

TEST_CASE("Compressed reduce_scatter: rank b gets block b of the sum", "[collective][reduce_scatter]") {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      const std::size_t block = 777;
      const auto in = contribution<float>(t.rank(), block * static_cast<std::size_t>(p));
      std::vector<float> out(block), want(block, 0.0f);
      for (int r = 0; r < p; ++r) {
        const auto c = contribution<float>(r, block * static_cast<std::size_t>(p));
        for (std::size_t i = 0; i < block; ++i) want[i] += c[block * static_cast<std::size_t>(t.rank()) + i];
      }
      coll.reduce_scatter(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
      REQUIRE(coll.last_report().compressions_in_chain == p - 1);
      require_within<float>(out, want, (p - 1) * eb, "reduce_scatter p=" + std::to_string(p));
    });
  }
}

TEST_CASE("Compressed bcast, scatter and gather over BinomialTree, every root", "[collective][rooted]") {
  for (int p : rank_counts) {
    for (int root = 0; root < p; root += (p > 4 ? 3 : 1)) {
      run_local(p, [&](Local& t) {
        zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
        const std::size_t n = 1001;
        const std::string where = " p=" + std::to_string(p) + " root=" + std::to_string(root);
        // bcast
        const auto root_data = contribution<double>(root, n);
        auto data = t.rank() == root ? root_data : std::vector<double>(n, -1.0);
        coll.bcast(std::span<double>(data), root);
        require_within<double>(data, root_data, t.rank() == root ? 0.0 : eb, "bcast" + where);
        // scatter: rank r gets slice r of root's array
        std::vector<double> all;
        for (int r = 0; r < p; ++r) {
          const auto c = contribution<double>(r + 100, n);
          all.insert(all.end(), c.begin(), c.end());
        }
        std::vector<double> mine(n, -1.0);
        coll.scatter(t.rank() == root ? std::span<const double>(all) : std::span<const double>{}, std::span<double>(mine),
                     root);
        require_within<double>(mine, std::span<const double>(all).subspan(n * static_cast<std::size_t>(t.rank()), n),
                               t.rank() == root ? 0.0 : eb, "scatter" + where);
        // gather: root gets everyone's block
        const auto own = contribution<double>(t.rank() + 200, n);
        std::vector<double> gathered(t.rank() == root ? n * static_cast<std::size_t>(p) : 0);
        coll.gather(std::span<const double>(own), std::span<double>(gathered), root);
        if (t.rank() == root) {
          for (int r = 0; r < p; ++r) {
            const auto want = contribution<double>(r + 200, n);
            require_within<double>(std::span<const double>(gathered).subspan(n * static_cast<std::size_t>(r), n), want,
                                   r == root ? 0.0 : eb, "gather" + where);
          }
        }
      });
    }
  }
}

namespace {

/// bcast over a schedule that cuts the buffer into pieces: every element within eb (exact uncompressed),
/// and the root's link carries at most `root_buffers` buffers' worth of raw bytes.
template <class Schedule>
void check_pieces_bcast(double root_buffers) {
  for (int p : rank_counts) {
    for (int root = 0; root < p; root += (p > 4 ? 3 : 1)) {
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099}}) {
        run_local(p, [&](Local& t) {
          const std::string where = std::string(" ") + Schedule::name + " p=" + std::to_string(p) +
                                    " root=" + std::to_string(root) + " n=" + std::to_string(n);
          const auto root_data = contribution<float>(root, n);
          auto data = t.rank() == root ? root_data : std::vector<float>(n, -1.0f);
          zcoll::Compressed<Schedule, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
          coll.bcast(std::span<float>(data), root);
          require_within<float>(data, root_data, t.rank() == root ? 0.0 : eb, "bcast" + where);
          REQUIRE(coll.last_report().error_bound <= eb);
          data = t.rank() == root ? root_data : std::vector<float>(n, -1.0f);
          zcoll::Compressed<Schedule, zcoll::Identity> plain{t};
          plain.bcast(std::span<float>(data), root);
          require_equal<float>(data, root_data, "uncompressed bcast" + where);
          if (t.rank() == root) {
            INFO(where);
            REQUIRE(static_cast<double>(plain.last_report().bytes_sent) <= root_buffers * static_cast<double>(n * sizeof(float)));
          }
        });
      }
    }
  }
}

}  // namespace

TEST_CASE("Compressed bcast over ScatterAllgather and Chain: pieces compressed once, every element within eb, "
          "every root",
          "[collective][rooted]") {
  check_pieces_bcast<zcoll::ScatterAllgather>(2.0);  // the tree's root sends ceil(log2 p) whole buffers
  check_pieces_bcast<zcoll::Chain<4>>(1.0);          // a chain's root sends the buffer once
  check_pieces_bcast<zcoll::Chain<32>>(1.0);         // more segments than values for small n
}

TEST_CASE("Compressed alltoall over Pairwise", "[collective][alltoall]") {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      const std::size_t n = 513;
      const auto in = contribution<float>(t.rank(), n * static_cast<std::size_t>(p));
      std::vector<float> out(in.size(), -1.0f);
      coll.alltoall(std::span<const float>(in), std::span<float>(out));
      for (int src = 0; src < p; ++src) {
        const auto theirs = contribution<float>(src, n * static_cast<std::size_t>(p));
        require_within<float>(std::span<const float>(out).subspan(n * static_cast<std::size_t>(src), n),
                              std::span<const float>(theirs).subspan(n * static_cast<std::size_t>(t.rank()), n),
                              src == t.rank() ? 0.0 : eb, "alltoall from " + std::to_string(src));
      }
    });
  }
}

namespace {

/// Values rank `from` sends rank `to` in the alltoallv tests: 0 for some pairs, up to 600 for others.
std::size_t alltoallv_count(int from, int to) {
  return (from + 2 * to) % 5 == 0 ? 0 : static_cast<std::size_t>((from * 131 + to * 71) % 600);
}

/// Rank `from`'s block for rank `to`: values no other block has.
std::vector<float> alltoallv_block(int from, int to) {
  return contribution<float>(from * 100 + to, alltoallv_count(from, to));
}

/// One alltoallv on every rank count; blocks of at least `min_compressed_bytes` bytes within `bound`,
/// smaller ones (and a rank's own) exact.
template <class Codec>
void check_alltoallv(std::size_t min_compressed_bytes, double bound) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, Codec> coll{t, Codec{{.error_bound = zcoll::absolute(eb)}}, {.min_compressed_bytes = min_compressed_bytes}};
      const int me = t.rank();
      std::vector<std::size_t> send_counts, recv_counts;
      std::vector<float> in;
      for (int b = 0; b < p; ++b) {
        send_counts.push_back(alltoallv_count(me, b));
        recv_counts.push_back(alltoallv_count(b, me));
        const auto block = alltoallv_block(me, b);
        in.insert(in.end(), block.begin(), block.end());
      }
      std::vector<float> out(std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0}), -7.0f);
      coll.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send_counts), std::span<float>(out),
                     std::span<const std::size_t>(recv_counts));
      std::size_t at = 0;
      bool compressed = false;
      for (int src = 0; src < p; ++src) {
        const auto want = alltoallv_block(src, me);
        const bool raw = src == me || want.size() * sizeof(float) < min_compressed_bytes;
        compressed = compressed || (!raw && !want.empty());
        require_within<float>(std::span<const float>(out).subspan(at, want.size()), want, raw ? 0.0 : bound,
                              "alltoallv p=" + std::to_string(p) + " from " + std::to_string(src) + " to " +
                                  std::to_string(me));
        at += want.size();
      }
      // Compressed when any block this rank sent or received was.
      for (int b = 0; b < p; ++b) {
        const std::size_t sent = alltoallv_count(me, b);
        compressed = compressed || (b != me && sent > 0 && sent * sizeof(float) >= min_compressed_bytes);
      }
      REQUIRE(coll.last_report().compressed == (compressed && !std::is_same_v<Codec, zcoll::Identity>));
      REQUIRE(coll.last_report().error_bound <= bound);
    });
  }
}

}  // namespace

TEST_CASE("Compressed alltoallv: blocks of every length, empty ones, raw small ones", "[collective][alltoall]") {
  check_alltoallv<zcoll::FZLight>(0, eb);
  check_alltoallv<zcoll::FZLight>(1000, eb);  // blocks under 250 floats travel raw, exactly
  check_alltoallv<zcoll::Identity>(0, 0.0);
}

TEST_CASE("Compressed alltoallv: counts that do not fit are argument errors; a block of another length "
          "is a format error",
          "[collective][alltoall]") {
  run_local(3, [&](Local& t) {
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    std::vector<float> in(30, 1.0f), out(30);
    const std::vector<std::size_t> ten = {10, 10, 10}, two = {15, 15}, eleven = {10, 11, 9};
    const auto call = [&](const std::vector<std::size_t>& send, const std::vector<std::size_t>& recv) {
      coll.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send), std::span<float>(out),
                     std::span<const std::size_t>(recv));
    };
    CHECK_THROWS_WITH(call(two, ten), Catch::Contains("send_counts has 2 entries, one per rank (3) expected"));
    CHECK_THROWS_WITH(call(ten, std::vector<std::size_t>{10, 10, 11}),
                      Catch::Contains("recv_counts add up to 31 values, out holds 30"));
    if (t.rank() == 1) CHECK_THROWS_WITH(call(ten, eleven), Catch::Contains("this rank's own block"));
  });
  // Rank 0 expects 11 values from rank 1, which sends 10: rank 0 raises format_error, and run_local
  // (like an MPI job that aborts on an uncaught error) ends the other ranks rather than leave them
  // waiting for rank 0.
  REQUIRE_THROWS_AS(run_local(3,
                              [&](Local& t) {
                                zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
                                std::vector<float> in(30, 1.0f), out(t.rank() == 0 ? 31 : 30);
                                const std::vector<std::size_t> send = {10, 10, 10};
                                const auto recv = t.rank() == 0 ? std::vector<std::size_t>{10, 12, 9} : send;
                                coll.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send),
                                               std::span<float>(out), std::span<const std::size_t>(recv));
                              }),
                    zcoll::format_error);
}

TEST_CASE("Compressed collectives reuse their scratch: many calls of changing sizes and types", "[collective]") {
  run_local(3, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    for (std::size_t n : {5000u, 10u, 0u, 20000u, 1u}) {
      auto f = contribution<float>(t.rank(), n);
      coll.allreduce(std::span<float>(f), zcoll::op::sum);
      auto d = contribution<double>(t.rank(), n);
      coll.allreduce(std::span<double>(d), zcoll::op::sum);
      std::vector<double> want(n, 0.0);
      for (int r = 0; r < 3; ++r) {
        const auto c = contribution<double>(r, n);
        for (std::size_t i = 0; i < n; ++i) want[i] += c[i];
      }
      require_within<double>(d, want, coll.last_report().error_bound, "mixed calls n=" + std::to_string(n));
    }
  });
}

TEST_CASE("Small messages skip compression and say so", "[collective][report]") {
  run_local(4, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.min_compressed_bytes = 4096}};
    auto small = contribution<float>(t.rank(), 100);  // 400 bytes
    std::vector<float> want(100, 0.0f);
    for (int r = 0; r < 4; ++r) {
      const auto c = contribution<float>(r, 100);
      for (std::size_t i = 0; i < 100; ++i) want[i] += c[i];
    }
    coll.allreduce(std::span<float>(small), zcoll::op::sum);
    REQUIRE_FALSE(coll.last_report().compressed);
    REQUIRE(coll.last_report().error_bound == 0.0);
    require_equal<float>(small, want, "uncompressed small allreduce");
    auto large = contribution<float>(t.rank(), 10000);
    coll.allreduce(std::span<float>(large), zcoll::op::sum);
    REQUIRE(coll.last_report().compressed);
    REQUIRE(coll.last_report().ratio > 1.0);
    REQUIRE(coll.last_report().bytes_sent < coll.last_report().raw_bytes_sent);
  });
}

TEST_CASE("Collective argument errors name the argument", "[collective]") {
  run_local(2, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    std::vector<float> mine(10), all(15);
    ZCOLL_LOCKED(REQUIRE_THROWS_WITH(coll.allgather(std::span<const float>(mine), std::span<float>(all)),
                                     Catch::Contains("all holds 15 values, 20 expected")));
    zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> tree{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    ZCOLL_LOCKED(REQUIRE_THROWS_WITH(tree.bcast(std::span<float>(mine), 2), Catch::Contains("root 2 is not in [0, 2)")));
  });
}

// ---- quantized collectives: row-wise codecs and error feedback per hop ------------------------------------

namespace {

/// Gradient-like values: a smooth signal shared by the ranks plus rank noise, |x| < 2.
std::vector<float> gradient(int rank, std::size_t n, int step = 0) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double shared = std::sin(0.01 * static_cast<double>(i) + 0.1 * step);
    const double noise = std::sin(1.7 * static_cast<double>(i) * (rank + 1) + 0.3 * step);
    g[i] = static_cast<float>(shared + 0.5 * noise);
  }
  return g;
}

/// The exact sum over ranks (in double) and the sum of magnitudes (for the float rounding of the sums).
struct exact_sum {
  std::vector<double> sum, magnitude;
};
exact_sum sum_over_ranks(int p, std::size_t n, int step = 0) {
  exact_sum e{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (int r = 0; r < p; ++r) {
    const auto g = gradient(r, n, step);
    for (std::size_t i = 0; i < n; ++i) {
      e.sum[i] += g[i];
      e.magnitude[i] += std::abs(static_cast<double>(g[i]));
    }
  }
  return e;
}

/// Every element within the compression bound the report states, plus what float additions of p terms
/// can round away: 2·p·2^-24 of the magnitudes summed (each addition rounds once; the terms are within
/// the bound of the values).
void require_within_sum(std::span<const float> got, const exact_sum& want, double bound, int p, const std::string& what) {
  const double u = std::ldexp(1.0, -24);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double slack = 2.0 * p * u * (want.magnitude[i] + bound);
    if (!(std::abs(static_cast<double>(got[i]) - want.sum[i]) <= bound + slack)) {
      FAIL(what << ": element " << i << " is " << got[i] << ", exact " << want.sum[i] << ", bound " << bound
                << " + rounding " << slack);
    }
  }
}

template <class Schedule, class Codec>
void check_quantized_allreduce(std::size_t rows_per_rank) {
  constexpr std::size_t row = 64;
  for (int p : rank_counts) {
    const std::size_t n = static_cast<std::size_t>(p) * rows_per_rank * row;
    const auto want = sum_over_ranks(p, n);
    run_local(p, [&](Local& t) {
      zcoll::Compressed<Schedule, Codec> coll{t, Codec{{.shape = {row}}}};
      auto data = gradient(t.rank(), n);
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
      const auto& report = coll.last_report();
      const std::string what = std::string("allreduce ") + Schedule::name + " " + Codec::name() + " p=" + std::to_string(p);
      if (p > 1) {
        REQUIRE(report.compressed);
        REQUIRE(report.error_bound > 0.0);
        REQUIRE(report.statistical_error_bound <= report.error_bound);
      }
      require_within_sum(data, want, report.error_bound, p, what);
    });
  }
}

}  // namespace

TEST_CASE("Quantized allreduce: Int8 and Int4 over Ring and RecursiveDoubling stay within the bound the streams "
          "state",
          "[collective][quantized]") {
  check_quantized_allreduce<zcoll::Ring, zcoll::Int8>(2);
  check_quantized_allreduce<zcoll::Ring, zcoll::Int4>(2);
  check_quantized_allreduce<zcoll::RecursiveDoubling, zcoll::Int4>(1);
}

TEST_CASE("Quantized allreduce: a count that is not whole rows per rank is an argument error on every rank",
          "[collective][quantized]") {
  run_local(3, [&](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::Int4> coll{t, zcoll::Int4{{.shape = {64}}}};
    std::vector<float> data(3 * 64 + 5, 1.0f);
    CHECK_THROWS_WITH(coll.allreduce(std::span<float>(data), zcoll::op::sum),
                      Catch::Contains("not a whole number of rows of 64"));
  });
}

TEST_CASE("Error feedback per hop: over many steps the sum of the reduced results tracks the exact sum",
          "[collective][quantized][feedback]") {
  // The same gradient every step: without feedback each step makes the same 4-bit error, which adds up
  // step after step; with it, each hop carries its error into the next step and the total stays bounded.
  constexpr std::size_t row = 64;
  constexpr int steps = 40;
  const int p = 8;
  const std::size_t n = static_cast<std::size_t>(p) * 2 * row;
  const auto want = sum_over_ranks(p, n);
  const auto accumulated_error = [&](auto codec_tag) {
    using Codec = decltype(codec_tag);
    std::vector<double> total(n, 0.0);
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Ring, Codec> coll{t, Codec{{.shape = {row}}}};
      std::vector<double> mine(n, 0.0);
      for (int s = 0; s < steps; ++s) {
        auto data = gradient(t.rank(), n);
        coll.allreduce(std::span<float>(data), zcoll::op::sum);
        // Every step within the bound the report states (with feedback it includes the carried error).
        require_within_sum(data, want, coll.last_report().error_bound, p, "step " + std::to_string(s));
        for (std::size_t i = 0; i < n; ++i) mine[i] += data[i];
      }
      if (t.rank() == 0) total = mine;
    });
    double worst = 0.0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(total[i] - steps * want.sum[i]));
    return worst;
  };
  // Data movement through the same collective compresses each block once, without feedback: the same
  // bytes as the plain codec's, call after call.
  run_local(3, [&](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::ErrorFeedback<zcoll::Int4>> coll{t, zcoll::ErrorFeedback<zcoll::Int4>{{.shape = {row}}}};
    const auto mine = gradient(t.rank(), 2 * row);
    for (int s = 0; s < 3; ++s) {
      std::vector<float> all(3 * 2 * row);
      coll.allgather(std::span<const float>(mine), std::span<float>(all));
      for (int r = 0; r < 3; ++r) {
        const auto theirs = gradient(r, 2 * row);
        const auto plain = zcoll::Int4{{.shape = {row}}}.decompress<float>(zcoll::Int4{{.shape = {row}}}.compress(theirs));
        const auto got = std::span<const float>(all).subspan(static_cast<std::size_t>(r) * 2 * row, 2 * row);
        for (std::size_t i = 0; i < got.size(); ++i) {
          REQUIRE(got[i] == (r == t.rank() ? theirs[i] : plain[i]));
        }
      }
    }
  });
  const double plain = accumulated_error(zcoll::Int4{{.shape = {row}}});
  const double feedback = accumulated_error(zcoll::ErrorFeedback<zcoll::Int4>{{.shape = {row}}});
  INFO("worst error of the sum of " << steps << " steps: plain Int4 " << plain << ", with feedback " << feedback);
  CHECK(feedback * 5 < plain);
}

TEST_CASE("Compressed made from a codec value: the codec's own settings reach every block and hop",
          "[collective][codec-value]") {
  constexpr int p = 4;
  const std::size_t n = 4096;
  SECTION("the same results as the collective made from the configuration") {
    std::vector<std::vector<float>> by_config(p), by_value(p);
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3)}};
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> from_config{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1e-3)}}};
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> from_value{t, codec};
      auto a = contribution<float>(t.rank(), n);
      auto b = a;
      from_config.allreduce(std::span<float>(a), zcoll::op::sum);
      from_value.allreduce(std::span<float>(b), zcoll::op::sum);
      CHECK(from_value.last_report().error_bound == from_config.last_report().error_bound);
      by_config[static_cast<std::size_t>(t.rank())] = a;
      by_value[static_cast<std::size_t>(t.rank())] = b;
    });
    CHECK(by_value == by_config);  // bit for bit
  }
  SECTION("TopK's sparsity, which codec_config cannot carry") {
    // Keep half the entries: the default (1 %) would zero almost every received value.
    const zcoll::TopK half{{}, {.keep_fraction = 0.5}};
    std::vector<std::size_t> nonzero(p, 0);
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::TopK> coll{t, half};
      std::vector<float> in(n * p), out(n * p);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 7919 + 13) % 1000) + 1.0f;
      coll.alltoall(std::span<const float>(in), std::span<float>(out));
      nonzero[static_cast<std::size_t>(t.rank())] =
          static_cast<std::size_t>(std::count_if(out.begin(), out.end(), [](float v) { return v != 0.0f; }));
    });
    // A rank's own block moves exactly (n values, none zero); the p - 1 others keep about half each.
    for (const auto count : nonzero) {
      CHECK(count >= n + n * (p - 1) * 45 / 100);
      CHECK(count <= n + n * (p - 1) * 55 / 100);
    }
  }
}
