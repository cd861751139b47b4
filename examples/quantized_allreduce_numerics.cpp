// The numerics of quantized allreduce (the quantized-collectives paper, §3.2–3.4 and its Table 3), on
// transport::Local with 32, 64 and 128 ranks: how far the reduced gradient is from the exact sum when every
// hop quantizes to 8, 4 or 2 bits, for a ring (O(p) quantizations in a value's chain), recursive doubling
// and the paper's hierarchical recursive doubling (O(log p)), and what error feedback per hop restores.
//
//     zcoll-example-quantized-allreduce-numerics [steps]      (default 20 steps; docs/numerics.md has a run)
//
// Gradients are synthetic but shaped like an MLP's: three "layers" of rows whose scales differ by 10x,
// a mean gradient that drifts from step to step, and per-rank minibatch noise three times larger than the
// mean, with heavy (Student-t, 4 degrees of freedom) tails. Every rank's contribution is drawn from
// (seed, rank, step), so the exact sum is computed in double on the side.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

namespace {

constexpr std::size_t row_length = 64;          // the row-wise codecs' rows ("buckets")
constexpr std::size_t values = 128 * 64 * 4;     // whole rows per rank for 32, 64 and 128 ranks
constexpr std::uint64_t seed = 20261121;

/// The mean gradient of a step: three layers of rows, scales 1, 0.1, 0.01, drifting slowly.
double mean_gradient(std::size_t i, int step) {
  const double scale = i < values / 4 ? 1.0 : i < values / 2 ? 0.1 : 0.01;
  return scale * std::sin(0.002 * static_cast<double>(i) + 0.05 * step) * std::cos(0.0007 * static_cast<double>(i));
}

/// Rank `rank`'s gradient at `step`: the mean plus heavy-tailed minibatch noise.
std::vector<float> gradient(int rank, int step) {
  std::mt19937_64 rng(seed ^ (static_cast<std::uint64_t>(rank) << 32) ^ static_cast<std::uint64_t>(step));
  std::student_t_distribution<double> tails(4.0);
  std::vector<float> g(values);
  for (std::size_t i = 0; i < values; ++i) {
    const double scale = i < values / 4 ? 1.0 : i < values / 2 ? 0.1 : 0.01;
    g[i] = static_cast<float>(mean_gradient(i, step) + 3.0 * scale * 0.3 * tails(rng));
  }
  return g;
}

struct errors {
  double step_error = 0.0;      // mean over steps of ||reduced - exact|| / ||exact||
  double summed_error = 0.0;    // || sum of reduced - sum of exact || / || sum of exact ||, over all steps
  double stated_bound = 0.0;    // the largest bound a report stated
};

double norm(const std::vector<double>& v) {
  double s = 0.0;
  for (const double x : v) s += x * x;
  return std::sqrt(s);
}

/// Runs `steps` allreduces of the ranks' gradients with Compressed<Schedule, Codec> and compares rank 0's
/// results with the exact sums.
template <class Schedule, class Codec>
errors measure(int ranks, int steps) {
  std::vector<std::vector<double>> exact(static_cast<std::size_t>(steps), std::vector<double>(values, 0.0));
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < ranks; ++r) {
      const auto g = gradient(r, s);
      for (std::size_t i = 0; i < values; ++i) exact[static_cast<std::size_t>(s)][i] += g[i];
    }
  }
  std::vector<std::vector<float>> reduced(static_cast<std::size_t>(steps));
  double bound = 0.0;
  zcoll::transport::run_local(ranks, [&](zcoll::transport::Local& t) {
    zcoll::Compressed<Schedule, Codec> coll{t, Codec{{.shape = {row_length}}}};
    for (int s = 0; s < steps; ++s) {
      auto data = gradient(t.rank(), s);
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
      if (t.rank() == 0) {
        reduced[static_cast<std::size_t>(s)] = std::move(data);
        bound = std::max(bound, coll.last_report().error_bound);
      }
    }
  });
  errors e;
  e.stated_bound = bound;
  std::vector<double> sum_exact(values, 0.0), sum_difference(values, 0.0), difference(values);
  for (std::size_t s = 0; s < exact.size(); ++s) {
    for (std::size_t i = 0; i < values; ++i) {
      difference[i] = static_cast<double>(reduced[s][i]) - exact[s][i];
      sum_exact[i] += exact[s][i];
      sum_difference[i] += difference[i];
    }
    e.step_error += norm(difference) / norm(exact[s]) / static_cast<double>(steps);
  }
  e.summed_error = norm(sum_difference) / norm(sum_exact);
  return e;
}

template <class Schedule, class Codec>
void row(const char* name, int steps) {
  fmt::print("| {:<34} |", name);
  for (const int ranks : {32, 64, 128}) {
    const errors e = measure<Schedule, Codec>(ranks, steps);
    fmt::print(" {:.2e} / {:.2e} |", e.step_error, e.summed_error);
  }
  fmt::print("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  if (steps < 1) {
    fmt::print(stderr, "steps: {} is not a positive number of steps\n", argv[1]);
    return 2;
  }
  using RD = zcoll::RecursiveDoubling;
  using HierarchicalRD = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling>;
  using Int4EF = zcoll::ErrorFeedback<zcoll::Int4>;
  using Int2EF = zcoll::ErrorFeedback<zcoll::Int2>;
  fmt::print("Relative L2 error of the reduced gradient against the exact sum: mean over {} steps / of the sum "
             "of the {} steps ({} values per rank, rows of {})\n\n",
             steps, steps, values, row_length);
  fmt::print("| {:<34} | 32 ranks              | 64 ranks              | 128 ranks             |\n", "allreduce");
  fmt::print("|{}|---|---|---|\n", std::string(36, '-'));
  row<zcoll::Ring, zcoll::Int8>("ring, uint8", steps);
  row<zcoll::Ring, zcoll::Int4>("ring, uint4", steps);
  row<zcoll::Ring, Int4EF>("ring, uint4, error feedback", steps);
  row<RD, zcoll::Int4>("recursive doubling, uint4", steps);
  row<HierarchicalRD, zcoll::Int4>("hierarchical RD (groups of 8), uint4", steps);
  row<zcoll::Ring, zcoll::Int2>("ring, uint2", steps);
  row<zcoll::Ring, Int2EF>("ring, uint2, error feedback", steps);
  row<RD, zcoll::Int2>("recursive doubling, uint2", steps);
  row<RD, Int2EF>("recursive doubling, uint2, error feedback", steps);
  return 0;
}
