// The C API (include/zcoll.h): codecs of the registry on arrays, and mpi_collectives on a communicator.
// Every function catches what zcoll raises and returns its code; the message waits in
// zcoll_error_message() on the calling thread.

#include "zcoll.h"

#include <exception>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "error_bound_text.hpp"
#include "mpi_collectives.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/zcoll.hpp"

namespace {

thread_local std::string last_error;

/// Runs `body`, mapping what it raises to zcoll.h's codes.
template <class Body>
int guarded(const char* function, Body body) {
  try {
    body();
    return ZCOLL_SUCCESS;
  } catch (const zcoll::format_error& e) {
    last_error = std::string(function) + ": " + e.what();
    return ZCOLL_ERR_FORMAT;
  } catch (const zcoll::argument_error& e) {
    last_error = std::string(function) + ": " + e.what();
    return ZCOLL_ERR_ARGUMENT;
  } catch (const zcoll::transport_error& e) {
    last_error = std::string(function) + ": " + e.what();
    return ZCOLL_ERR_TRANSPORT;
  } catch (const std::bad_alloc&) {
    last_error = std::string(function) + ": out of memory";
    return ZCOLL_ERR_OTHER;
  } catch (const std::exception& e) {
    last_error = std::string(function) + ": " + e.what();
    return ZCOLL_ERR_OTHER;
  }
}

void require(bool condition, const std::string& message) {
  if (!condition) throw zcoll::argument_error(message);
}

zcoll::lib::value_kind kind_of(zcoll_type type) {
  require(type == ZCOLL_FLOAT || type == ZCOLL_DOUBLE,
          "type " + std::to_string(static_cast<int>(type)) + " is neither ZCOLL_FLOAT nor ZCOLL_DOUBLE");
  return type == ZCOLL_FLOAT ? zcoll::lib::value_kind::f32 : zcoll::lib::value_kind::f64;
}

/// fn(T{}) for the value type of `type`.
template <class Fn>
decltype(auto) with_type(zcoll_type type, Fn&& fn) {
  return zcoll::lib::detail::with_value(kind_of(type), std::forward<Fn>(fn));
}

}  // namespace

/// A registered codec's name and settings; the codec is built from them for each call.
struct zcoll_codec {
  std::string name;
  zcoll::codec_config settings;

  /// fn(codec) with the codec built.
  template <class Fn>
  decltype(auto) with(Fn&& fn) const {
    return zcoll::with_registered_codec(name, [&]<class Entry>() {
      const typename Entry::type codec{settings};
      return fn(codec);
    });
  }
};

/// mpi_collectives, and its last call's report.
struct zcoll_comm {
  zcoll::lib::mpi_collectives collectives;
  zcoll::collective_report last;
};

