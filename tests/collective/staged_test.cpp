// The staged calls (collective/detail/staged_alltoall.hpp, staged_block_work.hpp) on zcoll::HostStaging:
// the steps a call on device buffers takes — batches compressed in the space, bytes staged to host
// buffers, received streams checked on the host and decompressed in batches — with memcpy for the
// copies. Their results are checked against the exact inputs and against the host calls on the same
// data, bit for bit.
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/collective_data.hpp"
#include "support/device_memory_transport.hpp"
#include "support/faulty_transport.hpp"
#include "support/raised_by_ranks.hpp"
#include "support/staging_spaces.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/collective/host_staging.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;
using zcoll_test::raised_by_ranks;
using zcoll_test::DirectHostStaging;
using zcoll_test::TwoStreamBatches;
using zcoll_test::contribution;
using zcoll_test::eb;
using zcoll_test::require_equal;
using zcoll_test::require_within;

namespace {


const std::vector<int> rank_counts = {1, 2, 3, 4, 7, 8, 16};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The codec for a test: row-wise codecs get rows of `row` values.
template <class Codec>
Codec codec_for(std::size_t row) {
  if constexpr (std::is_same_v<Codec, zcoll::Int8>) {
    return Codec{{.shape = {1, row}}};
  } else {
    return Codec{{.error_bound = zcoll::absolute(eb)}};
  }
}

/// The bound an element of a compressed block keeps: the codec's own for casts and row-wise codecs
/// (stated in the report), eb for the others.
template <class Codec>
double element_bound(const zcoll::collective_report& report) {
  if constexpr (std::is_same_v<Codec, zcoll::Identity>) return 0.0;
  else if constexpr (Codec::uses_error_bound) return eb;
  else return report.error_bound;
}

/// One alltoall of `n` values a block on every rank count, staged on `Space` and on the host: equal bit
/// for bit, within the bound of the exact blocks, the own block exact.
template <class Codec, class T, class Space = zcoll::HostStaging>
void check_staged_alltoall(std::size_t n) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, Codec> coll{t, codec_for<Codec>(16)};
      Space staging;
      const auto total = n * static_cast<std::size_t>(p);
      const auto in = contribution<T>(t.rank(), total);
      std::vector<T> staged(total, T(-1)), host(total, T(-2));
      coll.alltoall(staging, std::span<const T>(in), std::span<T>(staged));
      const zcoll::collective_report staged_report = coll.last_report();
      coll.alltoall(std::span<const T>(in), std::span<T>(host));
      const std::string what = std::string("staged alltoall ") + Codec::name() + " p=" + std::to_string(p) + " rank " +
                               std::to_string(t.rank());
      require_equal<T>(staged, host, what + " against the host call");
      for (int src = 0; src < p; ++src) {
        const auto theirs = contribution<T>(src, total);
        const auto block = [&](std::span<const T> values, int b) { return values.subspan(n * static_cast<std::size_t>(b), n); };
        require_within<T>(block(staged, src), block(theirs, t.rank()), src == t.rank() ? 0.0 : element_bound<Codec>(staged_report),
                          what + " from " + std::to_string(src));
      }
      REQUIRE(staged_report.operation == std::string("alltoall (staged)"));
      REQUIRE(staged_report.compressed == (p > 1 && n > 0 && !std::is_same_v<Codec, zcoll::Identity>));
      REQUIRE(staged_report.error_bound == coll.last_report().error_bound);
    });
  }
}

/// Values rank `from` sends rank `to` in the alltoallv tests: 0 for some pairs, up to 640 for others,
/// whole rows of 16.
std::size_t alltoallv_count(int from, int to) {
  return (from + 2 * to) % 5 == 0 ? 0 : static_cast<std::size_t>((from * 131 + to * 71) % 40) * 16;
}

