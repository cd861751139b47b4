// The staged reductions (collective/detail/staged_reduction.hpp) on zcoll::HostStaging: reduce_scatter,
// allreduce and reduce with the values reduced in the space, each hop's segments compressed and decoded
// there in batches. Their results and reports are checked against the host calls on the same data, bit
// for bit, and against the exact reduction within the reported bound, on 1 to 8 ranks.
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/collective_data.hpp"
#include "support/faulty_transport.hpp"
#include "support/raised_by_ranks.hpp"
#include "support/staging_spaces.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/collective/host_staging.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;
using zcoll_test::contribution;
using zcoll_test::eb;
using zcoll_test::raised_by_ranks;
using zcoll_test::TwoStreamBatches;
using zcoll_test::require_equal;
using zcoll_test::require_within;

namespace {

const std::vector<int> rank_counts = {1, 2, 3, 4, 7, 8};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The exact reduction of every rank's contribution (dyadic values: sums are exact in T).
template <class T, class Op>
std::vector<T> exact_reduction(int ranks, std::size_t n, Op op) {
  std::vector<T> result = contribution<T>(0, n);
  for (int r = 1; r < ranks; ++r) {
    const auto c = contribution<T>(r, n);
    for (std::size_t i = 0; i < n; ++i) result[i] = op(result[i], c[i]);
  }
  return result;
}

/// Every field of the report a staged call shares with the host call.
void require_same_report(const zcoll::collective_report& staged, const zcoll::collective_report& host, const std::string& what) {
  const auto differs = [&](const char* field, auto a, auto b) {
    if (a != b) FAIL(what << ": report field " << field << " is " << a << " staged, " << b << " on the host");
  };
  differs("operation", staged.operation, host.operation + " (staged)");
  differs("compressed", staged.compressed, host.compressed);
  differs("bytes_sent", staged.bytes_sent, host.bytes_sent);
  differs("raw_bytes_sent", staged.raw_bytes_sent, host.raw_bytes_sent);
  differs("error_bound", staged.error_bound, host.error_bound);
  differs("statistical_error_bound", staged.statistical_error_bound, host.statistical_error_bound);
  differs("compressions_in_chain", staged.compressions_in_chain, host.compressions_in_chain);
}

/// The codec of a case: the row-wise Int8 gets rows of 16; the others `bound`.
template <class Codec>
Codec codec_for(zcoll::bound bound) {
  if constexpr (std::is_same_v<Codec, zcoll::Int8>) {
    return Codec{{.shape = {1, 16}}};
  } else {
    return Codec{{.error_bound = bound}};
  }
}

/// allreduce (in place and from `in`), reduce_scatter and reduce, staged on `Space` and on the host, on
/// every rank count: equal bit for bit, with equal reports, and within the reported bound of the exact
/// reduction. `per_rank` values a rank's block (whole rows of 16).
template <class S, class Codec, class T, class Space = zcoll::HostStaging, class Op = zcoll::op::sum_t>
void check_staged_reductions(std::size_t per_rank, zcoll::bound bound, zcoll::collective_config config = {}, Op op = {}) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<S, Codec> coll{t, codec_for<Codec>(bound), config};
      Space staging;
      const int me = t.rank();
      const std::size_t n = per_rank * static_cast<std::size_t>(p);
      const auto in = contribution<T>(me, n);
      const auto exact = exact_reduction<T>(p, n, op);
      const std::string what = std::string(S::name) + " " + Codec::name() + " p=" + std::to_string(p) + " rank " + std::to_string(me);

      std::vector<T> staged = in, host = in;
      coll.allreduce(staging, std::span<T>(staged), op);
      const zcoll::collective_report staged_report = coll.last_report();
      coll.allreduce(std::span<T>(host), op);
      require_equal<T>(staged, host, what + ": allreduce in place against the host call");
      require_same_report(staged_report, coll.last_report(), what + ": allreduce in place");
      require_within<T>(staged, exact, staged_report.error_bound, what + ": allreduce in place against the exact reduction");

      std::vector<T> out(n, T(-3));
      coll.allreduce(staging, std::span<const T>(in), std::span<T>(out), op);
      require_equal<T>(out, host, what + ": allreduce from in against the host call");

      if constexpr (S::supports(zcoll::schedule::collective_op::reduce_scatter)) {
        std::vector<T> staged_block(per_rank, T(-1)), host_block(per_rank, T(-2));
        coll.reduce_scatter(staging, std::span<const T>(in), std::span<T>(staged_block), op);
        const zcoll::collective_report block_report = coll.last_report();
        coll.reduce_scatter(std::span<const T>(in), std::span<T>(host_block), op);
        require_equal<T>(staged_block, host_block, what + ": reduce_scatter against the host call");
        require_same_report(block_report, coll.last_report(), what + ": reduce_scatter");
        require_within<T>(staged_block, std::span<const T>(exact).subspan(per_rank * static_cast<std::size_t>(me), per_rank),
                          block_report.error_bound, what + ": reduce_scatter against the exact reduction");
      }

