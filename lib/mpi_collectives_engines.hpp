#pragma once
// The compressed collectives behind mpi_collectives, one per schedule, each on a communicator of its
// own made at its first use (mpi_collectives.hpp says why). Private to lib/.

#include <memory>
#include <span>
#include <vector>

#include "mpi_collectives.hpp"
#include "zcoll/mpi.hpp"

namespace zcoll::lib {

struct mpi_collectives::engines {
  template <class S>
  using slot = std::unique_ptr<Compressed<S, FZLight>>;
  slot<Ring> ring;
  slot<RecursiveDoubling> recursive_doubling;
  slot<BinomialTree> binomial_tree;
  slot<ScatterAllgather> scatter_allgather;
  slot<Chain<>> chain;  // the pipelined bcast (32 segments)
  slot<Pairwise> pairwise;
};

namespace detail {

/// The collective in `slot`, made (collectively over `comm`) when it is empty.
template <class S>
Compressed<S, FZLight>& engine_in(std::unique_ptr<Compressed<S, FZLight>>& slot, MPI_Comm comm, const bound& error_bound,
                                  const collectives_settings& settings) {
  if (!slot) {
    collective_config config;
    config.threads = settings.threads;
    config.verify = settings.verify;
    config.homomorphic = settings.homomorphic;
    slot = std::make_unique<Compressed<S, FZLight>>(transport::Mpi{comm}, FZLight{{.error_bound = error_bound}}, config);
  }
  return *slot;
}

/// fn(the zcoll::op tag of `r`).
template <class Fn>
decltype(auto) with_reduction(reduction r, Fn&& fn) {
  if (r == reduction::sum) return fn(op::sum);
  if (r == reduction::min) return fn(op::min);
  return fn(op::max);
}

template <class T>
std::span<const T> values_in(const void* p, std::size_t n) {
  return {static_cast<const T*>(p), p == nullptr ? 0 : n};
}

template <class T>
std::span<T> values_out(void* p, std::size_t n) {
  return {static_cast<T*>(p), p == nullptr ? 0 : n};
}

/// A copy of `n` values at `p`: the input of a call made in place, which zcoll's calls take apart from
/// their output.
template <class T>
std::vector<T> copy_of(const void* p, std::size_t n) {
  const T* first = static_cast<const T*>(p);
  return std::vector<T>(first, first + n);
}

}  // namespace detail
}  // namespace zcoll::lib
