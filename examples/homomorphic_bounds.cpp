// The worst-case error bound a compressed sum reports, homomorphic (sums on compressed streams) beside
// decompress-reduce-compress hops, schedule by schedule and rank count by rank count, in units of the
// codec's bound (docs/collectives.md, "Homomorphic sums", quotes its table).
//
//   build/release/examples/zcoll-example-homomorphic-bounds
#include <zcoll/fmt.hpp>
#include <zcoll/zcoll.hpp>

#include <algorithm>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace {

/// The largest bound any rank's report states, for `call` run with the homomorphic switch `on`.
template <class Schedule, class Call>
double worst_bound(int ranks, bool on, Call call) {
  double worst = 0.0;
  std::mutex lock;
  zcoll::transport::run_local(ranks, [&](zcoll::transport::Local& t) {
    zcoll::Compressed<Schedule, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1.0)}}, {.homomorphic = on}};
    call(coll);
    const std::lock_guard held(lock);
    worst = std::max(worst, coll.last_report().error_bound);
  });
  return worst;
}

template <class Schedule>
void allreduce_row(const std::string& name, const std::vector<int>& ranks) {
  std::string on = name + " allreduce, homomorphic |", off = name + " allreduce, chain       |";
  for (const int p : ranks) {
    const auto call = [](auto& coll) {
      std::vector<float> data(1 << 16, 1.5f);
      coll.allreduce(std::span<float>(data), zcoll::op::sum);
    };
    on += fmt::format(" {:>3g}", worst_bound<Schedule>(p, true, call));
    off += fmt::format(" {:>3g}", worst_bound<Schedule>(p, false, call));
  }
  fmt::print("{}\n{}\n", on, off);
}

}  // namespace

int main() {
  const std::vector<int> ranks = {2, 3, 4, 5, 7, 8, 16};
  std::string header = "worst-case bound / eb, p =                   |";
  for (const int p : ranks) header += fmt::format(" {:>3}", p);
  fmt::print("{}\n", header);
  allreduce_row<zcoll::Ring>("ring              ", ranks);
  allreduce_row<zcoll::RecursiveDoubling>("recursive doubling", ranks);
  allreduce_row<zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling, 4>>("hierarchical(4)   ", ranks);
  std::string on = "ring               reduce_scatter, homomorphic |", off = "ring               reduce_scatter, chain       |";
  for (const int p : ranks) {
    const auto call = [p](auto& coll) {
      std::vector<float> in((1 << 16) * static_cast<std::size_t>(p), 1.5f), out(1 << 16);
      coll.reduce_scatter(std::span<const float>(in), std::span<float>(out), zcoll::op::sum);
    };
    on += fmt::format(" {:>3g}", worst_bound<zcoll::Ring>(p, true, call));
    off += fmt::format(" {:>3g}", worst_bound<zcoll::Ring>(p, false, call));
  }
  fmt::print("{}\n{}\n", on, off);
}
