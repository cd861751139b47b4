#pragma once
// mpi_collectives: zcoll's compressed collectives on one MPI communicator, chosen at run time — the
// codec's bound, the schedule of each operation, value type and reduction given as values — for the two
// compiled faces of zcoll: the C API (zcoll.h) and the interposition library (libzcoll-mpi.so). Buffers
// are untyped and counts in values, as in MPI.
//
// Each schedule runs on a communicator of its own (a transport::Mpi: a split of the caller's
// communicator), made at the first call that needs it — a collective step, so every rank must make the
// same calls in the same order, as MPI requires of collectives anyway. Separate communicators keep the
// messages of a non-blocking allreduce apart from those of a broadcast started while it is in flight.

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zcoll/collective/collective_report.hpp"
#include "zcoll/collective/request.hpp"
#include "zcoll/core/error_bound.hpp"

namespace zcoll::lib {

/// The collective operations the compiled faces run compressed.
enum class operation : std::uint8_t {
  allreduce,
  iallreduce,
  reduce,
  reduce_scatter_block,
  allgather,
  bcast,
  scatter,
  gather,
  alltoall,
};
inline constexpr std::size_t operation_count = 9;
inline constexpr std::array<std::string_view, operation_count> operation_names{
    "allreduce", "iallreduce", "reduce", "reduce_scatter_block", "allgather", "bcast", "scatter", "gather", "alltoall"};

constexpr std::string_view name_of(operation op) { return operation_names[static_cast<std::size_t>(op)]; }

/// The operation called `name`, or nothing.
constexpr std::optional<operation> parse_operation(std::string_view name) {
  for (std::size_t i = 0; i < operation_count; ++i) {
    if (operation_names[i] == name) return static_cast<operation>(i);
  }
  return std::nullopt;
}

/// A set of operations.
class operation_set {
 public:
  static constexpr operation_set all() { return operation_set{(1u << operation_count) - 1}; }
  static constexpr operation_set none() { return operation_set{0}; }
  constexpr bool contains(operation op) const { return (bits_ >> static_cast<unsigned>(op)) & 1u; }
  constexpr void add(operation op) { bits_ |= 1u << static_cast<unsigned>(op); }
  friend constexpr bool operator==(operation_set, operation_set) = default;

 private:
  constexpr explicit operation_set(unsigned bits) : bits_(bits) {}
  unsigned bits_;
};

enum class value_kind : std::uint8_t { f32, f64 };
enum class reduction : std::uint8_t { sum, min, max };

/// The value kind of a predefined MPI datatype zcoll compresses (MPI_FLOAT, MPI_DOUBLE), or nothing.
std::optional<value_kind> value_kind_of(MPI_Datatype type);
/// The reduction of a predefined MPI operation zcoll runs (MPI_SUM, MPI_MIN, MPI_MAX), or nothing.
std::optional<reduction> reduction_of(MPI_Op op);
constexpr std::size_t value_bytes(value_kind kind) { return kind == value_kind::f32 ? 4 : 8; }

namespace detail {
/// fn(T{}) for the value type of `kind`.
template <class Fn>
decltype(auto) with_value(value_kind kind, Fn&& fn) {
  if (kind == value_kind::f32) return fn(float{});
  return fn(double{});
}
}  // namespace detail

/// The schedules an operation may run on, where it has a choice.
enum class reduce_schedule : std::uint8_t { ring, recursive_doubling };
enum class bcast_schedule : std::uint8_t { binomial_tree, scatter_allgather, chain };

constexpr std::string_view name_of(reduce_schedule s) { return s == reduce_schedule::ring ? "ring" : "recursive_doubling"; }
constexpr std::string_view name_of(bcast_schedule s) {
  return s == bcast_schedule::binomial_tree ? "binomial_tree" : s == bcast_schedule::chain ? "chain" : "scatter_allgather";
}

/// How the collectives run (the same on every rank of a communicator).
struct collectives_settings {
  std::string codec = "fzlight";                             ///< the registered codec (fzlight only, for now)
  reduce_schedule allreduce = reduce_schedule::ring;          ///< allreduce and iallreduce
  reduce_schedule reduce = reduce_schedule::ring;
  reduce_schedule allgather = reduce_schedule::ring;
  bcast_schedule bcast = bcast_schedule::chain;  // docs/performance.md: 2.6x against 1.9x at 4 hosts
  unsigned threads = 1;
  bool verify = false;
  bool homomorphic = false;
};

/// The codecs mpi_collectives runs, for messages: "fzlight".
constexpr std::string_view supported_collective_codecs() { return "fzlight"; }

/// The compressed collectives on one communicator, at one error bound.
class mpi_collectives {
 public:
  /// Over `comm` (an intracommunicator the caller keeps alive while this object makes calls on it);
  /// argument_error for a codec it does not run or threads = 0. Not collective: the communicators of
  /// the schedules are made by the first call of each.
  mpi_collectives(MPI_Comm comm, bound error_bound, collectives_settings settings);
  ~mpi_collectives();
  mpi_collectives(const mpi_collectives&) = delete;
  mpi_collectives& operator=(const mpi_collectives&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const collectives_settings& settings() const { return settings_; }

  // Each returns this rank's report of the call. `in == nullptr` means in place, as MPI_IN_PLACE: the
  // input is in the output buffer (for gather-like calls, this rank's block of it; for scatter, the
  // root keeps its block where it is). Counts are in values; `block` is one rank's share.

  collective_report allreduce(value_kind v, const void* in, void* out, std::size_t count, reduction r);
  /// The non-blocking allreduce: `in` (unless null) and `out` must stay alive until the request ends.
  zcoll::request allreduce_async(value_kind v, const void* in, void* out, std::size_t count, reduction r);
  collective_report reduce(value_kind v, const void* in, void* out, std::size_t count, reduction r, int root);
  collective_report reduce_scatter_block(value_kind v, const void* in, void* out, std::size_t block, reduction r);
  collective_report allgather(value_kind v, const void* mine, void* all, std::size_t block);
  collective_report bcast(value_kind v, void* data, std::size_t count, int root);
  collective_report scatter(value_kind v, const void* all, void* mine, std::size_t block, int root);
  collective_report gather(value_kind v, const void* mine, void* all, std::size_t block, int root);
  collective_report alltoall(value_kind v, const void* in, void* out, std::size_t block);

  /// The collectives of each schedule (mpi_collectives_engines.hpp; private to lib/).
  struct engines;

 private:
  engines& the_engines();

  MPI_Comm comm_;
  bound error_bound_;
  collectives_settings settings_;
  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<engines> engines_;
};

}  // namespace zcoll::lib
