// Collectives under faults, on transport::Local (docs/reliability.md): a peer that sends a damaged, wrongly
// typed, short or wrongly sized block; ranks called with different counts; a rank whose codec refuses its
// values in the middle of a reduction. Without verify mode the rank that meets the fault raises an error
// naming the peer, and the others end (Local aborts the group, as an MPI job ends on an uncaught error);
// with verify mode every rank raises the same error and the collective stays usable. No case may hang:
// ctest runs these under a timeout.
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/collective_data.hpp"
#include "support/faulty_transport.hpp"
#include "support/raised_by_ranks.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;
using zcoll_test::raised_by_ranks;
using zcoll_test::contribution;
using zcoll_test::eb;

namespace {


using Faulty = zcoll_test::Faulty<Local>;
using zcoll_test::data_tag;
using zcoll_test::error_of;
using zcoll_test::retype;
using zcoll_test::size_tag;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("Without verify: a damaged or wrongly typed block is a format_error naming the sending rank",
          "[collective][fault]") {
  // Pairwise: every block comes straight from its owner, so whichever rank meets it first names rank 1.
  std::string raised = error_of<zcoll::format_error>([] {
    run_local(4, [](Local& t) {
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{Faulty(t, 1, retype), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      const auto in = contribution<float>(t.rank(), 3000 * 4);
      std::vector<float> out(in.size());
      coll.alltoall(std::span<const float>(in), std::span<float>(out));
    });
  });
  CHECK(contains(raised, "block from rank 1: stream holds f64 values, not f32"));
  // Forwarded blocks (a ring): the receiver names the rank the bytes came from.
  raised = error_of<zcoll::format_error>([] {
    run_local(4, [](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{Faulty(t, 1, retype), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      const auto mine = contribution<float>(t.rank(), 3000);
      std::vector<float> all(3000 * 4);
      coll.allgather(std::span<const float>(mine), std::span<float>(all));
    });
  });
  CHECK(contains(raised, "block from rank "));
  const auto flip_everything = [](int tag, std::vector<std::byte>& bytes) {
    for (std::size_t i = 40; tag == data_tag && i < bytes.size(); i += 3) bytes[i] ^= std::byte{0xA5};
  };
  // Damage past the header may decode to wrong values or be found out; either way nothing hangs.
  CHECK_NOTHROW(error_of<zcoll::error>([&] {
    run_local(3, [&](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{Faulty(t, 2, flip_everything), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      auto data = contribution<float>(t.rank(), 9000);
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
    });
  }));
}

TEST_CASE("Without verify: short blocks and hostile size words are errors naming the sending rank",
          "[collective][fault]") {
  // Size words 10 bytes short, and the bytes too: the sizes agree with what arrives, the stream inside is
  // truncated.
  const auto short_and_agreeing = [](int tag, std::vector<std::byte>& bytes) {
    if (tag == size_tag) {
      for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
        std::uint64_t v;
        std::memcpy(&v, bytes.data() + i, 8);
        v -= 10;
        std::memcpy(bytes.data() + i, &v, 8);
      }
    }
    if (tag == data_tag) bytes.resize(bytes.size() - 10);
  };
  const auto bcast_with = [](Faulty::damage_fn damage) {
    run_local(3, [&](Local& t) {
      zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> coll{Faulty(t, 0, damage), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      auto data = contribution<float>(t.rank(), 4000);
      coll.bcast(std::span<float>(data), 0);
    });
  };
  std::string raised = error_of<zcoll::format_error>([&] { bcast_with(short_and_agreeing); });
  CHECK(contains(raised, "block from rank 0"));
  // The bytes short of what the size word announced: the message is of another size.
  raised = error_of<zcoll::transport_error>([&] {
    bcast_with([](int tag, std::vector<std::byte>& bytes) {
      if (tag == data_tag) bytes.resize(bytes.size() / 2);
    });
  });
  CHECK(contains(raised, "from rank 0"));
  // A size word of 2^60: refused before anything is allocated for it.
  raised = error_of<zcoll::format_error>([&] {
    bcast_with([](int tag, std::vector<std::byte>& bytes) {
      const std::uint64_t huge = std::uint64_t{1} << 60;
      if (tag == size_tag && bytes.size() >= 8) std::memcpy(bytes.data(), &huge, 8);
    });
  });
  CHECK(contains(raised, "rank 0 announced a compressed block of 1152921504606846976 bytes"));
}

TEST_CASE("Without verify: ranks called with different counts fail instead of waiting for segments that never "
          "come",
          "[collective][fault]") {
  // Rank 1's blocks are cut into three segments, rank 0's into two: without the counts in each hop
  // header, rank 1 would wait for a third segment.
  const std::string raised = error_of<zcoll::error>([] {
    run_local(2, [](Local& t) {
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.pipeline_values = 1000}};
      auto data = contribution<float>(t.rank(), t.rank() == 0 ? 4000 : 6000);
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
    });
  });
  INFO(raised);
  CHECK(contains(raised, "were the ranks called with the same count"));
  // Data movement: the block lengths differ.
  CHECK_FALSE(error_of<zcoll::error>([] {
                run_local(3, [](Local& t) {
                  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
                  const auto mine = contribution<float>(t.rank(), t.rank() == 2 ? 500 : 400);
                  std::vector<float> all(mine.size() * 3);
                  coll.allgather(std::span<const float>(mine), std::span<float>(all));
                });
              }).empty());
}

TEST_CASE("Verify mode: ranks called with different counts or roots all raise the same argument_error, "
          "and the collective stays usable",
          "[collective][fault][verify]") {
  raised_by_ranks counts, roots;
  run_local(3, [&](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.pipeline_values = 1000, .verify = true}};
    auto data = contribution<float>(t.rank(), t.rank() == 2 ? 6000 : 4500);
    counts.add(error_of<zcoll::argument_error>([&] { coll.allreduce(std::span<float>(data), zcoll::op::sum); }));
    zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> tree{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.verify = true}};
    roots.add(error_of<zcoll::argument_error>([&] { tree.bcast(std::span<float>(data).first(300), t.rank() == 1 ? 5 : 0); }));
    // Then a good call on both.
    auto good = contribution<float>(t.rank(), 4500);
    coll.allreduce(std::span<float>(good), zcoll::op::sum);
    const auto want = zcoll_test::sum_of_contributions<float>(3, 4500);
    zcoll_test::require_within<float>(good, want, coll.last_report().error_bound, "allreduce after the failed call");
    tree.bcast(std::span<float>(good).first(300), 2);
  });
  // (agreed() asserts: never inside another assertion, which holds the assertion lock)
  const std::string count_error = counts.agreed(), root_error = roots.agreed();
  CHECK(contains(count_error, "allreduce (verify): rank 2 passed count 6000 where rank 0 passed 4500"));
  CHECK(contains(root_error, "bcast (verify): rank 1 failed: bcast: root 5 is not in [0, 3)"));
}

