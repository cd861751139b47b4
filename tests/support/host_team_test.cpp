// The host team the CUDA tile tests run on (support/host_team.hpp): its barrier orders every rank's
// writes before every rank's reads, a read without a barrier reads a stale value in one of the two rank
// orders the team alternates, ranks that reach different numbers of barriers are an error, and its scan
// is a plain loop's.

#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "support/host_team.hpp"

namespace {

using zcoll_test::host_team;
constexpr std::uint32_t chunk_of_128_threads = 4096;
constexpr std::uint32_t chunk_of_1024_threads = 32768;

}  // namespace

TEST_CASE("The host team's barrier orders every rank's write before every rank's read", "[cuda-tile][host-team]") {
  for (const std::uint32_t chunk : {chunk_of_128_threads, chunk_of_1024_threads}) {
    for (int run = 0; run < 2; ++run) {  // one run in each rank order
      std::vector<std::uint32_t> wrong;
      const auto fault = host_team::run(2, chunk, [&](host_team& team, std::uint32_t tile) {
        const unsigned n = team.size();
        team.words()[team.rank()] = tile * n + team.rank();
        team.sync();
        std::uint64_t sum = 0;
        for (unsigned r = 0; r < n; ++r) sum += team.words()[r];
        if (sum != std::uint64_t{tile} * n * n + std::uint64_t{n} * (n - 1) / 2) wrong.push_back(team.rank());
        team.sync();  // no rank writes the next tile's word before every rank has read this one's
      });
      CHECK(fault.code == 0);
      CHECK(wrong.empty());
    }
  }
}

TEST_CASE("A read of another rank's write without a barrier is stale in one of the two rank orders", "[cuda-tile][host-team]") {
  int stale_runs = 0;
  for (int run = 0; run < 2; ++run) {
    int stale = 0;
    (void)host_team::run(1, chunk_of_128_threads, [&](host_team& team, std::uint32_t) {
      team.words()[team.rank()] = 1;
      // The missing barrier: the next rank has not written yet where the ranks run in rank order.
      if (team.rank() + 1 < team.size()) stale += team.words()[team.rank() + 1] != 1;
    });
    stale_runs += stale > 0;
  }
  CHECK(stale_runs == 1);
}

TEST_CASE("Ranks of the host team that reach different numbers of barriers are an error, not a hang", "[cuda-tile][host-team]") {
  CHECK_THROWS_WITH(host_team::run(1, chunk_of_128_threads,
                                   [](host_team& team, std::uint32_t) {
                                     if (team.rank() == 5) team.sync();
                                   }),
                    Catch::Contains("127 of 128 ranks returned while the others wait at a barrier"));
}

TEST_CASE("The host team's exclusive scan is a plain loop's, with the aggregate", "[cuda-tile][host-team]") {
  for (int run = 0; run < 2; ++run) {
    std::vector<std::uint32_t> prefixes(128), aggregates(128);
    (void)host_team::run(1, chunk_of_128_threads, [&](host_team& team, std::uint32_t) {
      const std::uint32_t mine = team.rank() * 7 + 3;
      prefixes[team.rank()] = team.exclusive_scan(mine, zcoll::detail::add_words{}, 100u, aggregates[team.rank()]);
    });
    std::uint32_t prefix = 100, total = 0;
    for (unsigned r = 0; r < 128; ++r) {
      CHECK(prefixes[r] == prefix);
      prefix += r * 7 + 3;
      total += r * 7 + 3;
    }
    for (const std::uint32_t a : aggregates) CHECK(a == total);
  }
}
