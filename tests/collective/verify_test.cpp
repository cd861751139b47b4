// The pieces of verify mode that need no ranks (collective/verify.hpp): which signature difference and
// which fault every rank reports. The exchanges themselves run in fault_test.cpp and the MPI tests.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "zcoll/collective/detail/agreement.hpp"
#include "zcoll/collective/verify.hpp"

namespace v = zcoll::verify;

TEST_CASE("first_mismatch names the first rank and field that differ from rank 0's", "[collective][verify]") {
  const auto signature = [](std::size_t count, int root, double bound) {
    v::signature_builder b;
    b.add("operation", v::name_code("allreduce"));
    b.add("count", count);
    b.add("root", root);
    b.add("error bound", bound);
    return b;
  };
  const v::signature_builder base = signature(100, 0, 0.0);
  std::vector<v::call_signature> all(4, base.signature());
  CHECK_FALSE(base.first_mismatch(all));
  all[3] = signature(100, 2, 0.0).signature();
  all[2] = signature(99, 0, 0.0).signature();
  CHECK(*base.first_mismatch(all) == "rank 2 passed count 99 where rank 0 passed 100");
  all[2] = base.signature();
  all[1] = signature(100, 0, 0.5).signature();
  CHECK(*base.first_mismatch(all) == "rank 1 passed error bound 0.5 where rank 0 passed 0");
  CHECK_FALSE(base.first_mismatch(std::vector<v::call_signature>{}));
  CHECK(v::name_code("sum") != v::name_code("max"));
}

TEST_CASE("The call signature is derived from the codec's and the collective's settings: each one is compared",
          "[collective][verify]") {
  const zcoll::detail::call_description call{"allreduce", 4, 1000, 0, "sum"};
  const zcoll::codec_config codec{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096};
  const zcoll::collective_config config{.pipeline_values = 1000};
  const auto mine = zcoll::detail::signature_of(call, "fzlight", codec, config);
  const auto differs = [&](const zcoll::codec_config& c, const zcoll::collective_config& k, const char* codec_name = "fzlight") {
    const std::vector<v::call_signature> all{mine.signature(), zcoll::detail::signature_of(call, codec_name, c, k).signature()};
    return mine.first_mismatch(all).value_or("");
  };
  CHECK(differs(codec, config).empty());
  CHECK(differs(codec, {.pipeline_values = 2000}) == "rank 1 passed pipeline_values 2000 where rank 0 passed 1000");
  CHECK(differs(codec, {.pipeline_values = 1000, .verify = true}) == "rank 1 passed verify 1 where rank 0 passed 0");
  CHECK(differs(codec, {.threads = 2, .pipeline_values = 1000}) == "rank 1 passed threads 2 where rank 0 passed 1");
  CHECK(differs({.error_bound = zcoll::absolute(2e-3), .chunk_values = 4096}, config) ==
        "rank 1 passed error bound 0.002 where rank 0 passed 0.001");
  CHECK(differs({.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096, .shape = {64}}, config) ==
        "rank 1 passed shape rank 1 where rank 0 passed 0");
  CHECK(differs(codec, config, "highratio").rfind("rank 1 passed codec ", 0) == 0);
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
