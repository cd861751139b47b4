// FusedLookup on transport::Local against a naive per-category reference: every rank's batch looked up
// one id at a time in one dense model, gradients summed per (category, id) in rank order and applied.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "zcoll/embedding/fused_lookup.hpp"
#include "zcoll/transport/local.hpp"

namespace emb = zcoll::embedding;
using zcoll::transport::Local;
using zcoll::transport::run_local;

namespace {

/// Three spec groups: {0, 1, 3} (dim 4, SGD), {2, 4} (dim 8, row-wise AdaGrad), {5} (dim 3, another rate).
std::vector<emb::embedding_spec> test_specs() {
  const emb::embedding_spec small{.dim = 4, .optimizer = {.learning_rate = 0.5}, .initializer = {.scale = 0.1, .seed = 9}};
  const emb::embedding_spec wide{.dim = 8,
                                 .optimizer = {.kind = emb::optimizer_kind::rowwise_adagrad, .learning_rate = 0.1},
                                 .initializer = {.scale = 0.2, .seed = 9}};
  emb::embedding_spec odd = small;
  odd.dim = 3;
  odd.optimizer.learning_rate = 0.25;
  return {small, small, wide, small, wide, odd};
}

struct rank_batch {
  std::vector<std::uint64_t> ids;
  std::vector<std::size_t> offsets{0};
  std::vector<float> gradients;  // one per value of the lookup's output
};

/// Ids from a small range, so they repeat within a category, collide across categories and across
/// ranks; category 3 is empty on every rank, category 1 on every second rank.
std::vector<rank_batch> make_batches(int ranks, const std::vector<emb::embedding_spec>& specs, std::uint64_t seed) {
  std::vector<rank_batch> batches(static_cast<std::size_t>(ranks));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> id(0, 15);
  std::uniform_int_distribution<int> length(1, 30);
  std::normal_distribution<float> gradient(0.0f, 1.0f);
  for (int r = 0; r < ranks; ++r) {
    auto& b = batches[static_cast<std::size_t>(r)];
    std::size_t values = 0;
    for (std::size_t c = 0; c < specs.size(); ++c) {
      const int n = c == 3 || (c == 1 && r % 2 == 1) ? 0 : length(rng);
      for (int i = 0; i < n; ++i) b.ids.push_back(c == 5 ? id(rng) * 1000003 : id(rng));
      b.offsets.push_back(b.ids.size());
      values += static_cast<std::size_t>(n) * specs[c].dim;
    }
    for (std::size_t v = 0; v < values; ++v) b.gradients.push_back(gradient(rng));
  }
  return batches;
}

/// The naive model: one table per category, rows created from the same initializer.
struct reference_model {
  std::vector<emb::embedding_spec> specs;
  std::map<std::pair<std::size_t, std::uint64_t>, std::pair<std::vector<float>, float>> rows;  // values, accumulator

  std::pair<std::vector<float>, float>& row(std::size_t c, std::uint64_t id) {
    auto [it, inserted] = rows.try_emplace({c, id});
    if (inserted) {
      for (std::size_t j = 0; j < specs[c].dim; ++j) it->second.first.push_back(emb::initial_value(specs[c], c, id, j));
      it->second.second = 0.0f;
    }
    return it->second;
  }

  std::vector<float> forward(const rank_batch& b) {
    std::vector<float> out;
    for (std::size_t c = 0; c + 1 < b.offsets.size(); ++c) {
      for (std::size_t i = b.offsets[c]; i < b.offsets[c + 1]; ++i) {
        const auto& values = row(c, b.ids[i]).first;
        out.insert(out.end(), values.begin(), values.end());
      }
    }
    return out;
  }

  /// Per key: each rank's gradients summed in token order, those sums added in rank order, one update.
  void backward(const std::vector<rank_batch>& batches) {
    std::map<std::pair<std::size_t, std::uint64_t>, std::vector<float>> total;
    for (const auto& b : batches) {
      std::map<std::pair<std::size_t, std::uint64_t>, std::vector<float>> local;
      std::size_t v = 0;
      for (std::size_t c = 0; c + 1 < b.offsets.size(); ++c) {
        for (std::size_t i = b.offsets[c]; i < b.offsets[c + 1]; ++i) {
          auto& sum = local.try_emplace({c, b.ids[i]}, specs[c].dim, 0.0f).first->second;
          for (std::size_t j = 0; j < specs[c].dim; ++j) sum[j] += b.gradients[v++];
        }
      }
      for (const auto& [key, sum] : local) {
        auto& t = total.try_emplace(key, sum.size(), 0.0f).first->second;
        for (std::size_t j = 0; j < sum.size(); ++j) t[j] += sum[j];
      }
    }
    for (const auto& [key, gradient] : total) {
      auto& [values, accumulator] = row(key.first, key.second);
      emb::apply_update(specs[key.first].optimizer, values, accumulator, gradient);
    }
  }
};

struct lookup_run {
  std::vector<std::vector<float>> first, second;  // forward before and after one backward, per rank
  std::vector<emb::lookup_stats> plan_stats, forward_stats;
};

/// plan, forward, backward, plan again, forward again on every rank.
template <class Codec = zcoll::Identity>
lookup_run run_lookup(int ranks, const std::vector<rank_batch>& batches, emb::lookup_config config) {
  lookup_run run;
  const auto n = static_cast<std::size_t>(ranks);
  run.first.resize(n);
  run.second.resize(n);
  run.plan_stats.resize(n);
  run.forward_stats.resize(n);
  run_local(ranks, [&](Local& t) {
    const auto me = static_cast<std::size_t>(t.rank());
    emb::FusedLookup<Codec> lookup{t, test_specs(), config};
    const auto& b = batches[me];
    const emb::sparse_batch batch{b.ids, b.offsets};
    auto plan = lookup.plan(batch);
    run.plan_stats[me] = lookup.last_stats();
    run.first[me].resize(plan.values());
    lookup.forward(plan, run.first[me]);
    run.forward_stats[me] = lookup.last_stats();
    lookup.backward(plan, b.gradients);
    plan = lookup.plan(batch);
    run.second[me].resize(plan.values());
    lookup.forward(plan, run.second[me]);
  });
  return run;
}

}  // namespace

