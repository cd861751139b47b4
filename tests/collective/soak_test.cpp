// Soak (docs/reliability.md): thousands of compressed collectives on 4 ranks of transport::Local, each with
// a random operation, schedule, codec, value type and size, every result checked against the exact
// reference and the bound the report states; memory must stay flat. Bounded by time:
//
//   ZCOLL_SOAK_SECONDS=600 build/release/tests/collective/zcoll-soak-tests     (default 30 s, at least 200 iterations; CI: 25 s, 15 s under ASan)
//
// The first 16 iterations run every operation at the largest size, so the peak RSS read at iteration 100
// already holds every buffer the run needs; the peak at the end may exceed it by 16 MiB at most (allocator
// noise), never by a leak's growth.
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/collective_data.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll_test::contribution;
using zcoll_test::eb;

namespace {

constexpr int ranks = 4;
constexpr std::size_t largest = 24000;  // values per rank block, at most
constexpr int operations = 8;

/// One iteration's choices: the same on every rank (drawn from the iteration's own seed).
struct plan {
  int operation = 0;  // allreduce, reduce_scatter, allgather, bcast, scatter, gather, alltoall, alltoallv
  int variant = 0;    // schedule / codec choice within the operation
  bool f64 = false;
  std::size_t n = 0;  // values per block
  int root = 0;
  std::vector<std::size_t> counts;  // alltoallv: counts[from * ranks + to]
};

plan plan_for(int iteration) {
  std::mt19937_64 random(0x50A4'0000ull + static_cast<unsigned>(iteration));
  plan p;
  if (iteration < 2 * operations) {  // every operation at the largest size first
    p.operation = iteration % operations;
    p.f64 = iteration >= operations;
    p.n = largest;
  } else {
    p.operation = static_cast<int>(random() % operations);
    p.f64 = random() % 2 == 1;
    p.n = random() % 4 == 0 ? random() % 40 : random() % largest;  // small ones often: raw paths
  }
  p.n = p.n / 16 * 16;  // whole rows of Int8's 16
  p.variant = static_cast<int>(random() % 3);
  p.root = static_cast<int>(random() % ranks);
  p.counts.resize(ranks * ranks);
  for (auto& c : p.counts) c = random() % (p.n + 1);
  return p;
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

/// Rank r's values for this iteration: dyadic, so reductions are exact but for compression.
template <class T>
std::vector<T> values(int iteration, int rank, std::size_t n) {
  return contribution<T>(rank + ranks * (iteration % 1000), n);
}

/// Every element within the bound, exactly; a sum of Int8 values also within float rounding.
template <class T>
void check(std::span<const T> got, std::span<const double> want, double bound, double rounding, const std::string& what) {
  if (got.size() != want.size()) FAIL(what << ": " << got.size() << " values, " << want.size() << " expected");
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(error <= bound + rounding * std::abs(want[i]) + rounding)) {
      FAIL(what << ": element " << i << " is " << got[i] << ", exact " << want[i] << ", bound " << bound);
    }
  }
}

template <class S, class C>
zcoll::Compressed<S, C> make(Local& t, std::size_t row_length = 0) {
  zcoll::codec_config settings{.error_bound = zcoll::absolute(eb)};
  if (row_length > 0) settings.shape = {row_length};  // a row-wise codec's rows
  return zcoll::Compressed<S, C>{t, C{settings}};
}

template <class T>
void run(Local& t, int iteration, const plan& p) {
  const int me = t.rank();
  const std::size_t n = p.n, all_n = n * ranks;
  const std::string what = "iteration " + std::to_string(iteration) + " operation " + std::to_string(p.operation) +
                           " variant " + std::to_string(p.variant) + " n " + std::to_string(n) + (p.f64 ? " f64" : " f32");
  const auto mine = values<T>(iteration, me, n), whole = values<T>(iteration, me, all_n);
  std::vector<double> want;
  const auto sum_of_wholes = [&] {
    std::vector<double> sum(all_n, 0.0);
    for (int r = 0; r < ranks; ++r) {
      const auto v = values<T>(iteration, r, all_n);
      for (std::size_t i = 0; i < all_n; ++i) sum[i] += static_cast<double>(v[i]);
    }
    return sum;
  };
  const auto as_double = [](std::span<const T> v) { return std::vector<double>(v.begin(), v.end()); };
  switch (p.operation) {
    case 0: {  // allreduce: FZLight over Ring or RecursiveDoubling, Int8 over Ring
      auto data = whole;
      want = sum_of_wholes();
      double bound = 0.0, rounding = 0.0;
      if (p.variant == 0) {
        auto coll = make<zcoll::Ring, zcoll::FZLight>(t);
        coll.allreduce(std::span<T>(data), zcoll::op::sum);
        bound = coll.last_report().error_bound;
      } else if (p.variant == 1) {
        auto coll = make<zcoll::RecursiveDoubling, zcoll::FZLight>(t);
        coll.allreduce(std::span<T>(data), zcoll::op::sum);
        bound = coll.last_report().error_bound;
      } else {
        auto coll = make<zcoll::Ring, zcoll::Int8>(t, 16);
        coll.allreduce(std::span<T>(data), zcoll::op::sum);
        bound = coll.last_report().error_bound;
        rounding = 2.0 * ranks * std::ldexp(1.0, p.f64 ? -53 : -24);  // the sums of dequantized values round
      }
      check<T>(data, want, bound, rounding, what);
      return;
    }
    case 1: {  // reduce_scatter over Ring
      std::vector<T> out(n);
      auto coll = make<zcoll::Ring, zcoll::FZLight>(t);
      coll.reduce_scatter(std::span<const T>(whole), std::span<T>(out), zcoll::op::sum);
      const auto sum = sum_of_wholes();
      want.assign(sum.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)),
                  sum.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me + 1)));
      check<T>(out, want, coll.last_report().error_bound, 0.0, what);
      return;
    }
    case 2: {  // allgather: FZLight over Ring or RecursiveDoubling, Identity over Ring
      std::vector<T> all(all_n);
      for (int r = 0; r < ranks; ++r) {
        const auto v = values<T>(iteration, r, n);
        want.insert(want.end(), v.begin(), v.end());
      }
      double bound = 0.0;
      if (p.variant == 2) {
        auto coll = make<zcoll::Ring, zcoll::Identity>(t);
        coll.allgather(std::span<const T>(mine), std::span<T>(all));
        bound = coll.last_report().error_bound;
      } else if (p.variant == 1) {
        auto coll = make<zcoll::RecursiveDoubling, zcoll::FZLight>(t);
        coll.allgather(std::span<const T>(mine), std::span<T>(all));
        bound = coll.last_report().error_bound;
      } else {
        auto coll = make<zcoll::Ring, zcoll::FZLight>(t);
        coll.allgather(std::span<const T>(mine), std::span<T>(all));
        bound = coll.last_report().error_bound;
      }
      check<T>(all, want, bound, 0.0, what);
      return;
    }
    case 3: {  // bcast over BinomialTree, ScatterAllgather or Chain
      auto data = me == p.root ? whole : std::vector<T>(all_n);
      want = as_double(values<T>(iteration, p.root, all_n));
      double bound = 0.0;
      if (p.variant == 0) {
        auto coll = make<zcoll::BinomialTree, zcoll::FZLight>(t);
        coll.bcast(std::span<T>(data), p.root);
        bound = coll.last_report().error_bound;
      } else if (p.variant == 1) {
        auto coll = make<zcoll::ScatterAllgather, zcoll::FZLight>(t);
        coll.bcast(std::span<T>(data), p.root);
        bound = coll.last_report().error_bound;
      } else {
        auto coll = make<zcoll::Chain<>, zcoll::FZLight>(t);
        coll.bcast(std::span<T>(data), p.root);
        bound = coll.last_report().error_bound;
      }
      check<T>(data, want, me == p.root ? 0.0 : bound, 0.0, what);
      return;
    }
    case 4: {  // scatter over BinomialTree
      std::vector<T> out(n);
      auto coll = make<zcoll::BinomialTree, zcoll::FZLight>(t);
      coll.scatter(std::span<const T>(whole), std::span<T>(out), p.root);
      const auto root_all = values<T>(iteration, p.root, all_n);
      want.assign(root_all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)),
                  root_all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me + 1)));
      check<T>(out, want, coll.last_report().error_bound, 0.0, what);
      return;
    }
    case 5: {  // gather over BinomialTree
      std::vector<T> all(me == p.root ? all_n : 0);
      auto coll = make<zcoll::BinomialTree, zcoll::FZLight>(t);
      coll.gather(std::span<const T>(mine), std::span<T>(all), p.root);
      if (me != p.root) return;
      for (int r = 0; r < ranks; ++r) {
        const auto v = values<T>(iteration, r, n);
        want.insert(want.end(), v.begin(), v.end());
      }
      check<T>(all, want, coll.last_report().error_bound, 0.0, what);
      return;
    }
    case 6: {  // alltoall over Pairwise
      std::vector<T> out(all_n);
      auto coll = make<zcoll::Pairwise, zcoll::FZLight>(t);
      coll.alltoall(std::span<const T>(whole), std::span<T>(out));
      for (int r = 0; r < ranks; ++r) {
        const auto v = values<T>(iteration, r, all_n);
        want.insert(want.end(), v.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)),
                    v.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me + 1)));
      }
      check<T>(out, want, coll.last_report().error_bound, 0.0, what);
      return;
    }
    default: {  // alltoallv over Pairwise: counts[from * ranks + to]
      const auto count = [&](int from, int to) { return p.counts[static_cast<std::size_t>(from * ranks + to)]; };
      std::vector<std::size_t> send(ranks), recv(ranks);
      std::size_t send_total = 0, recv_total = 0;
      for (int r = 0; r < ranks; ++r) {
        send[static_cast<std::size_t>(r)] = count(me, r);
        recv[static_cast<std::size_t>(r)] = count(r, me);
        send_total += count(me, r);
        recv_total += count(r, me);
      }
      const auto in = values<T>(iteration, me, send_total);
      std::vector<T> out(recv_total);
      auto coll = make<zcoll::Pairwise, zcoll::FZLight>(t);
      coll.alltoallv(std::span<const T>(in), std::span<const std::size_t>(send), std::span<T>(out),
                     std::span<const std::size_t>(recv));
      for (int r = 0; r < ranks; ++r) {  // rank r's block for me starts after its blocks for ranks < me
        std::size_t first = 0, total = 0;
        for (int to = 0; to < ranks; ++to) {
          if (to < me) first += count(r, to);
          total += count(r, to);
        }
        const auto v = values<T>(iteration, r, total);
        want.insert(want.end(), v.begin() + static_cast<std::ptrdiff_t>(first),
                    v.begin() + static_cast<std::ptrdiff_t>(first + count(r, me)));
      }
      check<T>(out, want, coll.last_report().error_bound, 0.0, what);
      return;
    }
  }
}