      const int root = p - 1;
      std::vector<T> staged_root(me == root ? n : 0, T(-1)), host_root(me == root ? n : 0, T(-2));
      coll.reduce(staging, std::span<const T>(in), std::span<T>(staged_root), op, root);
      const zcoll::collective_report root_report = coll.last_report();
      coll.reduce(std::span<const T>(in), std::span<T>(host_root), op, root);
      require_equal<T>(staged_root, host_root, what + ": reduce against the host call");
      require_same_report(root_report, coll.last_report(), what + ": reduce");
      if (me == root) require_within<T>(staged_root, exact, root_report.error_bound, what + ": reduce against the exact reduction");
      REQUIRE_FALSE(staging.in_use());
    });
  }
}

/// allreduce of `n` values in all (not a multiple of the ranks: blocks of n / p values, some empty and
/// still compressed) staged and on the host, on `ranks`: equal bit for bit, with equal reports.
template <class S, class Codec>
void check_staged_allreduce_of(std::size_t n, const std::vector<int>& ranks, zcoll::collective_config config = {}) {
  for (int p : ranks) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<S, Codec> coll{t, codec_for<Codec>(zcoll::absolute(eb)), config};
      zcoll::HostStaging staging;
      std::vector<float> staged = contribution<float>(t.rank(), n), host = staged;
      coll.allreduce(staging, std::span<float>(staged), zcoll::op::sum);
      const zcoll::collective_report staged_report = coll.last_report();
      coll.allreduce(std::span<float>(host), zcoll::op::sum);
      const std::string what = std::string(S::name) + " n=" + std::to_string(n) + " p=" + std::to_string(p) + " rank " +
                               std::to_string(t.rank()) + ": allreduce";
      require_equal<float>(staged, host, what);
      require_same_report(staged_report, coll.last_report(), what);
      require_within<float>(staged, zcoll_test::sum_of_contributions<float>(p, n), staged_report.error_bound, what);
    });
  }
}

/// A staged allreduce on 4 ranks with `config` (verify mode), rank 1's streams retyped to f64: the error
/// every rank raised (they must agree); the next call, with nothing retyped, must work.
std::string retyped_allreduce_error(zcoll::collective_config config) {
  using Faulty = zcoll_test::Faulty<Local>;
  raised_by_ranks raised;
  run_local(4, [&](Local& t) {
    auto armed = std::make_shared<std::atomic<bool>>(true);
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{Faulty(t, 1, zcoll_test::retype, armed),
                                                        zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, config};
    zcoll::HostStaging staging;
    std::vector<float> data = contribution<float>(t.rank(), 4000);
    raised.add(zcoll_test::error_of<zcoll::format_error>([&] { coll.allreduce(staging, std::span<float>(data), zcoll::op::sum); }));
    *armed = false;
    data = contribution<float>(t.rank(), 4000);
    coll.allreduce(staging, std::span<float>(data), zcoll::op::sum);
    require_within<float>(data, zcoll_test::sum_of_contributions<float>(4, 4000), coll.last_report().error_bound, "after the failed call");
  });
  return raised.agreed();
}

}  // namespace

TEST_CASE("Staged reductions with blocks of no values, and on a hierarchical schedule whose ranks receive without "
          "sending: the host calls' values and reports",
          "[collective][staged][reduction]") {
  // Two values on 3 and 5 ranks: compressed hops of empty segments, which still send their headers.
  check_staged_allreduce_of<zcoll::Ring, zcoll::FZLight>(2, {3, 5}, {.min_compressed_bytes = 1});
  check_staged_allreduce_of<zcoll::RecursiveDoubling, zcoll::FZLight>(2, {3, 5}, {.min_compressed_bytes = 1});
  // Hierarchical: rank 0 receives without sending for several rounds in a row, compressed and raw.
  using Hierarchical = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, 2>;
  check_staged_allreduce_of<Hierarchical, zcoll::FZLight>(3000, {4, 8}, {.pipeline_values = 500});
  check_staged_allreduce_of<Hierarchical, zcoll::Identity>(3000, {4, 8});
  check_staged_allreduce_of<Hierarchical, zcoll::FZLight>(100, {8}, {.min_compressed_bytes = 1 << 20});
}