TEST_CASE("A rank whose codec refuses its values in the middle of a reduction: without verify its error "
          "ends the call everywhere; with verify every rank raises it",
          "[collective][fault][verify]") {
  // Int8 cannot scale a row that spans -3e38 .. 3e38 (its scale would exceed FLT_MAX): rank 2 throws
  // while the others are already exchanging.
  const auto values = [](int rank, std::size_t n) {
    auto v = contribution<float>(rank, n);
    if (rank == 2) v[40] = -3e38f, v[41] = 3e38f;
    return v;
  };
  for (const bool verify : {false, true}) {
    INFO("verify " << verify);
    raised_by_ranks raised;
    const std::string escaped = error_of<zcoll::argument_error>([&] {
      run_local(4, [&](Local& t) {
        zcoll::Compressed<zcoll::Ring, zcoll::Int8> coll{t, zcoll::Int8{{.shape = {16}}}, {.verify = verify}};
        auto data = values(t.rank(), 4 * 16 * 20);
        if (!verify) {  // rank 2's error escapes its thread, and run_local ends the others (an MPI job would)
          coll.allreduce(std::span<float>(data), zcoll::op::sum);
          return;
        }
        raised.add(error_of<zcoll::argument_error>([&] { coll.allreduce(std::span<float>(data), zcoll::op::sum); }));
        auto good = contribution<float>(t.rank(), 4 * 16 * 20);
        coll.allreduce(std::span<float>(good), zcoll::op::sum);  // usable after the failed call
        const auto want = zcoll_test::sum_of_contributions<float>(4, good.size());
        // Int8's bound, plus 4 roundings of float sums under 256 in magnitude (half an ulp, 2^-16, each).
        zcoll_test::require_within<float>(good, want, coll.last_report().error_bound + 4 * std::ldexp(1.0, -16),
                                          "Int8 allreduce after the failed call");
      });
    });
    if (verify) {
      CHECK(escaped.empty());
      const std::string agreed = raised.agreed();
      CHECK(contains(agreed, "allreduce (verify): rank 2 failed:"));
      CHECK(contains(agreed, "FLT_MAX"));
    } else {
      CHECK(contains(escaped, "FLT_MAX"));  // rank 2's own error, rethrown by run_local
    }
  }
}

