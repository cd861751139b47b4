// mpi_collectives: construction, MPI's handles, and the reductions (allreduce, its non-blocking form, reduce,
// reduce_scatter_block). The data movements are in mpi_collectives_movement.cpp: two translation units
// so that a parallel build compiles the two halves of the instantiations at once.

#include "mpi_collectives.hpp"

#include <string>

#include "mpi_collectives_engines.hpp"

namespace zcoll::lib {

std::optional<value_kind> value_kind_of(MPI_Datatype type) {
  if (type == MPI_FLOAT) return value_kind::f32;
  if (type == MPI_DOUBLE) return value_kind::f64;
  return std::nullopt;
}

std::optional<reduction> reduction_of(MPI_Op op) {
  if (op == MPI_SUM) return reduction::sum;
  if (op == MPI_MIN) return reduction::min;
  if (op == MPI_MAX) return reduction::max;
  return std::nullopt;
}

mpi_collectives::mpi_collectives(MPI_Comm comm, bound error_bound, collectives_settings settings)
    : comm_(comm), error_bound_(error_bound), settings_(std::move(settings)), engines_(std::make_unique<engines>()) {
  if (settings_.codec != supported_collective_codecs()) {
    throw argument_error("codec '" + settings_.codec + "' does not run in the compiled collectives, expected one of: " +
                         std::string(supported_collective_codecs()));
  }
  if (settings_.threads == 0) throw argument_error("threads is 0, expected at least 1");
  int inter = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    throw argument_error("the communicator is not a valid intracommunicator");
  }
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
}

mpi_collectives::~mpi_collectives() = default;

mpi_collectives::engines& mpi_collectives::the_engines() { return *engines_; }

namespace {

/// fn(the collective of schedule `s`).
template <class Fn>
decltype(auto) with_reduce_schedule(mpi_collectives::engines& e, reduce_schedule s, MPI_Comm comm, const bound& b,
                                    const collectives_settings& settings, Fn&& fn) {
  if (s == reduce_schedule::ring) return fn(detail::engine_in(e.ring, comm, b, settings));
  return fn(detail::engine_in(e.recursive_doubling, comm, b, settings));
}

}  // namespace

collective_report mpi_collectives::allreduce(value_kind v, const void* in, void* out, std::size_t count, reduction r) {
  return with_reduce_schedule(the_engines(), settings_.allreduce, comm_, error_bound_, settings_, [&](auto& coll) {
    detail::with_value(v, [&]<class T>(T) {
      detail::with_reduction(r, [&](auto op) {
        if (in == nullptr || in == out) {
          coll.allreduce(detail::values_out<T>(out, count), op);
        } else {
          coll.allreduce(detail::values_in<T>(in, count), detail::values_out<T>(out, count), op);
        }
      });
    });
    return coll.last_report();
  });
}

zcoll::request mpi_collectives::allreduce_async(value_kind v, const void* in, void* out, std::size_t count, reduction r) {
  return with_reduce_schedule(the_engines(), settings_.allreduce, comm_, error_bound_, settings_, [&](auto& coll) {
    return detail::with_value(v, [&]<class T>(T) {
      return detail::with_reduction(r, [&](auto op) {
        if (in == nullptr || in == out) return coll.allreduce_async(detail::values_out<T>(out, count), op);
        return coll.allreduce_async(detail::values_in<T>(in, count), detail::values_out<T>(out, count), op);
      });
    });
  });
}

collective_report mpi_collectives::reduce(value_kind v, const void* in, void* out, std::size_t count, reduction r,
                                          int root) {
  return with_reduce_schedule(the_engines(), settings_.reduce, comm_, error_bound_, settings_, [&](auto& coll) {
    detail::with_value(v, [&]<class T>(T) {
      detail::with_reduction(r, [&](auto op) {
        const auto result = detail::values_out<T>(rank_ == root ? out : nullptr, count);
        if (in == nullptr) {  // in place, on the root
          const auto own = detail::copy_of<T>(out, count);
          coll.reduce(std::span<const T>(own), result, op, root);
        } else {
          coll.reduce(detail::values_in<T>(in, count), result, op, root);
        }
      });
    });
    return coll.last_report();
  });
}

collective_report mpi_collectives::reduce_scatter_block(value_kind v, const void* in, void* out, std::size_t block,
                                                        reduction r) {
  auto& coll = detail::engine_in(the_engines().ring, comm_, error_bound_, settings_);
  const std::size_t total = block * static_cast<std::size_t>(size_);
  detail::with_value(v, [&]<class T>(T) {
    detail::with_reduction(r, [&](auto op) {
      if (in == nullptr) {  // in place: the input fills `out`, the result is its first block
        const auto all = detail::copy_of<T>(out, total);
        coll.reduce_scatter(std::span<const T>(all), detail::values_out<T>(out, block), op);
      } else {
        coll.reduce_scatter(detail::values_in<T>(in, total), detail::values_out<T>(out, block), op);
      }
    });
  });
  return coll.last_report();
}

}  // namespace zcoll::lib