/// One staged alltoallv on every rank count: equal to the host call, small blocks (and the own) exact.
template <class Codec, class Space>
void check_staged_alltoallv(std::size_t min_compressed_bytes) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, Codec> coll{t, codec_for<Codec>(16), {.min_compressed_bytes = min_compressed_bytes}};
      Space staging;
      const int me = t.rank();
      std::vector<std::size_t> send_counts, recv_counts;
      std::vector<float> in;
      for (int b = 0; b < p; ++b) {
        send_counts.push_back(alltoallv_count(me, b));
        recv_counts.push_back(alltoallv_count(b, me));
        const auto block = contribution<float>(me * 100 + b, send_counts.back());
        in.insert(in.end(), block.begin(), block.end());
      }
      const std::size_t received = std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
      std::vector<float> staged(received, -7.0f), host(received, -8.0f);
      coll.alltoallv(staging, std::span<const float>(in), std::span<const std::size_t>(send_counts), std::span<float>(staged),
                     std::span<const std::size_t>(recv_counts));
      const zcoll::collective_report staged_report = coll.last_report();
      coll.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send_counts), std::span<float>(host),
                     std::span<const std::size_t>(recv_counts));
      const std::string what = "staged alltoallv p=" + std::to_string(p) + " rank " + std::to_string(me);
      require_equal<float>(staged, host, what + " against the host call");
      std::size_t at = 0;
      for (int src = 0; src < p; ++src) {
        const auto want = contribution<float>(src * 100 + me, recv_counts[static_cast<std::size_t>(src)]);
        const bool raw = src == me || want.size() * sizeof(float) < min_compressed_bytes;
        require_within<float>(std::span<const float>(staged).subspan(at, want.size()), want,
                              raw ? 0.0 : element_bound<Codec>(staged_report), what + " from " + std::to_string(src));
        at += want.size();
      }
      REQUIRE(staged_report.compressed == coll.last_report().compressed);
      REQUIRE(staged_report.error_bound == coll.last_report().error_bound);
    });
  }
}


}  // namespace

TEST_CASE("Staged alltoall on host staging: the host call's values bit for bit, every element within the bound, "
          "1 to 16 ranks",
          "[collective][alltoall][staged]") {
  check_staged_alltoall<zcoll::FZLight, float>(513);
  check_staged_alltoall<zcoll::FZLight, double>(4100);  // more than one chunk a block
  check_staged_alltoall<zcoll::Int8, float>(16 * 33);
  check_staged_alltoall<zcoll::FP16, float>(257);
  check_staged_alltoall<zcoll::Identity, double>(100);
  check_staged_alltoall<zcoll::FZLight, float, TwoStreamBatches>(300);  // runs of two streams
  check_staged_alltoall<zcoll::FZLight, float>(0);                      // nothing to move
}

TEST_CASE("Staged alltoallv: blocks of every length, empty ones, raw small ones, batches of two streams",
          "[collective][alltoall][staged]") {
  check_staged_alltoallv<zcoll::FZLight, zcoll::HostStaging>(0);
  check_staged_alltoallv<zcoll::FZLight, zcoll::HostStaging>(1000);  // blocks under 250 floats travel raw
  check_staged_alltoallv<zcoll::FZLight, TwoStreamBatches>(1000);    // raw blocks cut the runs too
  check_staged_alltoallv<zcoll::Int8, TwoStreamBatches>(0);
  check_staged_alltoallv<zcoll::Identity, zcoll::HostStaging>(0);
}

TEST_CASE("Staged alltoall and alltoallv with the device transfer (the steps over CUDA-aware MPI): the host calls' "
          "values bit for bit, 1 to 16 ranks",
          "[collective][alltoall][staged][device-transfer]") {
  check_staged_alltoall<zcoll::FZLight, float, DirectHostStaging>(513);
  check_staged_alltoall<zcoll::FZLight, double, DirectHostStaging>(4100);
  check_staged_alltoall<zcoll::Int8, float, DirectHostStaging>(16 * 33);
  check_staged_alltoall<zcoll::Identity, double, DirectHostStaging>(100);
  check_staged_alltoall<zcoll::FZLight, float, DirectHostStaging>(0);
  check_staged_alltoallv<zcoll::FZLight, DirectHostStaging>(1000);  // raw small blocks among the streams
  check_staged_alltoallv<zcoll::Int8, DirectHostStaging>(0);
}