namespace {

/// One operation of every kind, on 4 ranks, each block damaged by rank 1 (the root of rooted ones).
using call = std::function<void(Faulty)>;

template <class S>
zcoll::Compressed<S, zcoll::FZLight> verified(Faulty t) {
  return zcoll::Compressed<S, zcoll::FZLight>{std::move(t), zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.pipeline_values = 700, .verify = true}};
}

const std::vector<std::pair<std::string, call>>& every_operation() {
  constexpr std::size_t n = 2400;
  static const std::vector<std::pair<std::string, call>> ops = {
      {"allgather", [](Faulty t) {
         auto coll = verified<zcoll::Ring>(t);
         const auto mine = contribution<float>(t.rank(), n);
         std::vector<float> all(n * 4);
         coll.allgather(std::span<const float>(mine), std::span<float>(all));
       }},
      {"bcast", [](Faulty t) {
         auto coll = verified<zcoll::Chain<>>(t);
         auto data = contribution<float>(t.rank(), n);
         coll.bcast(std::span<float>(data), 1);
       }},
      {"scatter", [](Faulty t) {
         auto coll = verified<zcoll::BinomialTree>(t);
         const auto all = contribution<float>(t.rank(), n * 4);
         std::vector<float> mine(n);
         coll.scatter(std::span<const float>(all), std::span<float>(mine), 1);
       }},
      {"gather", [](Faulty t) {
         auto coll = verified<zcoll::BinomialTree>(t);
         const auto mine = contribution<float>(t.rank(), n);
         std::vector<float> all(n * 4);
         coll.gather(std::span<const float>(mine), std::span<float>(all), 0);
       }},
      {"alltoall", [](Faulty t) {
         auto coll = verified<zcoll::Pairwise>(t);
         const auto in = contribution<float>(t.rank(), n * 4);
         std::vector<float> out(n * 4);
         coll.alltoall(std::span<const float>(in), std::span<float>(out));
       }},
      {"alltoallv", [](Faulty t) {
         auto coll = verified<zcoll::Pairwise>(t);
         const std::vector<std::size_t> counts = {n, n / 2, n, 3};
         const auto in = contribution<float>(t.rank(), 2 * n + n / 2 + 3);
         std::vector<float> out(counts[static_cast<std::size_t>(t.rank())] * 4);
         const std::vector<std::size_t> recv(4, counts[static_cast<std::size_t>(t.rank())]);
         coll.alltoallv(std::span<const float>(in), std::span<const std::size_t>(counts), std::span<float>(out),
                        std::span<const std::size_t>(recv));
       }},
      {"reduce_scatter", [](Faulty t) {
         auto coll = verified<zcoll::Ring>(t);
         const auto in = contribution<float>(t.rank(), n * 4);
         std::vector<float> out(n);
         coll.reduce_scatter(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
       }},
      {"allreduce", [](Faulty t) {
         auto coll = verified<zcoll::RecursiveDoubling>(t);
         auto data = contribution<float>(t.rank(), n);
         coll.allreduce(std::span<float>(data), zcoll::op::max);
       }},
  };
  return ops;
}

}  // namespace

TEST_CASE("Verify mode, every operation: a peer's damaged block makes every rank raise the same format_error "
          "naming the sender, and leaves no message behind",
          "[collective][fault][verify]") {
  for (const auto& operation : every_operation()) {
    const std::string& name = operation.first;
    const call& run = operation.second;  // not a structured binding: clang 14 cannot capture one in a lambda
    INFO(name);
    raised_by_ranks raised;
    run_local(4, [&](Local& t) {
      auto armed = std::make_shared<std::atomic<bool>>(true);
      const Faulty faulty(t, 1, retype, armed);
      raised.add(error_of<zcoll::format_error>([&] { run(faulty); }));
      *armed = false;
      run(faulty);  // the same transport, nothing damaged: no message was left behind (reusing one object: below)
    });
    const std::string agreed = raised.agreed();
    CHECK(contains(agreed, name + " (verify): rank "));
    CHECK(contains(agreed, "block from rank 1"));
  }
}

