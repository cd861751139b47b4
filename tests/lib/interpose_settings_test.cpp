// lib/interpose_settings: the environment of libzcoll-mpi.so, read through a table.

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "interpose_settings.hpp"

namespace {

using zcoll::lib::interpose_settings;
using zcoll::lib::operation;

interpose_settings read(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> names;
  for (const auto& [name, value] : environment) names.push_back(name);
  return zcoll::lib::read_interpose_settings(
      [&](const char* name) -> const char* {
        const auto found = environment.find(name);
        return found == environment.end() ? nullptr : found->second.c_str();
      },
      names);
}

/// The message read() raises for `environment`, which must name every one of `parts`.
void require_error(const std::map<std::string, std::string>& environment, const std::vector<std::string>& parts) {
  try {
    read(environment);
    FAIL("no error for " << environment.begin()->first << "=" << environment.begin()->second);
  } catch (const zcoll::argument_error& e) {
    const std::string message = e.what();
    for (const auto& part : parts) {
      INFO(message);
      REQUIRE(message.find(part) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("libzcoll-mpi settings: nothing compresses without an error bound; the defaults") {
  const auto s = read({});
  REQUIRE_FALSE(s.error_bound.has_value());
  REQUIRE(s.operations == zcoll::lib::operation_set::all());
  REQUIRE(s.min_bytes == (std::size_t{1} << 20));
  REQUIRE(s.collectives.codec == "fzlight");
  REQUIRE(s.collectives.bcast == zcoll::lib::bcast_schedule::chain);
  REQUIRE(s.collectives.threads == 1);
  REQUIRE_FALSE(s.collectives.verify);
  REQUIRE(s.report == "stderr");
}

TEST_CASE("libzcoll-mpi settings: every variable read") {
  const auto s = read({{"ZCOLL_ERROR_BOUND", "rel:1e-4"},
                       {"ZCOLL_CODEC", "fzlight"},
                       {"ZCOLL_OPS", "allreduce,bcast"},
                       {"ZCOLL_MIN_BYTES", "64K"},
                       {"ZCOLL_SCHEDULE_ALLREDUCE", "recursive_doubling"},
                       {"ZCOLL_SCHEDULE_REDUCE", "recursive_doubling"},
                       {"ZCOLL_SCHEDULE_ALLGATHER", "recursive_doubling"},
                       {"ZCOLL_SCHEDULE_BCAST", "binomial_tree"},
                       {"ZCOLL_SCHEDULE_ALLTOALL", "pairwise"},
                       {"ZCOLL_THREADS", "4"},
                       {"ZCOLL_VERIFY", "1"},
                       {"ZCOLL_HOMOMORPHIC", "on"},
                       {"ZCOLL_EXCLUDE_COMMS", "halo,io"},
                       {"ZCOLL_REPORT", "/tmp/r.json"}});
  REQUIRE(s.error_bound->mode == zcoll::bound_mode::relative);
  REQUIRE(s.error_bound->value == 1e-4);
  REQUIRE(s.operations.contains(operation::allreduce));
  REQUIRE(s.operations.contains(operation::bcast));
  REQUIRE_FALSE(s.operations.contains(operation::iallreduce));
  REQUIRE(s.min_bytes == 64 * 1024);
  REQUIRE(s.collectives.allreduce == zcoll::lib::reduce_schedule::recursive_doubling);
  REQUIRE(s.collectives.reduce == zcoll::lib::reduce_schedule::recursive_doubling);
  REQUIRE(s.collectives.allgather == zcoll::lib::reduce_schedule::recursive_doubling);
  REQUIRE(s.collectives.bcast == zcoll::lib::bcast_schedule::binomial_tree);
  REQUIRE(s.collectives.threads == 4);
  REQUIRE(s.collectives.verify);
  REQUIRE(s.collectives.homomorphic);
  REQUIRE(s.excluded_comms == std::vector<std::string>{"halo", "io"});
  REQUIRE(s.report == "/tmp/r.json");
  REQUIRE(read({{"ZCOLL_SCHEDULE_BCAST", "chain"}}).collectives.bcast == zcoll::lib::bcast_schedule::chain);
  REQUIRE(read({{"ZCOLL_ERROR_BOUND", "abs:0.01"}}).error_bound->mode == zcoll::bound_mode::absolute);
  REQUIRE(read({{"ZCOLL_MIN_BYTES", "0"}}).min_bytes == 0);
  REQUIRE(read({{"ZCOLL_MIN_BYTES", "2G"}}).min_bytes == (std::size_t{2} << 30));
}

TEST_CASE("libzcoll-mpi settings: a bad value names the variable, the value and what it takes") {
  for (const char* bad : {"1e-4", "rel:", "rel:abc", "rel:-1", "rel:0", "rel:1.5", "abs:inf", "abs:nan", "pct:1", "rel:1e-4x"}) {
    require_error({{"ZCOLL_ERROR_BOUND", bad}}, {"ZCOLL_ERROR_BOUND", std::string("'") + bad + "'", "rel:"});
  }
  require_error({{"ZCOLL_CODEC", "sz3"}}, {"ZCOLL_CODEC", "'sz3'", "fzlight"});
  require_error({{"ZCOLL_OPS", "allreduce,alltoallv"}}, {"ZCOLL_OPS", "alltoallv", "reduce_scatter_block"});
  require_error({{"ZCOLL_OPS", ""}}, {"ZCOLL_OPS"});
  for (const char* bad : {"", "1T", "K", "-1", "1.5M", "99999999999999999999"}) {
    require_error({{"ZCOLL_MIN_BYTES", bad}}, {"ZCOLL_MIN_BYTES", "K, M or G"});
  }
  require_error({{"ZCOLL_SCHEDULE_ALLREDUCE", "tree"}}, {"ZCOLL_SCHEDULE_ALLREDUCE", "ring or recursive_doubling"});
  require_error({{"ZCOLL_SCHEDULE_BCAST", "ring"}}, {"ZCOLL_SCHEDULE_BCAST", "binomial_tree, scatter_allgather or chain"});
  require_error({{"ZCOLL_SCHEDULE_ALLTOALL", "ring"}}, {"ZCOLL_SCHEDULE_ALLTOALL", "pairwise"});
  for (const char* bad : {"0", "-2", "two", "", "5000"}) require_error({{"ZCOLL_THREADS", bad}}, {"ZCOLL_THREADS", "1 to 1024"});
  require_error({{"ZCOLL_VERIFY", "yes"}}, {"ZCOLL_VERIFY", "0 or 1"});
  require_error({{"ZCOLL_HOMOMORPHIC", "2"}}, {"ZCOLL_HOMOMORPHIC", "0 or 1"});
  require_error({{"ZCOLL_EXCLUDE_COMMS", "a,,b"}}, {"ZCOLL_EXCLUDE_COMMS"});
  require_error({{"ZCOLL_REPORT", ""}}, {"ZCOLL_REPORT"});
}

TEST_CASE("libzcoll-mpi settings: a misspelt ZCOLL_ variable is an error, other parts of zcoll's are not") {
  require_error({{"ZCOLL_ERROR_BUOND", "rel:1e-4"}}, {"ZCOLL_ERROR_BUOND", "misspelling", "ZCOLL_ERROR_BOUND"});
  REQUIRE_NOTHROW(read({{"ZCOLL_SOAK_SECONDS", "10"}, {"ZCOLL_FUZZ_SECONDS", "3"}}));
}
