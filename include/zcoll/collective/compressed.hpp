#pragma once
/// Compressed<Schedule, Codec>: MPI-style collectives that move compressed bytes (the ZCCL frameworks).
///
///     zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{zcoll::transport::Mpi{world},
///                                                         {.error_bound = zcoll::relative(1e-4)}};
///     coll.allreduce(std::span<float>(grad), zcoll::op::sum);   // Z-Allreduce
///     coll.allgather(std::span<const float>(mine), std::span<float>(all));
///     auto report = coll.last_report();                          // bytes, ratio, time split, error bound
///
/// Data movement (allgather, bcast, scatter, gather, alltoall, alltoallv): each block is compressed once by its
/// owner, the compressed sizes travel first (the same schedule over 8-byte size words), then the
/// compressed bytes are forwarded unchanged and decompressed once at the end — every element stays
/// within eb however many hops it makes. A rank's own block is never compressed: it stays exact.
///
/// Computation (reduce_scatter, allreduce): blocks change at every hop, so each hop compresses the
/// partial result it sends, and the receiver decompresses, reduces and compresses again; the error
/// grows with the hops, and the report states the worst case and ZCCL's statistical bound. A relative
/// bound is turned into one absolute bound for every hop from the global value range (one small exact
/// allgather of each rank's min and max first). allreduce is the schedule's own allreduce where it has
/// one (RecursiveDoubling), reduce_scatter + allgather otherwise (Ring: Z-Allreduce).
///
/// Compressed<S, Identity> is the plain schedule: the values travel as raw bytes, exactly; so does any
/// call whose input is below collective_config::min_compressed_bytes (the report says so).

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/codec/presets.hpp"
#include "zcoll/collective/collective_report.hpp"
#include "zcoll/collective/verify.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/reduce_op.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/ring.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll {

/// The numbers a compressed collective is configured with.
struct collective_config {
  bound error_bound = {};                   ///< as for codecs; absolute(0) is lossless
  std::uint32_t chunk_values = 4096;        ///< the codec's chunk length
  std::optional<double> fill_value = std::nullopt;  ///< the codec's fill value
  unsigned threads = 1;                     ///< host threads for compression and decompression
  /// Inputs smaller than this travel uncompressed (compression does not pay for small messages).
  std::size_t min_compressed_bytes = 0;
  /// The row length of a row-wise codec (Int8, Int4, Int2: one scale and bias per row); 0 for the
  /// others. Every block a call compresses must then be a whole number of rows (argument_error otherwise).
  std::size_t row_length = 0;
  /// The segment length of the reduction hops' pipeline (PIPE-fZ-light, ZCCL §3.5.2): each hop compresses
  /// its block segment by segment, sends each segment as soon as it is compressed, and between segments
  /// polls the transport, decompressing and reducing the segments that have arrived; compression,
  /// transfer and decompression of one hop overlap. 0 sends each hop as one stream.
  std::size_t pipeline_values = std::size_t{1} << 18;
  /// Verify mode (docs/reliability.md): before each call the ranks exchange what they were called with
  /// (operation, value type, counts, root, reduction, this configuration) and any argument error, and
  /// every rank raises the same argument_error when one rank's call differs; during the call, an error a
  /// rank meets (a damaged or wrongly sized block from a peer, a codec refusing this rank's values) is
  /// held instead of thrown and the rank goes on with the schedule, so nobody waits for it; after the
  /// call the ranks exchange what they held and every rank raises the same error, naming the rank that
  /// met it and the rank whose block it was. Costs two exact allgathers of 344 and 256 bytes per rank.
  bool verify = false;
};

template <schedule::schedule S, codec Codec>
class Compressed {
  using op_kind = schedule::collective_op;
  static constexpr bool identity_codec = std::is_same_v<Codec, Identity>;

