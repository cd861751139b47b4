// <zcoll/fmt.hpp>: the fmt formatters of zcoll's values and reports.
#include <catch2/catch.hpp>

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "zcoll/fmt.hpp"
#include "zcoll/zcoll.hpp"

TEST_CASE("fmt formats bounds and value types", "[fmt]") {
  CHECK(fmt::format("{}", zcoll::relative(1e-4)) == "rel 0.0001");
  CHECK(fmt::format("{}", zcoll::absolute(0.5)) == "abs 0.5");
  CHECK(fmt::format("[{:>10}]", zcoll::absolute(0.5)) == "[   abs 0.5]");  // a string's specification
  CHECK(fmt::format("{}", zcoll::value_type::f64) == "f64");
}

TEST_CASE("fmt formats a codec report with what it measured", "[fmt]") {
  std::vector<float> field(10000);
  for (std::size_t i = 0; i < field.size(); ++i) field[i] = std::sin(0.01f * static_cast<float>(i));
  field[7] = -1e34f;
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3), .fill_value = -1e34}};
  const auto report = zcoll::evaluate(codec, zcoll::exec::Host{}, std::span<const float>(field));
  const std::string text = fmt::format("{}", report);
  CHECK(text.starts_with(fmt::format("linear+lorenzo1d+bitshuffle: 40000 -> {} bytes (ratio {:.2f}), bound ",
                                     report.compressed_bytes, report.ratio)));
  CHECK_THAT(text, Catch::Contains(" held") && Catch::Contains("fill value -9.999999790214768e+33") &&
                       Catch::Contains(fmt::format("max error {:.3g}", report.error.max_abs_error)));
  zcoll::error_stats broken = report.error;
  broken.bound_violations = 3;
  CHECK_THAT(fmt::format("{}", broken), Catch::Contains("3 values beyond the bound"));
}

TEST_CASE("fmt formats a collective report", "[fmt]") {
  zcoll::collective_report r;
  r.operation = "allreduce";
  r.schedule = "ring";
  r.codec = "linear+lorenzo1d+bitshuffle";
  r.ranks = 4;
  r.compressed = true;
  r.bytes_sent = 1000;
  r.raw_bytes_sent = 3000;
  r.ratio = 3.0;
  r.total_s = 0.0125;
  r.error_bound = 0.003;
  r.statistical_error_bound = 0.002;
  r.compressions_in_chain = 3;
  const std::string text = fmt::format("{}", r);
  CHECK(text.starts_with("allreduce, ring, linear+lorenzo1d+bitshuffle on 4 ranks: 1000 of 3000 raw bytes sent "
                         "(ratio 3.00) in 12.5 ms"));
  CHECK_THAT(text, Catch::EndsWith("error bound 0.003 (statistical 0.002, 3 compressions in a chain)"));
}
