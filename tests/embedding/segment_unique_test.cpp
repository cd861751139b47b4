// segment_unique, key_table and rankwise_sort against naive per-category references.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "zcoll/embedding/embedding_spec.hpp"
#include "zcoll/embedding/key_table.hpp"
#include "zcoll/embedding/routing.hpp"
#include "zcoll/embedding/segment_unique.hpp"

namespace emb = zcoll::embedding;

namespace {

/// Segments of random lengths (some empty) with ids from a small range, so that ids repeat within a
/// segment and equal ids appear in different segments.
struct fused_group {
  std::vector<std::uint64_t> ids;
  std::vector<std::size_t> offsets{0};
};

fused_group random_group(std::mt19937_64& rng, std::size_t segments, std::uint64_t id_range) {
  fused_group g;
  std::uniform_int_distribution<std::size_t> length(0, 40);
  std::uniform_int_distribution<std::uint64_t> id(0, id_range - 1);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::size_t n = s % 3 == 1 ? 0 : length(rng);
    for (std::size_t i = 0; i < n; ++i) g.ids.push_back(id(rng));
    g.offsets.push_back(g.ids.size());
  }
  return g;
}

}  // namespace

TEST_CASE("segment_unique: a small group by hand", "[embedding][segment_unique]") {
  const std::vector<std::uint64_t> ids{7, 3, 7, 3, 3, 9};
  const std::vector<std::size_t> offsets{0, 3, 6};
  const auto r = emb::segment_unique(ids, offsets);
  CHECK(r.keys == std::vector<std::uint64_t>{7, 3, 3, 9});
  CHECK(r.key_offsets == std::vector<std::size_t>{0, 2, 4});
  CHECK(r.inverse == std::vector<std::size_t>{0, 1, 0, 2, 2, 3});
}

TEST_CASE("segment_unique: matches a per-category std::map dedup", "[embedding][segment_unique]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t segments = 1 + static_cast<std::size_t>(trial % 9);
    const auto g = random_group(rng, segments, trial % 2 == 0 ? 8 : 1000);
    const auto r = emb::segment_unique(g.ids, g.offsets);
    REQUIRE(r.segments() == segments);
    REQUIRE(r.inverse.size() == g.ids.size());
    for (std::size_t s = 0; s < segments; ++s) {
      // The reference: first occurrences of each id of the segment, in order.
      std::vector<std::uint64_t> expected;
      std::set<std::uint64_t> seen;
      for (std::size_t i = g.offsets[s]; i < g.offsets[s + 1]; ++i) {
        if (seen.insert(g.ids[i]).second) expected.push_back(g.ids[i]);
      }
      const std::vector<std::uint64_t> got(r.keys.begin() + static_cast<std::ptrdiff_t>(r.key_offsets[s]),
                                           r.keys.begin() + static_cast<std::ptrdiff_t>(r.key_offsets[s + 1]));
      CHECK(got == expected);
      for (std::size_t i = g.offsets[s]; i < g.offsets[s + 1]; ++i) {
        // Every id maps to its own value inside its own segment's keys.
        REQUIRE(r.inverse[i] >= r.key_offsets[s]);
        REQUIRE(r.inverse[i] < r.key_offsets[s + 1]);
        REQUIRE(r.keys[r.inverse[i]] == g.ids[i]);
      }
    }
  }
}

TEST_CASE("segment_unique: empty, one id, conflicting ids across segments", "[embedding][segment_unique]") {
  const std::vector<std::uint64_t> none;
  const std::vector<std::size_t> zero{0};
  const auto empty = emb::segment_unique(none, zero);
  CHECK(empty.keys.empty());
  CHECK(empty.segments() == 0);

  const std::vector<std::size_t> empty_segments{0, 0, 0};
  CHECK(emb::segment_unique(none, empty_segments).key_offsets == std::vector<std::size_t>{0, 0, 0});

  const std::vector<std::uint64_t> one{42};
  const std::vector<std::size_t> one_offsets{0, 0, 1};
  const auto single = emb::segment_unique(one, one_offsets);
  CHECK(single.keys == std::vector<std::uint64_t>{42});
  CHECK(single.key_offsets == std::vector<std::size_t>{0, 0, 1});

  // The same id in four segments: four keys, never merged.
  const std::vector<std::uint64_t> same{5, 5, 5, 5, 5};
  const std::vector<std::size_t> four{0, 2, 3, 4, 5};
  const auto conflicting = emb::segment_unique(same, four);
  CHECK(conflicting.keys == std::vector<std::uint64_t>{5, 5, 5, 5});
  CHECK(conflicting.inverse == std::vector<std::size_t>{0, 0, 1, 2, 3});
}

TEST_CASE("segment_unique: offsets that do not describe the ids are refused", "[embedding][segment_unique]") {
  const std::vector<std::uint64_t> ids{1, 2, 3};
  CHECK_THROWS_AS(emb::segment_unique(ids, std::vector<std::size_t>{}), zcoll::argument_error);
  CHECK_THROWS_AS(emb::segment_unique(ids, std::vector<std::size_t>{0, 2}), zcoll::argument_error);
  CHECK_THROWS_AS(emb::segment_unique(ids, std::vector<std::size_t>{1, 3}), zcoll::argument_error);
  CHECK_THROWS_WITH(emb::segment_unique(ids, std::vector<std::size_t>{0, 2, 1, 3}),
                    Catch::Contains("offsets[2] = 1 is below offsets[1] = 2"));
}