// The library's only exported symbols (it is built with hidden visibility): the functions of zcoll.h.
#pragma GCC visibility push(default)
extern "C" {

const char* zcoll_error_message(void) { return last_error.c_str(); }

int zcoll_codec_create(const char* name, const char* error_bound, const size_t* shape, size_t dims, zcoll_codec** codec) {
  return guarded("zcoll_codec_create", [&] {
    require(codec != nullptr, "codec is NULL, expected the address of a zcoll_codec*");
    *codec = nullptr;
    require(name != nullptr, "name is NULL, expected a codec name such as \"fzlight\"");
    require(dims == 0 || shape != nullptr, "shape is NULL with dims = " + std::to_string(dims));
    auto made = std::make_unique<zcoll_codec>();
    made->name = name;
    if (error_bound != nullptr) made->settings.error_bound = zcoll::lib::parse_error_bound("error_bound", error_bound);
    made->settings.shape.assign(shape, shape + dims);
    made->with([](const auto&) {});  // an unknown name or settings the codec refuses fail here
    *codec = made.release();
  });
}

void zcoll_codec_free(zcoll_codec* codec) { delete codec; }

int zcoll_compress_bound(const zcoll_codec* codec, zcoll_type type, size_t count, size_t* bytes) {
  return guarded("zcoll_compress_bound", [&] {
    require(codec != nullptr && bytes != nullptr, "codec and bytes must not be NULL");
    *bytes = with_type(type, [&]<class T>(T) {
      return codec->with([&](const auto& c) { return c.template max_compressed_size<T>(count); });
    });
  });
}

int zcoll_compress(const zcoll_codec* codec, zcoll_type type, const void* values, size_t count, void* stream,
                   size_t capacity, size_t* written) {
  return guarded("zcoll_compress", [&] {
    require(codec != nullptr && written != nullptr, "codec and written must not be NULL");
    require(count == 0 || values != nullptr, "values is NULL with count = " + std::to_string(count));
    require(stream != nullptr, "stream is NULL");
    *written = with_type(type, [&]<class T>(T) {
      return codec->with([&](const auto& c) {
        return c.compress(zcoll::exec::Host{}, std::span<const T>(static_cast<const T*>(values), count),
                          std::span<std::byte>(static_cast<std::byte*>(stream), capacity)).size();
      });
    });
  });
}

int zcoll_stream_info(const void* stream, size_t bytes, zcoll_type* type, size_t* count, double* error_bound) {
  return guarded("zcoll_stream_info", [&] {
    require(stream != nullptr, "stream is NULL");
    const auto header = zcoll::read_stream_header(std::span<const std::byte>(static_cast<const std::byte*>(stream), bytes));
    if (type != nullptr) *type = header.type == zcoll::value_type::f32 ? ZCOLL_FLOAT : ZCOLL_DOUBLE;
    if (count != nullptr) *count = static_cast<size_t>(header.count);
    if (error_bound != nullptr) *error_bound = header.error_bound;
  });
}

int zcoll_decompress(const void* stream, size_t bytes, zcoll_type type, void* values, size_t count) {
  return guarded("zcoll_decompress", [&] {
    require(stream != nullptr, "stream is NULL");
    require(count == 0 || values != nullptr, "values is NULL with count = " + std::to_string(count));
    const std::span<const std::byte> in(static_cast<const std::byte*>(stream), bytes);
    const auto header = zcoll::read_stream_header(in);
    with_type(type, [&]<class T>(T) {
      zcoll::with_registered_codec(header.codec, [&]<class Entry>() {
        // A decoder reads its settings from the stream; a row codec's constructor asks for a row length
        // that decoding does not use.
        zcoll::codec_config settings;
        if constexpr (Entry::traits.input == zcoll::codec_input::rows) settings.shape = {1};
        const typename Entry::type codec{settings};
        codec.decompress(zcoll::exec::Host{}, in, std::span<T>(static_cast<T*>(values), count));
      });
    });
  });
}

int zcoll_comm_create(MPI_Comm comm, const char* error_bound, zcoll_comm** zcomm) {
  return guarded("zcoll_comm_create", [&] {
    require(zcomm != nullptr, "zcomm is NULL, expected the address of a zcoll_comm*");
    *zcomm = nullptr;
    require(error_bound != nullptr, "error_bound is NULL, expected \"rel:<fraction>\" or \"abs:<value>\"");
    int initialized = 0;
    MPI_Initialized(&initialized);
    require(initialized != 0, "MPI is not initialized; call MPI_Init first");
    const zcoll::bound b = zcoll::lib::parse_error_bound("error_bound", error_bound);
    *zcomm = new zcoll_comm{zcoll::lib::mpi_collectives(comm, b, {}), {}};
  });
}

int zcoll_comm_create_f(MPI_Fint comm, const char* error_bound, zcoll_comm** zcomm) {
  return zcoll_comm_create(MPI_Comm_f2c(comm), error_bound, zcomm);
}

void zcoll_comm_free(zcoll_comm* zcomm) { delete zcomm; }

double zcoll_comm_error_bound(const zcoll_comm* zcomm) { return zcomm == nullptr ? 0.0 : zcomm->last.error_bound; }
double zcoll_comm_ratio(const zcoll_comm* zcomm) { return zcomm == nullptr ? 0.0 : zcomm->last.ratio; }

}  // extern "C"
#pragma GCC visibility pop

