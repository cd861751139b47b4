// libzcoll-mpi.so: MPI's collectives, intercepted through the profiling interface (PMPI). Preloaded
// (LD_PRELOAD) or linked before MPI, it defines MPI_Allreduce and the other calls below; each runs zcoll's
// compressed schedule when the call is one zcoll is told to compress (interpose_settings.hpp) and calls
// PMPI_ otherwise, with the caller's arguments unchanged. docs/mpi.md is the user's guide.
//
// A call is compressed when an error bound is set, its operation is listed, its values are contiguous
// MPI_FLOAT or MPI_DOUBLE (the predefined handles: a derived type, even of floats, passes through), a
// reduction's op is MPI_SUM, MPI_MIN or MPI_MAX, the communicator is an intracommunicator not excluded
// by name, and the message has at least ZCOLL_MIN_BYTES: count × value size, for the gather family the
// block × ranks. Every rank of a call decides the same from the arguments MPI requires to agree.
//
// MPI_Iallreduce returns a generalized request (MPI_Grequest_start); the MPI_Wait and MPI_Test families
// advance zcoll's call when they are given one, and pass everything else to PMPI_ untouched.

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "interpose_report.hpp"
#include "interpose_settings.hpp"
#include "mpi_collectives.hpp"

namespace zcoll::lib {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// What the library keeps of a communicator (an MPI attribute of it, so it goes when the communicator is
/// freed): whether it is left to MPI, and its compressed collectives once a call needs them.
struct comm_state {
  bool excluded = false;
  std::unique_ptr<mpi_collectives> collectives;
};

/// A non-blocking call in flight behind a generalized request.
struct pending_call {
  zcoll::request request;
  operation op;
  clock_type::time_point started;
};

/// The library's state: settings from MPI_Init, the totals, the communicators' states and the calls in
/// flight. One per process.
class interposer {
 public:
  /// At MPI_Init, after PMPI_Init: reads and checks the environment; on a bad value, every rank prints
  /// the error and the job ends (MPI_Abort), before the program's first call.
  void start() {
    try {
      settings_ = read_interpose_settings_from_environment();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "libzcoll-mpi: %s\n", e.what());
      std::fflush(stderr);
      PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_state, &keyval_, nullptr);
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    thread_multiple_ = level == MPI_THREAD_MULTIPLE;
    started_ = true;
  }

