// interpose_report: counting, summing over ranks, JSON.

#include "interpose_report.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace zcoll::lib {
namespace {

constexpr std::size_t fields = 6;

std::array<double, fields> as_array(const call_totals& t) {
  return {t.calls, t.input_bytes, t.bytes_sent, t.raw_bytes_sent, t.seconds, t.max_error_bound};
}

call_totals from_array(const double* v) { return {v[0], v[1], v[2], v[3], v[4], v[5]}; }

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string json_of(const call_totals& t, bool compressed) {
  std::string s = "{\"calls\": " + number(t.calls) + ", \"input_bytes\": " + number(t.input_bytes);
  if (compressed) {
    s += ", \"bytes_sent\": " + number(t.bytes_sent) + ", \"raw_bytes_sent\": " + number(t.raw_bytes_sent);
    s += ", \"max_error_bound\": " + number(t.max_error_bound);
  }
  return s + ", \"seconds\": " + number(t.seconds) + "}";
}

}  // namespace

void interpose_report::add_intercepted(operation op, const collective_report& r, double seconds) {
  call_totals& t = totals_[static_cast<std::size_t>(op)].intercepted;
  t.calls += 1;
  t.input_bytes += static_cast<double>(r.input_bytes);
  t.bytes_sent += static_cast<double>(r.bytes_sent);
  t.raw_bytes_sent += static_cast<double>(r.raw_bytes_sent);
  t.seconds += seconds;
  t.max_error_bound = std::max(t.max_error_bound, r.error_bound);
}

void interpose_report::add_passed_through(operation op, double input_bytes, double seconds) {
  call_totals& t = totals_[static_cast<std::size_t>(op)].passed_through;
  t.calls += 1;
  t.input_bytes += input_bytes;
  t.seconds += seconds;
}

interpose_report interpose_report::summed_over(MPI_Comm comm) const {
  // Sums in one buffer, maxima in another: two reductions for the whole report.
  std::vector<double> sums, maxima;
  for (const operation_totals& o : totals_) {
    for (const call_totals* t : {&o.intercepted, &o.passed_through}) {
      const auto v = as_array(*t);
      sums.insert(sums.end(), v.begin(), v.begin() + 4);
      maxima.insert(maxima.end(), v.begin() + 4, v.end());
    }
  }
  std::vector<double> summed(sums.size()), largest(maxima.size());
  PMPI_Reduce(sums.data(), summed.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM, 0, comm);
  PMPI_Reduce(maxima.data(), largest.data(), static_cast<int>(maxima.size()), MPI_DOUBLE, MPI_MAX, 0, comm);
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank != 0) return *this;
  interpose_report out;
  for (std::size_t i = 0; i < operation_count; ++i) {
    for (std::size_t way = 0; way < 2; ++way) {
      const std::size_t k = 2 * i + way;
      const double v[fields] = {summed[4 * k], summed[4 * k + 1], summed[4 * k + 2], summed[4 * k + 3],
                                largest[2 * k], largest[2 * k + 1]};
      (way == 0 ? out.totals_[i].intercepted : out.totals_[i].passed_through) = from_array(v);
    }
  }
  return out;
}

std::string interpose_report::json(const interpose_settings& settings, int ranks) const {
  std::string s = "{\n  \"library\": \"libzcoll-mpi\",\n  \"ranks\": " + std::to_string(ranks) + ",\n";
  s += "  \"error_bound\": ";
  s += settings.error_bound ? '"' + to_string(*settings.error_bound) + '"' : std::string("null");
  s += ",\n  \"codec\": \"" + settings.collectives.codec + "\",\n  \"min_bytes\": " + std::to_string(settings.min_bytes);
  s += ",\n  \"counts\": \"calls and bytes are summed over the ranks; seconds and max_error_bound are the largest of "
       "any rank\",\n  \"operations\": {";
  for (std::size_t i = 0; i < operation_count; ++i) {
    s += i == 0 ? "\n" : ",\n";
    s += "    \"" + std::string(operation_names[i]) + "\": {\"intercepted\": " + json_of(totals_[i].intercepted, true) +
         ", \"passed_through\": " + json_of(totals_[i].passed_through, false) + "}";
  }
  return s + "\n  }\n}\n";
}

}  // namespace zcoll::lib