TEST_CASE("FusedLookup: forward and backward equal the per-category reference bit for bit",
          "[embedding][fused_lookup]") {
  for (int ranks : {1, 2, 3, 4, 7}) {
    INFO("ranks " << ranks);
    const auto specs = test_specs();
    const auto batches = make_batches(ranks, specs, 100 + static_cast<std::uint64_t>(ranks));
    reference_model reference{specs, {}};
    std::vector<std::vector<float>> expected_first, expected_second;
    for (const auto& b : batches) expected_first.push_back(reference.forward(b));
    reference.backward(batches);
    for (const auto& b : batches) expected_second.push_back(reference.forward(b));

    const auto fused = run_lookup(ranks, batches, {});
    const auto separate = run_lookup(ranks, batches, {.fuse = false});
    for (std::size_t r = 0; r < batches.size(); ++r) {
      INFO("rank " << r);
      CHECK(fused.first[r] == expected_first[r]);
      CHECK(fused.second[r] == expected_second[r]);
      CHECK(separate.first[r] == expected_first[r]);
      CHECK(separate.second[r] == expected_second[r]);
      // Three groups against six categories: two exact all-to-alls (counts, ids) to plan, one to move
      // the rows, per group.
      CHECK(fused.plan_stats[r].alltoalls == 2 * 3);
      CHECK(fused.forward_stats[r].alltoalls == 3);
      CHECK(separate.plan_stats[r].alltoalls == 2 * 6);
      CHECK(separate.forward_stats[r].alltoalls == 6);
      // The same rows travel either way (dedup is per category in both), in fewer, larger messages fused.
      CHECK(fused.forward_stats[r].raw_value_bytes_sent == separate.forward_stats[r].raw_value_bytes_sent);
    }
  }
}

TEST_CASE("FusedLookup: compressed rows stay within the bound of the exact ones", "[embedding][fused_lookup]") {
  const int ranks = 3;
  const double eb = 1e-3;
  const auto specs = test_specs();
  const auto batches = make_batches(ranks, specs, 7);
  reference_model reference{specs, {}};
  const auto run = run_lookup<zcoll::FZLight>(ranks, batches, {.codec = {.error_bound = zcoll::absolute(eb)}});
  for (std::size_t r = 0; r < batches.size(); ++r) {
    const auto expected = reference.forward(batches[r]);
    REQUIRE(run.first[r].size() == expected.size());
    double worst = 0.0;
    for (std::size_t v = 0; v < expected.size(); ++v) {
      worst = std::max(worst, std::abs(static_cast<double>(run.first[r][v]) - static_cast<double>(expected[v])));
    }
    CHECK(worst <= eb);
    CHECK(run.forward_stats[r].raw_value_bytes_sent > 0);
    // The rows of other owners went through the lossy codec (the blocks here are too small for fewer bytes).
    CHECK(worst > 0.0);
  }
}

TEST_CASE("FusedLookup: a batch or buffer of the wrong shape is refused, naming it", "[embedding][fused_lookup]") {
  run_local(2, [](Local& t) {
    emb::FusedLookup<> lookup{t, test_specs()};
    const std::vector<std::uint64_t> ids{1, 2};
    const std::vector<std::size_t> too_few{0, 1, 2};
    CHECK_THROWS_WITH(lookup.plan({ids, too_few}), Catch::Contains("batch.offsets has 3 entries"));
    const std::vector<std::size_t> offsets{0, 1, 2, 2, 2, 2, 2};
    const auto plan = lookup.plan({ids, offsets});
    std::vector<float> out(plan.values() + 1);
    CHECK_THROWS_WITH(lookup.forward(plan, out), Catch::Contains("out has 9 values, the plan's batch has 8"));
    emb::FusedLookup<> other{t, test_specs()};  // a plan of another lookup is refused (its rows are not ours)
    out.resize(plan.values());
    CHECK_THROWS_WITH(other.forward(plan, out), Catch::Contains("not made by this lookup"));
  });
}
