// Non-blocking calls (collective/request.hpp), rooted reduce and out-of-place allreduce on
// transport::Local with 1, 2, 3, 4 and 7 ranks, against exact references.
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/collective_data.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;
using zcoll_test::contribution;
using zcoll_test::eb;
using zcoll_test::require_equal;
using zcoll_test::require_within;
using zcoll_test::sum_of_contributions;

namespace {

const std::vector<int> rank_counts = {1, 2, 3, 4, 7};

template <class Codec>
Codec codec_at_eb() {
  if constexpr (std::is_same_v<Codec, zcoll::Identity>) {
    return Codec{};
  } else {
    return Codec{{.error_bound = zcoll::absolute(eb)}};
  }
}

/// The bound a result must hold: exact for Identity, the report's otherwise (and never beyond p + 1 hops).
template <class Codec>
double bound_of(const zcoll::collective_report& r, int ranks) {
  if (std::is_same_v<Codec, zcoll::Identity>) return 0.0;
  REQUIRE(r.error_bound <= (ranks + 1) * eb);
  return r.error_bound;
}

/// Three requests outstanding at once — allreduce, allgather, reduce_scatter — completed in reverse order.
template <class Schedule, class Codec>
void check_three_outstanding(bool progress_thread) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<Schedule, Codec> coll{t, codec_at_eb<Codec>(), {.pipeline_values = 700, .progress_thread = progress_thread}};
      const std::size_t n = 3000 * static_cast<std::size_t>(p);
      const std::string what = std::string(Schedule::name) + " " + Codec::name() + " p=" + std::to_string(p) +
                               (progress_thread ? " progress thread" : "") + " rank " + std::to_string(t.rank());
      auto summed = contribution<float>(t.rank(), n);
      const auto mine = contribution<float>(t.rank() + 11, 1000);
      std::vector<float> all(1000 * static_cast<std::size_t>(p));
      const auto scattered_in = contribution<float>(t.rank() + 3, n);
      std::vector<float> scattered(n / static_cast<std::size_t>(p));

      auto first = coll.allreduce_async(std::span<float>(summed), zcoll::op::sum);
      auto second = coll.allgather_async(std::span<const float>(mine), std::span<float>(all));
      auto third = coll.reduce_scatter_async(std::span<const float>(scattered_in), std::span<float>(scattered), zcoll::op::sum);
      third.wait();
      second.wait();
      first.wait();

      require_within<float>(summed, sum_of_contributions<float>(p, n), bound_of<Codec>(first.report(), p), what + " allreduce");
      std::vector<float> want_all;
      for (int r = 0; r < p; ++r) {
        const auto c = contribution<float>(r + 11, 1000);
        want_all.insert(want_all.end(), c.begin(), c.end());
      }
      require_within<float>(all, want_all, bound_of<Codec>(second.report(), p), what + " allgather");
      std::vector<float> want_scattered(n, 0.0f);
      for (int r = 0; r < p; ++r) {
        const auto c = contribution<float>(r + 3, n);
        for (std::size_t i = 0; i < n; ++i) want_scattered[i] += c[i];
      }
      const auto block = std::span<const float>(want_scattered).subspan(static_cast<std::size_t>(t.rank()) * scattered.size(), scattered.size());
      require_within<float>(scattered, block, bound_of<Codec>(third.report(), p), what + " reduce_scatter");
      REQUIRE(first.report().operation == "allreduce");
      REQUIRE(third.report().operation == "reduce_scatter");
    });
  }
}

}  // namespace

TEST_CASE("Non-blocking calls: three requests outstanding, completed in reverse order, each exact or within its bound",
          "[collective][request]") {
  check_three_outstanding<zcoll::Ring, zcoll::Identity>(false);
  check_three_outstanding<zcoll::Ring, zcoll::FZLight>(false);
  check_three_outstanding<zcoll::Ring, zcoll::FZLight>(true);
}

TEST_CASE("Non-blocking calls: test() alone progresses a call to its end; report() before the end is an error",
          "[collective][request]") {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> coll{t, codec_at_eb<zcoll::FZLight>(), {.pipeline_values = 500}};
      const std::size_t n = 20'000;
      auto data = contribution<float>(t.rank(), n);
      auto req = coll.allreduce_async(std::span<float>(data), zcoll::op::sum);
      long polls = 0;
      bool reported_early = false;
      while (!req.test()) {
        if (polls++ == 0) {
          try {
            (void)req.report();
          } catch (const zcoll::argument_error&) {
            reported_early = true;
          }
        }
      }
      REQUIRE((polls == 0 || reported_early));
      require_within<float>(data, sum_of_contributions<float>(p, n), req.report().error_bound, "p=" + std::to_string(p));
      REQUIRE(req.test());  // complete stays complete
    });
  }
}