  /// At MPI_Finalize, before PMPI_Finalize: the report, and every communicator zcoll made, freed while
  /// MPI still runs.
  void stop() {
    if (!started_) return;
    for (comm_state* s : live_states()) s->collectives.reset();
    const interpose_report all = report_.summed_over(MPI_COMM_WORLD);
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && settings_.report != "none") {
      const std::string text = all.json(settings_, size);
      if (settings_.report == "stderr") {
        std::fputs(text.c_str(), stderr);
      } else if (std::ofstream file(settings_.report); !(file << text)) {
        std::fprintf(stderr, "libzcoll-mpi: cannot write the report to ZCOLL_REPORT='%s'\n", settings_.report.c_str());
      }
    }
    started_ = false;
  }

  /// The collectives to run a call of `op` on, or null when it passes through.
  mpi_collectives* plan(operation op, MPI_Comm comm, MPI_Datatype type, std::size_t values) {
    if (!started_ || inside_ || !settings_.error_bound || !settings_.operations.contains(op) || comm == MPI_COMM_NULL) {
      return nullptr;
    }
    const auto kind = value_kind_of(type);
    if (!kind || values * value_bytes(*kind) < settings_.min_bytes || values == 0) return nullptr;
    comm_state* state = state_of(comm);
    if (state == nullptr || state->excluded) return nullptr;
    if (!state->collectives) {
      state->collectives = std::make_unique<mpi_collectives>(comm, *settings_.error_bound, settings_.collectives);
    }
    return state->collectives.get();
  }

  /// Runs `body` (returning the call's collective_report) as the compressed call of `op`: counted, timed,
  /// and an exception reported through the communicator's error handler as MPI_ERR_OTHER.
  template <class Body>
  int run(operation op, MPI_Comm comm, Body body) {
    const auto start = clock_type::now();
    inside_ = true;
    try {
      const collective_report r = body();
      inside_ = false;
      count_intercepted(op, r, seconds_since(start));
      return MPI_SUCCESS;
    } catch (const std::exception& e) {
      inside_ = false;
      return fail(op, comm, e.what());
    }
  }

  /// Runs `pmpi` (the PMPI_ call) as a call passed through: counted and timed.
  template <class Call>
  int pass(operation op, MPI_Datatype type, std::size_t values, Call pmpi) {
    if (!started_ || inside_) return pmpi();
    const auto start = clock_type::now();
    const int code = pmpi();
    int bytes = 0;
    if (type != MPI_DATATYPE_NULL) PMPI_Type_size(type, &bytes);
    const double seconds = seconds_since(start);
    const auto lock = report_lock();
    report_.add_passed_through(op, static_cast<double>(values) * bytes, seconds);
    return code;
  }

  /// Starts the non-blocking call `start` returns (a zcoll::request) as the compressed call of `op`,
  /// behind a new generalized request in `handle`; counted when it completes.
  template <class Start>
  int start_async(operation op, MPI_Comm comm, Start start, MPI_Request* handle) {
    const auto started = clock_type::now();
    zcoll::request call;
    inside_ = true;
    try {
      call = start();
      inside_ = false;
    } catch (const std::exception& e) {
      inside_ = false;
      return fail(op, comm, e.what());
    }
    const int code = PMPI_Grequest_start(&query_status, &free_nothing, &cancel_nothing, nullptr, handle);
    if (code != MPI_SUCCESS) return code;
    std::lock_guard lock(mutex_);
    pending_.emplace(*handle, pending_call{std::move(call), op, started});
    pending_count_.store(pending_.size());
    return MPI_SUCCESS;
  }

  /// Whether a wait or test on requests has to look for ours: some non-blocking call is in flight, and
  /// the caller is the program (zcoll's own transport waits on its messages with the same MPI calls).
  bool may_hold_ours() const { return !inside_ && pending_count_.load(std::memory_order_relaxed) > 0; }

  /// Advances zcoll's call behind `handle`, if it is one of ours: waits for it (`block`) or tests it, and
  /// completes the generalized request once it has ended. Returns an MPI error code.
  int advance(MPI_Request handle, bool block) {
    std::unique_lock lock(mutex_);
    const auto found = pending_.find(handle);
    if (found == pending_.end()) return MPI_SUCCESS;
    pending_call& call = found->second;
    inside_ = true;
    try {
      const bool ended = block ? (call.request.wait(), true) : call.request.test();
      inside_ = false;
      if (!ended) return MPI_SUCCESS;
      count_intercepted(call.op, call.request.report(), seconds_since(call.started));
    } catch (const std::exception& e) {
      inside_ = false;
      const operation op = call.op;
      pending_.erase(found);
      pending_count_.store(pending_.size());
      lock.unlock();
      PMPI_Grequest_complete(handle);
      return fail(op, MPI_COMM_WORLD, e.what());
    }
    pending_.erase(found);
    pending_count_.store(pending_.size());
    lock.unlock();
    return PMPI_Grequest_complete(handle);
  }

 private:
  /// A lock of the report's totals where several threads may call MPI at once (MPI_THREAD_MULTIPLE),
  /// and none otherwise: every passed-through call takes it.
  std::unique_lock<std::mutex> report_lock() {
    return thread_multiple_ ? std::unique_lock(report_mutex_) : std::unique_lock<std::mutex>();
  }

  void count_intercepted(operation op, const collective_report& r, double seconds) {
    const auto lock = report_lock();
    report_.add_intercepted(op, r, seconds);
  }

  int fail(operation op, MPI_Comm comm, const char* what) {
    std::fprintf(stderr, "libzcoll-mpi: MPI_%s: %s\n", std::string(name_of(op)).c_str(), what);
    std::fflush(stderr);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);  // aborts under MPI_ERRORS_ARE_FATAL, MPI's default
    return MPI_ERR_OTHER;
  }

  comm_state* state_of(MPI_Comm comm) {
    void* value = nullptr;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, keyval_, &value, &found) != MPI_SUCCESS) return nullptr;
    if (found) return static_cast<comm_state*>(value);
    auto state = std::make_unique<comm_state>();
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    char name[MPI_MAX_OBJECT_NAME] = {};
    int length = 0;
    PMPI_Comm_get_name(comm, name, &length);
    state->excluded = inter || std::find(settings_.excluded_comms.begin(), settings_.excluded_comms.end(),
                                         std::string(name, static_cast<std::size_t>(length))) != settings_.excluded_comms.end();
    if (PMPI_Comm_set_attr(comm, keyval_, state.get()) != MPI_SUCCESS) return nullptr;
    std::lock_guard lock(mutex_);
    states_.insert(state.get());
    return state.release();
  }

  std::vector<comm_state*> live_states() {
    std::lock_guard lock(mutex_);
    return {states_.begin(), states_.end()};
  }

  static int delete_state(MPI_Comm, int, void* value, void*);
  static int query_status(void*, MPI_Status* status) {
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  static int free_nothing(void*) { return MPI_SUCCESS; }
  static int cancel_nothing(void*, int) { return MPI_SUCCESS; }  // a collective cannot be cancelled

  interpose_settings settings_;
  interpose_report report_;
  bool started_ = false;
  static thread_local bool inside_;  // zcoll's own MPI calls pass through uncounted
  int keyval_ = MPI_KEYVAL_INVALID;
  std::mutex mutex_;  // states_ and pending_: MPI_THREAD_MULTIPLE programs call from several threads
  std::mutex report_mutex_;  // report_, for the same reason (report_lock())
  bool thread_multiple_ = false;
  std::set<comm_state*> states_;
  std::map<MPI_Request, pending_call> pending_;
  std::atomic<std::size_t> pending_count_{0};
};

