#include <catch2/catch.hpp>

#include <vector>

#include "zcoll/codec/speedup_model.hpp"
#include "zcoll/core/error.hpp"

using zcoll::candidate_measurement;

TEST_CASE("Speed-up model: 1 / (1/CR + B (1/Tc + 1/Td))", "[codec][speedup_model]") {
  const candidate_measurement m{"c", 10.0, 4e9, 8e9};
  // B = 1 GB/s: 1 / (0.1 + 0.25 + 0.125) = 2.105...
  CHECK(zcoll::modeled_speedup(m, 1e9) == Approx(1.0 / (0.1 + 0.25 + 0.125)).epsilon(1e-12));
  // An infinitely slow link leaves the ratio.
  CHECK(zcoll::modeled_speedup(m, 1e-6) == Approx(10.0).epsilon(1e-9));
  CHECK_THROWS_AS(zcoll::modeled_speedup(m, 0.0), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::modeled_speedup({"bad", 0.0, 1.0, 1.0}, 1e9), zcoll::argument_error);
  CHECK_THROWS_AS(zcoll::modeled_speedup({"bad", 2.0, 1.0, -1.0}, 1e9), zcoll::argument_error);
}

TEST_CASE("select_fastest: ratio wins on slow links, throughput on fast ones", "[codec][speedup_model]") {
  const std::vector<candidate_measurement> candidates{
      {"high ratio, slow", 40.0, 0.5e9, 0.5e9},
      {"low ratio, fast", 4.0, 20e9, 40e9},
  };
  CHECK(zcoll::select_fastest(candidates, 1e7) == 0);    // 80 Mbit/s: ratio decides
  CHECK(zcoll::select_fastest(candidates, 12.5e9) == 1);  // 100 Gbit/s: speed decides
  // Equal candidates: the first.
  const std::vector<candidate_measurement> twins{{"a", 4.0, 1e9, 1e9}, {"b", 4.0, 1e9, 1e9}};
  CHECK(zcoll::select_fastest(twins, 1e9) == 0);
  CHECK_THROWS_AS(zcoll::select_fastest({}, 1e9), zcoll::argument_error);
}