TEST_CASE("Staged alltoallv: the transport is handed the space's device wire areas where it takes device memory "
          "(automatic) or the space says direct, its host areas otherwise",
          "[collective][alltoall][staged][device-transfer]") {
  using zcoll::device_transfer;
  using zcoll::staging_area;
  for (const bool takes : {false, true}) {
    for (const device_transfer transfer : {device_transfer::automatic, device_transfer::through_host, device_transfer::direct}) {
      const bool direct = transfer == device_transfer::direct || (transfer == device_transfer::automatic && takes);
      run_local(4, [&](Local& t) {
        auto blocks = std::make_shared<zcoll_test::DeviceMemoryTransport<Local>::messages>();
        zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{zcoll_test::DeviceMemoryTransport<Local>(t, takes, blocks),
                                                                zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}},
                                                                {.min_compressed_bytes = 1000}};
        zcoll_test::AreaRecordingStaging staging(transfer);
        const int me = t.rank();
        std::vector<std::size_t> send_counts, recv_counts;
        std::vector<float> in;
        for (int b = 0; b < 4; ++b) {
          send_counts.push_back(alltoallv_count(me, b));
          recv_counts.push_back(alltoallv_count(b, me));
          const auto block = contribution<float>(me * 100 + b, send_counts.back());
          in.insert(in.end(), block.begin(), block.end());
        }
        std::vector<float> out(std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0}));
        coll.alltoallv(staging, std::span<const float>(in), std::span<const std::size_t>(send_counts), std::span<float>(out),
                       std::span<const std::size_t>(recv_counts));
        const std::string what = "takes " + std::to_string(takes) + " transfer " + zcoll::to_string(transfer) + " rank " +
                                 std::to_string(me);
        std::size_t at = 0;
        for (int src = 0; src < 4; ++src) {
          const auto want = contribution<float>(src * 100 + me, recv_counts[static_cast<std::size_t>(src)]);
          require_within<float>(std::span<const float>(out).subspan(at, want.size()), want, eb, what + " from " + std::to_string(src));
          at += want.size();
        }
        REQUIRE_FALSE(blocks->empty());
        const staging_area out_area = direct ? staging_area::device_wire_out : staging_area::host_out;
        const staging_area in_area = direct ? staging_area::device_wire_in : staging_area::host_in;
        for (const std::span<const std::byte> block : *blocks) {
          if (!staging.holds(out_area, block) && !staging.holds(in_area, block)) FAIL(what + ": a block met the transport outside the wire areas");
        }
        const staging_area unused_out = direct ? staging_area::host_out : staging_area::device_wire_out;
        if (staging.handed(unused_out)) FAIL(what + ": the other wire's area was used");
      });
    }
  }
}

