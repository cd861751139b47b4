#pragma once
/// Compressed<Schedule, Codec>: MPI-style collectives that move compressed bytes (the ZCCL frameworks).
///
///     zcoll::transport::Local t = ...;   // or zcoll::transport::Mpi{MPI_COMM_WORLD} (<zcoll/mpi.hpp>)
///     zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t, zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}}};
///     coll.allreduce(std::span<float>(grad), zcoll::op::sum);   // Z-Allreduce
///     auto req = coll.allgather_async(std::span<const float>(mine), std::span<float>(all));
///     compute();
///     req.wait();
///     auto report = req.report();                                // bytes, ratio, time split, error bound
///
/// This class is the public face only: each call checks its arguments, describes itself for verify mode
/// and starts a coroutine over one call object (collective/detail/call.hpp) that runs the engines —
/// data movement (detail/movement.hpp: each block compressed once by its owner, forwarded unchanged,
/// decompressed once) and reduction (detail/reduction.hpp: decompress-reduce-compress hops). The blocking
/// calls are the non-blocking ones waited on.
///
/// The codec value carries every codec setting (bound, chunk length, fill value, shape, its stages'
/// settings); a relative bound is turned into one absolute bound for every reduction hop from the global
/// value range (one small exact allgather of each rank's min and max first). allreduce is the schedule's
/// own allreduce where it has one (RecursiveDoubling), reduce_scatter + allgather otherwise (Ring:
/// Z-Allreduce). Compressed<S, Identity> is the plain schedule: the values travel as raw bytes, exactly;
/// so does any call whose input is below collective_config::min_compressed_bytes (the report says so).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/presets.hpp"
#include "zcoll/collective/collective_config.hpp"
#include "zcoll/collective/collective_report.hpp"
#include "zcoll/collective/detail/agreement.hpp"
#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/homomorphic.hpp"
#include "zcoll/collective/detail/movement.hpp"
#include "zcoll/collective/detail/reduction.hpp"
#include "zcoll/collective/detail/staged_alltoall.hpp"
#include "zcoll/collective/detail/staged_block_work.hpp"
#include "zcoll/collective/detail/staged_reduction.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/request.hpp"
#include "zcoll/collective/staging.hpp"
#include "zcoll/collective/verify.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/half_value.hpp"
#include "zcoll/core/reduce_op.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/binomial_tree.hpp"
#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/ring.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll {

template <schedule::schedule S, codec Codec>
class Compressed {
  using op_kind = schedule::collective_op;
  static constexpr bool identity_codec = std::is_same_v<Codec, Identity>;

 public:
  /// The collective over `transport` (moved in; transport::Mpi duplicates its communicator) with
  /// `codec`, a value with every setting of its own: its bound, chunk length, fill value, shape (the
  /// row length of a row-wise codec is shape.back(): every block a call compresses must then be whole
  /// rows) and its stages' settings. The reduction hops use codec.with_error_bound(the hops' absolute
  /// bound). Every rank constructs its collective with equal settings (verify mode checks them).
  // The class itself is ruled out before byte_transport is checked: asking whether a Compressed is a
  // transport asks whether it is movable, which would consider this constructor again (clang 14).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, Compressed> && transport::byte_transport<T>)
  Compressed(T transport, Codec codec, collective_config config = {})
      : engine_(std::make_unique<engine>(check_thread_level(std::move(transport), config), std::move(codec), config)) {}