TEST_CASE("key_table: indices in insertion order across rehashes", "[embedding][key_table]") {
  emb::key_table table;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::size_t> reference;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const auto category = static_cast<std::uint32_t>(rng() % 4);
    const std::uint64_t id = rng() % 3000;
    const auto [it, inserted] = reference.emplace(std::pair{category, id}, reference.size());
    const auto [index, table_inserted] = table.insert(category, id);
    REQUIRE(table_inserted == inserted);
    REQUIRE(index == it->second);
  }
  CHECK(table.size() == reference.size());
  for (const auto& [key, index] : reference) REQUIRE(table.find(key.first, key.second) == index);
  CHECK(table.find(9, 1) == emb::key_table::none);
}

TEST_CASE("rankwise_sort: keys grouped by owner, segment order kept, I_s inverts it", "[embedding][routing]") {
  std::mt19937_64 rng(3);
  for (int ranks : {1, 2, 3, 7}) {
    const auto g = random_group(rng, 5, 200);
    const auto unique = emb::segment_unique(g.ids, g.offsets);
    const auto route = emb::rankwise_sort(unique.keys, unique.key_offsets, ranks);
    REQUIRE(route.sorted_ids.size() == unique.keys.size());
    // I_s is a permutation that puts key k of segment s into the cell (owner of k, s).
    std::vector<std::size_t> cell_start(route.counts.size() + 1, 0);
    for (std::size_t c = 0; c < route.counts.size(); ++c) cell_start[c + 1] = cell_start[c] + route.counts[c];
    std::vector<bool> taken(unique.keys.size(), false);
    for (std::size_t s = 0; s < unique.segments(); ++s) {
      for (std::size_t k = unique.key_offsets[s]; k < unique.key_offsets[s + 1]; ++k) {
        const std::size_t at = route.position[k];
        const std::size_t cell = static_cast<std::size_t>(emb::owner_of(unique.keys[k], ranks)) * unique.segments() + s;
        REQUIRE(!taken[at]);
        taken[at] = true;
        REQUIRE(at >= cell_start[cell]);
        REQUIRE(at < cell_start[cell + 1]);
        REQUIRE(route.sorted_ids[at] == unique.keys[k]);
      }
    }
    // Walk the cells (destination, segment) in order: each holds that segment's keys owned by that
    // destination, in unique order.
    std::size_t at = 0;
    for (int dest = 0; dest < ranks; ++dest) {
      for (std::size_t s = 0; s < unique.segments(); ++s) {
        std::vector<std::uint64_t> expected;
        for (std::size_t k = unique.key_offsets[s]; k < unique.key_offsets[s + 1]; ++k) {
          if (emb::owner_of(unique.keys[k], ranks) == dest) expected.push_back(unique.keys[k]);
        }
        const std::size_t n = route.counts[static_cast<std::size_t>(dest) * unique.segments() + s];
        REQUIRE(n == expected.size());
        CHECK(std::vector<std::uint64_t>(route.sorted_ids.begin() + static_cast<std::ptrdiff_t>(at),
                                         route.sorted_ids.begin() + static_cast<std::ptrdiff_t>(at + n)) == expected);
        at += n;
      }
    }
    CHECK(at == unique.keys.size());
  }
  CHECK_THROWS_AS(emb::rankwise_sort(std::vector<std::uint64_t>{}, std::vector<std::size_t>{0}, 0), zcoll::argument_error);
  CHECK_THROWS_AS(emb::rankwise_sort(std::vector<std::uint64_t>{1}, std::vector<std::size_t>{}, 2), zcoll::argument_error);
}

TEST_CASE("owner_of: consecutive ids spread evenly over the ranks", "[embedding][routing]") {
  std::vector<std::size_t> per_rank(7, 0);
  for (std::uint64_t id = 0; id < 70000; ++id) ++per_rank[static_cast<std::size_t>(emb::owner_of(id, 7))];
  for (std::size_t n : per_rank) CHECK((n > 9000 && n < 11000));
}

TEST_CASE("group_by_spec: equal specs share a group, in first-appearance order", "[embedding][spec]") {
  std::vector<emb::embedding_spec> specs(6, emb::embedding_spec{.dim = 16});
  specs[1].dim = 8;
  specs[4].dim = 8;
  specs[5].optimizer.kind = emb::optimizer_kind::rowwise_adagrad;
  const auto groups = emb::group_by_spec(specs);
  CHECK(groups == std::vector<std::vector<std::size_t>>{{0, 2, 3}, {1, 4}, {5}});
  CHECK(emb::one_group_per_category(specs).size() == 6);
  specs[2].dim = 0;
  CHECK_THROWS_WITH(emb::group_by_spec(specs), Catch::Contains("category 2") && Catch::Contains("dim is 0"));
}