thread_local bool interposer::inside_ = false;

interposer& the_interposer() {
  static interposer instance;
  return instance;
}

int interposer::delete_state(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<comm_state*>(value);
  {
    interposer& z = the_interposer();
    std::lock_guard lock(z.mutex_);
    z.states_.erase(state);
  }
  delete state;
  return MPI_SUCCESS;
}

const void* input_of(const void* sendbuf) { return sendbuf == MPI_IN_PLACE ? nullptr : sendbuf; }

std::size_t count_of(int count) { return count < 0 ? 0 : static_cast<std::size_t>(count); }

int comm_size(MPI_Comm comm) {
  int size = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  return size;
}

/// The requests among `handles` that are ours, advanced (waited on when `block`); the first error code.
int advance_all(int n, MPI_Request handles[], bool block) {
  interposer& z = the_interposer();
  if (!z.may_hold_ours()) return MPI_SUCCESS;
  int code = MPI_SUCCESS;
  for (int i = 0; i < n; ++i) {
    const int c = z.advance(handles[i], block);
    if (code == MPI_SUCCESS) code = c;
  }
  return code;
}

}  // namespace
}  // namespace zcoll::lib

using zcoll::lib::count_of;
using zcoll::lib::input_of;
using zcoll::lib::operation;
using zcoll::lib::the_interposer;
using zcoll::lib::value_kind_of;
using zcoll::lib::reduction_of;

// The library's only exported symbols (it is built with hidden visibility).
#pragma GCC visibility push(default)
extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int code = PMPI_Init(argc, argv);
  if (code == MPI_SUCCESS) the_interposer().start();
  return code;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int code = PMPI_Init_thread(argc, argv, required, provided);
  if (code == MPI_SUCCESS) the_interposer().start();
  return code;
}

