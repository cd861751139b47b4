#pragma once
/// Execution spaces as tag arguments: codec.compress(zcoll::exec::Host{.threads = 2}, in, out).

#include <algorithm>
#include <cstddef>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"

#if ZCOLL_HAS_OPENMP
#include <omp.h>
#endif

namespace zcoll::exec {

/// Host CPU threads (OpenMP when the including program is built with it, std::thread otherwise).
/// The bytes a codec writes never depend on `threads`.
struct Host {
  unsigned threads = 1;
};

/// How many workers for_each_range uses for `items` work items.
inline std::size_t worker_count(const Host& host, std::size_t items) {
  return std::min<std::size_t>(std::max(1u, host.threads), items);
}

/// Splits [0, items) into worker_count(host, items) contiguous ranges and runs fn(worker, begin, end) for
/// each on its own thread. Static, contiguous ranges: on small shared VMs OpenMP's dynamic scheduling was
/// seen to serialise two-thread runs (../shared/baselines.md), and contiguous ranges let each worker write
/// one contiguous region. The first exception a worker throws is rethrown here.
template <class Fn>
void for_each_range(const Host& host, std::size_t items, Fn&& fn) {
  const std::size_t workers = worker_count(host, items);
  if (workers <= 1) {
    if (items > 0) fn(std::size_t{0}, std::size_t{0}, items);
    return;
  }
  std::vector<std::exception_ptr> failures(workers);
  auto run_range = [&](std::size_t w) {
    try {
      fn(w, items * w / workers, items * (w + 1) / workers);
    } catch (...) {
      failures[w] = std::current_exception();
    }
  };
#if ZCOLL_HAS_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(workers))
  for (std::ptrdiff_t w = 0; w < static_cast<std::ptrdiff_t>(workers); ++w) run_range(static_cast<std::size_t>(w));
#else
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(run_range, w);
  run_range(0);
  for (auto& t : pool) t.join();
#endif
  for (auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace zcoll::exec