TEST_CASE("Non-blocking calls: destroying an unfinished request completes its call; so does destroying the collective",
          "[collective][request]") {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      const std::size_t n = 5000;
      auto dropped = contribution<float>(t.rank(), n);
      auto kept = contribution<float>(t.rank() + 1, n);
      std::optional<zcoll::request> outlives;
      {
        zcoll::Compressed<zcoll::Ring, zcoll::Identity> coll{t};
        { auto abandoned = coll.allreduce_async(std::span<float>(dropped), zcoll::op::sum); }
        require_equal<float>(dropped, sum_of_contributions<float>(p, n), "dropped request");
        outlives.emplace(coll.allreduce_async(std::span<float>(kept), zcoll::op::max));
      }  // the collective goes first: its call completes then
      outlives->wait();
      REQUIRE(outlives->report().operation == "allreduce");
      std::vector<float> want = contribution<float>(1, n);
      for (int r = 1; r < p; ++r) {
        const auto c = contribution<float>(r + 1, n);
        for (std::size_t i = 0; i < n; ++i) want[i] = std::max(want[i], c[i]);
      }
      require_equal<float>(kept, want, "request outliving its collective");
    });
  }
}

TEST_CASE("Non-blocking calls: a blocking call after outstanding ones completes them first, in order",
          "[collective][request]") {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, codec_at_eb<zcoll::FZLight>()};
      const std::size_t n = 4000;
      auto a = contribution<float>(t.rank(), n);
      auto b = contribution<float>(t.rank(), n);
      auto pending = coll.allreduce_async(std::span<float>(a), zcoll::op::sum);
      coll.allreduce(std::span<float>(b), zcoll::op::sum);  // waits for `pending` first
      REQUIRE(pending.test());
      pending.wait();
      const auto want = sum_of_contributions<float>(p, n);
      require_within<float>(a, want, pending.report().error_bound, "outstanding");
      require_within<float>(b, want, coll.last_report().error_bound, "blocking");
    });
  }
}

TEST_CASE("Non-blocking calls: an argument error is raised by the call that starts it, and nothing is started",
          "[collective][request]") {
  run_local(3, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, codec_at_eb<zcoll::FZLight>()};
    std::vector<float> mine(10), all(29);
    REQUIRE_THROWS_AS(coll.allgather_async(std::span<const float>(mine), std::span<float>(all)), zcoll::argument_error);
    std::vector<float> data = contribution<float>(t.rank(), 300);
    coll.allreduce(std::span<float>(data), zcoll::op::sum);  // the ranks are still in step
    require_within<float>(data, sum_of_contributions<float>(3, 300), coll.last_report().error_bound, "after the error");
  });
}

template <class Schedule, class Codec>
void check_reduce_every_root() {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<Schedule, Codec> coll{t, codec_at_eb<Codec>(), {.pipeline_values = 900}};
      const std::size_t n = 2500 * static_cast<std::size_t>(p) + 3;  // blocks of unequal length
      const auto in = contribution<float>(t.rank(), n);
      const auto want = sum_of_contributions<float>(p, n);
      for (int root = 0; root < p; ++root) {
        std::vector<float> out(t.rank() == root ? n : 0, -1.0f);
        coll.reduce(std::span<const float>(in), std::span<float>(out), zcoll::op::sum, root);
        const std::string what = std::string("reduce ") + Schedule::name + " " + Codec::name() + " p=" +
                                 std::to_string(p) + " root " + std::to_string(root) + " rank " + std::to_string(t.rank());
        REQUIRE(coll.last_report().operation == "reduce");
        if (t.rank() == root) require_within<float>(out, want, bound_of<Codec>(coll.last_report(), p), what);
      }
      REQUIRE(in == contribution<float>(t.rank(), n));
    });
  }
}

TEST_CASE("reduce: the sum arrives at every root, exact (Identity) or within the stated bound", "[collective][reduce]") {
  check_reduce_every_root<zcoll::Ring, zcoll::Identity>();
  check_reduce_every_root<zcoll::Ring, zcoll::FZLight>();
  check_reduce_every_root<zcoll::RecursiveDoubling, zcoll::FZLight>();
}

TEST_CASE("Out-of-place allreduce leaves its input unchanged; overlapping buffers are refused", "[collective][allreduce]") {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, codec_at_eb<zcoll::FZLight>()};
      const std::size_t n = 7001;
      const auto in = contribution<float>(t.rank(), n);
      std::vector<float> out(n);
      coll.allreduce(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
      REQUIRE(in == contribution<float>(t.rank(), n));
      require_within<float>(out, sum_of_contributions<float>(p, n), coll.last_report().error_bound, "out of place");
      std::vector<float> both(2 * n);
      REQUIRE_THROWS_WITH(coll.allreduce(std::span<const float>(both).first(n), std::span<float>(both).subspan(n / 2, n), zcoll::op::sum),
                          Catch::Contains("in and out overlap"));
    });
  }
}