TEST_CASE("Staged reductions on host staging: the host calls' values and reports bit for bit, within the bound of the "
          "exact reduction, 1 to 8 ranks",
          "[collective][staged][reduction]") {
  const zcoll::collective_config segments{.pipeline_values = 256};  // several segments a hop
  // Z-Allreduce (reduce_scatter + allgather) and recursive doubling, both compressed chains.
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float>(1000, zcoll::absolute(eb), segments);
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float, TwoStreamBatches>(1000, zcoll::absolute(eb), segments);
  check_staged_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, float>(777, zcoll::absolute(eb), segments);
  // A relative bound: the extent is found in the space.
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, double>(640, zcoll::relative(1e-4));
  check_staged_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, float>(500, zcoll::relative(1e-3));
  // min and max: the space combines with the host's operators.
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float>(300, zcoll::absolute(eb), segments, zcoll::op::max);
  check_staged_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, float>(300, zcoll::absolute(eb), {}, zcoll::op::min);
  // A row-wise codec (segments of whole rows), and raw hops: Identity, and a call below min_compressed_bytes.
  check_staged_reductions<zcoll::Ring, zcoll::Int8, float>(16 * 20, zcoll::absolute(eb), segments);
  check_staged_reductions<zcoll::Ring, zcoll::Identity, float>(100, zcoll::absolute(eb));
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float>(100, zcoll::absolute(eb), {.min_compressed_bytes = 1 << 20});
  // No values at all: raw hops of nothing.
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float>(0, zcoll::absolute(eb));
}

TEST_CASE("Staged reductions with the device transfer (the steps over CUDA-aware MPI): the host calls' values and "
          "reports bit for bit, within the bound of the exact reduction, 1 to 8 ranks",
          "[collective][staged][reduction][device-transfer]") {
  using zcoll_test::DirectHostStaging;
  const zcoll::collective_config segments{.pipeline_values = 256};
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float, DirectHostStaging>(1000, zcoll::absolute(eb), segments);
  check_staged_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, float, DirectHostStaging>(777, zcoll::absolute(eb), segments);
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, double, DirectHostStaging>(640, zcoll::relative(1e-4));
  check_staged_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, float, DirectHostStaging>(300, zcoll::absolute(eb), {},
                                                                                              zcoll::op::min);
  check_staged_reductions<zcoll::Ring, zcoll::Int8, float, DirectHostStaging>(16 * 20, zcoll::absolute(eb), segments);
  check_staged_reductions<zcoll::Ring, zcoll::Identity, float, DirectHostStaging>(100, zcoll::absolute(eb));
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float, DirectHostStaging>(100, zcoll::absolute(eb),
                                                                                 {.min_compressed_bytes = 1 << 20});
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float, DirectHostStaging>(0, zcoll::absolute(eb));
  // Sums on compressed streams: the streams stay on the host (they are added there), the rest is direct.
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float, DirectHostStaging>(1000, zcoll::absolute(eb),
                                                                                 {.pipeline_values = 256, .homomorphic = true});
}

TEST_CASE("Staged reductions with sums on compressed streams: the host calls' values and reports bit for bit, within "
          "the bound of the exact reduction, 1 to 8 ranks",
          "[collective][staged][reduction][homomorphic]") {
  // The own values compressed in the space a hop at a time (batches of up to two streams with
  // TwoStreamBatches), the streams added on the host, the pieces finished in the space.
  const zcoll::collective_config homomorphic{.pipeline_values = 256, .homomorphic = true};
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float>(1000, zcoll::absolute(eb), homomorphic);
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float, TwoStreamBatches>(1000, zcoll::absolute(eb), homomorphic);
  check_staged_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, double>(777, zcoll::relative(1e-4), {.homomorphic = true});
  // max is no sum: the hops decompress, reduce and compress, as on the host.
  check_staged_reductions<zcoll::Ring, zcoll::FZLight, float>(300, zcoll::absolute(eb), homomorphic, zcoll::op::max);
  // Empty blocks, and a hierarchical schedule whose ranks receive without sending.
  check_staged_allreduce_of<zcoll::Ring, zcoll::FZLight>(2, {3, 5}, {.min_compressed_bytes = 1, .homomorphic = true});
  using Hierarchical = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, 2>;
  check_staged_allreduce_of<Hierarchical, zcoll::FZLight>(3000, {4, 8}, {.pipeline_values = 500, .homomorphic = true});
}

