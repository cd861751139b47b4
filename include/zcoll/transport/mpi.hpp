#pragma once
/// transport::Mpi: the byte transport over a communicator of its own (a duplicate of the MPI_Comm or
/// boost::mpi::communicator it is given), and MPI's own collectives as the baselines the benchmark
/// measures zcoll against. The only file of zcoll that includes Boost.MPI and <mpi.h>; link zcoll::mpi to
/// use it (or include <zcoll/mpi.hpp>).
///
///     MPI_Init(&argc, &argv);                                 // or a boost::mpi::environment
///     zcoll::transport::Mpi world{MPI_COMM_WORLD};
///     auto request = world.isend_async((world.rank() + 1) % world.size(), 0, std::as_bytes(std::span(data)));
///     world.wait(request);

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Query_cuda_support
#endif

#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <climits>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/core/error.hpp"
#include "zcoll/core/reduce_op.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll::transport {

/// The numbers transport::Mpi is configured with: {.max_part_bytes = 7}.
struct mpi_config {
  /// The largest piece one MPI call moves, in bytes, in [1, INT_MAX]. MPI counts are `int`, so a
  /// point-to-point message longer than this goes as consecutive messages of at most this many bytes
  /// with the same tag, and a native collective whose block is longer goes as several calls of at most
  /// this many bytes of the block each. The default is MPI's own limit (INT_MAX bytes, also below the
  /// 2 GiB where MPI implementations have had overflow bugs); tests set a few bytes to exercise the
  /// splitting. Every rank must use the same value: the receiver posts the parts the sender sends.
  std::size_t max_part_bytes = INT_MAX;
};

/// A byte transport on a duplicate of the caller's communicator: raw bytes as MPI_BYTE with
/// MPI_Isend/MPI_Irecv (never Boost serialization), plus MPI's collectives for baselines.
///
/// Construction is collective over the communicator (a new communicator of the same group and order,
/// made by MPI_Comm_split): every rank constructs its Mpi in the same order. Every message travels on the duplicate, so no tag of the program's own messages on
/// its communicator can match one of zcoll's, and MPI_ERRORS_RETURN is set on the duplicate only (MPI
/// errors become transport_error carrying MPI_Error_string's text; the caller's communicator keeps its
/// error handler). Copies share the duplicate, which is freed with the last of them.
///
/// Thread level (MPI_Query_thread): any, as long as one thread at a time uses an Mpi and its copies — a
/// message of several parts is posted as consecutive MPI calls and relies on MPI's per-(peer, tag)
/// ordering. collective_config::progress_thread makes MPI calls from a thread of its own beside the
/// program's, and needs MPI_THREAD_MULTIPLE (thread_multiple(); Compressed checks it).
///
///     zcoll::transport::Mpi mpi{MPI_COMM_WORLD, {.max_part_bytes = 1 << 20}};
///     std::vector<std::byte> in(n);
///     auto r = mpi.irecv_async(peer, tag, in);   // exactly n bytes, or wait() raises transport_error
///     mpi.wait(r);
class Mpi {
 public:
  /// One posted send or receive; owns its MPI_Request(s) (one per part of the message). Move-only.
  /// Destroying a request that is still pending cancels a receive (MPI_Cancel, then MPI_Wait, which
  /// returns at once) and detaches a send (MPI_Request_free: the send still completes, so its bytes must
  /// outlive the transfer even then — wait on sends before their buffers go).
  class request {
   public:
    /// A request for nothing: already complete.
    request() = default;
    request(request&& other) noexcept { take(other); }
    request& operator=(request&& other) noexcept {
      if (this != &other) {
        release();
        take(other);
      }
      return *this;
    }
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request() { release(); }

    /// Whether the message is still in flight (posted, and not yet completed by wait() or test()).
    bool pending() const { return pending_; }

   private:
    friend class Mpi;

    std::span<MPI_Request> handles() { return parts_.empty() ? std::span<MPI_Request>(&single_, 1) : std::span(parts_); }

    void take(request& other) noexcept {
      single_ = std::exchange(other.single_, MPI_REQUEST_NULL);
      parts_ = std::move(other.parts_);
      other.parts_.clear();
      size_bytes_ = other.size_bytes_;
      part_bytes_ = other.part_bytes_;
      peer_ = other.peer_;
      tag_ = other.tag_;
      receive_ = other.receive_;
      pending_ = std::exchange(other.pending_, false);
    }

    void release() noexcept {
      if (!pending_) return;
      pending_ = false;
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized) return;
      for (MPI_Request& handle : handles()) {
        if (handle == MPI_REQUEST_NULL) continue;
        if (receive_) {
          MPI_Cancel(&handle);
          MPI_Wait(&handle, MPI_STATUS_IGNORE);
        } else {
          MPI_Request_free(&handle);
        }
      }
    }