namespace {

/// Whether `bytes` lies in one of the areas of `staging` that are the space's device memory.
bool in_device_area(const zcoll_test::AreaRecordingStaging& staging, std::span<const std::byte> bytes) {
  using zcoll::staging_area;
  for (const staging_area area : {staging_area::device_out, staging_area::device_in, staging_area::device_work,
                                  staging_area::device_values, staging_area::device_incoming, staging_area::device_wire_out,
                                  staging_area::device_wire_in}) {
    if (staging.holds(area, bytes)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("Staged allgather and allreduce: every block message is the space's device memory where the transport takes "
          "it, and none is where it does not",
          "[collective][staged][device-transfer]") {
  for (const bool takes : {false, true}) {
    run_local(4, [&](Local& t) {
      auto blocks = std::make_shared<zcoll_test::DeviceMemoryTransport<Local>::messages>();
      const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb)}};
      zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> doubling{zcoll_test::DeviceMemoryTransport<Local>(t, takes, blocks), codec};
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{zcoll_test::DeviceMemoryTransport<Local>(t, takes, blocks), codec,
                                                          {.pipeline_values = 256}};
      zcoll_test::AreaRecordingStaging staging;
      const std::string what = "takes " + std::to_string(takes) + " rank " + std::to_string(t.rank());
      const auto check_blocks = [&](const std::string& call) {
        if (blocks->empty()) FAIL(what + " " + call + ": no block message");
        for (const std::span<const std::byte> block : *blocks) {
          if (in_device_area(staging, block) != takes) FAIL(what + " " + call + ": a block message in the wrong memory");
        }
        blocks->clear();
        staging.forget();
      };
      const std::size_t n = 1000;
      const auto mine = contribution<float>(t.rank(), n);
      std::vector<float> all(4 * n);
      doubling.allgather(staging, std::span<const float>(mine), std::span<float>(all));
      check_blocks("allgather");
      for (int r = 0; r < 4; ++r) {
        require_within<float>(std::span<const float>(all).subspan(n * static_cast<std::size_t>(r), n), contribution<float>(r, n),
                              r == t.rank() ? 0.0 : eb, what + " allgather block " + std::to_string(r));
      }
      std::vector<float> sum = contribution<float>(t.rank(), 4 * n);
      ring.allreduce(staging, std::span<float>(sum), zcoll::op::sum);
      check_blocks("ring allreduce");
      require_within<float>(sum, zcoll_test::sum_of_contributions<float>(4, 4 * n), ring.last_report().error_bound, what + " allreduce");
      sum = contribution<float>(t.rank(), 4 * n);
      doubling.allreduce(staging, std::span<float>(sum), zcoll::op::sum);
      check_blocks("recursive-doubling allreduce");
      require_within<float>(sum, zcoll_test::sum_of_contributions<float>(4, 4 * n), doubling.last_report().error_bound,
                            what + " recursive-doubling allreduce");
    });
  }
}

TEST_CASE("A direct transfer over a transport that does not take device memory is refused before the call starts",
          "[collective][alltoall][staged][device-transfer]") {
  run_local(3, [](Local& t) {
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    zcoll_test::DeviceOnlyStaging staging;
    const auto in = contribution<float>(t.rank(), 3 * 600);
    std::vector<float> out(in.size());
    const std::string refused = zcoll_test::error_of<zcoll::argument_error>([&] {
      coll.alltoall(staging, std::span<const float>(in), std::span<float>(out));
    });
    REQUIRE(contains(refused, "alltoall (staged): the staging space's transfer is device_transfer::direct, but the transport "
                              "does not take device memory"));
    REQUIRE_FALSE(staging.in_use());
    coll.alltoall(std::span<const float>(in), std::span<float>(out));  // the collective goes on
  });
  run_local(3, [](Local& t) {  // the same space over a transport that takes device memory
    auto blocks = std::make_shared<zcoll_test::DeviceMemoryTransport<Local>::messages>();
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{zcoll_test::DeviceMemoryTransport<Local>(t, true, blocks),
                                                            zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    zcoll_test::DeviceOnlyStaging staging;
    const auto in = contribution<float>(t.rank(), 3 * 600);
    std::vector<float> out(in.size());
    coll.alltoall(staging, std::span<const float>(in), std::span<float>(out));
    for (int src = 0; src < 3; ++src) {
      const auto theirs = contribution<float>(src, 3 * 600);
      require_within<float>(std::span<const float>(out).subspan(600 * static_cast<std::size_t>(src), 600),
                            std::span<const float>(theirs).subspan(600 * static_cast<std::size_t>(t.rank()), 600),
                            src == t.rank() ? 0.0 : eb, "from " + std::to_string(src));
    }
  });
}

namespace {

/// One data-movement call made staged (on `Space`) and on the host by `call(coll, space or nullptr, out)`
/// on every rank count: the same values bit for bit, and `check(out, rank, p, report)` on the staged ones.
template <class Schedule, class Codec, class Space, class Call, class Check>
void compare_with_host(const char* name, std::size_t out_values_per_rank, zcoll::collective_config config, Call call, Check check) {
  for (int p : rank_counts) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<Schedule, Codec> coll{t, codec_for<Codec>(16), config};
      Space staging;
      const std::size_t n = out_values_per_rank * static_cast<std::size_t>(p);
      std::vector<float> staged(n, -1.0f), host(n, -1.0f);  // what a call does not write stays -1 in both
      call(coll, &staging, std::span<float>(staged));
      const zcoll::collective_report report = coll.last_report();
      call(coll, static_cast<Space*>(nullptr), std::span<float>(host));
      const std::string what = std::string(name) + " " + Schedule::name + " " + Codec::name() + " p=" + std::to_string(p) +
                               " rank " + std::to_string(t.rank());
      require_equal<float>(staged, host, what + " against the host call");
      REQUIRE(report.error_bound == coll.last_report().error_bound);
      REQUIRE(report.compressed == coll.last_report().compressed);
      check(std::span<const float>(staged), t.rank(), p, report, what);
    });
  }
}

