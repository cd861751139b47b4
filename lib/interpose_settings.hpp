#pragma once
// What libzcoll-mpi.so is told to do, read from the environment once at MPI_Init and checked there: a
// bad value is an error naming the variable, the value and what is expected, never a silent default.
//
//   ZCOLL_ERROR_BOUND      rel:1e-4 | abs:0.01        nothing is compressed without it
//   ZCOLL_CODEC            fzlight                    (the codec of the compressed schedules)
//   ZCOLL_OPS              allreduce,bcast,...        the operations to compress (default: all nine)
//   ZCOLL_MIN_BYTES        1M                         the smallest message compressed (default 1 MiB)
//   ZCOLL_SCHEDULE_<OP>    ring | recursive_doubling  for ALLREDUCE (and IALLREDUCE), REDUCE, ALLGATHER;
//                          binomial_tree | scatter_allgather | chain for BCAST
//   ZCOLL_THREADS          1                          codec threads per rank
//   ZCOLL_VERIFY           0 | 1                      verify mode (collective_config::verify)
//   ZCOLL_HOMOMORPHIC      0 | 1                      sums on compressed streams (collective_config)
//   ZCOLL_EXCLUDE_COMMS    name,name                  communicators (MPI_Comm_set_name) left to MPI
//   ZCOLL_REPORT           stderr | none | FILE       where rank 0 writes the JSON report at MPI_Finalize

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mpi_collectives.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"

namespace zcoll::lib {

/// The settings of the interposition library.
struct interpose_settings {
  std::optional<bound> error_bound;  ///< nothing is compressed without one
  collectives_settings collectives;  ///< codec, schedules, threads, verify, homomorphic
  operation_set operations = operation_set::all();
  std::size_t min_bytes = std::size_t{1} << 20;
  std::vector<std::string> excluded_comms;
  std::string report = "stderr";  ///< "stderr", "none" or a file name
};

/// Reads the settings through `lookup` (std::getenv in the library, a table in tests): argument_error
/// naming the variable, its value and the values it takes, for any bad value and for a ZCOLL_ variable
/// that no part of zcoll reads (a misspelt name would otherwise be ignored); `names` lists the ZCOLL_
/// variables that are set.
interpose_settings read_interpose_settings(const std::function<const char*(const char*)>& lookup,
                                           const std::vector<std::string>& names);

/// read_interpose_settings over this process's environment.
interpose_settings read_interpose_settings_from_environment();

}  // namespace zcoll::lib
