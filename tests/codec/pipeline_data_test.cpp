// Round trips of the real fields in ZCOLL_TEST_DATA_DIR (../shared/data; see its README.txt), with the
// bound checked on every element. Absent data is a warning, not a failure (Catch2 v2 has no SKIP).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

using namespace zcoll_test;

namespace {

#ifdef NDEBUG
constexpr std::size_t max_values = std::numeric_limits<std::size_t>::max();
#else
// Unoptimised (and sanitizer) builds check only the first 2^20 values of the larger fields (the 18 and 37
// MB Isabel ones), to keep the suite fast; a Release build checks every value.
constexpr std::size_t max_values = std::size_t{1} << 20;
#endif

std::vector<std::filesystem::path> data_files(const std::filesystem::path& dir, const std::string& extension) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == extension) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

template <class T>
void check_field(const std::filesystem::path& path, double fraction, std::optional<double> fill_value) {
  auto data = read_raw<T>(path);
  REQUIRE_FALSE(data.empty());
  if (data.size() > max_values) {
    WARN("unoptimised build: only the first " << max_values << " of the " << data.size() << " values of "
                                              << path.filename().string() << " are checked");
    data.resize(max_values);
  }
  std::optional<zcoll::bits_of<T>> fill;
  if (fill_value) fill = bits(static_cast<T>(*fill_value));
  const zcoll::FZLight codec{{.error_bound = zcoll::relative(fraction), .fill_value = fill_value}};
  INFO(path.filename().string() << " at relative " << fraction << (fill_value ? ", fill declared" : ""));

  const auto r = round_trip(codec, std::span<const T>(data));
  const double range = reference_range(std::span<const T>(data), fill);
  REQUIRE(range > 0.0);
  REQUIRE(r.header.error_bound == zcoll::absolute_bound(zcoll::relative(fraction), range));
  REQUIRE_FALSE(std::signbit(std::fma(fraction, range, -r.header.error_bound)));
  REQUIRE(r.header.error_bound > 0.0);
  require_bound_on_every_element(std::span<const T>(data), std::span<const T>(r.restored), r.header.error_bound, fill);
  // Real fields compress at these bounds.
  CHECK(r.stream.size() < data.size() * sizeof(T));
}

template <class T>
void check_all_fields(const std::string& extension) {
  const auto dir = data_dir();
  if (!dir) return;
  const auto files = data_files(*dir, extension);
  if (files.empty()) {
    WARN("no " << extension << " files in " << dir->string() << ": data test skipped");
    return;
  }
  for (const auto& path : files) {
    for (double fraction : {1e-2, 1e-3, 1e-4}) check_field<T>(path, fraction, std::nullopt);
  }
}

}  // namespace

TEST_CASE("Real f32 fields keep relative bounds 1e-2, 1e-3, 1e-4 on every element", "[codec][data]") {
  check_all_fields<float>(".f32");
}

TEST_CASE("Real f64 fields keep relative bounds 1e-2, 1e-3, 1e-4 on every element", "[codec][data]") {
  check_all_fields<double>(".f64");
}

TEST_CASE("Levitus temperature with its -1e10 land fill declared and undeclared", "[codec][data][fill]") {
  const auto dir = data_dir();
  if (!dir) return;
  const auto path = *dir / "levitus_temp_20x180x360_fill.f32";
  if (!std::filesystem::exists(path)) {
    WARN(path.string() << " is absent: test skipped");
    return;
  }
  for (double fraction : {1e-2, 1e-3, 1e-4}) {
    check_field<float>(path, fraction, -1e10);
    check_field<float>(path, fraction, std::nullopt);
  }
  // Declared, the bound follows the ocean's range (about 31.8 degrees), not the fill's 1e10.
  const auto data = read_raw<float>(path);
  const zcoll::FZLight declared{{.error_bound = zcoll::relative(1e-3), .fill_value = -1e10}};
  const auto h = zcoll::read_stream_header(declared.compress(data));
  CHECK(h.error_bound < 1e-3 * 32.0);
  CHECK(h.error_bound > 1e-3 * 31.0);
}