/// Staged allgather of `n` values a rank (rank r's are contribution(r, n)).
template <class Schedule, class Codec, class Space = zcoll::HostStaging>
void check_staged_allgather(std::size_t n, zcoll::collective_config config = {}) {
  compare_with_host<Schedule, Codec, Space>(
      "allgather", n, config,
      [n](auto& coll, Space* staging, std::span<float> all) {
        const auto mine = contribution<float>(coll.rank(), n);
        if (staging) coll.allgather(*staging, std::span<const float>(mine), all);
        else coll.allgather(std::span<const float>(mine), all);
      },
      [n](std::span<const float> all, int me, int p, const zcoll::collective_report& report, const std::string& what) {
        for (int r = 0; r < p; ++r) {
          require_within<float>(all.subspan(n * static_cast<std::size_t>(r), n), contribution<float>(r, n),
                                r == me ? 0.0 : element_bound<Codec>(report), what + " block " + std::to_string(r));
        }
      });
}

/// Staged bcast of `n` values from every root (from roots 0 and p - 1 beyond 4 ranks).
template <class Schedule, class Codec, class Space = zcoll::HostStaging>
void check_staged_bcast(std::size_t n) {
  for (const int root_of_last : {0, 1}) {
    compare_with_host<Schedule, Codec, Space>(
        "bcast", n, {},
        [n, root_of_last](auto& coll, Space* staging, std::span<float> data) {
          const int root = root_of_last ? coll.size() - 1 : 0;
          const auto sent = contribution<float>(root + 50, n * static_cast<std::size_t>(coll.size()));
          if (coll.rank() == root) std::copy(sent.begin(), sent.end(), data.begin());
          if (staging) coll.bcast(*staging, data, root);
          else coll.bcast(data, root);
        },
        [n, root_of_last](std::span<const float> data, int me, int p, const zcoll::collective_report& report, const std::string& what) {
          const int root = root_of_last ? p - 1 : 0;
          require_within<float>(data, contribution<float>(root + 50, n * static_cast<std::size_t>(p)),
                                me == root ? 0.0 : element_bound<Codec>(report), what + " root " + std::to_string(root));
        });
  }
}

/// Staged scatter and gather of `n` values a rank over a binomial tree, roots 0 and p - 1.
template <class Codec, class Space = zcoll::HostStaging>
void check_staged_scatter_gather(std::size_t n) {
  for (const int root_of_last : {0, 1}) {
    compare_with_host<zcoll::BinomialTree, Codec, Space>(
        "scatter", n, {},
        [n, root_of_last](auto& coll, Space* staging, std::span<float> out) {
          const int root = root_of_last ? coll.size() - 1 : 0;
          const auto all = contribution<float>(root + 70, n * static_cast<std::size_t>(coll.size()));
          const std::span<const float> sent = coll.rank() == root ? std::span<const float>(all) : std::span<const float>{};
          if (staging) coll.scatter(*staging, sent, out.first(n), root);
          else coll.scatter(sent, out.first(n), root);
        },
        [n, root_of_last](std::span<const float> out, int me, int p, const zcoll::collective_report& report, const std::string& what) {
          const int root = root_of_last ? p - 1 : 0;
          const auto all = contribution<float>(root + 70, n * static_cast<std::size_t>(p));
          require_within<float>(out.first(n), std::span<const float>(all).subspan(n * static_cast<std::size_t>(me), n),
                                me == root ? 0.0 : element_bound<Codec>(report), what);
        });
    compare_with_host<zcoll::BinomialTree, Codec, Space>(
        "gather", n, {},
        [n, root_of_last](auto& coll, Space* staging, std::span<float> all) {
          const int root = root_of_last ? coll.size() - 1 : 0;
          const auto mine = contribution<float>(coll.rank() + 90, n);
          const std::span<float> into = coll.rank() == root ? all : std::span<float>{};
          if (staging) coll.gather(*staging, std::span<const float>(mine), into, root);
          else coll.gather(std::span<const float>(mine), into, root);
        },
        [n, root_of_last](std::span<const float> all, int me, int p, const zcoll::collective_report& report, const std::string& what) {
          const int root = root_of_last ? p - 1 : 0;
          if (me != root) return;
          for (int r = 0; r < p; ++r) {
            require_within<float>(all.subspan(n * static_cast<std::size_t>(r), n), contribution<float>(r + 90, n),
                                  r == root ? 0.0 : element_bound<Codec>(report), what + " block " + std::to_string(r));
          }
        });
  }
}

}  // namespace

