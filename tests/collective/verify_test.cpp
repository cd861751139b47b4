// The pieces of verify mode that need no ranks (collective/verify.hpp): which signature difference and
// which fault every rank reports. The exchanges themselves run in fault_test.cpp and the MPI tests.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "zcoll/collective/verify.hpp"

namespace v = zcoll::verify;

TEST_CASE("first_mismatch names the first rank and field that differ from rank 0's", "[collective][verify]") {
  v::call_signature base{.operation = v::name_code("allreduce"), .value_bytes = 4, .count = 100};
  std::vector<v::call_signature> all(4, base);
  CHECK_FALSE(v::first_mismatch(all));
  all[3].root = 2;
  all[2].count = 99;
  CHECK(*v::first_mismatch(all) == "rank 2 passed count 99 where rank 0 passed 100");
  all[2] = base;
  all[1].bound_bits = std::bit_cast<std::uint64_t>(0.5);
  CHECK(*v::first_mismatch(all) == "rank 1 passed error bound 0.5 where rank 0 passed 0");
  CHECK_FALSE(v::first_mismatch(std::vector<v::call_signature>{}));
  CHECK(v::name_code("sum") != v::name_code("max"));
}

TEST_CASE("first_fault: arguments before damaged blocks before failed messages; then a clean sender; then the "
          "lowest rank",
          "[collective][verify]") {
  using k = v::fault_kind;
  std::vector<v::fault_record> all(5);
  CHECK(v::first_fault(all) == nullptr);
  // A forwarded damaged block: rank 2 got it from 1 (which met nothing), rank 3 from 2, rank 0 from 3.
  all[2] = v::fault_record::of(k::format, 2, 1, "block from rank 1");
  all[3] = v::fault_record::of(k::format, 3, 2, "block from rank 2");
  all[0] = v::fault_record::of(k::format, 0, 3, "block from rank 3");
  CHECK(v::first_fault(all)->seen_by == 2);
  all[4] = v::fault_record::of(k::transport, 4, 0, "message of another size");
  CHECK(v::first_fault(all)->seen_by == 2);
  all[1] = v::fault_record::of(k::argument, 1, -1, "Int8 cannot scale row 3");
  CHECK(v::first_fault(all)->seen_by == 1);
}

TEST_CASE("raise throws the fault's kind with the operation and the rank, and long texts are cut, not "
          "overrun",
          "[collective][verify]") {
  const auto format = v::fault_record::of(v::fault_kind::format, 3, 1, "block from rank 1: truncated");
  CHECK_THROWS_AS(v::raise(format, "bcast"), zcoll::format_error);
  CHECK_THROWS_WITH(v::raise(format, "bcast"), Catch::Contains("bcast (verify): rank 3 failed: block from rank 1: truncated"));
  CHECK_THROWS_AS(v::raise(v::fault_record::of(v::fault_kind::argument, 0, -1, "x"), "gather"), zcoll::argument_error);
  CHECK_THROWS_AS(v::raise(v::fault_record::of(v::fault_kind::transport, 0, 2, "x"), "gather"), zcoll::transport_error);
  const auto long_text = v::fault_record::of(v::fault_kind::format, 0, 1, std::string(1000, 'z'));
  try {
    v::raise(long_text, "allgather");
  } catch (const zcoll::format_error& e) {
    CHECK(std::string(e.what()).size() < 400);
  }
}