namespace {

/// The checked arguments of a collective: the value kind and the reduction (MPI_OP_NULL: none).
struct collective_arguments {
  zcoll::lib::value_kind kind;
  zcoll::lib::reduction reduction = zcoll::lib::reduction::sum;
};

collective_arguments checked(const zcoll_comm* zcomm, MPI_Datatype type, MPI_Op op) {
  require(zcomm != nullptr, "zcomm is NULL, expected a zcoll_comm from zcoll_comm_create");
  const auto kind = zcoll::lib::value_kind_of(type);
  require(kind.has_value(), "type is not MPI_FLOAT or MPI_DOUBLE");
  collective_arguments a{*kind};
  if (op != MPI_OP_NULL) {
    const auto r = zcoll::lib::reduction_of(op);
    require(r.has_value(), "op is not MPI_SUM, MPI_MIN or MPI_MAX");
    a.reduction = *r;
  }
  return a;
}

const void* input_of(const void* sendbuf) { return sendbuf == MPI_IN_PLACE ? nullptr : sendbuf; }

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int zcoll_allreduce(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, MPI_Op op) {
  return guarded("zcoll_allreduce", [&] {
    const auto a = checked(zcomm, type, op);
    zcomm->last = zcomm->collectives.allreduce(a.kind, input_of(sendbuf), recvbuf, count, a.reduction);
  });
}

int zcoll_reduce(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, MPI_Op op,
                 int root) {
  return guarded("zcoll_reduce", [&] {
    const auto a = checked(zcomm, type, op);
    zcomm->last = zcomm->collectives.reduce(a.kind, input_of(sendbuf), recvbuf, count, a.reduction, root);
  });
}

int zcoll_reduce_scatter_block(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t recvcount,
                               MPI_Datatype type, MPI_Op op) {
  return guarded("zcoll_reduce_scatter_block", [&] {
    const auto a = checked(zcomm, type, op);
    zcomm->last = zcomm->collectives.reduce_scatter_block(a.kind, input_of(sendbuf), recvbuf, recvcount, a.reduction);
  });
}

int zcoll_allgather(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type) {
  return guarded("zcoll_allgather", [&] {
    const auto a = checked(zcomm, type, MPI_OP_NULL);
    zcomm->last = zcomm->collectives.allgather(a.kind, input_of(sendbuf), recvbuf, count);
  });
}

int zcoll_bcast(zcoll_comm* zcomm, void* buffer, size_t count, MPI_Datatype type, int root) {
  return guarded("zcoll_bcast", [&] {
    const auto a = checked(zcomm, type, MPI_OP_NULL);
    zcomm->last = zcomm->collectives.bcast(a.kind, buffer, count, root);
  });
}

int zcoll_scatter(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, int root) {
  return guarded("zcoll_scatter", [&] {
    const auto a = checked(zcomm, type, MPI_OP_NULL);
    zcomm->last = zcomm->collectives.scatter(a.kind, sendbuf, recvbuf == MPI_IN_PLACE ? nullptr : recvbuf, count, root);
  });
}

int zcoll_gather(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, int root) {
  return guarded("zcoll_gather", [&] {
    const auto a = checked(zcomm, type, MPI_OP_NULL);
    zcomm->last = zcomm->collectives.gather(a.kind, input_of(sendbuf), recvbuf, count, root);
  });
}

int zcoll_alltoall(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type) {
  return guarded("zcoll_alltoall", [&] {
    const auto a = checked(zcomm, type, MPI_OP_NULL);
    zcomm->last = zcomm->collectives.alltoall(a.kind, input_of(sendbuf), recvbuf, count);
  });
}

}  // extern "C"
#pragma GCC visibility pop