TEST_CASE("Staged allgather, bcast, scatter and gather on host staging: the host calls' values bit for bit, within "
          "the bound, 1 to 16 ranks",
          "[collective][staged]") {
  check_staged_allgather<zcoll::Ring, zcoll::FZLight>(1000);
  check_staged_allgather<zcoll::RecursiveDoubling, zcoll::FZLight>(777);
  check_staged_allgather<zcoll::Ring, zcoll::Int8>(16 * 9);
  check_staged_allgather<zcoll::Ring, zcoll::FP16>(300);
  check_staged_allgather<zcoll::Ring, zcoll::Identity>(100);
  check_staged_allgather<zcoll::Ring, zcoll::FZLight>(100, {.min_compressed_bytes = 1000});  // raw: staged both ways
  check_staged_bcast<zcoll::BinomialTree, zcoll::FZLight>(700);
  check_staged_bcast<zcoll::ScatterAllgather, zcoll::FZLight>(700);                       // the root holds every piece
  check_staged_bcast<zcoll::ScatterAllgather, zcoll::FZLight, TwoStreamBatches>(700);     // cut into batches of two
  check_staged_bcast<zcoll::Chain<4>, zcoll::FZLight>(555);
  check_staged_bcast<zcoll::BinomialTree, zcoll::Int8>(16 * 20);
  check_staged_scatter_gather<zcoll::FZLight>(900);
  check_staged_scatter_gather<zcoll::FZLight, TwoStreamBatches>(900);
  check_staged_scatter_gather<zcoll::Identity>(50);
}

TEST_CASE("Staged allgather, bcast, scatter and gather with the device transfer (the steps over CUDA-aware MPI): the "
          "host calls' values bit for bit, within the bound, 1 to 16 ranks",
          "[collective][staged][device-transfer]") {
  check_staged_allgather<zcoll::Ring, zcoll::FZLight, DirectHostStaging>(1000);
  check_staged_allgather<zcoll::RecursiveDoubling, zcoll::FZLight, DirectHostStaging>(777);  // sends of blocks packed on the device
  check_staged_allgather<zcoll::Ring, zcoll::Int8, DirectHostStaging>(16 * 9);
  check_staged_allgather<zcoll::Ring, zcoll::Identity, DirectHostStaging>(100);
  check_staged_allgather<zcoll::RecursiveDoubling, zcoll::FZLight, DirectHostStaging>(100, {.min_compressed_bytes = 1000});  // raw
  check_staged_bcast<zcoll::ScatterAllgather, zcoll::FZLight, DirectHostStaging>(700);
  check_staged_bcast<zcoll::Chain<4>, zcoll::FZLight, DirectHostStaging>(555);
  check_staged_scatter_gather<zcoll::FZLight, DirectHostStaging>(900);
  check_staged_scatter_gather<zcoll::Identity, DirectHostStaging>(50);
}

TEST_CASE("Staged calls: argument errors name the argument, a space serves one call in flight, and is reused by "
          "calls of other sizes",
          "[collective][alltoall][staged]") {
  run_local(3, [](Local& t) {
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
    zcoll::HostStaging staging;
    std::vector<float> in(10), out(10);
    REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                   coll.alltoall(staging, std::span<const float>(in), std::span<float>(out));
                 }),
                 Catch::Matchers::EndsWith("alltoall: in has 10 values, not a multiple of the 3 ranks"));
    const std::vector<std::size_t> counts = {1, 2, 3};
    REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                   coll.alltoallv(staging, std::span<const float>(in), std::span<const std::size_t>(counts), std::span<float>(out),
                                  std::span<const std::size_t>(counts));
                 }),
                 Catch::Matchers::EndsWith("alltoallv: send_counts add up to 6 values, in holds 10"));
    REQUIRE_FALSE(staging.in_use());  // a refused call does not keep the space
    // Calls of growing and shrinking sizes on one space, one after the other; two in flight at once are refused.
    for (const std::size_t n : {3000u, 12u, 9000u, 0u, 700u}) {
      const auto values = contribution<float>(t.rank(), 3 * n);
      std::vector<float> got(3 * n);
      auto request = coll.alltoall_async(staging, std::span<const float>(values), std::span<float>(got));
      std::vector<float> other(3 * n);
      REQUIRE_THAT(zcoll_test::error_of<zcoll::argument_error>([&] {
                     (void)coll.alltoall_async(staging, std::span<const float>(values), std::span<float>(other));
                   }),
                   Catch::Matchers::EndsWith("alltoall (staged): staging is lent to a call still in flight; give each "
                                             "call in flight a staging space of its own"));
      request.wait();
      REQUIRE_FALSE(staging.in_use());
      for (int src = 0; src < 3; ++src) {
        const auto theirs = contribution<float>(src, 3 * n);
        require_within<float>(std::span<const float>(got).subspan(n * static_cast<std::size_t>(src), n),
                              std::span<const float>(theirs).subspan(n * static_cast<std::size_t>(t.rank()), n),
                              src == t.rank() ? 0.0 : eb, "n=" + std::to_string(n));
      }
    }
  });
}