int MPI_Finalize(void) {
  the_interposer().stop();
  return PMPI_Finalize();
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  auto& z = the_interposer();
  const auto r = reduction_of(op);
  auto* coll = r ? z.plan(operation::allreduce, comm, datatype, count_of(count)) : nullptr;
  if (coll == nullptr) {
    return z.pass(operation::allreduce, datatype, count_of(count),
                  [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); });
  }
  return z.run(operation::allreduce, comm, [&] {
    return coll->allreduce(*value_kind_of(datatype), input_of(sendbuf), recvbuf, count_of(count), *r);
  });
}

int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  auto& z = the_interposer();
  const auto r = reduction_of(op);
  auto* coll = r ? z.plan(operation::iallreduce, comm, datatype, count_of(count)) : nullptr;
  if (coll == nullptr) {
    return z.pass(operation::iallreduce, datatype, count_of(count),
                  [&] { return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request); });
  }
  return z.start_async(
      operation::iallreduce, comm,
      [&] { return coll->allreduce_async(*value_kind_of(datatype), input_of(sendbuf), recvbuf, count_of(count), *r); },
      request);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  auto& z = the_interposer();
  const auto r = reduction_of(op);
  auto* coll = r ? z.plan(operation::reduce, comm, datatype, count_of(count)) : nullptr;
  if (coll == nullptr || root < 0 || root >= coll->size()) {
    return z.pass(operation::reduce, datatype, count_of(count),
                  [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); });
  }
  return z.run(operation::reduce, comm, [&] {
    return coll->reduce(*value_kind_of(datatype), input_of(sendbuf), recvbuf, count_of(count), *r, root);
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  auto& z = the_interposer();
  const auto r = reduction_of(op);
  const std::size_t values = count_of(recvcount) * static_cast<std::size_t>(zcoll::lib::comm_size(comm));
  auto* coll = r ? z.plan(operation::reduce_scatter_block, comm, datatype, values) : nullptr;
  if (coll == nullptr) {
    return z.pass(operation::reduce_scatter_block, datatype, values,
                  [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm); });
  }
  return z.run(operation::reduce_scatter_block, comm, [&] {
    return coll->reduce_scatter_block(*value_kind_of(datatype), input_of(sendbuf), recvbuf, count_of(recvcount), *r);
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  auto& z = the_interposer();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const bool same = in_place || (sendtype == recvtype && sendcount == recvcount);
  const std::size_t values = count_of(recvcount) * static_cast<std::size_t>(zcoll::lib::comm_size(comm));
  auto* coll = same ? z.plan(operation::allgather, comm, recvtype, values) : nullptr;
  if (coll == nullptr) {
    return z.pass(operation::allgather, recvtype, values, [&] {
      return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    });
  }
  return z.run(operation::allgather, comm, [&] {
    return coll->allgather(*value_kind_of(recvtype), input_of(sendbuf), recvbuf, count_of(recvcount));
  });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  auto& z = the_interposer();
  auto* coll = z.plan(operation::bcast, comm, datatype, count_of(count));
  if (coll == nullptr || root < 0 || root >= coll->size()) {
    return z.pass(operation::bcast, datatype, count_of(count), [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); });
  }
  return z.run(operation::bcast, comm, [&] { return coll->bcast(*value_kind_of(datatype), buffer, count_of(count), root); });
}

// The rooted calls of the gather family decide on the type and count every rank passes: the receive side
// for scatter (the root's, unless in place, must equal its send side), the send side for gather.
int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  auto& z = the_interposer();
  int rank = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
  const bool root_in_place = rank == root && recvbuf == MPI_IN_PLACE;
  const MPI_Datatype type = root_in_place ? sendtype : recvtype;
  const int block = root_in_place ? sendcount : recvcount;
  const bool same = rank != root || root_in_place || (sendtype == recvtype && sendcount == recvcount);
  const std::size_t values = count_of(block) * static_cast<std::size_t>(zcoll::lib::comm_size(comm));
  auto* coll = same ? z.plan(operation::scatter, comm, type, values) : nullptr;
  if (coll == nullptr || root < 0 || root >= coll->size()) {
    return z.pass(operation::scatter, type, values, [&] {
      return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    });
  }
  return z.run(operation::scatter, comm, [&] {
    return coll->scatter(*value_kind_of(type), sendbuf, root_in_place ? nullptr : recvbuf, count_of(block), root);
  });
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  auto& z = the_interposer();
  int rank = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
  const bool root_in_place = rank == root && sendbuf == MPI_IN_PLACE;
  const MPI_Datatype type = root_in_place ? recvtype : sendtype;
  const int block = root_in_place ? recvcount : sendcount;
  const bool same = rank != root || root_in_place || (sendtype == recvtype && sendcount == recvcount);
  const std::size_t values = count_of(block) * static_cast<std::size_t>(zcoll::lib::comm_size(comm));
  auto* coll = same ? z.plan(operation::gather, comm, type, values) : nullptr;
  if (coll == nullptr || root < 0 || root >= coll->size()) {
    return z.pass(operation::gather, type, values, [&] {
      return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    });
  }
  return z.run(operation::gather, comm, [&] {
    return coll->gather(*value_kind_of(type), input_of(sendbuf), recvbuf, count_of(block), root);
  });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  auto& z = the_interposer();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const bool same = in_place || (sendtype == recvtype && sendcount == recvcount);
  const std::size_t values = count_of(recvcount) * static_cast<std::size_t>(zcoll::lib::comm_size(comm));
  auto* coll = same ? z.plan(operation::alltoall, comm, recvtype, values) : nullptr;
  if (coll == nullptr) {
    return z.pass(operation::alltoall, recvtype, values, [&] {
      return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    });
  }
  return z.run(operation::alltoall, comm, [&] {
    return coll->alltoall(*value_kind_of(recvtype), input_of(sendbuf), recvbuf, count_of(recvcount));
  });
}