TEST_CASE("Verify mode: damaged size words and hop headers, alltoallv counts that disagree, blocks that are not "
          "whole rows: every rank raises the same error, and the same collectives go on",
          "[collective][fault][verify]") {
  const auto huge_size_word = [](int tag, std::vector<std::byte>& bytes) {
    const std::uint64_t huge = std::uint64_t{1} << 60;
    if (tag == size_tag && bytes.size() >= 8) std::memcpy(bytes.data(), &huge, 8);
  };
  const auto nan_bound = [](int tag, std::vector<std::byte>& bytes) {  // a hop header's second field
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (tag == size_tag && bytes.size() == 40) std::memcpy(bytes.data() + 8, &nan, 8);
  };
  raised_by_ranks sizes, bounds, counts, rows;
  run_local(4, [&](Local& t) {
    const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb)}};
    const zcoll::collective_config verify{.pipeline_values = 700, .verify = true};
    auto armed = std::make_shared<std::atomic<bool>>(true);
    zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> tree{Faulty(t, 0, huge_size_word, armed), codec, verify};
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{Faulty(t, 2, nan_bound, armed), codec, verify};
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{t, codec, verify};
    zcoll::Compressed<zcoll::Ring, zcoll::Int8> rowwise{t, zcoll::Int8{{.shape = {16}}}, {.verify = true}};
    auto data = contribution<float>(t.rank(), 4000);
    sizes.add(error_of<zcoll::format_error>([&] { tree.bcast(std::span<float>(data), 0); }));
    bounds.add(error_of<zcoll::format_error>([&] { ring.allreduce(std::span<float>(data), zcoll::op::sum); }));
    // Rank 3 expects 11 values from rank 1, which sends 10.
    const std::vector<std::size_t> send = {10, 10, 10, 10};
    const auto recv = t.rank() == 3 ? std::vector<std::size_t>{10, 11, 10, 10} : send;
    std::vector<float> in(40, 1.0f), out(t.rank() == 3 ? 41 : 40);
    counts.add(error_of<zcoll::format_error>([&] {
      pairwise.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send), std::span<float>(out),
                         std::span<const std::size_t>(recv));
    }));
    // 10 values are not whole rows of 16: Int8 refuses them, the ranks agree on its error.
    std::vector<float> ten(10, 1.0f), all(40);
    rows.add(error_of<zcoll::argument_error>([&] { rowwise.allgather(std::span<const float>(ten), std::span<float>(all)); }));
    // The same collectives, undamaged: they work, and give what they should.
    *armed = false;
    auto good = contribution<float>(t.rank(), 4000);
    ring.allreduce(std::span<float>(good), zcoll::op::sum);
    const auto want = zcoll_test::sum_of_contributions<float>(4, 4000);
    zcoll_test::require_within<float>(good, want, ring.last_report().error_bound, "allreduce after the failed calls");
    tree.bcast(std::span<float>(good), 1);
    out.resize(40);
    pairwise.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send), std::span<float>(out),
                       std::span<const std::size_t>(send));
    zcoll_test::require_within<float>(out, in, pairwise.last_report().error_bound, "alltoallv after the failed call");
  });
  const std::string size_error = sizes.agreed(), bound_error = bounds.agreed(), count_error = counts.agreed(),
                    row_error = rows.agreed();
  CHECK(contains(size_error, "bcast (verify): rank "));
  CHECK(contains(size_error, "rank 0 announced a compressed block of 1152921504606846976 bytes"));
  CHECK(contains(bound_error, "rank 2 sends a segment that carries the bound nan"));
  CHECK(contains(count_error, "alltoallv (verify): rank 3 failed: rank 1 sends a block of 10 values where this rank expects 11"));
  CHECK(contains(row_error, "allgather (verify): rank 0 failed:"));
  CHECK(contains(row_error, "row"));
}