TEST_CASE("Staged sums on compressed streams on values off the quantization grid: the host sums' values, not the "
          "decompress-reduce-compress chain's",
          "[collective][staged][reduction][homomorphic]") {
  // The contributions of the other cases are dyadic, on the quantizer's grid, where both chains are exact
  // and agree; these are not.
  const auto smooth = [](int rank, std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(10.0 * std::sin(1e-3 * static_cast<double>(i) * (rank + 1)) + rank);
    return v;
  };
  run_local(4, [&](Local& t) {
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb)}};
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> homomorphic{t, codec, {.pipeline_values = 700, .homomorphic = true}};
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> chained{t.split(0, t.rank()), codec, {.pipeline_values = 700}};
    zcoll::HostStaging staging;
    const std::size_t n = 4000;
    const auto in = smooth(t.rank(), n);
    std::vector<float> staged = in, host = in, chain = in;
    homomorphic.allreduce(staging, std::span<float>(staged), zcoll::op::sum);
    const zcoll::collective_report staged_report = homomorphic.last_report();
    homomorphic.allreduce(std::span<float>(host), zcoll::op::sum);
    chained.allreduce(std::span<float>(chain), zcoll::op::sum);
    const std::string what = "rank " + std::to_string(t.rank()) + ": allreduce";
    require_equal<float>(staged, host, what + ", staged against the host's sums on compressed streams");
    require_same_report(staged_report, homomorphic.last_report(), what);
    if (staged == chain) FAIL(what << ": the staged sums on compressed streams are the decompress-reduce-compress chain's values");
    std::vector<float> exact(n, 0.0f);
    for (int r = 0; r < 4; ++r) {
      const auto c = smooth(r, n);
      for (std::size_t i = 0; i < n; ++i) exact[i] += c[i];
    }
    // The float sum of four values is off the real sum by a few ulps of 40, far inside eb.
    require_within<float>(staged, exact, staged_report.error_bound + 1e-5, what + " against the sum of the contributions");

    std::vector<float> staged_block(n / 4), host_block(n / 4);
    homomorphic.reduce_scatter(staging, std::span<const float>(in), std::span<float>(staged_block), zcoll::op::sum);
    const zcoll::collective_report block_report = homomorphic.last_report();
    homomorphic.reduce_scatter(std::span<const float>(in), std::span<float>(host_block), zcoll::op::sum);
    require_equal<float>(staged_block, host_block, "rank " + std::to_string(t.rank()) + ": reduce_scatter, staged against the host's");
    require_same_report(block_report, homomorphic.last_report(), "reduce_scatter");
  });
}

TEST_CASE("Staged reductions: argument errors name the argument, and a space serves one call in flight",
          "[collective][staged][reduction]") {
  run_local(3, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    zcoll::HostStaging staging;
    std::vector<float> in(30), out(9);
    REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                   coll.reduce_scatter(staging, std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
                 }),
                 Catch::Matchers::EndsWith("reduce_scatter: in holds 30 values, 27 expected"));
    REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                   coll.allreduce(staging, std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
                 }),
                 Catch::Matchers::EndsWith("allreduce: out holds 9 values, 30 expected"));
    REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                   coll.reduce(staging, std::span<const float>(in), std::span<float>(out), zcoll::op::sum, 3);
                 }),
                 Catch::Matchers::EndsWith("reduce: root 3 is not in [0, 3)"));
    REQUIRE_FALSE(staging.in_use());
    std::vector<float> data = contribution<float>(t.rank(), 3000), other = data;
    auto running = coll.allreduce_async(staging, std::span<float>(data), zcoll::op::sum);
    REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                   (void)coll.allreduce_async(staging, std::span<float>(other), zcoll::op::sum);
                 }),
                 Catch::Matchers::EndsWith("allreduce (staged): staging is lent to a call still in flight; give each call in "
                                           "flight a staging space of its own"));
    running.wait();
    REQUIRE_FALSE(staging.in_use());
    require_within<float>(data, zcoll_test::sum_of_contributions<float>(3, 3000), running.report().error_bound, "the call in flight");
  });
}

TEST_CASE("Staged reductions in verify mode: a segment of another value type from rank 1 raises the same error on every "
          "rank, and the next call works",
          "[collective][staged][reduction][fault][verify]") {
  const std::string agreed = retyped_allreduce_error({.verify = true});
  CHECK(contains(agreed, "allreduce (staged) (verify): rank "));
  CHECK(contains(agreed, "block from rank 1: stream holds f64 values, not f32"));
}

TEST_CASE("Staged sums on compressed streams in verify mode: a stream of another value type from rank 1 raises the same "
          "error on every rank, and the next call works",
          "[collective][staged][reduction][homomorphic][fault][verify]") {
  const std::string agreed = retyped_allreduce_error({.verify = true, .homomorphic = true});
  CHECK(contains(agreed, "allreduce (staged) (verify): rank "));
  CHECK(contains(agreed, "block from rank 1: "));
}