    MPI_Request single_ = MPI_REQUEST_NULL;
    std::vector<MPI_Request> parts_;  // only for a message of more than one part
    std::size_t size_bytes_ = 0;      // the whole message
    std::size_t part_bytes_ = 0;      // every part but the last has this size
    int peer_ = -1;
    int tag_ = -1;
    bool receive_ = false;
    bool pending_ = false;
  };

  /// A duplicate of `comm` (the same group and rank order, made by MPI_Comm_split: collective over it).
  /// Needs MPI initialized (MPI_Init, or a boost::mpi::environment alive) and a valid intracommunicator.
  explicit Mpi(MPI_Comm comm, mpi_config config = {}) : Mpi(adopt, duplicate(comm), config) {}
  explicit Mpi(const boost::mpi::communicator& comm, mpi_config config = {})
      : Mpi(adopt, duplicate(comm ? static_cast<MPI_Comm>(comm) : MPI_COMM_NULL), config) {}

  /// Whether MPI runs at MPI_THREAD_MULTIPLE (MPI_Query_thread), which a progress thread needs.
  bool thread_multiple() const { return thread_level_ == MPI_THREAD_MULTIPLE; }

  /// Whether MPI takes CUDA device memory in its sends and receives (CUDA-aware MPI): Open MPI's
  /// MPIX_Query_cuda_support() at construction — 1 where the library was built with CUDA and its runtime
  /// takes CUDA buffers. Other MPI libraries are not asked (false); a staging space with
  /// device_transfer::direct hands them device memory anyway (collective/staging.hpp).
  bool takes_device_memory() const { return takes_device_memory_; }

 private:
  struct adopt_t {};
  static constexpr adopt_t adopt{};

  static MPI_Comm duplicate(MPI_Comm comm) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) throw argument_error("transport::Mpi: MPI is not initialized; call MPI_Init (or create a boost::mpi::environment) first");
    if (comm == MPI_COMM_NULL) throw argument_error("transport::Mpi: the communicator is MPI_COMM_NULL, expected a valid communicator");
    // A new communicator with the same group and rank order. MPI_Comm_split rather than MPI_Comm_dup:
    // with Open MPI 4.1.4 over TCP, large exchanges ran at half the link rate in most runs after an
    // MPI_Comm_dup — on the duplicate and on MPI_COMM_WORLD alike — and at the link rate after a split
    // (docs/performance.md, issue 18). Under the caller's own error handler: a failure here is reported
    // (or fatal) as its other calls are.
    int rank = 0;
    int code = MPI_Comm_rank(comm, &rank);
    MPI_Comm own = MPI_COMM_NULL;
    if (code == MPI_SUCCESS) code = MPI_Comm_split(comm, 0, rank, &own);
    if (code != MPI_SUCCESS) throw transport_error("transport::Mpi: MPI_Comm_split failed: " + error_text(code));
    return own;
  }

  /// Open MPI's answer where its CUDA extension is built (it is by default, with or without CUDA).
  static bool query_cuda_support() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
  }

  /// Takes ownership of `owned` (freed with the last copy).
  Mpi(adopt_t, MPI_Comm owned, mpi_config config)
      : comm_(owned, boost::mpi::comm_take_ownership), max_part_bytes_(config.max_part_bytes) {
    if (max_part_bytes_ < 1 || max_part_bytes_ > static_cast<std::size_t>(INT_MAX)) {
      throw argument_error("transport::Mpi: max_part_bytes " + std::to_string(max_part_bytes_) + " is outside [1, " +
                           std::to_string(INT_MAX) + "]");
    }
    handle_ = owned;
    check(MPI_Query_thread(&thread_level_), "transport::Mpi", "MPI_Query_thread");
    takes_device_memory_ = query_cuda_support();
    check(MPI_Comm_set_errhandler(handle_, MPI_ERRORS_RETURN), "transport::Mpi", "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(handle_, &rank_), "transport::Mpi", "MPI_Comm_rank");
    check(MPI_Comm_size(handle_, &size_), "transport::Mpi", "MPI_Comm_size");
    int* tag_ub = nullptr;
    int found = 0;
    check(MPI_Comm_get_attr(handle_, MPI_TAG_UB, &tag_ub, &found), "transport::Mpi", "MPI_Comm_get_attr(MPI_TAG_UB)");
    // MPI guarantees at least 32767; an attribute-less communicator cannot happen for an intracommunicator.
    tag_ub_ = found && tag_ub != nullptr ? *tag_ub : 32767;
    scratch_.resize(4 * static_cast<std::size_t>(size_));
  }

 public:

  /// This rank, in [0, size()).
  int rank() const { return rank_; }
  /// The number of ranks of the group.
  int size() const { return size_; }
  /// The largest tag isend_async/irecv_async accept (MPI_TAG_UB of the communicator, at least 32767).
  int tag_upper_bound() const { return tag_ub_; }
  /// The largest piece one MPI call moves (mpi_config::max_part_bytes).
  std::size_t max_part_bytes() const { return max_part_bytes_; }
  /// zcoll's duplicate of the communicator it was given.
  const boost::mpi::communicator& communicator() const { return comm_; }
  /// Its MPI_Comm, for calls zcoll does not wrap.
  MPI_Comm native_handle() const { return handle_; }

  /// Starts sending `bytes` to `peer` with `tag` in [0, tag_upper_bound()]; `bytes` must stay alive and
  /// unchanged until the request completes. A message longer than max_part_bytes goes in several parts.
  request isend_async(int peer, int tag, std::span<const std::byte> bytes) {
    // post() serves both directions; MPI_Isend only reads through the pointer.
    return post("isend_async", peer, tag, const_cast<std::byte*>(bytes.data()), bytes.size(), false);
  }

  /// Starts receiving a message of exactly bytes.size() bytes from `peer` with `tag`; wait() or test()
  /// raise transport_error when the message has another size. A size mismatch of a message in several
  /// parts can leave parts of it unreceived, which later receives on that peer and tag would take: the
  /// error is for finding a bug, not for going on with the stream. One case is MPI's to catch and Open
  /// MPI 4.1 does not: a short message (under about 1 KB) that a rank sends to itself, into a receive
  /// posted before the send, that is longer than the receive completes with its first bytes.size()
  /// bytes and no error.
  request irecv_async(int peer, int tag, std::span<std::byte> bytes) {
    return post("irecv_async", peer, tag, bytes.data(), bytes.size(), true);
  }

  /// Blocks until `r` completes (MPI_Waitall over its parts); at once for a request that is not pending.
  /// A received message of another size than irecv_async asked for raises transport_error naming the
  /// peer, the tag, and the expected and received sizes; so does any MPI error. Once this returns or
  /// throws, `r` is no longer pending.
  void wait(request& r) { complete(r, true); }

  /// Whether `r` has completed (MPI_Testall over its parts), without blocking; true for a request that
  /// is not pending. Raises what wait() raises, on the call that finds the request complete.
  bool test(request& r) { return complete(r, false); }

  /// The sub-group of the ranks that pass the same `color` (≥ 0), ordered by `key`, ties by rank in
  /// this group (MPI_Comm_split). Every rank of the group must call it; every rank gets a sub-group (MPI_UNDEFINED
  /// is not accepted). The new communicator is owned by the returned Mpi and its copies.
  Mpi split(int color, int key) const {
    if (color < 0) throw argument_error("split: color " + std::to_string(color) + " is negative, expected ≥ 0");
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(handle_, color, key, &sub), "split", "MPI_Comm_split");
    return Mpi(adopt, sub, {.max_part_bytes = max_part_bytes_});
  }

  /// This rank failed: ends every rank of the job (MPI_Abort). MPI cannot make another rank's wait fail
  /// with an exception, so ending the job is what keeps the others from hanging on messages that will
  /// never come.
  void abort(int error_code = 1) const { MPI_Abort(handle_, error_code); }

  // ---------------------------------------------------------------------------------------------------
  // Native baselines: MPI's collectives on the same communicator, for float and double. Counts are in
  // elements. A block longer than max_part_bytes is moved by several calls, each on a piece of at most
  // max_part_bytes of every block (strided derived datatypes place the pieces of all ranks); alltoallv
  // instead uses one MPI_Alltoallw with derived datatypes then (see there). Every rank must pass the
  // same counts MPI requires to be equal (a size that is wrong on one rank only raises argument_error on
  // that rank and leaves the others waiting in the collective).

  /// Every rank ends with the element-wise `op` of all ranks' `inout` (MPI_Allreduce in place). `op` is
  /// one of zcoll::op::sum, min, max (MPI_SUM, MPI_MIN, MPI_MAX: how MPI's min and max treat NaN is the
  /// implementation's, where zcoll's own collectives propagate it).
  template <floating_value T, op::reduction Op>
  void allreduce(std::span<T> inout, Op op) {
    const std::size_t piece = max_piece<T>();
    for (std::size_t first = 0; first < inout.size(); first += piece) {
      const int count = static_cast<int>(std::min(piece, inout.size() - first));
      check(MPI_Allreduce(MPI_IN_PLACE, inout.data() + first, count, datatype_of<T>(), op_of(op), handle_), "allreduce",
            "MPI_Allreduce");
    }
  }

  /// Rank r ends with block r (out.size() elements) of the element-wise `op` of all ranks' `in`
  /// (size() blocks). One MPI_Reduce_scatter_block; a block longer than max_part_bytes goes as one
  /// MPI_Reduce per rank and piece instead (reductions on strided datatypes are not portable).
  template <floating_value T, op::reduction Op>
  void reduce_scatter_block(std::span<const T> in, std::span<T> out, Op op) {
    const std::size_t block = out.size();
    check_blocks("reduce_scatter_block", "in", in.size(), "out", block);
    if (block == 0) return;
    const std::size_t piece = max_piece<T>();
    if (block <= piece) {
      check(MPI_Reduce_scatter_block(in.data(), out.data(), static_cast<int>(block), datatype_of<T>(), op_of(op), handle_),
            "reduce_scatter_block", "MPI_Reduce_scatter_block");
      return;
    }
    for (std::size_t first = 0; first < block; first += piece) {
      const int count = static_cast<int>(std::min(piece, block - first));
      for (int root = 0; root < size_; ++root) {
        check(MPI_Reduce(in.data() + static_cast<std::size_t>(root) * block + first, root == rank_ ? out.data() + first : nullptr,
                         count, datatype_of<T>(), op_of(op), root, handle_),
              "reduce_scatter_block", "MPI_Reduce");
      }
    }
  }

  /// Every rank ends with all ranks' `mine` in rank order in `all` (size() × mine.size() elements).
  template <floating_value T>
  void allgather(std::span<const T> mine, std::span<T> all) {
    const std::size_t block = mine.size();
    check_blocks("allgather", "all", all.size(), "mine", block);
    if (block == 0) return;
    const std::size_t piece = max_piece<T>();
    if (block <= piece) {
      check(MPI_Allgather(mine.data(), static_cast<int>(block), datatype_of<T>(), all.data(), static_cast<int>(block),
                          datatype_of<T>(), handle_),
            "allgather", "MPI_Allgather");
      return;
    }
    for (std::size_t first = 0; first < block; first += piece) {
      const int count = static_cast<int>(std::min(piece, block - first));
      const strided_type pieces = strided<T>(count, block, "allgather");
      check(MPI_Allgather(mine.data() + first, count, datatype_of<T>(), all.data() + first, 1, pieces.type, handle_),
            "allgather", "MPI_Allgather");
    }
  }

  /// Every rank ends with `root`'s `data` (MPI_Bcast).
  template <floating_value T>
  void bcast(std::span<T> data, int root) {
    check_root("bcast", root);
    const std::size_t piece = max_piece<T>();
    for (std::size_t first = 0; first < data.size(); first += piece) {
      const int count = static_cast<int>(std::min(piece, data.size() - first));
      check(MPI_Bcast(data.data() + first, count, datatype_of<T>(), root, handle_), "bcast", "MPI_Bcast");
    }
  }

  /// Rank r ends with block r of `root`'s `all_on_root` (size() × mine.size() elements, read on the
  /// root only; other ranks may pass an empty span) in `mine` (MPI_Scatter).
  template <floating_value T>
  void scatter(std::span<const T> all_on_root, std::span<T> mine, int root) {
    check_root("scatter", root);
    const std::size_t block = mine.size();
    if (rank_ == root) check_blocks("scatter", "all_on_root", all_on_root.size(), "mine", block);
    if (block == 0) return;
    const std::size_t piece = max_piece<T>();
    const T* all = rank_ == root ? all_on_root.data() : nullptr;
    if (block <= piece) {
      check(MPI_Scatter(all, static_cast<int>(block), datatype_of<T>(), mine.data(), static_cast<int>(block), datatype_of<T>(),
                        root, handle_),
            "scatter", "MPI_Scatter");
      return;
    }
    for (std::size_t first = 0; first < block; first += piece) {
      const int count = static_cast<int>(std::min(piece, block - first));
      const strided_type pieces = rank_ == root ? strided<T>(count, block, "scatter") : strided_type{};
      check(MPI_Scatter(all == nullptr ? nullptr : all + first, 1, rank_ == root ? pieces.type : datatype_of<T>(), mine.data() + first,
                        count, datatype_of<T>(), root, handle_),
            "scatter", "MPI_Scatter");
    }
  }

  /// `root` ends with all ranks' `mine` in rank order in `all_on_root` (size() × mine.size() elements,
  /// written on the root only; other ranks may pass an empty span) (MPI_Gather).
  template <floating_value T>
  void gather(std::span<const T> mine, std::span<T> all_on_root, int root) {
    check_root("gather", root);
    const std::size_t block = mine.size();
    if (rank_ == root) check_blocks("gather", "all_on_root", all_on_root.size(), "mine", block);
    if (block == 0) return;
    const std::size_t piece = max_piece<T>();
    T* all = rank_ == root ? all_on_root.data() : nullptr;
    if (block <= piece) {
      check(MPI_Gather(mine.data(), static_cast<int>(block), datatype_of<T>(), all, static_cast<int>(block), datatype_of<T>(),
                       root, handle_),
            "gather", "MPI_Gather");
      return;
    }
    for (std::size_t first = 0; first < block; first += piece) {
      const int count = static_cast<int>(std::min(piece, block - first));
      const strided_type pieces = rank_ == root ? strided<T>(count, block, "gather") : strided_type{};
      check(MPI_Gather(mine.data() + first, count, datatype_of<T>(), all == nullptr ? nullptr : all + first, 1,
                       rank_ == root ? pieces.type : datatype_of<T>(), root, handle_),
            "gather", "MPI_Gather");
    }
  }

  /// Block q of `in` (size() equal blocks) goes to rank q, where it lands as block p of `out` for the
  /// sender p (MPI_Alltoall). in.size() == out.size().
  template <floating_value T>
  void alltoall(std::span<const T> in, std::span<T> out) {
    if (in.size() % static_cast<std::size_t>(size_) != 0) {
      throw argument_error("alltoall: in.size() " + std::to_string(in.size()) + " is not divisible by size() " +
                           std::to_string(size_) + ", expected size() equal blocks");
    }
    const std::size_t block = in.size() / static_cast<std::size_t>(size_);
    check_blocks("alltoall", "out", out.size(), "in.size() / size()", block);
    if (block == 0) return;
    const std::size_t piece = max_piece<T>();
    if (block <= piece) {
      check(MPI_Alltoall(in.data(), static_cast<int>(block), datatype_of<T>(), out.data(), static_cast<int>(block),
                         datatype_of<T>(), handle_),
            "alltoall", "MPI_Alltoall");
      return;
    }
    for (std::size_t first = 0; first < block; first += piece) {
      const int count = static_cast<int>(std::min(piece, block - first));
      const strided_type pieces = strided<T>(count, block, "alltoall");
      check(MPI_Alltoall(in.data() + first, 1, pieces.type, out.data() + first, 1, pieces.type, handle_), "alltoall",
            "MPI_Alltoall");
    }
  }

  /// Rank p sends send_counts[q] elements to rank q, taken from `in` in rank order (packed:
  /// in.size() == sum of send_counts), and receives recv_counts[q] elements from rank q into `out`
  /// (packed, in rank order). recv_counts[q] on p must equal send_counts[p] on q.
  ///
  /// One MPI_Alltoallv. Its counts and displacements are `int`, and only the caller's rank knows its
  /// own, so an MPI_Allreduce of one int first tells every rank whether some rank has a count above
  /// max_part_bytes or a displacement above INT_MAX elements; then all ranks make one MPI_Alltoallw
  /// with a derived datatype per peer (byte displacements as MPI_Aint) instead. That allreduce is the
  /// one cost this baseline adds to MPI's own alltoallv.
  template <floating_value T>
  void alltoallv(std::span<const T> in, std::span<const std::size_t> send_counts, std::span<T> out,
                 std::span<const std::size_t> recv_counts) {
    const auto ranks = static_cast<std::size_t>(size_);
    if (send_counts.size() != ranks || recv_counts.size() != ranks) {
      throw argument_error("alltoallv: send_counts.size() " + std::to_string(send_counts.size()) + " and recv_counts.size() " +
                           std::to_string(recv_counts.size()) + ", expected size() " + std::to_string(size_) + " each");
    }
    std::size_t send_total = 0;
    std::size_t recv_total = 0;
    bool fits = true;
    const std::size_t piece = max_piece<T>();
    for (std::size_t q = 0; q < ranks; ++q) {
      fits = fits && send_counts[q] <= piece && recv_counts[q] <= piece && send_total <= static_cast<std::size_t>(INT_MAX) &&
             recv_total <= static_cast<std::size_t>(INT_MAX);
      send_total += send_counts[q];
      recv_total += recv_counts[q];
    }
    if (send_total != in.size()) {
      throw argument_error("alltoallv: in.size() " + std::to_string(in.size()) + ", expected the sum of send_counts " +
                           std::to_string(send_total));
    }
    if (recv_total != out.size()) {
      throw argument_error("alltoallv: out.size() " + std::to_string(out.size()) + ", expected the sum of recv_counts " +
                           std::to_string(recv_total));
    }
    int split_local = fits ? 0 : 1;
    int split_any = 0;
    check(MPI_Allreduce(&split_local, &split_any, 1, MPI_INT, MPI_MAX, handle_), "alltoallv", "MPI_Allreduce");
    if (split_any == 0) {
      int* send_count = scratch_.data();
      int* send_displacement = send_count + ranks;
      int* recv_count = send_displacement + ranks;
      int* recv_displacement = recv_count + ranks;
      std::size_t send_at = 0;
      std::size_t recv_at = 0;
      for (std::size_t q = 0; q < ranks; ++q) {
        send_count[q] = static_cast<int>(send_counts[q]);
        send_displacement[q] = static_cast<int>(send_at);
        recv_count[q] = static_cast<int>(recv_counts[q]);
        recv_displacement[q] = static_cast<int>(recv_at);
        send_at += send_counts[q];
        recv_at += recv_counts[q];
      }
      check(MPI_Alltoallv(in.data(), send_count, send_displacement, datatype_of<T>(), out.data(), recv_count, recv_displacement,
                          datatype_of<T>(), handle_),
            "alltoallv", "MPI_Alltoallv");
      return;
    }
    // Every block as one derived datatype that holds its byte offset from the buffer: count 1 and
    // displacement 0 in MPI_Alltoallw, so no int limits the counts or the offsets.
    std::vector<owned_type> send_types(ranks);
    std::vector<owned_type> recv_types(ranks);
    std::vector<MPI_Datatype> send_handles(ranks);
    std::vector<MPI_Datatype> recv_handles(ranks);
    std::vector<int> send_count(ranks);
    std::vector<int> recv_count(ranks);
    std::vector<int> zero(ranks, 0);
    std::size_t send_at = 0;
    std::size_t recv_at = 0;
    for (std::size_t q = 0; q < ranks; ++q) {
      send_types[q] = block_type<T>(send_at, send_counts[q]);
      recv_types[q] = block_type<T>(recv_at, recv_counts[q]);
      send_handles[q] = send_counts[q] == 0 ? datatype_of<T>() : send_types[q].type;
      recv_handles[q] = recv_counts[q] == 0 ? datatype_of<T>() : recv_types[q].type;
      send_count[q] = send_counts[q] == 0 ? 0 : 1;
      recv_count[q] = recv_counts[q] == 0 ? 0 : 1;
      send_at += send_counts[q];
      recv_at += recv_counts[q];
    }
    check(MPI_Alltoallw(in.data(), send_count.data(), zero.data(), send_handles.data(), out.data(), recv_count.data(),
                        zero.data(), recv_handles.data(), handle_),
          "alltoallv", "MPI_Alltoallw");
  }

 private:
  /// A committed derived datatype, freed with the object.
  struct owned_type {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    owned_type() = default;
    explicit owned_type(MPI_Datatype t) : type(t) {}
    owned_type(owned_type&& other) noexcept : type(std::exchange(other.type, MPI_DATATYPE_NULL)) {}
    owned_type& operator=(owned_type&& other) noexcept {
      std::swap(type, other.type);
      return *this;
    }
    owned_type(const owned_type&) = delete;
    owned_type& operator=(const owned_type&) = delete;
    ~owned_type() {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (type != MPI_DATATYPE_NULL && !finalized) MPI_Type_free(&type);
    }
  };
  using strided_type = owned_type;

  template <floating_value T>
  static MPI_Datatype datatype_of() {
    return std::same_as<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  }

  template <op::reduction Op>
  static MPI_Op op_of(Op) {
    if constexpr (std::same_as<Op, op::sum_t>) {
      return MPI_SUM;
    } else if constexpr (std::same_as<Op, op::min_t>) {
      return MPI_MIN;
    } else {
      return MPI_MAX;
    }
  }

  /// Elements of T per MPI call: max_part_bytes of them, at least one.
  template <floating_value T>
  std::size_t max_piece() const {
    return std::max<std::size_t>(1, max_part_bytes_ / sizeof(T));
  }

  /// `count` elements of T whose extent is `stride` elements: piece k of rank r's block lands at
  /// element r × stride + k × piece when the buffer pointer is advanced by k × piece.
  template <floating_value T>
  static strided_type strided(int count, std::size_t stride, const char* where) {
    MPI_Datatype contiguous = MPI_DATATYPE_NULL;
    check(MPI_Type_contiguous(count, datatype_of<T>(), &contiguous), where, "MPI_Type_contiguous");
    owned_type piece(contiguous);
    MPI_Datatype resized = MPI_DATATYPE_NULL;
    check(MPI_Type_create_resized(contiguous, 0, static_cast<MPI_Aint>(stride * sizeof(T)), &resized), where,
          "MPI_Type_create_resized");
    owned_type result(resized);
    check(MPI_Type_commit(&result.type), where, "MPI_Type_commit");
    return result;
  }

  /// `count` elements of T at element `offset` of a buffer, as one datatype: a contiguous run of
  /// max_piece-element pieces, then the rest, each at an MPI_Aint byte displacement.
  template <floating_value T>
  owned_type block_type(std::size_t offset, std::size_t count) const {
    if (count == 0) return {};
    const std::size_t piece = max_piece<T>();
    const std::size_t whole = count / piece;
    const std::size_t rest = count % piece;
    if (whole > static_cast<std::size_t>(INT_MAX)) {
      throw argument_error("alltoallv: count " + std::to_string(count) + " needs " + std::to_string(whole) + " pieces of " +
                           std::to_string(piece) + " elements, more than INT_MAX; raise max_part_bytes");
    }
    owned_type piece_type;
    owned_type body;
    int blocks = 0;
    int lengths[2];
    MPI_Aint displacements[2];
    MPI_Datatype types[2];
    if (whole > 0) {
      check(MPI_Type_contiguous(static_cast<int>(piece), datatype_of<T>(), &piece_type.type), "alltoallv", "MPI_Type_contiguous");
      check(MPI_Type_contiguous(static_cast<int>(whole), piece_type.type, &body.type), "alltoallv", "MPI_Type_contiguous");
      lengths[blocks] = 1;
      displacements[blocks] = static_cast<MPI_Aint>(offset * sizeof(T));
      types[blocks] = body.type;
      ++blocks;
    }
    if (rest > 0) {
      lengths[blocks] = static_cast<int>(rest);
      displacements[blocks] = static_cast<MPI_Aint>((offset + whole * piece) * sizeof(T));
      types[blocks] = datatype_of<T>();
      ++blocks;
    }
    owned_type result;
    check(MPI_Type_create_struct(blocks, lengths, displacements, types, &result.type), "alltoallv", "MPI_Type_create_struct");
    check(MPI_Type_commit(&result.type), "alltoallv", "MPI_Type_commit");
    return result;
  }

  void check_root(const char* where, int root) const {
    if (root < 0 || root >= size_) {
      throw argument_error(std::string(where) + ": root " + std::to_string(root) + " is out of range, expected [0, " +
                           std::to_string(size_) + ")");
    }
  }

  /// `all_name` must hold size() blocks of `block` elements.
  void check_blocks(const char* where, const char* all_name, std::size_t all_size, const char* block_name,
                    std::size_t block) const {
    const std::size_t expected = static_cast<std::size_t>(size_) * block;
    if (all_size != expected) {
      throw argument_error(std::string(where) + ": " + all_name + ".size() " + std::to_string(all_size) + ", expected size() " +
                           std::to_string(size_) + " × " + block_name + " " + std::to_string(block) + " = " +
                           std::to_string(expected));
    }
  }

  static std::string error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
  }

  static void check(int code, const char* where, const char* call) {
    if (code != MPI_SUCCESS) throw transport_error(std::string(where) + ": " + call + " failed: " + error_text(code));
  }

  std::string describe(const request& r) const {
    return std::string(r.receive_ ? "the message from peer " : "the message to peer ") + std::to_string(r.peer_) + " with tag " +
           std::to_string(r.tag_);
  }

  request post(const char* where, int peer, int tag, std::byte* data, std::size_t size_bytes, bool receive) {
    if (peer < 0 || peer >= size_) {
      throw argument_error(std::string(where) + ": peer " + std::to_string(peer) + " is out of range, expected [0, " +
                           std::to_string(size_) + ")");
    }
    if (tag < 0 || tag > tag_ub_) {
      throw argument_error(std::string(where) + ": tag " + std::to_string(tag) + " is out of range, expected [0, " +
                           std::to_string(tag_ub_) + "] (MPI_TAG_UB)");
    }
    const std::size_t parts = size_bytes == 0 ? 1 : (size_bytes - 1) / max_part_bytes_ + 1;
    if (parts > static_cast<std::size_t>(INT_MAX)) {
      throw argument_error(std::string(where) + ": " + std::to_string(size_bytes) + " bytes need " + std::to_string(parts) +
                           " parts of max_part_bytes " + std::to_string(max_part_bytes_) + ", more than INT_MAX");
    }
    request r;
    r.size_bytes_ = size_bytes;
    r.part_bytes_ = std::min(size_bytes, max_part_bytes_);
    r.peer_ = peer;
    r.tag_ = tag;
    r.receive_ = receive;
    if (parts > 1) r.parts_.assign(parts, MPI_REQUEST_NULL);
    r.pending_ = true;  // from here on, a throw cancels or frees what was posted
    auto handles = r.handles();
    for (std::size_t part = 0; part < parts; ++part) {
      const std::size_t first = part * max_part_bytes_;
      const int count = static_cast<int>(std::min(max_part_bytes_, size_bytes - first));
      std::byte* at = data == nullptr ? nullptr : data + first;
      const int code = receive ? MPI_Irecv(at, count, MPI_BYTE, peer, tag, handle_, &handles[part])
                               : MPI_Isend(at, count, MPI_BYTE, peer, tag, handle_, &handles[part]);
      if (code != MPI_SUCCESS) {
        throw transport_error(std::string(where) + ": " + (receive ? "MPI_Irecv" : "MPI_Isend") + " of " + describe(r) +
                              " failed: " + error_text(code));
      }
    }
    return r;
  }

  /// wait() (blocking) or test(): MPI_Waitall or MPI_Testall over the parts of `r`, then finish().
  bool complete(request& r, bool blocking) {
    if (!r.pending_) return true;
    const auto handles = r.handles();
    MPI_Status single;
    std::vector<MPI_Status> several(handles.size() > 1 ? handles.size() : 0);  // no allocation for one part
    const std::span<MPI_Status> statuses = handles.size() == 1 ? std::span(&single, 1) : std::span(several);
    const int parts = static_cast<int>(handles.size());
    int done = 1;
    const int code = blocking ? MPI_Waitall(parts, handles.data(), statuses.data())
                              : MPI_Testall(parts, handles.data(), &done, statuses.data());
    if (code == MPI_SUCCESS && !done) return false;
    // After an error, parts MPI left pending stay with the request (its destructor cancels them).
    r.pending_ = std::any_of(handles.begin(), handles.end(), [](MPI_Request h) { return h != MPI_REQUEST_NULL; });
    finish(r, code, statuses, blocking ? "wait" : "test");
    return true;
  }

  /// The checks after MPI_Waitall/MPI_Testall completed `r`: MPI errors, then the received sizes.
  void finish(const request& r, int code, std::span<const MPI_Status> statuses, const char* where) const {
    const std::size_t parts = statuses.size();
    const auto part_name = [&](std::size_t part) {
      return parts == 1 ? std::string() : " (part " + std::to_string(part + 1) + " of " + std::to_string(parts) + ")";
    };
    if (code != MPI_SUCCESS) {
      for (std::size_t part = 0; part < parts; ++part) {
        const int status_code = code == MPI_ERR_IN_STATUS ? statuses[part].MPI_ERROR : code;
        if (status_code == MPI_SUCCESS || status_code == MPI_ERR_PENDING) continue;
        int error_class = 0;
        MPI_Error_class(status_code, &error_class);
        if (r.receive_ && error_class == MPI_ERR_TRUNCATE) {
          // Open MPI reports the sent size in the count of a truncated receive; the standard leaves it open.
          int count = 0;
          const bool known = MPI_Get_count(&statuses[part], MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED &&
                             static_cast<std::size_t>(count) > expected_part_bytes(r, part);
          throw transport_error(std::string(where) + ": " + describe(r) + part_name(part) + " is longer than the " +
                                std::to_string(expected_part_bytes(r, part)) + " bytes expected" +
                                (known ? " (" + std::to_string(count) + " bytes sent)" : std::string()) + "; irecv_async of " +
                                std::to_string(r.size_bytes_) + " bytes receives exactly that many: " + error_text(status_code));
        }
        throw transport_error(std::string(where) + ": " + describe(r) + part_name(part) + " failed: " + error_text(status_code));
      }
      throw transport_error(std::string(where) + ": " + describe(r) + " failed: " + error_text(code));
    }
    if (!r.receive_) return;
    std::size_t received = 0;
    bool mismatch = false;
    for (std::size_t part = 0; part < parts; ++part) {
      int count = 0;
      check(MPI_Get_count(&statuses[part], MPI_BYTE, &count), where, "MPI_Get_count");
      received += static_cast<std::size_t>(count);
      mismatch = mismatch || static_cast<std::size_t>(count) != expected_part_bytes(r, part);
    }
    if (mismatch) {
      throw transport_error(std::string(where) + ": " + describe(r) + " has " + std::to_string(received) + " bytes, expected " +
                            std::to_string(r.size_bytes_) +
                            (parts == 1 ? std::string() : " in " + std::to_string(parts) + " parts of at most " +
                                                              std::to_string(max_part_bytes_) + " bytes") +
                            " (irecv_async receives exactly the size of its buffer)");
    }
  }

  static std::size_t expected_part_bytes(const request& r, std::size_t part) {
    if (r.part_bytes_ == 0) return 0;
    return std::min(r.part_bytes_, r.size_bytes_ - part * r.part_bytes_);
  }

  boost::mpi::communicator comm_;
  MPI_Comm handle_ = MPI_COMM_NULL;
  std::size_t max_part_bytes_;
  int rank_ = 0;
  int size_ = 0;
  int tag_ub_ = 32767;
  int thread_level_ = MPI_THREAD_SINGLE;
  bool takes_device_memory_ = false;
  std::vector<int> scratch_;  // alltoallv's int counts and displacements, sized once
};

static_assert(byte_transport<Mpi>, "transport::Mpi must model zcoll::transport::byte_transport");

}  // namespace zcoll::transport
