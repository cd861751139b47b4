// mpi_collectives: the data movements (allgather, bcast, scatter, gather, alltoall); the reductions and
// construction are in mpi_collectives.cpp.

#include "mpi_collectives.hpp"

#include "mpi_collectives_engines.hpp"

namespace zcoll::lib {

collective_report mpi_collectives::allgather(value_kind v, const void* mine, void* all, std::size_t block) {
  const std::size_t total = block * static_cast<std::size_t>(size_);
  const auto run = [&](auto& coll) {
    detail::with_value(v, [&]<class T>(T) {
      if (mine == nullptr) {  // in place: this rank's block is in `all`
        const auto own = detail::copy_of<T>(static_cast<const T*>(all) + static_cast<std::size_t>(rank_) * block, block);
        coll.allgather(std::span<const T>(own), detail::values_out<T>(all, total));
      } else {
        coll.allgather(detail::values_in<T>(mine, block), detail::values_out<T>(all, total));
      }
    });
    return coll.last_report();
  };
  if (settings_.allgather == reduce_schedule::ring) return run(detail::engine_in(the_engines().ring, comm_, error_bound_, settings_));
  return run(detail::engine_in(the_engines().recursive_doubling, comm_, error_bound_, settings_));
}

collective_report mpi_collectives::bcast(value_kind v, void* data, std::size_t count, int root) {
  const auto run = [&](auto& coll) {
    detail::with_value(v, [&]<class T>(T) { coll.bcast(detail::values_out<T>(data, count), root); });
    return coll.last_report();
  };
  if (settings_.bcast == bcast_schedule::binomial_tree) {
    return run(detail::engine_in(the_engines().binomial_tree, comm_, error_bound_, settings_));
  }
  if (settings_.bcast == bcast_schedule::chain) return run(detail::engine_in(the_engines().chain, comm_, error_bound_, settings_));
  return run(detail::engine_in(the_engines().scatter_allgather, comm_, error_bound_, settings_));
}

collective_report mpi_collectives::scatter(value_kind v, const void* all, void* mine, std::size_t block, int root) {
  auto& coll = detail::engine_in(the_engines().binomial_tree, comm_, error_bound_, settings_);
  const std::size_t total = block * static_cast<std::size_t>(size_);
  detail::with_value(v, [&]<class T>(T) {
    const auto everything = detail::values_in<T>(rank_ == root ? all : nullptr, total);
    if (mine == nullptr) {  // in place, on the root: its own block stays where it is
      std::vector<T> discarded(block);
      coll.scatter(everything, std::span<T>(discarded), root);
    } else {
      coll.scatter(everything, detail::values_out<T>(mine, block), root);
    }
  });
  return coll.last_report();
}

collective_report mpi_collectives::gather(value_kind v, const void* mine, void* all, std::size_t block, int root) {
  auto& coll = detail::engine_in(the_engines().binomial_tree, comm_, error_bound_, settings_);
  const std::size_t total = block * static_cast<std::size_t>(size_);
  detail::with_value(v, [&]<class T>(T) {
    const auto result = detail::values_out<T>(rank_ == root ? all : nullptr, total);
    if (mine == nullptr) {  // in place, on the root: its block is already in `all`
      const auto own = detail::copy_of<T>(static_cast<const T*>(all) + static_cast<std::size_t>(root) * block, block);
      coll.gather(std::span<const T>(own), result, root);
    } else {
      coll.gather(detail::values_in<T>(mine, block), result, root);
    }
  });
  return coll.last_report();
}

collective_report mpi_collectives::alltoall(value_kind v, const void* in, void* out, std::size_t block) {
  auto& coll = detail::engine_in(the_engines().pairwise, comm_, error_bound_, settings_);
  const std::size_t total = block * static_cast<std::size_t>(size_);
  detail::with_value(v, [&]<class T>(T) {
    if (in == nullptr) {  // in place: the blocks to send are in `out`
      const auto blocks = detail::copy_of<T>(out, total);
      coll.alltoall(std::span<const T>(blocks), detail::values_out<T>(out, total));
    } else {
      coll.alltoall(detail::values_in<T>(in, total), detail::values_out<T>(out, total));
    }
  });
  return coll.last_report();
}

}  // namespace zcoll::lib