 public:
  // The class itself is ruled out before byte_transport is checked: asking whether a Compressed is a
  // transport asks whether it is movable, which would consider this constructor again (clang 14).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, Compressed> && transport::byte_transport<T> &&
             std::constructible_from<Codec, codec_config>)
  explicit Compressed(T transport, collective_config config = {})
      : transport_(std::move(transport)),
        config_(config),
        codec_(codec_settings(config.error_bound)) {}

  /// The collective over `codec`, a value with every setting of its own (Hybrid's speeds, TopK's
  /// sparsity, ...): its bound, fill value and chunk length are the collective's, and its row length
  /// (shape.back(); 0 for a flat shape) is collective_config::row_length; those fields of `config` are
  /// not read. The reduction hops use codec.with_error_bound(the hops' absolute bound).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, Compressed> && transport::byte_transport<T>)
  Compressed(T transport, Codec codec, collective_config config = {})
      : transport_(std::move(transport)),
        config_(settings_of(codec.config(), config)),
        codec_(std::move(codec)) {}

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  const collective_report& last_report() const { return report_; }

  /// all = every rank's `mine`, in rank order; all.size() == size() * mine.size().
  template <floating_value T>
  void allgather(std::span<const T> mine, std::span<T> all, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::allgather),
                  "Compressed::allgather: this schedule has no allgather; use zcoll::Ring or zcoll::RecursiveDoubling");
    preflight<T>("allgather", mine.size(), 0, nullptr,
                 [&] {
                   check_size("allgather", "all", all.size(),
                              per_rank_total("allgather", "mine.size() x ranks =", mine.size()));
                 });
    begin("allgather", mine.size_bytes(), mine.size_bytes());
    const std::size_t n = mine.size();
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(rank())));
    move_blocks<T>(codec_, op_kind::allgather, 0, [&](int b) { return all.subspan(static_cast<std::size_t>(b) * n, n); },
                   [&](int b) { return b == rank(); });
    finish<T>(all, reference);
  }

  /// Every rank's `data` becomes root's.
  template <floating_value T>
  void bcast(std::span<T> data, int root, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::bcast),
                  "Compressed::bcast: this schedule has no bcast; use zcoll::BinomialTree or zcoll::ScatterAllgather");
    preflight<T>("bcast", data.size(), root, nullptr, [&] { check_root("bcast", root); });
    begin("bcast", rank() == root ? data.size_bytes() : 0, data.size_bytes());
    // One block (the tree), or pieces (scatter + allgather): block b is the b-th of `blocks` pieces.
    const auto blocks = static_cast<std::size_t>(schedule::blocks_of<S>(op_kind::bcast, size()));
    const std::size_t n = data.size();
    move_blocks<T>(
        codec_, op_kind::bcast, root,
        [&](int b) {
          const auto lo = n * static_cast<std::size_t>(b) / blocks, hi = n * (static_cast<std::size_t>(b) + 1) / blocks;
          return data.subspan(lo, hi - lo);
        },
        [&](int) { return rank() == root; });
    finish<T>(data, reference);
  }

  /// Rank (root + k) mod size() gets block k of root's `all` (all.size() == size() * mine.size() on root;
  /// ignored elsewhere).
  template <floating_value T>
  void scatter(std::span<const T> all, std::span<T> mine, int root, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::scatter),
                  "Compressed::scatter: this schedule has no scatter; use zcoll::BinomialTree");
    const std::size_t n = mine.size();
    preflight<T>("scatter", n, root, nullptr, [&] {
      check_root("scatter", root);
      const std::size_t total = per_rank_total("scatter", "mine.size() x ranks =", n);  // on every rank: all raise alike
      if (rank() == root) check_size("scatter", "all", all.size(), total);
    });
    begin("scatter", rank() == root ? all.size_bytes() : 0, mine.size_bytes());
    // Root-side blocks in relative order; the root's own block is copied exactly.
    const auto owner = [&](int k) { return (root + k) % size(); };
    if (rank() == root) {
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(root)), n, mine.begin());
    }
    move_blocks_const<T>(
        codec_, op_kind::scatter, root,
        [&](int k) { return rank() == root ? all.subspan(n * static_cast<std::size_t>(owner(k)), n) : std::span<const T>{}; },
        [&](int k) { return owner(k) == rank() && rank() != root ? mine : std::span<T>{}; }, [&](int) { return rank() == root; },
        n);
    finish<T>(mine, reference);
  }

  /// Root's `all` gets every rank's `mine`, in rank order (ignored elsewhere).
  template <floating_value T>
  void gather(std::span<const T> mine, std::span<T> all, int root, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::gather), "Compressed::gather: this schedule has no gather; use zcoll::BinomialTree");
    const std::size_t n = mine.size();
    preflight<T>("gather", n, root, nullptr, [&] {
      check_root("gather", root);
      const std::size_t total = per_rank_total("gather", "mine.size() x ranks =", n);  // on every rank: all raise alike
      if (rank() == root) check_size("gather", "all", all.size(), total);
    });
    begin("gather", mine.size_bytes(), mine.size_bytes());
    const auto owner = [&](int k) { return (root + k) % size(); };
    if (rank() == root) std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(root)));
    move_blocks_const<T>(
        codec_, op_kind::gather, root, [&](int k) { return owner(k) == rank() ? mine : std::span<const T>{}; },
        [&](int k) { return rank() == root && owner(k) != root ? all.subspan(n * static_cast<std::size_t>(owner(k)), n) : std::span<T>{}; },
        [&](int k) { return owner(k) == rank(); }, n);
    finish<T>(rank() == root ? all : std::span<T>{}, reference);
  }

  /// out block b = block rank() of rank b's `in`; in.size() == out.size() == size() * block values.
  template <floating_value T>
  void alltoall(std::span<const T> in, std::span<T> out, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::alltoall), "Compressed::alltoall: this schedule has no alltoall; use zcoll::Pairwise");
    const auto p = static_cast<std::size_t>(size());
    preflight<T>("alltoall", in.size(), 0, nullptr, [&] {
      if (in.size() % p != 0) {
        throw argument_error("alltoall: in has " + std::to_string(in.size()) + " values, not a multiple of the " +
                             std::to_string(p) + " ranks");
      }
      check_size("alltoall", "out", out.size(), in.size());
    });
    begin("alltoall", in.size_bytes(), in.size_bytes() / p);
    alltoall_blocks<T>(in, out, in.size() / p);
    finish<T>(out, reference);
  }

  /// Blocks of different lengths (MPI_Alltoallv with packed displacements, torch's all_to_all_single
  /// with split sizes): `in` holds send_counts[b] values for rank b, block after block in rank order;
  /// `out` receives recv_counts[b] values from rank b, likewise. recv_counts[b] on this rank must equal
  /// send_counts[rank()] on rank b (a block of another length is a format_error). The compressed size of
  /// each block travels before it. A block below min_compressed_bytes travels raw: sender and receiver
  /// both know its length, so they agree block by block.
  template <floating_value T>
  void alltoallv(std::span<const T> in, std::span<const std::size_t> send_counts, std::span<T> out,
                 std::span<const std::size_t> recv_counts, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::alltoall),
                  "Compressed::alltoallv: this schedule has no alltoall; use zcoll::Pairwise");
    const auto p = static_cast<std::size_t>(size());
    const auto me = static_cast<std::size_t>(rank());
    // The counts differ from rank to rank; a pair that disagrees shows as a block of another length.
    preflight<T>("alltoallv", 0, 0, nullptr, [&] {
      check_counts("alltoallv", "send_counts", send_counts, "in", in.size());
      check_counts("alltoallv", "recv_counts", recv_counts, "out", out.size());
      if (send_counts[me] != recv_counts[me]) {
        throw argument_error("alltoallv: send_counts[" + std::to_string(me) + "] = " + std::to_string(send_counts[me]) +
                             " and recv_counts[" + std::to_string(me) + "] = " + std::to_string(recv_counts[me]) +
                             " (this rank's own block) differ");
      }
    });
    begin("alltoallv", in.size_bytes(), 0);
    std::vector<std::size_t> send_first(p + 1, 0), recv_first(p + 1, 0);
    for (std::size_t b = 0; b < p; ++b) {
      send_first[b + 1] = send_first[b] + send_counts[b];
      recv_first[b + 1] = recv_first[b] + recv_counts[b];
    }
    std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(send_first[me]), send_counts[me],
                out.begin() + static_cast<std::ptrdiff_t>(recv_first[me]));
    const auto compresses = [&](std::size_t values) {
      return !identity_codec && values > 0 && values * sizeof(T) >= config_.min_compressed_bytes;
    };
    bool any_compressed = false;
    for (int r = 0; r < S::rounds(op_kind::alltoall, size()); ++r) {
      const schedule::step st = S::at(op_kind::alltoall, size(), rank(), r, 0);
      const auto to = static_cast<std::size_t>(st.send.peer), from = static_cast<std::size_t>(st.recv.peer);
      const auto sent_values = in.subspan(send_first[to], send_counts[to]);
      const auto received_values = out.subspan(recv_first[from], recv_counts[from]);
      // Each direction sends its block's length and byte size first, and whether it is compressed follows
      // from the sender's length: ranks whose counts disagree still exchange the same messages (the
      // receiver then raises format_error naming the sender) and leave none behind.
      const bool send_compressed = compresses(sent_values.size());
      compress_now_ = send_compressed;
      const slot sent = encode<T>(codec_, sent_values, arena_, 0);
      std::array<std::uint64_t, 2> out_header{sent_values.size(), sent.size}, in_header{};
      exchange(st.send, std::as_bytes(std::span(out_header)), st.recv, std::as_writable_bytes(std::span(in_header)), size_tag, 0);
      const bool recv_compressed = compresses(static_cast<std::size_t>(in_header[0]));
      any_compressed = any_compressed || send_compressed || recv_compressed;
      std::uint64_t in_size = 0;
      if (st.recv.active()) in_size = alltoallv_block_size<T>(in_header, received_values.size(), recv_compressed, st.recv.peer);
      staging_.resize(static_cast<std::size_t>(in_size));
      exchange(st.send, std::span<const std::byte>(arena_).first(sent.size), st.recv,
               std::span<std::byte>(staging_).first(static_cast<std::size_t>(in_size)), data_tag,
               sent_values.size_bytes());
      compress_now_ = recv_compressed;
      decode<T>(codec_, std::span<const std::byte>(staging_).first(static_cast<std::size_t>(in_size)), received_values,
                st.recv.peer);
    }
    compress_now_ = any_compressed;
    report_.compressed = any_compressed;
    finish<T>(out, reference);
  }

  /// out = block rank() of the element-wise reduction of every rank's `in` (in.size() == size() *
  /// out.size()).
  template <floating_value T, op::reduction Op>
  void reduce_scatter(std::span<const T> in, std::span<T> out, Op op, std::span<const T> reference = {}) {
    static_assert(S::supports(op_kind::reduce_scatter),
                  "Compressed::reduce_scatter: this schedule has no reduce_scatter; use zcoll::Ring");
    preflight<T>("reduce_scatter", out.size(), 0, Op::name, [&] {
      check_size("reduce_scatter", "in", in.size(),
                 per_rank_total("reduce_scatter", "out.size() x ranks =", out.size()));
      check_rows("reduce_scatter", "a block (out)", out.size());
    });
    begin("reduce_scatter", in.size_bytes(), in.size_bytes());
    work_as<T>().assign(in.begin(), in.end());
    const double eb = hop_bound<T>(in);
    reduce_blocks<T>(op_kind::reduce_scatter, hop_codec(eb), op, [&](int b) {
      return std::pair{out.size() * static_cast<std::size_t>(b), out.size()};
    }, std::span<T>(work_as<T>()));
    std::copy_n(work_as<T>().begin() + static_cast<std::ptrdiff_t>(out.size() * static_cast<std::size_t>(rank())), out.size(),
                out.begin());
    set_reduction_bound(error_[static_cast<std::size_t>(rank())]);
    finish<T>(out, reference);
  }

  /// data = the element-wise reduction of every rank's data (Z-Allreduce).
  template <floating_value T, op::reduction Op>
  void allreduce(std::span<T> data, Op op, std::span<const T> reference = {}) {
    constexpr bool direct = S::supports(op_kind::allreduce);
    static_assert(direct || (S::supports(op_kind::reduce_scatter) && S::supports(op_kind::allgather)),
                  "Compressed::allreduce: this schedule has neither an allreduce nor reduce_scatter + allgather; use "
                  "zcoll::Ring or zcoll::RecursiveDoubling");
    const std::size_t n = data.size();
    const auto p = static_cast<std::size_t>(size());
    preflight<T>("allreduce", n, 0, Op::name, [&] {
      if (config_.row_length > 0 && n % (p * config_.row_length) != 0) {
        throw argument_error("allreduce: data of " + std::to_string(n) + " values is not a whole number of rows of " +
                             std::to_string(config_.row_length) + " (collective_config::row_length) per rank for " +
                             std::to_string(p) + " ranks");
      }
    });
    begin("allreduce", data.size_bytes(), data.size_bytes());
    const double eb = hop_bound<T>(data);
    const Codec& hops = hop_codec(eb);
    if constexpr (direct) {
      reduce_blocks<T>(op_kind::allreduce, hops, op, [&](int) { return std::pair{std::size_t{0}, n}; }, data);
      set_reduction_bound(error_[0]);
    } else {
      // Blocks of n/p values (the first n mod p one longer), then allgather of the reduced blocks.
      const auto range = [&](int b) {
        const auto lo = n * static_cast<std::size_t>(b) / p, hi = n * (static_cast<std::size_t>(b) + 1) / p;
        return std::pair{lo, hi - lo};
      };
      reduce_blocks<T>(op_kind::reduce_scatter, hops, op, range, data);
      // The allgather compresses each reduced block once, at its owner (with error feedback, under a key
      // of its own); the owner knows that compression's bound.
      if constexpr (carries_feedback<Codec>) feedback_op_ = op_kind::allgather;
      move_blocks<T>(
          hops, op_kind::allgather, 0,
          [&](int b) {
            const auto [lo, count] = range(b);
            return data.subspan(lo, count);
          },
          [&](int b) { return b == rank(); });
      feedback_op_.reset();
      // Every block's bound at its owner, plus its one compression for the allgather (exact allgather of
      // the owners' bounds: a value's bound depends on the block it is in).
      const std::size_t me = static_cast<std::size_t>(rank());
      const hop_error own = p > 1 && compress_now_ ? error_[me].after_compression(held_bound_) : error_[me];
      std::vector<hop_error> owners(p);
      owners[me] = own;
      exact_allgather(std::span<hop_error>(owners));
      hop_error worst{};
      for (const hop_error& e : owners) {
        worst = {std::max(worst.bound, e.bound), std::max(worst.compressions, e.compressions)};
      }
      set_reduction_bound(worst);
    }
    finish<T>(data, reference);
  }

 private:
  using clock = std::chrono::steady_clock;
  static constexpr int size_tag = 7001;
  static constexpr int data_tag = 7002;
  static constexpr int verify_tag = 7003;  // verify mode's own exchanges: damage on the others cannot reach them

  struct slot {
    std::size_t offset = 0;
    std::size_t size = 0;
  };

  static double seconds_since(clock::time_point start) {
    return std::chrono::duration<double>(clock::now() - start).count();
  }

  void check_size(const char* call, const char* what, std::size_t got, std::size_t expected) const {
    if (got != expected) {
      throw argument_error(std::string(call) + ": " + what + " holds " + std::to_string(got) + " values, " +
                           std::to_string(expected) + " expected");
    }
  }

  /// size() blocks of `values` values each (argument_error naming `what` when that does not fit in size_t).
  std::size_t per_rank_total(const char* call, const char* what, std::size_t values) const {
    return checked_multiply(values, static_cast<std::size_t>(size()), call, what);
  }

  /// A peer's size word for a compressed block of `values` values: never more than the codec may write
  /// (a larger one is a damaged or hostile message, refused before anything is allocated for it). Returns
  /// the bytes to receive: `bytes`, or in verify mode, with the fault held, the most the codec may write
  /// (the message then fails as one of another size, and the schedule goes on).
  template <floating_value T>
  std::uint64_t peer_size(std::uint64_t bytes, std::size_t values, int peer) {
    std::size_t most = 0;  // stays 0 when the codec refuses the length (held in verify mode)
    guarded(-1, [&] { most = codec_.template max_compressed_size<T>(values); });
    if (bytes > most) {
      fail(format_error("rank " + std::to_string(peer) + " announced a compressed block of " + std::to_string(bytes) +
                        " bytes for " + std::to_string(values) + " values; at most " + std::to_string(most) +
                        " are possible"),
           peer);
      return most;
    }
    return bytes;
  }

  /// The bytes to receive for an alltoallv block whose header says {values, bytes}, where this rank
  /// expects `expected` values: a header of another length is a format_error naming the sender (held in
  /// verify mode, and the bytes are received all the same, bounded by what the expected block may take:
  /// a compressed one what the codec may write, a raw one its values).
  template <floating_value T>
  std::uint64_t alltoallv_block_size(std::array<std::uint64_t, 2> header, std::size_t expected, bool compressed, int peer) {
    if (header[0] != expected) {
      fail(format_error("rank " + std::to_string(peer) + " sends a block of " + std::to_string(header[0]) +
                        " values where this rank expects " + std::to_string(expected) +
                        " (its send_counts and this rank's recv_counts disagree)"),
           peer);
    }
    if (compressed) return peer_size<T>(header[1], expected, peer);
    const std::uint64_t raw = expected * sizeof(T);
    if (header[1] != raw) {
      fail(format_error("rank " + std::to_string(peer) + " announced " + std::to_string(header[1]) + " raw bytes for " +
                        std::to_string(expected) + " values"),
           peer);
    }
    return std::min(header[1], raw);
  }

  // ---- faults and verify mode ----------------------------------------------------------------------

  /// Raises `e`; in verify mode holds it instead (the first one a call meets), for finish() to report on
  /// every rank. `from` is the rank whose message it was in, or -1.
  template <class E>
  void fail(const E& e, int from) {
    if (!holding_faults_) throw e;
    if (fault_) return;
    constexpr auto kind = std::is_same_v<E, argument_error> ? verify::fault_kind::argument
                          : std::is_same_v<E, format_error> ? verify::fault_kind::format
                                                            : verify::fault_kind::transport;
    fault_ = verify::fault_record::of(kind, rank(), from, without_prefix(e.what()));
  }

  /// Runs `step`; an error of zcoll's that it raises goes to fail(). Returns whether it succeeded.
  template <class Step>
  bool guarded(int from, Step&& step) {
    try {
      step();
      return true;
    } catch (const argument_error& e) {
      fail(e, from);
    } catch (const format_error& e) {
      fail(e, from);
    } catch (const transport_error& e) {
      fail(e, from);
    }
    return false;
  }

  /// An exception's text without the "zcoll ... error: " its class puts first (it is raised again).
  static std::string without_prefix(std::string_view what) {
    const auto colon = what.find(": ");
    return what.substr(0, 6) == "zcoll " && colon != std::string_view::npos ? std::string(what.substr(colon + 2))
                                                                            : std::string(what);
  }

  /// The argument checks of a call. Without verify they throw where they fail. With verify every rank
  /// sends its call signature and any argument error to every other (one exact allgather), and all raise
  /// the same error: the first argument error, else the first rank whose call differs from rank 0's.
  template <floating_value T, class Checks>
  void preflight(const char* operation, std::size_t count, int root, const char* reduction, Checks checks) {
    fault_.reset();
    holding_faults_ = false;  // a failure of the agreement itself is raised at once
    if (!config_.verify) {
      checks();
      return;
    }
    struct entry {
      verify::call_signature signature;
      verify::fault_record fault;
    };
    std::vector<entry> all(static_cast<std::size_t>(size()));
    entry& mine = all[static_cast<std::size_t>(rank())];
    mine.signature = {.operation = verify::name_code(operation),
                      .value_bytes = sizeof(T),
                      .count = count,
                      .root = static_cast<std::uint64_t>(root),
                      .reduction = reduction ? verify::name_code(reduction) : 0,
                      .bound_mode = static_cast<std::uint64_t>(config_.error_bound.mode),
                      .bound_bits = std::bit_cast<std::uint64_t>(config_.error_bound.value),
                      .chunk_values = config_.chunk_values,
                      .min_compressed_bytes = config_.min_compressed_bytes,
                      .row_length = config_.row_length,
                      .pipeline_values = config_.pipeline_values};
    try {
      checks();
    } catch (const argument_error& e) {
      mine.fault = verify::fault_record::of(verify::fault_kind::argument, rank(), -1, without_prefix(e.what()));
    }
    exact_allgather(std::span<entry>(all), verify_tag);
    std::vector<verify::fault_record> faults;
    std::vector<verify::call_signature> signatures;
    for (const auto& e : all) {
      faults.push_back(e.fault);
      signatures.push_back(e.signature);
    }
    if (const auto* f = verify::first_fault(faults)) verify::raise(*f, operation);
    if (const auto why = verify::first_mismatch(signatures)) {
      throw argument_error(std::string(operation) + " (verify): " + *why);
    }
    holding_faults_ = true;  // from here to settle_faults(), errors are held
  }

  /// Verify mode, at the end of a call: the ranks exchange the fault each held (one exact allgather)
  /// and every rank raises the same one, if any.
  void settle_faults() {
    if (!config_.verify) return;
    holding_faults_ = false;  // a failure of the agreement itself is raised at once
    std::vector<verify::fault_record> all(static_cast<std::size_t>(size()));
    if (fault_) all[static_cast<std::size_t>(rank())] = *fault_;
    fault_.reset();
    const auto bytes_sent = report_.bytes_sent;  // the agreement is not the operation's traffic
    exact_allgather(std::span<verify::fault_record>(all), verify_tag);
    report_.bytes_sent = bytes_sent;
    if (const auto* f = verify::first_fault(all)) verify::raise(*f, report_.operation.c_str());
  }

  /// One count per rank, adding up to the buffer's length.
  void check_counts(const char* call, const char* counts_name, std::span<const std::size_t> counts,
                    const char* buffer_name, std::size_t buffer_values) const {
    if (counts.size() != static_cast<std::size_t>(size())) {
      throw argument_error(std::string(call) + ": " + counts_name + " has " + std::to_string(counts.size()) +
                           " entries, one per rank (" + std::to_string(size()) + ") expected");
    }
    std::size_t total = 0;
    for (const auto c : counts) total = checked_add(total, c, call, counts_name);
    if (total != buffer_values) {
      throw argument_error(std::string(call) + ": " + counts_name + " add up to " + std::to_string(total) +
                           " values, " + buffer_name + " holds " + std::to_string(buffer_values));
    }
  }

  void check_root(const char* call, int root) const {
    if (root < 0 || root >= size()) {
      throw argument_error(std::string(call) + ": root " + std::to_string(root) + " is not in [0, " +
                           std::to_string(size()) + ")");
    }
  }

  /// `block_bytes` decides whether to compress and must be the same on every rank (input sizes of
  /// rooted operations are not).
  void begin(const char* operation, std::size_t input_bytes, std::size_t block_bytes) {
    report_ = {};
    report_.operation = operation;
    report_.schedule = S::name;
    report_.codec = Codec::name();
    report_.ranks = size();
    report_.input_bytes = input_bytes;
    compress_now_ = !identity_codec && block_bytes > 0 && block_bytes >= config_.min_compressed_bytes;
    report_.compressed = compress_now_;
    started_ = clock::now();
    max_block_bound_ = 0.0;
    reduction_ = false;
  }

  template <floating_value T>
  void finish(std::span<const T> result, std::span<const T> reference) {
    settle_faults();
    report_.ratio = report_.bytes_sent > 0
                        ? static_cast<double>(report_.raw_bytes_sent) / static_cast<double>(report_.bytes_sent)
                        : 1.0;
    if (!reduction_) {  // data movement: each block compressed once
      report_.error_bound = report_.statistical_error_bound = compress_now_ ? max_block_bound_ : 0.0;
      report_.compressions_in_chain = compress_now_ ? 1 : 0;
    }
    if (!reference.empty() && reference.size() == result.size()) {
      double worst = 0.0;
      for (std::size_t i = 0; i < result.size(); ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(result[i]) - static_cast<double>(reference[i])));
      }
      report_.max_abs_error = worst;
    }
    report_.total_s = seconds_since(started_);
  }
  template <floating_value T>
  void finish(std::span<T> result, std::span<const T> reference) {
    finish<T>(std::span<const T>(result), reference);
  }

  /// What a value has been through on its way here: a bound on its error, and how many compressions
  /// contributed to it (for ZCCL's statistical bound).
  struct hop_error {
    double bound = 0.0;
    double compressions = 0.0;

    hop_error after_compression(double eb) const { return {bound + eb, compressions + 1}; }
    /// The error of op(mine, theirs): errors add up for a sum; a min or max is off by at most the larger.
    template <class Op>
    hop_error combined(const hop_error& theirs) const {
      const double b = std::is_same_v<Op, op::sum_t> ? bound + theirs.bound : std::max(bound, theirs.bound);
      return {b, compressions + theirs.compressions};
    }
  };

  void set_reduction_bound(const hop_error& e) {
    reduction_ = true;
    report_.compressions_in_chain = compress_now_ ? static_cast<int>(e.compressions) : 0;
    report_.error_bound = compress_now_ ? e.bound : 0.0;
    // ZCCL §3.2: k compression errors, each normal with sigma = eb/3, sum to within (2/3)·sqrt(k)·eb with
    // probability 95.44 %; never more than the worst case. eb is the mean bound of the k compressions
    // (each stream states its own: equal for FZLight at an absolute bound, per-row for Int4).
    const double mean_bound = e.compressions > 0 ? e.bound / e.compressions : 0.0;
    report_.statistical_error_bound =
        compress_now_ ? std::min(e.bound, (2.0 / 3.0) * std::sqrt(e.compressions) * mean_bound) : 0.0;
  }

  // ---- messages --------------------------------------------------------------------------------------

  /// Posts the receive and the send of one step, waits for both, and counts the bytes.
  void exchange(const schedule::exchange& send, std::span<const std::byte> out, const schedule::exchange& recv,
                std::span<std::byte> in, int tag, std::size_t raw_bytes) {
    const auto start = clock::now();
    transport::AnyTransport::request r, s;
    if (recv.active()) guarded(recv.peer, [&] { r = transport_.irecv_async(recv.peer, tag, in); });
    if (send.active()) {
      guarded(send.peer, [&] { s = transport_.isend_async(send.peer, tag, out); });
      report_.bytes_sent += out.size();
      report_.raw_bytes_sent += raw_bytes;
    }
    guarded(send.peer, [&] { transport_.wait(s); });
    guarded(recv.peer, [&] { transport_.wait(r); });
    report_.communicate_s += seconds_since(start);
  }

  // ---- codec ---------------------------------------------------------------------------------------

  /// Compresses `values` at the end of `buffer` (grown as needed); returns its slot.
  template <floating_value T, class C>
  slot encode(const C& codec, std::span<const T> values, std::vector<std::byte>& buffer, std::size_t at,
              state_key key = no_feedback) {
    const auto start = clock::now();
    std::size_t written = 0;
    if (compress_now_) {
      // A codec that refuses this rank's values (argument_error): in verify mode the fault is held and
      // an empty block goes out, which its receivers find damaged, so the schedule still completes.
      const bool compressed = guarded(-1, [&] {
        buffer.resize(std::max(buffer.size(), at + codec.template max_compressed_size<T>(values.size())));
        const auto out = std::span<std::byte>(buffer).subspan(at);
        static_assert(std::is_same_v<C, Codec>, "encode: the collective's codec, whose state state_ keeps");
        if constexpr (carries_feedback<C>) {
          // Feedback only where a key names the hop; data movement compresses each block once, plainly.
          written = key != no_feedback
                        ? codec.compress(exec(), state_.at(key), values, out).size()
                        : zcoll::compress(exec(), codec.inner(), state_.at(no_feedback).inner, values, out).size();
        } else {
          // A codec that learns (TopK's threshold, Hybrid's choice) keeps one state for the collective.
          written = zcoll::compress(exec(), codec, state_.at(no_feedback), values, out).size();
        }
      });
      buffer.resize(std::max(buffer.size(), at + written));
      const auto stream = std::span<const std::byte>(buffer).subspan(at, written);
      last_encode_bound_ = !compressed               ? 0.0
                           : key != no_feedback ? sent_bound<C>(stream, key)
                                                : read_stream_header(stream).error_bound;
    } else {
      buffer.resize(std::max(buffer.size(), at + values.size_bytes()));
      if (!values.empty()) std::memcpy(buffer.data() + at, values.data(), values.size_bytes());
      written = values.size_bytes();
    }
    report_.compress_s += seconds_since(start);
    return {at, written};
  }

  /// Decodes one received block, sent by rank `from`, into `out`; a block that does not hold out.size()
  /// values of T is a format_error, whatever the peer claimed, and every format_error names `from`.
  template <floating_value T, class C>
  void decode(const C& codec, std::span<const std::byte> bytes, std::span<T> out, int from) {
    try {
      decode_block<T>(codec, bytes, out);
    } catch (const error& e) {  // whatever a decoder raises on a peer's bytes, they are what is wrong
      fail(format_error("block from rank " + std::to_string(from) + ": " + without_prefix(e.what())), from);
    }
  }

  template <floating_value T, class C>
  void decode_block(const C& codec, std::span<const std::byte> bytes, std::span<T> out) {
    const auto start = clock::now();
    if (compress_now_) {
      const stream_header header = read_stream_header(bytes);
      if (header.count != out.size()) {
        throw format_error("collective block holds " + std::to_string(header.count) + " values, " +
                           std::to_string(out.size()) + " expected");
      }
      codec.decompress(exec(), bytes, out);
      max_block_bound_ = std::max(max_block_bound_, header.error_bound);
    } else {
      if (bytes.size() != out.size_bytes()) {
        throw format_error("collective block of " + std::to_string(bytes.size()) + " bytes, " +
                           std::to_string(out.size_bytes()) + " expected");
      }
      if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    }
    report_.decompress_s += seconds_since(start);
  }

  exec::Host exec() const { return exec::Host{.threads = config_.threads}; }

  /// `config` with the codec fields taken from the codec's configuration.
  static collective_config settings_of(const codec_config& codec, collective_config config) {
    config.error_bound = codec.error_bound;
    config.chunk_values = codec.chunk_values;
    config.fill_value = codec.fill_value;
    config.row_length = row_length(codec);
    return config;
  }

  codec_config codec_settings(const bound& error_bound) const {
    codec_config c{.error_bound = error_bound, .chunk_values = config_.chunk_values, .fill_value = config_.fill_value};
    if (config_.row_length > 0) c.shape = {config_.row_length};
    return c;
  }

  /// The codec every hop of a reduction uses, with the one absolute bound `eb`. Kept from call to call
  /// while eb does not change; the residuals of error feedback (state_) restart when it changes, as the
  /// global range of a relative bound can make it do; a codec that takes no error bound (row-wise,
  /// top-K) is the collective's own.
  const Codec& hop_codec(double eb) {
    if constexpr (!Codec::uses_error_bound) {
      return codec_;
    } else {
      if (!hop_codec_ || hop_codec_bound_ != eb) {
        hop_codec_.emplace(codec_.with_error_bound(absolute(eb)));
        hop_codec_bound_ = eb;
        if constexpr (carries_feedback<Codec>) state_.clear();
      }
      return *hop_codec_;
    }
  }

  /// Every block of `values` values a call compresses is a whole number of rows of a row-wise codec.
  void check_rows(const char* call, const char* what, std::size_t values) const {
    if (config_.row_length > 0 && values % config_.row_length != 0) {
      throw argument_error(std::string(call) + ": " + what + " of " + std::to_string(values) +
                           " values is not a whole number of rows of collective_config::row_length " +
                           std::to_string(config_.row_length));
    }
  }

  // ---- data movement -------------------------------------------------------------------------------

  /// The data-movement engine. Block b's values are block_values(b) (input where held(b), output
  /// elsewhere); held blocks are compressed once, sizes then bytes follow the schedule, and every
  /// block received is decompressed once at the end.
  template <floating_value T, class C, class Blocks, class Held>
  void move_blocks(const C& codec, op_kind op, int root, Blocks block_values, Held held) {
    move_blocks_const<T>(
        codec, op, root, [&](int b) { return held(b) ? std::span<const T>(block_values(b)) : std::span<const T>{}; },
        [&](int b) { return held(b) ? std::span<T>{} : block_values(b); }, held, std::size_t{0}, true);
  }

  /// As move_blocks, with separate sources (held blocks) and destinations (blocks this rank keeps);
  /// `values_per_block` > 0 gives every block that length (blocks this rank only forwards).
  template <floating_value T, class C, class Sources, class Destinations, class Held>
  void move_blocks_const(const C& codec, op_kind op, int root, Sources source, Destinations destination, Held held,
                         std::size_t values_per_block, bool destinations_sized_by_source = false) {
    const int p = size(), me = rank();
    const int blocks = schedule::blocks_of<S>(op, p);
    const int rounds = S::rounds(op, p);
    const auto values_of = [&](int b) {
      if (values_per_block > 0) return values_per_block;
      return destinations_sized_by_source ? std::max(source(b).size(), destination(b).size()) : destination(b).size();
    };
    const auto index = [](int b) { return static_cast<std::size_t>(b); };
    blocks_.assign(index(blocks), block_location{});
    sizes_.assign(index(blocks), 0);
    // Held blocks: compressed once, back to back at the start of the arena; uncompressed, they are sent
    // from where they are.
    std::size_t end = 0;
    held_offsets_.assign(index(blocks), 0);
    held_bound_ = 0.0;
    for (int b = 0; b < blocks; ++b) {
      if (!held(b)) continue;
      if (compress_now_) {
        const state_key key = feedback_op_ ? hop_key(*feedback_op_, 0, b, source(b).size()) : no_feedback;
        const slot written = encode<T>(codec, source(b), arena_, end, key);
        held_bound_ = std::max(held_bound_, last_encode_bound_);
        held_offsets_[index(b)] = written.offset;  // located once the arena stops growing, below
        blocks_[index(b)].size = written.size;
        sizes_[index(b)] = written.size;
        end += written.size;
      } else {
        blocks_[index(b)] = {reinterpret_cast<const std::byte*>(source(b).data()), source(b).size_bytes()};
      }
    }
    // Sizes: uncompressed, every rank knows them; compressed, they travel first, over the same schedule
    // with one 8-byte word per block.
    if (compress_now_) {
      for (int r = 0; r < rounds; ++r) {
        const schedule::step st = S::at(op, p, me, r, root);
        exchange(st.send, std::as_bytes(word_range(st.send)), st.recv, std::as_writable_bytes(word_range(st.recv)),
                 size_tag, 0);
        // Checked before the arena is sized by them (a hostile word must not allocate).
        for (int b = st.recv.first_block; st.recv.active() && b < st.recv.first_block + st.recv.block_count; ++b) {
          sizes_[index(b)] = peer_size<T>(sizes_[index(b)], values_of(b), st.recv.peer);
        }
      }
    } else {
      for (int b = 0; b < blocks; ++b) sizes_[index(b)] = values_of(b) * sizeof(T);
    }
    // Where each received message goes: straight into the destinations when they are adjacent in memory
    // and the bytes need no decoding, else behind the held blocks in the arena, which is sized once here
    // so that the locations stay valid.
    auto& direct = direct_;
    direct.assign(static_cast<std::size_t>(rounds), std::span<std::byte>{});
    std::size_t arena_bytes = end;
    for (int r = 0; r < rounds; ++r) {
      const schedule::step st = S::at(op, p, me, r, root);
      if (!st.recv.active()) continue;
      if (!compress_now_) direct[static_cast<std::size_t>(r)] = adjacent_destinations<T>(st.recv, destination);
      if (direct[static_cast<std::size_t>(r)].empty()) arena_bytes += range_bytes(st.recv);
    }
    arena_.resize(std::max(arena_.size(), arena_bytes));
    for (int b = 0; compress_now_ && b < blocks; ++b) {
      if (held(b)) blocks_[index(b)].data = arena_.data() + held_offsets_[index(b)];
    }
    // Then the bytes; a send of blocks not adjacent in memory is staged into one buffer.
    for (int r = 0; r < rounds; ++r) {
      const schedule::step st = S::at(op, p, me, r, root);
      std::span<std::byte> in;
      if (st.recv.active()) {
        in = direct[static_cast<std::size_t>(r)];
        if (in.empty()) {
          in = std::span<std::byte>(arena_).subspan(end, range_bytes(st.recv));
          end += in.size();
        }
        std::size_t at = 0;
        for (int b = st.recv.first_block; b < st.recv.first_block + st.recv.block_count; ++b) {
          blocks_[index(b)] = {in.data() + at, static_cast<std::size_t>(sizes_[index(b)]), st.recv.peer};
          at += static_cast<std::size_t>(sizes_[index(b)]);
        }
      }
      std::span<const std::byte> out;
      std::size_t raw = 0;
      if (st.send.active()) {
        out = contiguous_or_staged(st.send.first_block, st.send.block_count);
        for (int b = st.send.first_block; b < st.send.first_block + st.send.block_count; ++b) raw += values_of(b) * sizeof(T);
      }
      exchange(st.send, out, st.recv, in, data_tag, raw);
    }
    for (int b = 0; b < blocks; ++b) {
      const auto dest = destination(b);
      const block_location located = blocks_[index(b)];
      if (held(b) || dest.empty() || located.data == reinterpret_cast<const std::byte*>(dest.data())) continue;
      decode<T>(codec, std::span<const std::byte>(located.data, located.size), dest, located.from);
    }
  }

  /// The bytes of a received range of blocks.
  std::size_t range_bytes(const schedule::exchange& e) const {
    std::size_t bytes = 0;
    for (int b = e.first_block; b < e.first_block + e.block_count; ++b) bytes += static_cast<std::size_t>(sizes_[static_cast<std::size_t>(b)]);
    return bytes;
  }

  /// The destinations of a received range as one span, when they are adjacent in memory and each the
  /// size of its block (then raw bytes land where they belong); else empty.
  template <floating_value T, class Destinations>
  std::span<std::byte> adjacent_destinations(const schedule::exchange& e, Destinations destination) const {
    std::byte* first = nullptr;
    std::size_t bytes = 0;
    for (int b = e.first_block; b < e.first_block + e.block_count; ++b) {
      const std::span<T> dest = destination(b);
      if (dest.size_bytes() != sizes_[static_cast<std::size_t>(b)] || dest.empty()) return {};
      auto* at = reinterpret_cast<std::byte*>(dest.data());
      if (first == nullptr) first = at;
      if (at != first + bytes) return {};
      bytes += dest.size_bytes();
    }
    return {first, bytes};
  }

  std::span<std::uint64_t> word_range(const schedule::exchange& e) {
    if (!e.active()) return {};
    return std::span<std::uint64_t>(sizes_).subspan(static_cast<std::size_t>(e.first_block), static_cast<std::size_t>(e.block_count));
  }

  std::span<const std::byte> contiguous_or_staged(int first, int count) {
    std::size_t total = 0;
    bool adjacent = true;
    for (int b = first; b < first + count; ++b) {
      const block_location s = blocks_[static_cast<std::size_t>(b)];
      if (b > first && s.data != blocks_[static_cast<std::size_t>(b - 1)].data + blocks_[static_cast<std::size_t>(b - 1)].size) {
        adjacent = false;
      }
      total += s.size;
    }
    if (adjacent) return {blocks_[static_cast<std::size_t>(first)].data, total};
    staging_.resize(total);
    std::size_t at = 0;
    for (int b = first; b < first + count; ++b) {
      const block_location s = blocks_[static_cast<std::size_t>(b)];
      if (s.size > 0) std::memcpy(staging_.data() + at, s.data, s.size);
      at += s.size;
    }
    return std::span<const std::byte>(staging_).first(total);
  }

  template <floating_value T>
  void alltoall_blocks(std::span<const T> in, std::span<T> out, std::size_t n) {
    const int p = size(), me = rank();
    std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)), n,
                out.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)));
    const int rounds = S::rounds(op_kind::alltoall, p);
    for (int r = 0; r < rounds; ++r) {
      const schedule::step st = S::at(op_kind::alltoall, p, me, r, 0);
      if (!compress_now_) {  // raw: from the caller's input straight into its output
        const auto block = [&](auto span, const schedule::exchange& e) {
          return e.active() ? span.subspan(n * static_cast<std::size_t>(e.first_block), n) : decltype(span){};
        };
        exchange(st.send, std::as_bytes(block(in, st.send)), st.recv, std::as_writable_bytes(block(out, st.recv)),
                 data_tag, st.send.active() ? n * sizeof(T) : 0);
        continue;
      }
      std::uint64_t out_size = 0, in_size = 0;
      slot sent{};
      if (st.send.active()) {
        sent = encode<T>(codec_, in.subspan(n * static_cast<std::size_t>(st.send.first_block), n), arena_, 0);
        out_size = sent.size;
      }
      exchange(st.send, std::as_bytes(std::span(&out_size, st.send.active() ? 1 : 0)), st.recv,
               std::as_writable_bytes(std::span(&in_size, st.recv.active() ? 1 : 0)), size_tag, 0);
      if (st.recv.active()) in_size = peer_size<T>(in_size, n, st.recv.peer);
      staging_.resize(static_cast<std::size_t>(in_size));
      exchange(st.send, std::span<const std::byte>(arena_).first(sent.size), st.recv,
               std::span<std::byte>(staging_).first(static_cast<std::size_t>(in_size)), data_tag, n * sizeof(T));
      if (st.recv.active()) {
        decode<T>(codec_, std::span<const std::byte>(staging_).first(static_cast<std::size_t>(in_size)),
                  out.subspan(n * static_cast<std::size_t>(st.recv.first_block), n), st.recv.peer);
      }
    }
  }

  // ---- computation ---------------------------------------------------------------------------------

  /// The absolute bound of every hop: the configured absolute bound, or a relative one times the range
  /// of all ranks' inputs (finite, non-fill values; one exact allgather of 2 values per rank).
  template <floating_value T>
  double hop_bound(std::span<const T> input) {
    if (!compress_now_) return 0.0;
    if (config_.error_bound.mode == bound_mode::absolute) return config_.error_bound.value;
    const auto local = find_value_extent(exec(), input, fill_bits_of<T>(config_.fill_value));
    std::vector<value_extent<double>> extents(static_cast<std::size_t>(size()));
    extents[static_cast<std::size_t>(rank())] = {local.lowest, local.highest};
    exact_allgather(std::span<value_extent<double>>(extents));
    value_extent<double> all;
    for (const auto& e : extents) {
      if (e.empty()) continue;
      all.lowest = std::min(all.lowest, e.lowest);
      all.highest = std::max(all.highest, e.highest);
    }
    return absolute_bound(config_.error_bound, all.range());
  }

  /// Exact allgather of one record per rank (all[rank()] filled in) over the Ring schedule, whatever S
  /// is: value ranges, error bounds, verify mode's signatures and faults.
  template <class Record>
  void exact_allgather(std::span<Record> all, int tag = size_tag) {
    static_assert(std::is_trivially_copyable_v<Record>);
    const int p = size(), me = rank();
    const auto block = [&](const schedule::exchange& e) {
      return e.active() ? all.subspan(static_cast<std::size_t>(e.first_block), 1) : std::span<Record>{};
    };
    for (int r = 0; r < Ring::rounds(op_kind::allgather, p); ++r) {
      const schedule::step st = Ring::at(op_kind::allgather, p, me, r);
      exchange(st.send, std::as_bytes(block(st.send)), st.recv, std::as_writable_bytes(block(st.recv)), tag, 0);
    }
  }

  /// The computation engine over `work` (this rank's values, reduced in place): each step compresses the
  /// blocks it sends (as one stream: they are one range of values), sends a header (the stream's size,
  /// and the bound and compression count the values carry), then the bytes; the receiver decompresses and
  /// reduces them in (or replaces its values, for a fold-out). error_ holds each block's bound, so the
  /// report states exactly what the schedule did, whatever its shape.
  template <floating_value T, class Op, class Range>
  void reduce_blocks(op_kind kind, const Codec& hops, Op op, Range range, std::span<T> work) {
    const int p = size(), me = rank();
    const int rounds = S::rounds(kind, p);
    error_.assign(static_cast<std::size_t>(schedule::blocks_of<S>(kind, p)), hop_error{});
    const auto values = [&](const schedule::exchange& e) {
      const auto [lo, first_count] = range(e.first_block);
      const auto [last_lo, last_count] = range(e.first_block + e.block_count - 1);
      return std::pair{lo, last_lo + last_count - lo};
    };
    for (int r = 0; r < rounds; ++r) {
      const schedule::step st = S::at(kind, p, me, r, 0);
      if (compress_now_) {
        pipelined_hop<T>(kind, r, hops, st, values, op, work);
      } else {  // raw: sizes known, no error to carry, sent from and reduced in place
        raw_hop<T>(st, values, op, work);
      }
    }
  }

  /// One segment of a pipelined hop: the values [lo, lo + count) of `work`, and its message requests.
  struct hop_segment {
    std::size_t lo = 0, count = 0;
    slot stream{};                   // sending: where its stream is in the arena
    std::size_t received_bytes = 0;  // receiving: the size its header announced (checked)
    transport::AnyTransport::request header, data;
  };

  /// The segments of the values [lo, lo + count): pipeline_values each (rounded up to whole rows of a
  /// row-wise codec), the last shorter; at least one, so that an empty block still sends its header.
  void split_segments(std::size_t lo, std::size_t count, std::vector<hop_segment>& segments) const {
    std::size_t length = config_.pipeline_values == 0 ? std::max<std::size_t>(count, 1) : config_.pipeline_values;
    if (config_.row_length > 0) length = (length + config_.row_length - 1) / config_.row_length * config_.row_length;
    segments.clear();
    for (std::size_t at = 0; at == 0 || at < count; at += length) {
      hop_segment& segment = segments.emplace_back();
      segment.lo = lo + at;
      segment.count = std::min(length, count - at);
    }
  }

  /// One compressed hop (PIPE-fZ-light): the receives of every segment's header are posted first; the
  /// send side compresses segment after segment into the arena (sized up front, so that bytes in flight
  /// never move) and sends each segment's header (its stream size, and the bound and compression count
  /// its values carry) and bytes at once; between segments the receive side takes what has arrived,
  /// decompressing and reducing each segment into `work` as soon as no unsent value is in its range
  /// (recursive doubling sends and receives the same range). The blocks received get the largest
  /// error any of their segments carried.
  template <floating_value T, class Values, class Op>
  void pipelined_hop(op_kind kind, int round, const Codec& hops, const schedule::step& st, Values values, Op op,
                     std::span<T> work) {
    std::vector<hop_segment>& out = out_segments_;
    std::vector<hop_segment>& in = in_segments_;
    out.clear();
    in.clear();
    std::size_t hop_values = 0;  // the values received in this hop
    if (st.recv.active()) {
      const auto [lo, count] = values(st.recv);
      split_segments(lo, count, in);
      hop_values = count;
    }
    in_headers_.assign(in.size(), hop_header{});
    in_bytes_.resize(std::max(in_bytes_.size(), in.size()));
    for (std::size_t k = 0; k < in.size(); ++k) {
      in[k].header = transport_.irecv_async(st.recv.peer, size_tag, std::as_writable_bytes(std::span(&in_headers_[k], 1)));
    }
    std::size_t unsent_lo = 0, unsent_hi = 0;  // the values not yet compressed
    hop_error carried{};
    if (st.send.active()) {
      const auto [lo, count] = values(st.send);
      split_segments(lo, count, out);
      std::size_t arena = 0;
      for (auto& segment : out) {
        segment.stream.offset = arena;
        arena += hops.template max_compressed_size<T>(segment.count);
      }
      arena_.resize(std::max(arena_.size(), arena));
      out_headers_.assign(out.size(), hop_header{});
      for (int b = st.send.first_block; b < st.send.first_block + st.send.block_count; ++b) {
        const auto& e = error_[static_cast<std::size_t>(b)];
        carried = {std::max(carried.bound, e.bound), std::max(carried.compressions, e.compressions)};
      }
      std::tie(unsent_lo, unsent_hi) = std::pair{lo, lo + count};
    }
    hop_error received{};
    std::size_t headers_in = 0, segments_in = 0;  // segments whose header, and whose values, have arrived
    // Takes what has arrived: headers post the receives of their bytes; bytes are decoded and reduced in
    // order, once no unsent value is in their range. Blocking: until every segment is in.
    const auto take_arrivals = [&](bool blocking) {
      const auto start = clock::now();
      double busy = 0.0;  // decoding and reducing, counted apart from communication
      while (segments_in < in.size()) {
        while (headers_in < in.size() && test_held(in[headers_in].header, st.recv.peer)) {
          post_segment_receive<T>(st.recv.peer, in, headers_in++, hop_values);
        }
        hop_segment& next = in[segments_in];
        const bool overlaps_unsent = next.lo < unsent_hi && unsent_lo < next.lo + next.count;
        const bool ready = segments_in < headers_in && !overlaps_unsent &&
                           (blocking ? (wait_held(next.data, st.recv.peer), true) : test_held(next.data, st.recv.peer));
        if (ready) {
          const auto work_start = clock::now();
          const hop_header& h = in_headers_[segments_in];
          received = {std::max(received.bound, h.error_bound), std::max(received.compressions, h.compressions)};
          reduce_segment<T>(hops, std::span<const std::byte>(in_bytes_[segments_in]).first(in[segments_in].received_bytes),
                            next, st.recv.reduce, op, work, st.recv.peer);
          ++segments_in;
          busy += seconds_since(work_start);
        } else if (!blocking) {
          break;
        } else if (segments_in == headers_in) {
          wait_held(in[headers_in].header, st.recv.peer);
          post_segment_receive<T>(st.recv.peer, in, headers_in++, hop_values);
        }
      }
      report_.communicate_s += seconds_since(start) - busy;
    };
    for (std::size_t k = 0; k < out.size(); ++k) {
      hop_segment& segment = out[k];
      const state_key key = segment_key(hop_key(kind, round, st.send.first_block, values(st.send).second), k);
      const auto values_of = std::span<const T>(work).subspan(segment.lo, segment.count);
      segment.stream = encode<T>(hops, values_of, arena_, segment.stream.offset, key);
      const hop_error sent_error = carried.after_compression(last_encode_bound_);
      out_headers_[k] = {segment.stream.size, sent_error.bound, sent_error.compressions, segment.count,
                         values(st.send).second};
      unsent_lo = segment.lo + segment.count;
      const auto start = clock::now();
      segment.header = transport_.isend_async(st.send.peer, size_tag, std::as_bytes(std::span(&out_headers_[k], 1)));
      segment.data = transport_.isend_async(
          st.send.peer, data_tag, std::span<const std::byte>(arena_).subspan(segment.stream.offset, segment.stream.size));
      report_.bytes_sent += sizeof(hop_header) + segment.stream.size;
      report_.raw_bytes_sent += segment.count * sizeof(T);
      report_.communicate_s += seconds_since(start);
      take_arrivals(false);
    }
    unsent_lo = unsent_hi = 0;
    take_arrivals(true);
    const auto start = clock::now();
    for (auto& segment : out) {
      wait_held(segment.header, st.send.peer);
      wait_held(segment.data, st.send.peer);
    }
    report_.communicate_s += seconds_since(start);
    for (int b = st.recv.first_block; st.recv.active() && b < st.recv.first_block + st.recv.block_count; ++b) {
      auto& e = error_[static_cast<std::size_t>(b)];
      e = st.recv.reduce ? e.template combined<Op>(received) : received;
    }
  }

  /// A segment's header has arrived: checks that the sender cut the hop as this rank did and the size
  /// it announces, and posts the receive of its bytes.
  template <floating_value T>
  void post_segment_receive(int peer, std::vector<hop_segment>& in, std::size_t k, std::size_t hop_values) {
    const hop_header& h = in_headers_[k];
    // The bound and count the values carry go into the report's bound: a damaged one is refused.
    const bool plausible = std::isfinite(h.error_bound) && h.error_bound >= 0.0 && h.compressions >= 0.0 &&
                           h.compressions <= 4.0 * size() && h.compressions == std::floor(h.compressions);
    if (!plausible) {
      fail(format_error("rank " + std::to_string(peer) + " sends a segment that carries the bound " +
                        std::to_string(h.error_bound) + " after " + std::to_string(h.compressions) + " compressions"),
           peer);
      in_headers_[k].error_bound = std::numeric_limits<double>::infinity();
      in_headers_[k].compressions = 0.0;
    }
    if (h.segment_values != in[k].count || h.hop_values != hop_values) {
      fail(format_error("rank " + std::to_string(peer) + " sends a segment of " + std::to_string(h.segment_values) +
                        " of " + std::to_string(h.hop_values) + " values where this rank expects " +
                        std::to_string(in[k].count) + " of " + std::to_string(hop_values) +
                        " (were the ranks called with the same count and configuration?)"),
           peer);
    }
    const std::uint64_t bytes = peer_size<T>(h.size_bytes, in[k].count, peer);
    in[k].received_bytes = static_cast<std::size_t>(bytes);
    in_bytes_[k].resize(in[k].received_bytes);
    in[k].data = transport_.irecv_async(peer, data_tag, std::span<std::byte>(in_bytes_[k]));
  }

  /// transport_.wait and test through guarded(): in verify mode a failed message is held, and counts
  /// as complete.
  void wait_held(transport::AnyTransport::request& r, int peer) {
    guarded(peer, [&] { transport_.wait(r); });
  }
  bool test_held(transport::AnyTransport::request& r, int peer) {
    bool done = true;
    guarded(peer, [&] { done = transport_.test(r); });
    return done;
  }

  /// Decodes one received segment and reduces it into (or, for a fold-out, copies it to) its values.
  template <floating_value T, class Op>
  void reduce_segment(const Codec& hops, std::span<const std::byte> bytes, const hop_segment& segment, bool reduce,
                      Op op, std::span<T> work, int from) {
    auto& incoming = incoming_as<T>();
    incoming.resize(segment.count);
    decode<T>(hops, bytes, std::span<T>(incoming), from);
    const auto start = clock::now();
    combine_into(work.data() + segment.lo, incoming.data(), segment.count, reduce, op);
    report_.reduce_s += seconds_since(start);
  }

  /// target = op(target, incoming) element-wise, or a copy of incoming when the schedule replaces.
  template <floating_value T, class Op>
  static void combine_into(T* target, const T* incoming, std::size_t count, bool reduce, Op op) {
    if (!reduce) {
      std::copy_n(incoming, count, target);
      return;
    }
    for (std::size_t i = 0; i < count; ++i) target[i] = op(target[i], incoming[i]);
  }

  /// One uncompressed hop: the values go from `work` as they are, arrive in a buffer of T and are
  /// reduced (or copied) into `work` from there.
  template <floating_value T, class Values, class Op>
  void raw_hop(const schedule::step& st, Values values, Op op, std::span<T> work) {
    std::span<const std::byte> out;
    std::size_t out_raw = 0;
    if (st.send.active()) {
      const auto [lo, count] = values(st.send);
      out = std::as_bytes(work.subspan(lo, count));
      out_raw = out.size();
    }
    std::size_t lo = 0, count = 0;
    if (st.recv.active()) std::tie(lo, count) = values(st.recv);
    auto& incoming_values = incoming_as<T>();
    incoming_values.resize(count);
    exchange(st.send, out, st.recv, std::as_writable_bytes(std::span<T>(incoming_values)), data_tag, out_raw);
    if (!st.recv.active()) return;
    const auto start = clock::now();
    T* target = work.data() + lo;
    const T* incoming = incoming_values.data();
    combine_into(target, incoming, count, st.recv.reduce, op);
    report_.reduce_s += seconds_since(start);
  }

  /// Error feedback per hop: the codec carries each hop's residual to the same hop of the next call.
  template <class C>
  static constexpr bool carries_feedback = stateful_codec<C> && requires(const C& c) { c.inner(); };

  /// encode() without error feedback (no hop_key is all ones: the operation's bits are small).
  static constexpr state_key no_feedback = ~state_key{0};

  /// One residual per hop of a reduction: the operation, the round, the first block and the length,
  /// the same from one call to the next on a tensor of the same length.
  static state_key hop_key(op_kind kind, int round, int first_block, std::size_t count) {
    return (static_cast<state_key>(kind) << 56) ^ (static_cast<state_key>(round) << 44) ^
           (static_cast<state_key>(first_block) << 32) ^ static_cast<state_key>(count);
  }

  /// The residual of segment k of a hop: segment 0 keeps the hop's own key (one stream per hop when
  /// pipelining is off); the others are spread by a multiplicative hash.
  static state_key segment_key(state_key hop, std::size_t k) {
    return hop ^ (static_cast<state_key>(k) * 0x9E3779B97F4A7C15ull);
  }

  /// The bound of one hop's compression, from the stream it wrote: its header's (the codec's bound on
  /// what it compressed). With error feedback the codec compressed x + e, where e is the previous call's
  /// error at this hop, bounded by that call's header: |x - decoded| <= both bounds added.
  template <class C>
  double sent_bound(std::span<const std::byte> stream, state_key key) {
    const double stated = read_stream_header(stream).error_bound;
    if constexpr (carries_feedback<C>) {
      auto [entry, inserted] = last_feedback_bound_.try_emplace(key, 0.0);
      const double carried = entry->second;
      entry->second = stated;
      return stated + carried;
    } else {
      return stated;
    }
  }

  /// The header before each hop's bytes: their size, and the error the values carry.
  struct hop_header {
    std::uint64_t size_bytes = 0;
    double error_bound = 0.0;
    double compressions = 0.0;
    std::uint64_t segment_values = 0;  // what the sender cut: a receiver that expects other segments
    std::uint64_t hop_values = 0;      // (ranks called with other counts) fails at once, never waits
  };

  // work_ and incoming_ hold floats or doubles; both kinds are kept so either type reuses its scratch.
  template <floating_value T>
  std::vector<T>& work_as() {
    if constexpr (std::is_same_v<T, float>) return work_f_; else return work_d_;
  }
  template <floating_value T>
  std::vector<T>& incoming_as() {
    if constexpr (std::is_same_v<T, float>) return incoming_f_; else return incoming_d_;
  }

  transport::AnyTransport transport_;
  collective_config config_;
  Codec codec_;
  std::optional<Codec> hop_codec_;  // the reductions' codec with an absolute bound (hop_codec)
  codec_state<Codec> state_;        // what the codec learns: residuals per hop key, a threshold, a choice
  double hop_codec_bound_ = 0.0;
  std::map<state_key, double> last_feedback_bound_;  // with error feedback: each hop's previous bound
  std::optional<op_kind> feedback_op_;  // set while a data-movement phase compresses under feedback keys
  double last_encode_bound_ = 0.0;      // the bound of the last stream encode() wrote (sent_bound)
  double held_bound_ = 0.0;             // the largest of the blocks the last move_blocks compressed
  collective_report report_;
  clock::time_point started_;
  bool compress_now_ = false;
  std::optional<verify::fault_record> fault_;  // verify mode: the first error this call met, held
  bool holding_faults_ = false;                // verify mode, while an operation runs
  double max_block_bound_ = 0.0;
  bool reduction_ = false;  // the call reduces (the bound comes from error_), or only moves data
  std::vector<hop_error> error_;  // per block, during a reduction
  std::vector<std::byte> arena_, staging_;
  std::vector<hop_header> out_headers_, in_headers_;      // a pipelined hop's headers (stable while in flight)
  std::vector<std::vector<std::byte>> in_bytes_;          // each received segment's stream
  // The segments hold the requests in flight: declared after the buffers those write into, so that they
  // are destroyed (which cancels a pending receive) before the buffers are freed.
  std::vector<hop_segment> out_segments_, in_segments_;
  /// Where each block of a data-movement call is: in the arena, in the caller's buffers, or staged.
  struct block_location {
    const std::byte* data = nullptr;
    std::size_t size = 0;
    int from = -1;  // the rank it was received from
  };
  std::vector<block_location> blocks_;
  std::vector<std::size_t> held_offsets_;
  std::vector<std::span<std::byte>> direct_;
  std::vector<std::uint64_t> sizes_;
  std::vector<float> work_f_, incoming_f_;
  std::vector<double> work_d_, incoming_d_;
};

}  // namespace zcoll
