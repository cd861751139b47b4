// The exception section (codec/detail/exception_section.hpp), which the host driver and the CUDA driver
// both write and read through: sections written entry by entry read back to the same lanes, and every
// way a section can be malformed is its own fault, met without reading past the section.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "zcoll/codec/detail/exception_section.hpp"

namespace {

namespace detail = zcoll::detail;
using detail::exception_fault;

/// A section of a fill run over blocks 1-2 and a masked block 4 (two fill lanes, three outliers) for a
/// chunk of 150 values (5 blocks, the last of 22 lanes), from `source`.
std::vector<std::byte> sample_section(const std::vector<float>& source) {
  std::vector<std::byte> section(detail::exception_count_bytes + detail::exception_entry_header_bytes +
                                 detail::masked_block_entry_bytes<float>(0b10101u << 10));
  std::byte* at = detail::write_exception_count(section.data(), 2);
  at = detail::write_fill_run(at, 1, 2);
  at = detail::write_masked_block(at, 4, 0b11u, 0b10101u << 10, source.data() + 4 * 32);
  REQUIRE(at == section.data() + section.size());
  return section;
}

detail::exception_section_read apply_section(const std::vector<std::byte>& section, std::vector<float>& values,
                                     bool has_fill = true) {
  return detail::apply_exception_section(section.data(), section.size(), has_fill, -9.0f, values.data(), values.size());
}

}  // namespace

TEST_CASE("Exception section: what the writers write, apply_exception_section puts back", "[codec][exceptions]") {
  std::vector<float> source(150);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = 1000.0f + static_cast<float>(i);
  const auto section = sample_section(source);
  std::vector<float> values(150, 0.5f);
  const auto read = apply_section(section, values);
  CHECK(read.fault == exception_fault::none);
  CHECK(read.bytes == section.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO("lane " << i);
    const bool run = i >= 32 && i < 96, fill_lane = i == 128 || i == 129;
    const bool outlier = i == 138 || i == 140 || i == 142;
    CHECK(values[i] == (run || fill_lane ? -9.0f : outlier ? source[i] : 0.5f));
  }
  // NaN and infinity outliers travel bit for bit.
  source[4 * 32 + 10] = std::numeric_limits<float>::quiet_NaN();
  source[4 * 32 + 12] = -std::numeric_limits<float>::infinity();
  std::vector<float> again(150, 0.5f);
  REQUIRE(apply_section(sample_section(source), again).fault == exception_fault::none);
  CHECK(std::isnan(again[138]));
  CHECK(again[140] == -std::numeric_limits<float>::infinity());
}

TEST_CASE("Exception section: every cut is a truncation, never a read past the section", "[codec][exceptions]") {
  const std::vector<float> source(150, 7.0f);
  const auto section = sample_section(source);
  for (std::size_t length = 0; length < section.size(); ++length) {
    INFO("section cut to " << length << " bytes");
    // An exact-size copy, so that ASan sees any read past it.
    std::vector<std::byte> cut(section.begin(), section.begin() + static_cast<std::ptrdiff_t>(length));
    std::vector<float> values(150);
    const auto read = detail::apply_exception_section(cut.data(), cut.size(), true, -9.0f, values.data(), values.size());
    CHECK(read.fault == exception_fault::truncated);
    CHECK(read.bytes <= length);
  }
}

TEST_CASE("Exception section: each malformed section is its own fault", "[codec][exceptions]") {
  const std::vector<float> source(150, 7.0f);
  const auto faulty = [&](auto edit, bool has_fill = true) {
    auto section = sample_section(source);
    edit(section);
    std::vector<float> values(150);
    return apply_section(section, values, has_fill).fault;
  };
  const auto set16 = [](std::vector<std::byte>& s, std::size_t at, std::uint16_t v) { std::memcpy(s.data() + at, &v, 2); };
  const auto set32 = [](std::vector<std::byte>& s, std::size_t at, std::uint32_t v) { std::memcpy(s.data() + at, &v, 4); };
  // Offsets: count 0; run entry 2 (first, count, type at 6); masked entry 7 (first, count, type at 11,
  // fill mask 12, outlier mask 16, values 20).
  CHECK(faulty([](auto&) {}) == exception_fault::none);
  CHECK(faulty([&](auto& s) { set16(s, 0, 0); }) == exception_fault::no_entries);
  CHECK(faulty([&](auto& s) { set16(s, 0, 3); }) == exception_fault::truncated);
  CHECK(faulty([&](auto& s) { set16(s, 4, 0); }) == exception_fault::blocks_misplaced);    // an empty run
  CHECK(faulty([&](auto& s) { set16(s, 2, 4); }) == exception_fault::blocks_misplaced);    // run past block 4
  CHECK(faulty([&](auto& s) { set16(s, 7, 2); }) == exception_fault::blocks_misplaced);    // overlaps the run
  CHECK(faulty([&](auto& s) { set16(s, 7, 5); }) == exception_fault::blocks_misplaced);    // past the chunk
  CHECK(faulty([&](auto& s) { s[6] = std::byte{2}; }) == exception_fault::unknown_type);
  CHECK(faulty([&](auto& s) { set16(s, 9, 2); }) == exception_fault::blocks_misplaced);    // 4 + 2 > 5 blocks
  CHECK(faulty([&](auto& s) { set16(s, 7, 3); set16(s, 9, 2); }) == exception_fault::unknown_type);
  CHECK(faulty([&](auto& s) { set32(s, 12, 1u << 10); }) == exception_fault::bad_masks);   // overlap
  CHECK(faulty([&](auto& s) { set32(s, 12, 0); set32(s, 16, 0); }) == exception_fault::bad_masks);  // empty
  CHECK(faulty([&](auto& s) { set32(s, 12, 1u << 22); }) == exception_fault::bad_masks);   // lane 22 of 22
  CHECK(faulty([](auto&) {}, false) == exception_fault::no_fill_value);                    // the fill run
  // Fill lanes of a masked block, without a fill value: the same fault as a fill run.
  std::vector<std::byte> masked(detail::exception_count_bytes + detail::masked_block_entry_bytes<float>(0));
  detail::write_masked_block(detail::write_exception_count(masked.data(), 1), 0, 0b1u, 0u, source.data());
  std::vector<float> values(150);
  CHECK(apply_section(masked, values, false).fault == exception_fault::no_fill_value);
  CHECK(apply_section(masked, values, true).fault == exception_fault::none);
}
