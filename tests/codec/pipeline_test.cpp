#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "zcoll/zcoll.hpp"

TEST_CASE("FZLight round trip keeps the bound on a smooth signal", "[codec][pipeline]") {
  std::vector<float> data(10000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = 10.0f * std::sin(0.01f * static_cast<float>(i));
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3)}};
  const auto report = zcoll::evaluate(codec, zcoll::exec::Host{}, std::span<const float>(data));
  CHECK(report.error.bound_held());
  CHECK(report.error.max_abs_error <= 1e-3);
  CHECK(report.ratio > 4.0);
}