TEST_CASE("Staged calls in verify mode: a damaged block, counts that disagree, a row the codec refuses and a rank "
          "that makes the host call: every rank raises the same error, and the collective goes on",
          "[collective][alltoall][staged][fault][verify]") {
  using Faulty = zcoll_test::Faulty<Local>;
  const zcoll::collective_config verify{.verify = true};
  constexpr std::size_t n = 1600;
  const auto alltoall = [](auto& coll, auto& staging, int rank) {
    const auto in = contribution<float>(rank, n * 4);
    std::vector<float> out(n * 4);
    coll.alltoall(staging, std::span<const float>(in), std::span<float>(out));
    return out;
  };
  SECTION("a block of another value type from rank 1") {
    raised_by_ranks raised;
    run_local(4, [&](Local& t) {
      auto armed = std::make_shared<std::atomic<bool>>(true);
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{Faulty(t, 1, zcoll_test::retype, armed),
                                                              zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, verify};
      zcoll::HostStaging staging;
      raised.add(zcoll_test::error_of<zcoll::format_error>([&] { alltoall(coll, staging, t.rank()); }));
      *armed = false;
      const auto out = alltoall(coll, staging, t.rank());  // nothing left behind: the next call works
      require_within<float>(std::span<const float>(out).first(n), std::span<const float>(contribution<float>(0, n * 4)).subspan(n * static_cast<std::size_t>(t.rank()), n),
                            t.rank() == 0 ? 0.0 : eb, "after the failed call");
    });
    const std::string agreed = raised.agreed();
    CHECK(contains(agreed, "alltoall (staged) (verify): rank "));
    CHECK(contains(agreed, "block from rank 1: stream holds f64 values, not f32"));
  }
  SECTION("alltoallv counts that disagree") {
    raised_by_ranks raised;
    run_local(4, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, verify};
      zcoll::HostStaging staging;
      std::vector<std::size_t> send(4, 500), recv(4, 500);
      if (t.rank() == 1) send[3] = 499;  // rank 3 expects 500
      const auto in = contribution<float>(t.rank(), std::accumulate(send.begin(), send.end(), std::size_t{0}));
      std::vector<float> out(2000);
      raised.add(zcoll_test::error_of<zcoll::format_error>([&] {
        coll.alltoallv(staging, std::span<const float>(in), std::span<const std::size_t>(send), std::span<float>(out),
                       std::span<const std::size_t>(recv));
      }));
    });
    const std::string agreed = raised.agreed();
    CHECK(contains(agreed, "rank 1 sends a block of 499 values where this rank expects 500"));
  }
  SECTION("a NaN in a row of Int8") {
    raised_by_ranks raised;
    run_local(3, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::Int8> coll{t, zcoll::Int8{{.shape = {1, 16}}}, verify};
      zcoll::HostStaging staging;
      auto in = contribution<float>(t.rank(), 3 * 64);
      if (t.rank() == 2) in[5] = std::numeric_limits<float>::quiet_NaN();  // in rank 2's block for rank 0
      std::vector<float> out(in.size());
      raised.add(zcoll_test::error_of<zcoll::error>([&] {
        coll.alltoall(staging, std::span<const float>(in), std::span<float>(out));
      }));
    });
    const std::string agreed = raised.agreed();
    CHECK(contains(agreed, "alltoall (staged) (verify): rank 2 failed: quantize_rows: row 0, column 5 holds nan"));
  }
  SECTION("a space lent to a call in flight") {
    raised_by_ranks raised;
    run_local(3, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, verify};
      zcoll::HostStaging staging;
      const auto in = contribution<float>(t.rank(), 3 * 500);
      std::vector<float> first(in.size()), second(in.size());
      auto running = coll.alltoall_async(staging, std::span<const float>(in), std::span<float>(first));
      auto refused = coll.alltoall_async(staging, std::span<const float>(in), std::span<float>(second));
      raised.add(zcoll_test::error_of<zcoll::argument_error>([&] { refused.wait(); }));
      running.wait();  // the call that holds the space completes
      for (int src = 0; src < 3; ++src) {
        require_within<float>(std::span<const float>(first).subspan(500 * static_cast<std::size_t>(src), 500),
                              std::span<const float>(contribution<float>(src, 3 * 500)).subspan(500 * static_cast<std::size_t>(t.rank()), 500),
                              src == t.rank() ? 0.0 : eb, "the call in flight");
      }
    });
    const std::string agreed = raised.agreed();
    CHECK(contains(agreed, "staging is lent to a call still in flight"));
  }
  SECTION("one rank makes the host call") {
    raised_by_ranks raised;
    run_local(3, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, verify};
      zcoll::HostStaging staging;
      const auto in = contribution<float>(t.rank(), 3 * 100);
      std::vector<float> out(in.size());
      raised.add(zcoll_test::error_of<zcoll::argument_error>([&] {
        if (t.rank() == 2) {
          coll.alltoall(std::span<const float>(in), std::span<float>(out));
        } else {
          coll.alltoall(staging, std::span<const float>(in), std::span<float>(out));
        }
      }));
    });
    // Each rank names its own call; all name rank 2's operation as the one that differs.
    const std::set<std::string> texts = raised.all();
    CHECK(texts.size() == 2);
    for (const std::string& text : texts) CHECK(contains(text, "rank 2 passed operation"));
  }
}

