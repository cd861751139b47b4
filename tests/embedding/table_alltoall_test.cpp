// TableWiseAlltoall on transport::Local: every segment within its own table's bound, own segments exact.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "zcoll/codec/presets.hpp"
#include "zcoll/embedding/table_alltoall.hpp"
#include "zcoll/transport/local.hpp"

namespace emb = zcoll::embedding;
using zcoll::transport::Local;
using zcoll::transport::run_local;

namespace {

constexpr std::size_t dim = 8;
constexpr std::uint32_t tables = 6;
const std::vector<double> bounds{1e-2, 1e-3, 1e-4, 1e-2, 0.0, 5e-3};  // table 4 lossless

/// Rank `from`'s rows of `table` for rank `to`: a value per (from, to, table, i); rows repeat, so the
/// vector-LZ candidate finds matches.
float value(int from, int to, std::uint32_t table, std::size_t i) {
  const auto row = static_cast<double>((i / dim) % 5);
  return static_cast<float>(std::sin(0.3 * row + 0.1 * static_cast<double>(i % dim) + from + 2.0 * to + 3.0 * table) *
                            (1.0 + table));
}

/// Table t belongs to rank t % p; it sends (t + to) % 4 rows of t to each rank (some segments empty).
std::size_t rows_of(std::uint32_t table, int to) { return (table + static_cast<std::size_t>(to)) % 4; }

}  // namespace

TEST_CASE("TableWiseAlltoall: each table's segments within that table's bound", "[embedding][table_alltoall]") {
  for (int p : {1, 3, 4, 7}) {
    INFO("ranks " << p);
    run_local(p, [&](Local& t) {
      const int me = t.rank();
      std::vector<emb::table_segment> send, recv;
      std::vector<float> in;
      for (int to = 0; to < p; ++to) {
        for (std::uint32_t table = 0; table < tables; ++table) {
          if (static_cast<int>(table) % p != me) continue;
          const std::size_t n = rows_of(table, to) * dim;
          send.push_back({to, table, n});
          for (std::size_t i = 0; i < n; ++i) in.push_back(value(me, to, table, i));
        }
      }
      std::size_t expected_values = 0;
      for (int from = 0; from < p; ++from) {
        for (std::uint32_t table = 0; table < tables; ++table) {
          if (static_cast<int>(table) % p != from) continue;
          recv.push_back({from, table, rows_of(table, me) * dim});
          expected_values += rows_of(table, me) * dim;
        }
      }
      std::vector<float> out(expected_values);
      emb::TableWiseAlltoall<zcoll::EmbeddingHybrid> a2a{t, zcoll::codec_config{.shape = {dim}}};
      a2a.exchange(in, send, out, recv, bounds);
      std::size_t at = 0;
      for (const auto& s : recv) {
        for (std::size_t i = 0; i < s.values; ++i, ++at) {
          const float expected = value(s.peer, me, s.table, i);
          if (s.peer == me) {
            REQUIRE(out[at] == expected);
          } else {
            REQUIRE(std::abs(static_cast<double>(out[at]) - static_cast<double>(expected)) <= bounds[s.table]);
          }
        }
      }
      if (p > 1 && static_cast<std::uint32_t>(me) < tables) CHECK(a2a.last_report().raw_bytes_sent > 0);  // rank 6 of 7 owns no table
    });
  }
}

TEST_CASE("TableWiseAlltoall: segment lists that do not fit are refused, naming them", "[embedding][table_alltoall]") {
  run_local(2, [](Local& t) {
    emb::TableWiseAlltoall<zcoll::FZLight> a2a{t, zcoll::codec_config{}};
    std::vector<float> in(4), out(4);
    const std::vector<double> one_bound{1e-3};
    const std::vector<emb::table_segment> backwards{{1, 0, 2}, {0, 0, 2}};
    CHECK_THROWS_WITH(a2a.exchange(in, backwards, out, backwards, one_bound), Catch::Contains("send_segments[1].peer 0"));
    const std::vector<emb::table_segment> unknown_table{{0, 3, 4}};
    CHECK_THROWS_WITH(a2a.exchange(in, unknown_table, out, unknown_table, one_bound), Catch::Contains("table 3 has no bound"));
    const std::vector<emb::table_segment> short_of_values{{0, 0, 3}};
    CHECK_THROWS_WITH(a2a.exchange(in, short_of_values, out, short_of_values, one_bound),
                      Catch::Contains("in has 4 values, send_segments hold 3"));
  });
}

TEST_CASE("TableWiseAlltoall: a peer whose segments disagree is a format_error on the receiver, nobody hangs",
          "[embedding][table_alltoall]") {
  const std::vector<double> two_bounds{1e-3, 1e-3};
  // Rank 1 expects table 1 from rank 0, which sends table 0 (same length); then an extra empty segment;
  // then the right table, but rank 0 sends 17 values where rank 1 expects 16.
  enum class disagreement { table, extra_segment, length };
  for (const disagreement d : {disagreement::table, disagreement::extra_segment, disagreement::length}) {
    INFO("disagreement " << static_cast<int>(d));
    std::vector<std::string> errors(2);
    CHECK_NOTHROW(run_local(2, [&](Local& t) {
      emb::TableWiseAlltoall<zcoll::FZLight> a2a{t, zcoll::codec_config{}};
      const int me = t.rank();
      const std::uint32_t sent = d == disagreement::length ? 17 : 16;
      std::vector<float> in(me == 0 ? sent : 0, 1.0f), out(me == 0 ? 0 : 16);
      std::vector<emb::table_segment> send, recv;
      if (me == 0) send.push_back({1, 0, sent});
      if (me == 1) {
        recv.push_back({0, d == disagreement::table ? 1u : 0u, 16});
        if (d == disagreement::extra_segment) recv.push_back({0, 1, 0});
      }
      try {
        a2a.exchange(in, send, out, recv, two_bounds);
      } catch (const zcoll::format_error& e) {
        errors[static_cast<std::size_t>(me)] = e.what();
      }
    }));
    CHECK(errors[0].empty());
    CHECK_THAT(errors[1], Catch::Contains(d == disagreement::table           ? "announced table 0 with"
                                          : d == disagreement::extra_segment ? "announced 1 segments for this rank, which expects 2"
                                                                             : "rank 0 sent 17 values as its segment 0 for this rank (table 0), which expects 16"));
  }
}