// ---- completion of MPI_Iallreduce's requests: zcoll's call advances when the program waits or tests ----

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  const int code = zcoll::lib::advance_all(1, request, true);
  return code != MPI_SUCCESS ? code : PMPI_Wait(request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  const int code = zcoll::lib::advance_all(1, request, false);
  return code != MPI_SUCCESS ? code : PMPI_Test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  const int code = zcoll::lib::advance_all(count, requests, true);
  return code != MPI_SUCCESS ? code : PMPI_Waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  const int code = zcoll::lib::advance_all(count, requests, false);
  return code != MPI_SUCCESS ? code : PMPI_Testall(count, requests, flag, statuses);
}

// Waitany and Waitsome test zcoll's calls, then look once at MPI's, until something has completed: a call
// of zcoll's completes only while the program waits for it, so blocking in PMPI_Waitany could wait for
// ever on a request that only zcoll's progress would complete.
int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!the_interposer().may_hold_ours()) return PMPI_Waitany(count, requests, index, status);
  for (;;) {
    int code = zcoll::lib::advance_all(count, requests, false);
    int flag = 0;
    if (code == MPI_SUCCESS) code = PMPI_Testany(count, requests, index, &flag, status);
    if (code != MPI_SUCCESS || flag) return code;
  }
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!the_interposer().may_hold_ours()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  for (;;) {
    int code = zcoll::lib::advance_all(incount, requests, false);
    if (code == MPI_SUCCESS) code = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (code != MPI_SUCCESS || *outcount != 0) return code;
  }
}

// Freeing a request of zcoll's first completes its call: the other ranks are in it, and its messages use
// the program's buffers (MPI lets a program free an active request and learn of its end otherwise).
int MPI_Request_free(MPI_Request* request) {
  const int code = zcoll::lib::advance_all(1, request, true);
  return code != MPI_SUCCESS ? code : PMPI_Request_free(request);
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  const int code = zcoll::lib::advance_all(count, requests, false);
  return code != MPI_SUCCESS ? code : PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  const int code = zcoll::lib::advance_all(incount, requests, false);
  return code != MPI_SUCCESS ? code : PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

}  // extern "C"
#pragma GCC visibility pop