double soak_seconds() {
  const char* text = std::getenv("ZCOLL_SOAK_SECONDS");
  return text != nullptr ? std::atof(text) : 30.0;
}

}  // namespace

TEST_CASE("Soak: random collectives on 4 ranks, every result within its bound, memory flat", "[collective][soak]") {
  const double budget = soak_seconds();
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int iterations = 0;
  long rss_at_100 = 0;
  // Each batch is one run_local (threads started once per batch); a batch ends every 50 iterations so the
  // time budget is checked between them.
  while (iterations < 200 || elapsed() < budget) {
    const int first = iterations;
    zcoll::transport::run_local(ranks, [&](Local& t) {
      for (int i = first; i < first + 50; ++i) {
        const plan p = plan_for(i);
        if (p.f64) {
          run<double>(t, i, p);
        } else {
          run<float>(t, i, p);
        }
      }
    });
    iterations += 50;
    if (iterations == 100) rss_at_100 = peak_rss_kib();
  }
  const long rss_at_end = peak_rss_kib();
  std::printf("zcoll soak: %d collectives on %d ranks in %.0f s; peak RSS %ld KiB at iteration 100, %ld KiB at the end\n",
              iterations, ranks, elapsed(), rss_at_100, rss_at_end);
  CHECK(rss_at_end <= rss_at_100 + 16 * 1024);
}