  /// The collective over Codec{codec_settings}: {.error_bound = zcoll::relative(1e-4)} names the codec's
  /// bound, chunk length, fill value and shape, as for Codec itself.
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, Compressed> && transport::byte_transport<T> &&
             std::constructible_from<Codec, codec_config>)
  Compressed(T transport, codec_config codec_settings, collective_config config = {})
      : Compressed(std::move(transport), Codec{std::move(codec_settings)}, config) {}

  /// The collective with the codec's defaults (Identity: the plain schedule).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, Compressed> && transport::byte_transport<T> &&
             std::default_initializable<Codec>)
  explicit Compressed(T transport) : Compressed(std::move(transport), Codec{}) {}

  int rank() const { return engine_->transport.rank(); }
  int size() const { return engine_->transport.size(); }
  const Codec& codec() const { return engine_->coder.codec(); }
  const collective_config& config() const { return engine_->config; }
  /// The report of the last blocking call (a non-blocking one's is its request's).
  const collective_report& last_report() const { return last_report_; }

  // ---- data movement -------------------------------------------------------------------------------

  /// all = every rank's `mine`, in rank order; all.size() == size() * mine.size().
  template <collective_value T>
  request allgather_async(std::span<const T> mine, std::span<T> all) {
    static_assert(S::supports(op_kind::allgather),
                  "Compressed::allgather: this schedule has no allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_allgather(mine.size(), all.size()); });
    return start({"allgather", sizeof(T), mine.size()}, std::move(fault), mine.size_bytes(), mine.size_bytes(),
                 body_of<T>(mine, all, [](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_allgather<value_of<decltype(out)>>(e, call, host_work(e), in, out);
                 }));
  }

  /// Every rank's `data` becomes root's.
  template <collective_value T>
  request bcast_async(std::span<T> data, int root) {
    static_assert(S::supports(op_kind::bcast),
                  "Compressed::bcast: this schedule has no bcast; use zcoll::BinomialTree or zcoll::ScatterAllgather");
    const detail::call_description what{"bcast", sizeof(T), data.size(), root};
    auto fault = checked([&] { check_root("bcast", root); });
    return start(what, std::move(fault), rank() == root ? data.size_bytes() : 0, data.size_bytes(),
                 body_of<T>({}, data, [root](engine& e, detail::call_context& call, auto, auto out) {
                   return run_bcast<value_of<decltype(out)>>(e, call, host_work(e), out, root);
                 }));
  }

  /// Rank (root + k) mod size() gets block k of root's `all` (all.size() == size() * mine.size() on root;
  /// ignored elsewhere).
  template <collective_value T>
  request scatter_async(std::span<const T> all, std::span<T> mine, int root) {
    static_assert(S::supports(op_kind::scatter), "Compressed::scatter: this schedule has no scatter; use zcoll::BinomialTree");
    const detail::call_description what{"scatter", sizeof(T), mine.size(), root};
    auto fault = checked([&] { check_rooted_blocks("scatter", root, mine.size(), all.size()); });
    return start(what, std::move(fault), rank() == root ? all.size_bytes() : 0, mine.size_bytes(),
                 body_of<T>(all, mine, [root](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_scatter<value_of<decltype(out)>>(e, call, host_work(e), in, out, root);
                 }));
  }

  /// Root's `all` gets every rank's `mine`, in rank order (ignored elsewhere).
  template <collective_value T>
  request gather_async(std::span<const T> mine, std::span<T> all, int root) {
    static_assert(S::supports(op_kind::gather), "Compressed::gather: this schedule has no gather; use zcoll::BinomialTree");
    const detail::call_description what{"gather", sizeof(T), mine.size(), root};
    auto fault = checked([&] { check_rooted_blocks("gather", root, mine.size(), all.size()); });
    return start(what, std::move(fault), mine.size_bytes(), mine.size_bytes(),
                 body_of<T>(mine, all, [root](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_gather<value_of<decltype(out)>>(e, call, host_work(e), in, out, root);
                 }));
  }

  /// out block b = block rank() of rank b's `in`; in.size() == out.size() == size() * block values.
  template <collective_value T>
  request alltoall_async(std::span<const T> in, std::span<T> out) {
    static_assert(S::supports(op_kind::alltoall), "Compressed::alltoall: this schedule has no alltoall; use zcoll::Pairwise");
    const auto p = static_cast<std::size_t>(size());
    const detail::call_description what{"alltoall", sizeof(T), in.size()};
    auto fault = checked([&] { check_alltoall("alltoall", in.size(), out.size()); });
    return start(what, std::move(fault), in.size_bytes(), in.size_bytes() / p,
                 body_of<T>(in, out, [p](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_with_finish(call, detail::alltoall_blocks<S, Codec, value_of<decltype(out)>>(call, e.coder, in, out,
                                                                                                         in.size() / p));
                 }));
  }

  /// Blocks of different lengths (MPI_Alltoallv with packed displacements, torch's all_to_all_single
  /// with split sizes): `in` holds send_counts[b] values for rank b, block after block in rank order;
  /// `out` receives recv_counts[b] values from rank b, likewise. recv_counts[b] on this rank must equal
  /// send_counts[rank()] on rank b (a block of another length is a format_error). The compressed size of
  /// each block travels before it. A block below min_compressed_bytes travels raw: sender and receiver
  /// both know its length, so they agree block by block.
  template <collective_value T>
  request alltoallv_async(std::span<const T> in, std::span<const std::size_t> send_counts, std::span<T> out,
                          std::span<const std::size_t> recv_counts) {
    static_assert(S::supports(op_kind::alltoall), "Compressed::alltoallv: this schedule has no alltoall; use zcoll::Pairwise");
    // The counts differ from rank to rank; a pair that disagrees shows as a block of another length.
    const detail::call_description what{"alltoallv", sizeof(T), 0};
    auto fault = checked([&] { check_alltoallv("alltoallv", in.size(), send_counts, out.size(), recv_counts); });
    const std::vector<std::size_t> send_first = firsts_of(send_counts, fault), recv_first = firsts_of(recv_counts, fault);
    return start(what, std::move(fault), in.size_bytes(), 0,
                 body_of<T>(in, out, [send_first, recv_first](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_with_finish(call, detail::alltoallv_blocks<S, Codec, value_of<decltype(out)>>(
                                                    call, e.coder, in, send_first, out, recv_first, identity_codec));
                 }));
  }

  // ---- data movement on values in a staging space (device buffers) ---------------------------------

  /// The data-movement calls on values in `space`'s memory: device buffers with a zcoll::cuda::Staging
  /// (<zcoll/collective/cuda_staging.cuh>), host buffers with a zcoll::HostStaging. Arguments, checks and
  /// results are the host calls'; the codec runs in the space in batches and only compressed bytes cross
  /// to the host for the transport (detail/staged_block_work.hpp, detail/staged_alltoall.hpp). Every rank
  /// makes the staged call (verify mode tells it from the host call). `space` and the buffers must live
  /// until the request completes; a space serves one call in flight.
  template <staging_space Space, collective_value T>
  request allgather_async(Space& space, std::span<const T> mine, std::span<T> all) {
    static_assert(S::supports(op_kind::allgather),
                  "Compressed::allgather: this schedule has no allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_allgather(mine.size(), all.size()); });
    return start_staged({"allgather (staged)", sizeof(T), mine.size()}, std::move(fault), space, mine.size_bytes(), mine.size_bytes(),
                        staged_body_of<T, Space>(mine, all, [](engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_allgather<value_of<decltype(out)>>(e, call, staged_work(e, space), in, out);
                        }));
  }

  template <staging_space Space, collective_value T>
  request bcast_async(Space& space, std::span<T> data, int root) {
    static_assert(S::supports(op_kind::bcast),
                  "Compressed::bcast: this schedule has no bcast; use zcoll::BinomialTree or zcoll::ScatterAllgather");
    auto fault = checked([&] { check_root("bcast", root); });
    return start_staged({"bcast (staged)", sizeof(T), data.size(), root}, std::move(fault), space,
                        rank() == root ? data.size_bytes() : 0, data.size_bytes(),
                        staged_body_of<T, Space>({}, data, [root](engine& e, detail::call_context& call, Space& space, auto, auto out) {
                          return run_bcast<value_of<decltype(out)>>(e, call, staged_work(e, space), out, root);
                        }));
  }

  template <staging_space Space, collective_value T>
  request scatter_async(Space& space, std::span<const T> all, std::span<T> mine, int root) {
    static_assert(S::supports(op_kind::scatter), "Compressed::scatter: this schedule has no scatter; use zcoll::BinomialTree");
    auto fault = checked([&] { check_rooted_blocks("scatter", root, mine.size(), all.size()); });
    return start_staged({"scatter (staged)", sizeof(T), mine.size(), root}, std::move(fault), space,
                        rank() == root ? all.size_bytes() : 0, mine.size_bytes(),
                        staged_body_of<T, Space>(all, mine, [root](engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_scatter<value_of<decltype(out)>>(e, call, staged_work(e, space), in, out, root);
                        }));
  }

  template <staging_space Space, collective_value T>
  request gather_async(Space& space, std::span<const T> mine, std::span<T> all, int root) {
    static_assert(S::supports(op_kind::gather), "Compressed::gather: this schedule has no gather; use zcoll::BinomialTree");
    auto fault = checked([&] { check_rooted_blocks("gather", root, mine.size(), all.size()); });
    return start_staged({"gather (staged)", sizeof(T), mine.size(), root}, std::move(fault), space, mine.size_bytes(),
                        mine.size_bytes(),
                        staged_body_of<T, Space>(mine, all, [root](engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_gather<value_of<decltype(out)>>(e, call, staged_work(e, space), in, out, root);
                        }));
  }

  /// alltoall on values in `space`: the blocks of every destination compressed in batches (one launch
  /// for up to 64 blocks on a GPU); its wire is alltoallv's.
  template <staging_space Space, collective_value T>
  request alltoall_async(Space& space, std::span<const T> in, std::span<T> out) {
    static_assert(S::supports(op_kind::alltoall), "Compressed::alltoall: this schedule has no alltoall; use zcoll::Pairwise");
    auto fault = checked([&] { check_alltoall("alltoall", in.size(), out.size()); });
    const std::vector<std::size_t> counts(static_cast<std::size_t>(size()), fault ? 0 : in.size() / static_cast<std::size_t>(size()));
    std::vector<std::size_t> first = firsts_of(counts, fault);  // before `fault` moves
    return start_staged_alltoall({"alltoall (staged)", sizeof(T), in.size()}, std::move(fault), space, in, first, out, first);
  }

  /// alltoallv on values in `space`, as alltoall_async(space, ...); the counts are the host call's.
  template <staging_space Space, collective_value T>
  request alltoallv_async(Space& space, std::span<const T> in, std::span<const std::size_t> send_counts, std::span<T> out,
                          std::span<const std::size_t> recv_counts) {
    static_assert(S::supports(op_kind::alltoall), "Compressed::alltoallv: this schedule has no alltoall; use zcoll::Pairwise");
    auto fault = checked([&] { check_alltoallv("alltoallv", in.size(), send_counts, out.size(), recv_counts); });
    std::vector<std::size_t> send_first = firsts_of(send_counts, fault), recv_first = firsts_of(recv_counts, fault);
    return start_staged_alltoall({"alltoallv (staged)", sizeof(T), 0}, std::move(fault), space, in, std::move(send_first), out,
                                 std::move(recv_first));
  }

  // ---- reductions ----------------------------------------------------------------------------------

  /// out = block rank() of the element-wise reduction of every rank's `in` (in.size() == size() *
  /// out.size()).
  template <collective_value T, op::reduction Op>
  request reduce_scatter_async(std::span<const T> in, std::span<T> out, Op op) {
    static_assert(S::supports(op_kind::reduce_scatter),
                  "Compressed::reduce_scatter: this schedule has no reduce_scatter; use zcoll::Ring");
    auto fault = checked([&] { check_reduce_scatter(in.size(), out.size()); });
    return start({"reduce_scatter", sizeof(T), out.size(), 0, Op::name}, std::move(fault), in.size_bytes(), in.size_bytes(),
                 body_of<T>(in, out, [op](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_reduce_scatter<value_of<decltype(out)>>(e, call, host_reduction(e), in, out, op);
                 }));
  }

  /// data = the element-wise reduction of every rank's data (Z-Allreduce), in place.
  template <collective_value T, op::reduction Op>
  request allreduce_async(std::span<T> data, Op op) {
    static_assert(allreduce_possible, "Compressed::allreduce: this schedule has neither an allreduce nor reduce_scatter + "
                                      "allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_whole_rows_per_rank("allreduce", "data", data.size()); });
    return start({"allreduce", sizeof(T), data.size(), 0, Op::name}, std::move(fault), data.size_bytes(), data.size_bytes(),
                 body_of<T>({}, data, [op](engine& e, detail::call_context& call, auto, auto out) {
                   return run_allreduce<value_of<decltype(out)>>(e, call, host_reduction(e), out, op);
                 }));
  }

  /// out = the element-wise reduction of every rank's `in` (out.size() == in.size()); `in` is left as it
  /// was (MPI_Allreduce without MPI_IN_PLACE). `in` and `out` must not overlap.
  template <collective_value T, op::reduction Op>
  request allreduce_async(std::span<const T> in, std::span<T> out, Op op) {
    static_assert(allreduce_possible, "Compressed::allreduce: this schedule has neither an allreduce nor reduce_scatter + "
                                      "allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_allreduce(in, out); });
    if (!fault) std::copy(in.begin(), in.end(), out.begin());
    return start({"allreduce", sizeof(T), in.size(), 0, Op::name}, std::move(fault), in.size_bytes(), in.size_bytes(),
                 body_of<T>({}, out, [op](engine& e, detail::call_context& call, auto, auto out) {
                   return run_allreduce<value_of<decltype(out)>>(e, call, host_reduction(e), out, op);
                 }));
  }

  /// out on `root` = the element-wise reduction of every rank's `in` (MPI_Reduce; out.size() ==
  /// in.size() on the root, ignored elsewhere). Reduce-scatter, then the reduced blocks gathered to the
  /// root over a binomial tree, each compressed once (a schedule with its own allreduce, such as
  /// RecursiveDoubling, runs that instead).
  template <collective_value T, op::reduction Op>
  request reduce_async(std::span<const T> in, std::span<T> out, Op op, int root) {
    static_assert(allreduce_possible, "Compressed::reduce: this schedule has neither an allreduce nor reduce_scatter; use "
                                      "zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_reduce(in, out, root); });
    return start({"reduce", sizeof(T), in.size(), root, Op::name}, std::move(fault), in.size_bytes(), in.size_bytes(),
                 body_of<T>(in, out, [op, root](engine& e, detail::call_context& call, auto in, auto out) {
                   return run_reduce<value_of<decltype(out)>>(e, call, host_reduction(e), in, out, op, root);
                 }));
  }

  // ---- reductions on values in a staging space (device buffers) ------------------------------------

  /// The reductions on values in `space`'s memory (device buffers with a zcoll::cuda::Staging): the
  /// arguments, checks, hops, results and reports of the host calls, bit for bit, with the values
  /// reduced in the space and each hop's segments compressed and decoded there in batches
  /// (detail/staged_reduction.hpp). Sums on compressed streams (collective_config::homomorphic) keep
  /// the streams on the host, where the transport has them, and compress the own values, add the streams
  /// and decode the results in the space. `space` and the buffers must live until the request completes;
  /// a space serves one call in flight.
  template <staging_space Space, collective_value T, op::reduction Op>
  request reduce_scatter_async(Space& space, std::span<const T> in, std::span<T> out, Op op) {
    static_assert(S::supports(op_kind::reduce_scatter),
                  "Compressed::reduce_scatter: this schedule has no reduce_scatter; use zcoll::Ring");
    auto fault = checked([&] { check_reduce_scatter(in.size(), out.size()); });
    return start_staged({"reduce_scatter (staged)", sizeof(T), out.size(), 0, Op::name}, std::move(fault), space, in.size_bytes(),
                        in.size_bytes(),
                        staged_body_of<T, Space>(in, out, [op](engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_reduce_scatter<value_of<decltype(out)>>(e, call, staged_reduction(e, space), in, out, op);
                        }));
  }

  template <staging_space Space, collective_value T, op::reduction Op>
  request allreduce_async(Space& space, std::span<T> data, Op op) {
    static_assert(allreduce_possible, "Compressed::allreduce: this schedule has neither an allreduce nor reduce_scatter + "
                                      "allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_whole_rows_per_rank("allreduce", "data", data.size()); });
    return start_staged({"allreduce (staged)", sizeof(T), data.size(), 0, Op::name}, std::move(fault), space, data.size_bytes(),
                        data.size_bytes(),
                        staged_body_of<T, Space>({}, data, [op](engine& e, detail::call_context& call, Space& space, auto, auto out) {
                          return run_allreduce<value_of<decltype(out)>>(e, call, staged_reduction(e, space), out, op);
                        }));
  }

  /// out = the reduction of every rank's `in`, `in` left as it was (copied into `out` in the space).
  template <staging_space Space, collective_value T, op::reduction Op>
  request allreduce_async(Space& space, std::span<const T> in, std::span<T> out, Op op) {
    static_assert(allreduce_possible, "Compressed::allreduce: this schedule has neither an allreduce nor reduce_scatter + "
                                      "allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_allreduce(in, out); });
    return start_staged({"allreduce (staged)", sizeof(T), in.size(), 0, Op::name}, std::move(fault), space, in.size_bytes(),
                        in.size_bytes(),
                        staged_body_of<T, Space>(in, out, [op](engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_allreduce_from<value_of<decltype(out)>>(e, call, staged_reduction(e, space), in, out, op);
                        }));
  }

  template <staging_space Space, collective_value T, op::reduction Op>
  request reduce_async(Space& space, std::span<const T> in, std::span<T> out, Op op, int root) {
    static_assert(allreduce_possible, "Compressed::reduce: this schedule has neither an allreduce nor reduce_scatter; use "
                                      "zcoll::Ring or zcoll::RecursiveDoubling");
    auto fault = checked([&] { check_reduce(in, out, root); });
    return start_staged({"reduce (staged)", sizeof(T), in.size(), root, Op::name}, std::move(fault), space, in.size_bytes(),
                        in.size_bytes(),
                        staged_body_of<T, Space>(in, out, [op, root](engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_reduce<value_of<decltype(out)>>(e, call, staged_reduction(e, space), in, out, op, root);
                        }));
  }

  // ---- blocking: the non-blocking calls, waited on -------------------------------------------------

  template <collective_value T>
  void allgather(std::span<const T> mine, std::span<T> all) { complete(allgather_async<T>(mine, all)); }
  template <collective_value T>
  void bcast(std::span<T> data, int root) { complete(bcast_async<T>(data, root)); }
  template <collective_value T>
  void scatter(std::span<const T> all, std::span<T> mine, int root) { complete(scatter_async<T>(all, mine, root)); }
  template <collective_value T>
  void gather(std::span<const T> mine, std::span<T> all, int root) { complete(gather_async<T>(mine, all, root)); }
  template <collective_value T>
  void alltoall(std::span<const T> in, std::span<T> out) { complete(alltoall_async<T>(in, out)); }
  template <collective_value T>
  void alltoallv(std::span<const T> in, std::span<const std::size_t> send_counts, std::span<T> out,
                 std::span<const std::size_t> recv_counts) {
    complete(alltoallv_async<T>(in, send_counts, out, recv_counts));
  }
  template <staging_space Space, collective_value T>
  void allgather(Space& space, std::span<const T> mine, std::span<T> all) { complete(allgather_async<Space, T>(space, mine, all)); }
  template <staging_space Space, collective_value T>
  void bcast(Space& space, std::span<T> data, int root) { complete(bcast_async<Space, T>(space, data, root)); }
  template <staging_space Space, collective_value T>
  void scatter(Space& space, std::span<const T> all, std::span<T> mine, int root) {
    complete(scatter_async<Space, T>(space, all, mine, root));
  }
  template <staging_space Space, collective_value T>
  void gather(Space& space, std::span<const T> mine, std::span<T> all, int root) {
    complete(gather_async<Space, T>(space, mine, all, root));
  }
  template <staging_space Space, collective_value T>
  void alltoall(Space& space, std::span<const T> in, std::span<T> out) { complete(alltoall_async<Space, T>(space, in, out)); }
  template <staging_space Space, collective_value T>
  void alltoallv(Space& space, std::span<const T> in, std::span<const std::size_t> send_counts, std::span<T> out,
                 std::span<const std::size_t> recv_counts) {
    complete(alltoallv_async<Space, T>(space, in, send_counts, out, recv_counts));
  }
  template <collective_value T, op::reduction Op>
  void reduce_scatter(std::span<const T> in, std::span<T> out, Op op) { complete(reduce_scatter_async<T>(in, out, op)); }
  template <collective_value T, op::reduction Op>
  void allreduce(std::span<T> data, Op op) { complete(allreduce_async<T>(data, op)); }
  template <collective_value T, op::reduction Op>
  void allreduce(std::span<const T> in, std::span<T> out, Op op) { complete(allreduce_async<T>(in, out, op)); }
  template <collective_value T, op::reduction Op>
  void reduce(std::span<const T> in, std::span<T> out, Op op, int root) { complete(reduce_async<T>(in, out, op, root)); }
  template <staging_space Space, collective_value T, op::reduction Op>
  void reduce_scatter(Space& space, std::span<const T> in, std::span<T> out, Op op) {
    complete(reduce_scatter_async<Space, T>(space, in, out, op));
  }
  template <staging_space Space, collective_value T, op::reduction Op>
  void allreduce(Space& space, std::span<T> data, Op op) { complete(allreduce_async<Space, T>(space, data, op)); }
  template <staging_space Space, collective_value T, op::reduction Op>
  void allreduce(Space& space, std::span<const T> in, std::span<T> out, Op op) {
    complete(allreduce_async<Space, T>(space, in, out, op));
  }
  template <staging_space Space, collective_value T, op::reduction Op>
  void reduce(Space& space, std::span<const T> in, std::span<T> out, Op op, int root) {
    complete(reduce_async<Space, T>(space, in, out, op, root));
  }

 private:
  static constexpr bool direct_allreduce = S::supports(op_kind::allreduce);
  static constexpr bool allreduce_possible =
      direct_allreduce || (S::supports(op_kind::reduce_scatter) && S::supports(op_kind::allgather));

  /// What outlives a move of the collective and every call in flight: the transport, the settings, the
  /// codec with its learned state, and the calls started.
  struct engine {
    engine(transport::AnyTransport t, Codec codec, collective_config c)
        : transport(std::move(t)), config(c), coder(std::move(codec)), calls(std::make_shared<detail::call_queue>(c.progress_thread)) {}
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;
    ~engine() { calls->complete_all(); }  // the calls use the transport and the codec

    transport::AnyTransport transport;
    collective_config config;
    detail::block_codec<Codec> coder;
    std::shared_ptr<detail::call_queue> calls;
  };

  /// A progress thread makes the transport's calls from a thread of its own: over MPI that needs
  /// MPI_THREAD_MULTIPLE.
  template <class T>
  static transport::AnyTransport check_thread_level(T transport, const collective_config& config) {
    if constexpr (requires(const T& t) { t.thread_multiple(); }) {
      if (config.progress_thread && !transport.thread_multiple()) {
        throw argument_error("Compressed: collective_config::progress_thread needs MPI initialized with MPI_THREAD_MULTIPLE "
                             "(MPI_Init_thread); this process has a lower thread level");
      }
    }
    return transport::AnyTransport(std::move(transport));
  }

  // ---- starting and completing calls ---------------------------------------------------------------

  /// Runs a call's argument checks: without verify mode they raise here, at the call; with it the fault
  /// is kept for the agreement, where every rank raises the same error.
  template <class Checks>
  std::optional<verify::fault_record> checked(Checks checks) const {
    if (!engine_->config.verify) {
      checks();
      return std::nullopt;
    }
    try {
      checks();
    } catch (const argument_error& e) {
      return verify::fault_record::of(verify::fault_kind::argument, rank(), -1, detail::call_context::without_prefix(e.what()));
    }
    return std::nullopt;
  }

  /// Starts a call: its context, the agreement of verify mode, then `body`'s engine coroutine.
  /// `block_bytes` decides whether to compress and must be the same on every rank (input sizes of rooted
  /// operations are not).
  template <class Body>
  request start(const detail::call_description& what, std::optional<verify::fault_record> fault,
                std::size_t input_bytes, std::size_t block_bytes, Body body) {
    engine& e = *engine_;
    auto started = std::make_shared<detail::started_call>(detail::call_context(e.transport, e.config, e.calls->take_scratch()));
    detail::call_context& call = started->context;
    call.report.operation = what.operation;
    call.report.schedule = S::name;
    call.report.codec = Codec::name();
    call.report.ranks = size();
    call.report.input_bytes = input_bytes;
    call.compress_now = !identity_codec && block_bytes > 0 && block_bytes >= e.config.min_compressed_bytes;
    call.report.compressed = call.compress_now;
    auto signature = detail::signature_of(what, Codec::name(), e.coder.codec().config(), e.config);
    call.start(agreed_then(call, std::move(signature), std::move(fault), body(e, call)));
    e.calls->push(started);
    return request(e.calls, std::move(started));
  }

  static detail::task<> agreed_then(detail::call_context& call, verify::signature_builder signature,
                                    std::optional<verify::fault_record> fault, detail::task<> body) {
    co_await detail::agree_on_call(call, std::move(signature), std::move(fault));
    co_await std::move(body);
  }

  template <class Span>
  using value_of = typename Span::value_type;

  /// The body of a call on `in` and `out`: `body` (a coroutine on floats or doubles) on them as they are,
  /// or, for 16-bit values, on float copies, whose results are rounded into `out` at the end. The report
  /// then states the bound of what arrived as float plus the largest rounding to the 16-bit type (the
  /// final rounding of a sum included), and counts raw bytes as 16-bit values. The float copies live in
  /// the call; the caller's buffers are read at the start and written at the end, as for any call.
  template <collective_value T, class Body>
  static auto body_of(std::span<const T> in, std::span<T> out, Body body) {
    return [in, out, body](engine& e, detail::call_context& call) -> detail::task<> {
      if constexpr (half_value<T>) {
        return run_widened<T>(call, in, out,
                              [&e, &call, body](std::span<const float> i, std::span<float> o) { return body(e, call, i, o); });
      } else {
        return body(e, call, in, out);
      }
    };
  }

  template <half_value H, class Run>
  static detail::task<> run_widened(detail::call_context& call, std::span<const H> in, std::span<H> out, Run run) {
    std::vector<float> in_values(in.size()), out_values(out.size());
    widen<H>(in, in_values);
    widen<H>(out, out_values);  // in-place calls (allreduce, bcast) start from out
    co_await run(std::span<const float>(in_values), std::span<float>(out_values));
    add_final_rounding(call.report, narrow<H>(out_values, out));
  }

  /// A 16-bit call's report: the bound of what arrived as float plus the final rounding to 16 bits, raw
  /// bytes counted as 16-bit values.
  static void add_final_rounding(collective_report& report, double rounding) {
    report.error_bound += rounding;
    report.statistical_error_bound += rounding;
    report.raw_bytes_sent /= 2;  // the same values as 16-bit words
    report.ratio = report.bytes_sent > 0 ? static_cast<double>(report.raw_bytes_sent) / static_cast<double>(report.bytes_sent) : 1.0;
  }

  void complete(request r) {
    r.wait();
    last_report_ = r.report();
  }

  /// After the operation: verify mode's settlement, the ratio, a data-movement call's bound, the time.
  static detail::task<> finish(detail::call_context& call) {
    co_await detail::settle_faults(call);
    collective_report& report = call.report;
    report.ratio = report.bytes_sent > 0 ? static_cast<double>(report.raw_bytes_sent) / static_cast<double>(report.bytes_sent) : 1.0;
    if (!call.reduction) {  // data movement: each block compressed once
      report.error_bound = report.statistical_error_bound = call.compress_now ? call.max_block_bound : 0.0;
      report.compressions_in_chain = call.compress_now ? 1 : 0;
    }
    report.total_s = detail::seconds_since(call.started);
  }

  static detail::task<> run_with_finish(detail::call_context& call, detail::task<> body) {
    co_await std::move(body);
    co_await finish(call);
  }

  /// Starts a staged call: `run(engine, call, space)`; the call holds
  /// the space (a staging_claim in its coroutine frame) until it completes. A space lent to a call in
  /// flight is an argument_error like the arguments' (in verify mode, on every rank).
  template <staging_space Space, class Run>
  request start_staged(const detail::call_description& what, std::optional<verify::fault_record> fault, Space& space,
                       std::size_t input_bytes, std::size_t block_bytes, Run run) {
    static_assert(!stateful_codec<Codec>, "Compressed: a staged call takes a codec without state; TopK, ErrorFeedback and "
                                          "Hybrid keep theirs on the host (use the call on host buffers)");
    if (!fault) fault = checked([&] { if (space.in_use()) throw argument_error(staging_in_use(what.operation)); });
    if (!fault) fault = checked([&] { transfers_device_memory(space, engine_->transport.takes_device_memory(), what.operation); });
    staging_claim claim = fault ? staging_claim{} : staging_claim(space);  // with a fault the body never runs
    return start(what, std::move(fault), input_bytes, block_bytes,
                 [&space, run, claim = std::move(claim)](engine& e, detail::call_context& call) mutable {
                   return holding(std::move(claim), run(e, call, space));
                 });
  }

  /// The work of a data-movement call on values in `space` (detail/staged_block_work.hpp).
  template <staging_space Space>
  static detail::staged_block_work<Codec, Space> staged_work(engine& e, Space& space) {
    return {e.coder, e.coder.codec(), space};
  }

  /// The work of a reduction on host memory (detail/reduction.hpp), and on values in `space`
  /// (detail/staged_reduction.hpp).
  static detail::host_reduction_work<Codec> host_reduction(engine& e) { return {e.coder}; }
  template <staging_space Space>
  static detail::staged_reduction_work<Codec, Space> staged_reduction(engine& e, Space& space) {
    return {e.coder, space};
  }

  /// A staged alltoall(v) (blocks' first values in send_first / recv_first).
  template <staging_space Space, collective_value T>
  request start_staged_alltoall(const detail::call_description& what, std::optional<verify::fault_record> fault, Space& space,
                                std::span<const T> in, std::vector<std::size_t> send_first, std::span<T> out,
                                std::vector<std::size_t> recv_first) {
    return start_staged(what, std::move(fault), space, in.size_bytes(), 0,
                        staged_body_of<T, Space>(in, out, [send_first = std::move(send_first), recv_first = std::move(recv_first)](
                                                              engine& e, detail::call_context& call, Space& space, auto in, auto out) {
                          return run_with_finish(call, detail::staged_alltoallv<S, Codec, value_of<decltype(out)>>(
                                                           call, e.coder, space, in, send_first, out, recv_first, identity_codec));
                        }));
  }

  /// The body of a staged call on `in` and `out` (the space's memory): `body` on them as they are, or,
  /// for 16-bit values, on float copies in the space (its device_wide_in / device_wide_out areas),
  /// widened at the start and rounded into `out` at the end, as body_of does on the host.
  template <collective_value T, staging_space Space, class Body>
  static auto staged_body_of(std::span<const T> in, std::span<T> out, Body body) {
    return [in, out, body](engine& e, detail::call_context& call, Space& space) -> detail::task<> {
      if constexpr (half_value<T>) {
        return run_widened_staged<T>(call, space, in, out, [&e, &call, &space, body](std::span<const float> i, std::span<float> o) {
          return body(e, call, space, i, o);
        });
      } else {
        return body(e, call, space, in, out);
      }
    };
  }

  template <half_value H, staging_space Space, class Run>
  static detail::task<> run_widened_staged(detail::call_context& call, Space& space, std::span<const H> in, std::span<H> out,
                                           Run run) {
    const std::span<float> wide_in = detail::values_in<float>(space.area(staging_area::device_wide_in, in.size() * sizeof(float)), in.size());
    const std::span<float> wide_out =
        detail::values_in<float>(space.area(staging_area::device_wide_out, out.size() * sizeof(float)), out.size());
    space.widen(in, wide_in);
    space.widen(std::span<const H>(out), wide_out);  // in-place calls (allreduce, bcast) start from out
    co_await run(std::span<const float>(wide_in), wide_out);
    add_final_rounding(call.report, space.narrow(std::span<const float>(wide_out), out));
  }

  /// `body`, with the space held while it runs.
  static detail::task<> holding(staging_claim, detail::task<> body) { co_await std::move(body); }

  /// The work of a data-movement call on host memory (detail/movement.hpp).
  static detail::host_block_work<Codec> host_work(engine& e) { return {e.coder, e.coder.codec(), std::nullopt}; }

  // ---- the operations, each a coroutine over its call (parameters by value: they live in the frame) ---

  // `work` moves and decodes the blocks: detail::host_block_work, or a staging space's staged_block_work.

  template <floating_value T, class Work>
  static detail::task<> run_allgather(engine&, detail::call_context& call, Work work, std::span<const T> mine, std::span<T> all) {
    const std::size_t n = mine.size();
    const int me = call.rank();
    work.copy_values(all.subspan(n * static_cast<std::size_t>(me), n), mine);
    const auto block = [all, n](int b) { return all.subspan(static_cast<std::size_t>(b) * n, n); };
    co_await detail::move_blocks_with<S, T>(call, work, op_kind::allgather, 0, movement_plan<T>(block, [me](int b) { return b == me; }));
    co_await finish(call);
  }

  template <floating_value T, class Work>
  static detail::task<> run_bcast(engine&, detail::call_context& call, Work work, std::span<T> data, int root) {
    // One block (the tree), or pieces (scatter + allgather): block b is the b-th of `blocks` pieces.
    const auto blocks = static_cast<std::size_t>(schedule::blocks_of<S>(op_kind::bcast, call.size()));
    const std::size_t n = data.size();
    const bool is_root = call.rank() == root;
    const auto block = [data, n, blocks](int b) {
      const auto lo = n * static_cast<std::size_t>(b) / blocks, hi = n * (static_cast<std::size_t>(b) + 1) / blocks;
      return data.subspan(lo, hi - lo);
    };
    co_await detail::move_blocks_with<S, T>(call, work, op_kind::bcast, root, movement_plan<T>(block, [is_root](int) { return is_root; }));
    co_await finish(call);
  }

  template <floating_value T, class Work>
  static detail::task<> run_scatter(engine&, detail::call_context& call, Work work, std::span<const T> all, std::span<T> mine,
                                    int root) {
    const std::size_t n = mine.size();
    const int p = call.size(), me = call.rank();
    // Root-side blocks in relative order; the root's own block is copied exactly.
    const auto owner = [root, p](int k) { return (root + k) % p; };
    if (me == root) work.copy_values(mine, all.subspan(n * static_cast<std::size_t>(root), n));
    const detail::block_plan plan{
        [=](int k) { return me == root ? all.subspan(n * static_cast<std::size_t>(owner(k)), n) : std::span<const T>{}; },
        [=](int k) { return owner(k) == me && me != root ? mine : std::span<T>{}; }, [=](int) { return me == root; },
        [n](int) { return n; }};
    co_await detail::move_blocks_with<S, T>(call, work, op_kind::scatter, root, plan);
    co_await finish(call);
  }

  template <floating_value T, class Work>
  static detail::task<> run_gather(engine&, detail::call_context& call, Work work, std::span<const T> mine, std::span<T> all,
                                   int root) {
    const std::size_t n = mine.size();
    const int p = call.size(), me = call.rank();
    const auto owner = [root, p](int k) { return (root + k) % p; };
    if (me == root) work.copy_values(all.subspan(n * static_cast<std::size_t>(root), n), mine);
    const detail::block_plan plan{
        [=](int k) { return owner(k) == me ? mine : std::span<const T>{}; },
        [=](int k) { return me == root && owner(k) != root ? all.subspan(n * static_cast<std::size_t>(owner(k)), n) : std::span<T>{}; },
        [=](int k) { return owner(k) == me; }, [n](int) { return n; }};
    co_await detail::move_blocks_with<S, T>(call, work, op_kind::gather, root, plan);
    co_await finish(call);
  }

  // `w` holds the values reduced and runs the hops: detail::host_reduction_work, or a staging space's
  // staged_reduction_work; detail::piece_work_of(w) is its part of a sum on compressed streams.

  template <floating_value T, class Work, class Op>
  static detail::task<> run_reduce_scatter(engine& e, detail::call_context& call, Work w, std::span<const T> in, std::span<T> out,
                                           Op op) {
    const double eb = co_await w.template hop_bound<T>(call, e.coder.codec().config(), in);
    const std::size_t n = out.size();
    if constexpr (sums_streams<Op> && Work::sums_streams) {
      if (call.compress_now && e.config.homomorphic) {
        const Codec& hops = e.coder.hop_codec(eb);
        auto pieces = detail::piece_work_of(w);
        detail::piece_table table(call.size(), blocks_of_length(n), e.config.pipeline_values, e.coder.row_length());
        co_await detail::homomorphic_rounds<S, Codec, T>(call, e.coder, pieces, op_kind::reduce_scatter, hops, table, in,
                                                         std::span<T>{});
        const std::size_t base = n * static_cast<std::size_t>(call.rank());
        const detail::hop_error worst = pieces.template finish_pieces<T>(
            call, hops, table, table.of_block[static_cast<std::size_t>(call.rank())], in, out, base);
        detail::recycle_pieces(call, table);
        detail::set_reduction_bound(call, worst);
        co_await finish(call);
        co_return;
      }
    }
    const std::span<T> work = w.template copy_of<T>(call, in);
    const auto errors = co_await w.template reduce_blocks<S, T>(call, op_kind::reduce_scatter, e.coder.hop_codec(eb), op,
                                                                blocks_of_length(n), work);
    w.template copy_values<T>(out, work.subspan(n * static_cast<std::size_t>(call.rank()), n));
    detail::set_reduction_bound(call, errors[static_cast<std::size_t>(call.rank())]);
    co_await finish(call);
  }

  template <floating_value T, class Work, class Op>
  static detail::task<> run_allreduce(engine& e, detail::call_context& call, Work w, std::span<T> data, Op op) {
    const double eb = co_await w.template hop_bound<T>(call, e.coder.codec().config(), std::span<const T>(data));
    const Codec& hops = e.coder.hop_codec(eb);
    const std::size_t n = data.size();
    if constexpr (sums_streams<Op> && Work::sums_streams) {
      if (call.compress_now && e.config.homomorphic) {
        auto pieces = detail::piece_work_of(w);
        const std::span<T> on_arrival = pieces.decodes_on_arrival ? data : std::span<T>{};
        auto table = co_await homomorphic_allreduce<T>(e, call, pieces, hops, std::span<const T>(data), on_arrival, -1);
        const detail::hop_error worst =
            pieces.template finish_pieces<T>(call, hops, table, detail::all_pieces(table), std::span<const T>(data), data);
        detail::recycle_pieces(call, table);
        detail::set_reduction_bound(call, worst);
        co_await finish(call);
        co_return;
      }
    }
    if constexpr (direct_allreduce) {
      co_await reduce_whole<T>(call, w, hops, op, data);
    } else {
      const auto range = block_ranges(n, call.size());
      const auto errors = co_await w.template reduce_blocks<S, T>(call, op_kind::reduce_scatter, hops, op, range, data);
      // The allgather compresses each reduced block once, at its owner (with error feedback, under a key
      // of its own); the owner knows that compression's bound.
      const int me = call.rank();
      const auto block = [data, range](int b) {
        const auto [lo, count] = range(b);
        return data.subspan(lo, count);
      };
      auto movement = w.block_work(hops, feedback_for(op_kind::allgather));
      const double own_bound = co_await detail::move_blocks_with<S, T>(
          call, movement, op_kind::allgather, 0, movement_plan<T>(block, [me](int b) { return b == me; }));
      const detail::hop_error worst = co_await owners_bound(call, errors[static_cast<std::size_t>(me)], own_bound);
      detail::set_reduction_bound(call, worst);
    }
    co_await finish(call);
  }

  /// allreduce into `out` from `in`: a copy (in the call, once its arguments are agreed), then in place.
  template <floating_value T, class Work, class Op>
  static detail::task<> run_allreduce_from(engine& e, detail::call_context& call, Work w, std::span<const T> in, std::span<T> out,
                                           Op op) {
    w.template copy_values<T>(out, in);
    co_await run_allreduce<T>(e, call, std::move(w), out, op);
  }

  template <floating_value T, class Work, class Op>
  static detail::task<> run_reduce(engine& e, detail::call_context& call, Work w, std::span<const T> in, std::span<T> out, Op op,
                                   int root) {
    const double eb = co_await w.template hop_bound<T>(call, e.coder.codec().config(), in);
    if constexpr (sums_streams<Op> && Work::sums_streams) {
      if (call.compress_now && e.config.homomorphic) {
        const Codec& hops = e.coder.hop_codec(eb);
        auto pieces = detail::piece_work_of(w);
        const std::span<T> on_arrival = pieces.decodes_on_arrival && call.rank() == root ? out : std::span<T>{};
        auto table = co_await homomorphic_allreduce<T>(e, call, pieces, hops, in, on_arrival, root);
        detail::hop_error worst{};
        if (call.rank() == root) worst = pieces.template finish_pieces<T>(call, hops, table, detail::all_pieces(table), in, out);
        detail::recycle_pieces(call, table);
        // The root's bound, known on every rank.
        std::vector<detail::hop_error> bounds(static_cast<std::size_t>(call.size()));
        bounds[static_cast<std::size_t>(call.rank())] = worst;
        co_await call.exact_allgather(std::span<detail::hop_error>(bounds));
        detail::set_reduction_bound(call, bounds[static_cast<std::size_t>(root)]);
        co_await finish(call);
        co_return;
      }
    }
    co_await run_reduce_chain<T>(e, call, w, in, out, op, root, eb);
  }

  /// reduce by decompress-reduce-compress hops, with the hops' bound `eb`.
  template <floating_value T, class Work, class Op>
  static detail::task<> run_reduce_chain(engine& e, detail::call_context& call, Work& w, std::span<const T> in, std::span<T> out,
                                         Op op, int root, double eb) {
    const std::span<T> data = w.template copy_of<T>(call, in);
    const Codec& hops = e.coder.hop_codec(eb);
    const std::size_t n = data.size();
    const int p = call.size(), me = call.rank();
    if constexpr (direct_allreduce) {
      co_await reduce_whole<T>(call, w, hops, op, data);
    } else {
      const auto range = block_ranges(n, p);
      const auto errors = co_await w.template reduce_blocks<S, T>(call, op_kind::reduce_scatter, hops, op, range, data);
      // The reduced blocks go to the root over a binomial tree (block k is rank (root + k) mod p's),
      // each compressed once at its owner.
      const auto owner = [root, p](int k) { return (root + k) % p; };
      const auto block = [range](std::span<T> values, int r) {
        const auto [lo, count] = range(r);
        return values.subspan(lo, count);
      };
      const detail::block_plan plan{
          [=](int k) { return owner(k) == me ? std::span<const T>(block(data, me)) : std::span<const T>{}; },
          [=](int k) { return me == root && owner(k) != root ? block(out, owner(k)) : std::span<T>{}; },
          [=](int k) { return owner(k) == me; }, [=](int k) { return range(owner(k)).second; }};
      auto movement = w.block_work(hops, feedback_for(op_kind::gather));
      const double own_bound = co_await detail::move_blocks_with<BinomialTree, T>(call, movement, op_kind::gather, root, plan);
      const detail::hop_error worst = co_await owners_bound(call, errors[static_cast<std::size_t>(me)], own_bound);
      detail::set_reduction_bound(call, worst);
    }
    if (me == root) {
      if constexpr (direct_allreduce) {
        w.template copy_values<T>(out, data);
      } else {
        const auto [lo, count] = block_ranges(n, p)(root);
        w.template copy_values<T>(out.subspan(lo, count), data.subspan(lo, count));
      }
    }
    co_await finish(call);
  }

  /// Whether sums with Op can run on compressed streams (detail/homomorphic.hpp): a sum, and a codec
  /// whose streams add; collective_config::homomorphic decides at run time.
  template <class Op>
  static constexpr bool sums_streams = addable_codec<Codec> && std::is_same_v<Op, op::sum_t>;

  /// The rounds of a homomorphic allreduce (the schedule's own, or reduce_scatter then allgather) or,
  /// rooted at `root` >= 0, of a reduce (reduce_scatter then a gather of the finished streams over a
  /// binomial tree). Pieces that arrive finished are decoded into `result` (empty: this rank keeps no
  /// result) on arrival; returns the pieces, for the ranks to finish the others.
  template <floating_value T, class PieceWork>
  static detail::task<detail::piece_table> homomorphic_allreduce(engine& e, detail::call_context& call, PieceWork& pieces,
                                                                 const Codec& hops, std::span<const T> values,
                                                                 std::span<T> result, int root) {
    const std::size_t n = values.size();
    const int p = call.size();
    if constexpr (direct_allreduce) {
      detail::piece_table table(1, blocks_of_length(n), e.config.pipeline_values, e.coder.row_length());
      co_await detail::homomorphic_rounds<S, Codec, T>(call, e.coder, pieces, op_kind::allreduce, hops, table, values, result);
      co_return table;
    } else {
      detail::piece_table table(p, block_ranges(n, p), e.config.pipeline_values, e.coder.row_length());
      co_await detail::homomorphic_rounds<S, Codec, T>(call, e.coder, pieces, op_kind::reduce_scatter, hops, table, values, result);
      if (root < 0) {
        co_await detail::homomorphic_rounds<S, Codec, T>(call, e.coder, pieces, op_kind::allgather, hops, table, values, result);
      } else {  // block k of the gather is rank (root + k) mod p's
        co_await detail::homomorphic_rounds<BinomialTree, Codec, T>(call, e.coder, pieces, op_kind::gather, hops, table, values, result,
                                                                    detail::rooted_block{root, p}, root);
      }
      co_return table;
    }
  }

  /// The schedule's own allreduce (RecursiveDoubling) over all of `data`, one block; the report's bound
  /// is that block's. allreduce and reduce both run it where the schedule has one.
  template <floating_value T, class Work, class Op>
  static detail::task<> reduce_whole(detail::call_context& call, Work& w, const Codec& hops, Op op, std::span<T> data) {
    const std::size_t n = data.size();
    const auto errors = co_await w.template reduce_blocks<S, T>(call, op_kind::allreduce, hops, op,
                                                                [n](int) { return std::pair{std::size_t{0}, n}; }, data);
    detail::set_reduction_bound(call, errors[0]);
  }

  /// Blocks of n values each: block b is {n · b, n} (reduce_scatter's; one block of n for a direct allreduce).
  static auto blocks_of_length(std::size_t n) {
    return [n](int b) { return std::pair{n * static_cast<std::size_t>(b), n}; };
  }

  /// Blocks of n/p values (the first n mod p one longer): block b is {first value, count}.
  static auto block_ranges(std::size_t n, int ranks) {
    const auto p = static_cast<std::size_t>(ranks);
    return [n, p](int b) {
      const auto lo = n * static_cast<std::size_t>(b) / p, hi = n * (static_cast<std::size_t>(b) + 1) / p;
      return std::pair{lo, hi - lo};
    };
  }

  /// A movement plan where the blocks this rank holds are read and the others written in one buffer.
  template <floating_value T, class Block, class Held>
  static auto movement_plan(Block block, Held held) {
    return detail::block_plan{[=](int b) { return held(b) ? std::span<const T>(block(b)) : std::span<const T>{}; },
                              [=](int b) { return held(b) ? std::span<T>{} : block(b); }, held,
                              [=](int b) { return block(b).size(); }};
  }

  /// The error-feedback key of a data-movement phase inside a reduction (none for other codecs).
  static std::optional<op_kind> feedback_for(op_kind phase) {
    if constexpr (detail::block_codec<Codec>::carries_feedback) return phase;
    return std::nullopt;
  }

  /// After a reduce-scatter whose block at this rank carries `mine`, and one more compression of that
  /// block by its owner (`compressed_bound`, on more than one rank): the worst error of any block (an
  /// exact allgather of the owners' bounds: a value's bound depends on the block it is in).
  static detail::task<detail::hop_error> owners_bound(detail::call_context& call, detail::hop_error mine, double compressed_bound) {
    const auto p = static_cast<std::size_t>(call.size());
    const auto me = static_cast<std::size_t>(call.rank());
    std::vector<detail::hop_error> owners(p);
    owners[me] = p > 1 && call.compress_now ? mine.after_compression(compressed_bound) : mine;
    co_await call.exact_allgather(std::span<detail::hop_error>(owners));
    detail::hop_error worst{};
    for (const detail::hop_error& e : owners) worst = worst.worst(e);
    co_return worst;
  }

  // ---- argument checks -----------------------------------------------------------------------------

  static void check_size(const char* call, const char* what, std::size_t got, std::size_t expected) {
    if (got != expected) {
      throw argument_error(std::string(call) + ": " + what + " holds " + std::to_string(got) + " values, " +
                           std::to_string(expected) + " expected");
    }
  }

  /// size() blocks of `values` values each (argument_error naming `what` when that does not fit in size_t).
  std::size_t per_rank_total(const char* call, const char* what, std::size_t values) const {
    return checked_multiply(values, static_cast<std::size_t>(size()), call, what);
  }

  /// One count per rank, adding up to the buffer's length.
  void check_counts(const char* call, const char* counts_name, std::span<const std::size_t> counts, const char* buffer_name,
                    std::size_t buffer_values) const {
    if (counts.size() != static_cast<std::size_t>(size())) {
      throw argument_error(std::string(call) + ": " + counts_name + " has " + std::to_string(counts.size()) +
                           " entries, one per rank (" + std::to_string(size()) + ") expected");
    }
    std::size_t total = 0;
    for (const auto c : counts) total = checked_add(total, c, call, counts_name);
    if (total != buffer_values) {
      throw argument_error(std::string(call) + ": " + counts_name + " add up to " + std::to_string(total) + " values, " +
                           buffer_name + " holds " + std::to_string(buffer_values));
    }
  }

  void check_reduce_scatter(std::size_t in, std::size_t out) const {
    check_size("reduce_scatter", "in", in, per_rank_total("reduce_scatter", "out.size() x ranks =", out));
    check_rows("reduce_scatter", "a block (out)", out);
  }

  template <collective_value T>
  void check_allreduce(std::span<const T> in, std::span<T> out) const {
    check_size("allreduce", "out", out.size(), in.size());
    check_disjoint("allreduce", in, out);
    check_whole_rows_per_rank("allreduce", "in", in.size());
  }

  template <collective_value T>
  void check_reduce(std::span<const T> in, std::span<T> out, int root) const {
    check_root("reduce", root);
    if (rank() == root) {
      check_size("reduce", "out", out.size(), in.size());
      check_disjoint("reduce", in, out);
    }
    check_whole_rows_per_rank("reduce", "in", in.size());
  }

  void check_allgather(std::size_t mine, std::size_t all) const {
    check_size("allgather", "all", all, per_rank_total("allgather", "mine.size() x ranks =", mine));
  }

  /// scatter's and gather's: `all` (root's) holds size() blocks of `mine` values.
  void check_rooted_blocks(const char* call, int root, std::size_t mine, std::size_t all) const {
    check_root(call, root);
    const std::size_t total = per_rank_total(call, "mine.size() x ranks =", mine);  // every rank raises alike
    if (rank() == root) check_size(call, "all", all, total);
  }

  void check_alltoall(const char* call, std::size_t in, std::size_t out) const {
    const auto p = static_cast<std::size_t>(size());
    if (in % p != 0) {
      throw argument_error(std::string(call) + ": in has " + std::to_string(in) + " values, not a multiple of the " +
                           std::to_string(p) + " ranks");
    }
    check_size(call, "out", out, in);
  }

  void check_alltoallv(const char* call, std::size_t in, std::span<const std::size_t> send_counts, std::size_t out,
                       std::span<const std::size_t> recv_counts) const {
    const auto me = static_cast<std::size_t>(rank());
    check_counts(call, "send_counts", send_counts, "in", in);
    check_counts(call, "recv_counts", recv_counts, "out", out);
    if (send_counts[me] != recv_counts[me]) {
      throw argument_error(std::string(call) + ": send_counts[" + std::to_string(me) + "] = " + std::to_string(send_counts[me]) +
                           " and recv_counts[" + std::to_string(me) + "] = " + std::to_string(recv_counts[me]) +
                           " (this rank's own block) differ");
    }
  }

  /// The first value of each block and the end (size() + 1 entries) of checked counts; zeros when the
  /// checks failed (verify mode goes on to the agreement, which raises the fault).
  std::vector<std::size_t> firsts_of(std::span<const std::size_t> counts, const std::optional<verify::fault_record>& fault) const {
    const auto p = static_cast<std::size_t>(size());
    std::vector<std::size_t> first(p + 1, 0);
    for (std::size_t b = 0; !fault && b < p; ++b) first[b + 1] = first[b] + counts[b];
    return first;
  }

  void check_root(const char* call, int root) const {
    if (root < 0 || root >= size()) {
      throw argument_error(std::string(call) + ": root " + std::to_string(root) + " is not in [0, " + std::to_string(size()) + ")");
    }
  }

  /// Every block of `values` values a call compresses is a whole number of rows of a row-wise codec.
  void check_rows(const char* call, const char* what, std::size_t values) const {
    const std::size_t row = engine_->coder.row_length();
    if (row > 0 && values % row != 0) {
      throw argument_error(std::string(call) + ": " + what + " of " + std::to_string(values) +
                           " values is not a whole number of rows of the codec's shape.back() " + std::to_string(row));
    }
  }

  /// A reduction over all ranks cuts `values` into one block per rank: whole rows each.
  void check_whole_rows_per_rank(const char* call, const char* what, std::size_t values) const {
    const std::size_t row = engine_->coder.row_length();
    const auto p = static_cast<std::size_t>(size());
    if (row > 0 && values % (p * row) != 0) {
      throw argument_error(std::string(call) + ": " + what + " of " + std::to_string(values) +
                           " values is not a whole number of rows of " + std::to_string(row) +
                           " (the codec's shape.back()) per rank for " + std::to_string(p) + " ranks");
    }
  }

  template <collective_value T>
  static void check_disjoint(const char* call, std::span<const T> in, std::span<T> out) {
    const T* in_end = in.data() + in.size();
    const T* out_end = out.data() + out.size();
    if (!in.empty() && !out.empty() && in.data() < out_end && out.data() < in_end) {
      throw argument_error(std::string(call) + ": in and out overlap; pass one buffer to the in-place form instead");
    }
  }

  std::unique_ptr<engine> engine_;
  collective_report last_report_;
};

}  // namespace zcoll
