#pragma once
// What libzcoll-mpi.so did, per operation: the calls it ran compressed and those it passed to MPI, their
// bytes and time, and the largest error bound it stated; summed over the ranks at MPI_Finalize and written
// as JSON by rank 0.

#include <mpi.h>

#include <array>
#include <string>

#include "interpose_settings.hpp"
#include "zcoll/collective/collective_report.hpp"

namespace zcoll::lib {

/// The calls of one operation one way (compressed, or passed through).
struct call_totals {
  double calls = 0;
  double input_bytes = 0;     ///< this rank's input (count × value size, as MPI counts it)
  double bytes_sent = 0;      ///< compressed calls: what zcoll put on the wire, size words included
  double raw_bytes_sent = 0;  ///< compressed calls: what the same schedule sends uncompressed
  double seconds = 0;
  double max_error_bound = 0;  ///< compressed calls: the largest collective_report::error_bound
};

struct operation_totals {
  call_totals intercepted;
  call_totals passed_through;
};

/// The totals of every operation on this rank.
class interpose_report {
 public:
  void add_intercepted(operation op, const collective_report& r, double seconds);
  void add_passed_through(operation op, double input_bytes, double seconds);
  const operation_totals& of(operation op) const { return totals_[static_cast<std::size_t>(op)]; }

  /// The totals of every rank of `comm` on rank 0 of it (sums; seconds and bounds: the largest): a
  /// collective call over `comm`, made with PMPI_ calls. Other ranks get their own totals back.
  interpose_report summed_over(MPI_Comm comm) const;

  /// The JSON document of these totals.
  std::string json(const interpose_settings& settings, int ranks) const;

 private:
  std::array<operation_totals, operation_count> totals_{};
};

}  // namespace zcoll::lib