TEST_CASE("Staged calls with a peer whose messages are damaged at random: an error on every rank or values, never a "
          "crash or a hang (verify mode)",
          "[collective][staged][fault][verify]") {
  using Faulty = zcoll_test::Faulty<Local>;
  constexpr std::size_t n = 1500;
  std::set<std::string> outcomes;
  for (std::uint32_t seed = 1; seed <= 24; ++seed) {
    // Flips a few bits of every block rank 1 sends, and for odd seeds of its size words too (verify mode's
    // own messages, on a tag of their own, are left alone: they are what makes every rank raise the same
    // error).
    const auto damage = [seed](int tag, std::vector<std::byte>& bytes) {
      if (tag != zcoll_test::data_tag && (tag != zcoll_test::size_tag || seed % 2 == 0)) return;
      std::uint32_t state = seed * 2654435761u + static_cast<std::uint32_t>(bytes.size());
      for (int k = 0; k < 3 && !bytes.empty(); ++k) {
        state = state * 1664525u + 1013904223u;
        bytes[state % bytes.size()] ^= std::byte{static_cast<unsigned char>(1u << (state >> 29))};
      }
    };
    raised_by_ranks raised;
    run_local(3, [&](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{Faulty(t, 1, damage), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}},
                                                                  {.verify = true}};
      zcoll::Compressed<zcoll::Ring, zcoll::Int8> ring{Faulty(t, 1, damage), zcoll::Int8{{.shape = {1, 50}}}, {.verify = true}};
      zcoll::HostStaging staging;
      DirectHostStaging direct;  // the received headers copied out of the device wire
      const auto in = contribution<float>(t.rank(), 3 * n);
      std::vector<float> out(3 * n);
      std::string errors;
      try {
        pairwise.alltoall(staging, std::span<const float>(in), std::span<float>(out));
      } catch (const zcoll::error& e) {
        errors += e.what();
      }
      try {
        pairwise.alltoall(direct, std::span<const float>(in), std::span<float>(out));
      } catch (const zcoll::error& e) {
        errors += e.what();
      }
      try {
        ring.allgather(staging, std::span<const float>(in).first(n), std::span<float>(out));
      } catch (const zcoll::error& e) {
        errors += e.what();
      }
      raised.add(errors.empty() ? "none" : errors);
    });
    INFO("seed " << seed);
    const std::string agreed = raised.agreed();  // the same outcome on every rank
    CHECK_FALSE(agreed.empty());
    outcomes.insert(agreed);
  }
  // The seeds reach both checks: size words the receiver refuses, and streams its decoder refuses.
  const auto any = [&](const std::string& part) {
    return std::any_of(outcomes.begin(), outcomes.end(), [&](const std::string& o) { return contains(o, part); });
  };
  CHECK(any("rank 1 sends a block of"));
  CHECK(any("block from rank 1: "));
}
