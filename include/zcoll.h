/* zcoll.h: zcoll's C API, for C and Fortran (bind(C)) programs — the codecs on arrays, and the compressed
 * collectives on an MPI communicator. Link libzcoll-c (docs/mpi.md, "The C API").
 *
 *     zcoll_codec* codec;
 *     if (zcoll_codec_create("fzlight", "rel:1e-4", NULL, 0, &codec) != ZCOLL_SUCCESS)
 *       fprintf(stderr, "%s\n", zcoll_error_message());
 *     size_t capacity, written;
 *     zcoll_compress_bound(codec, ZCOLL_FLOAT, n, &capacity);
 *     zcoll_compress(codec, ZCOLL_FLOAT, values, n, stream, capacity, &written);
 *     zcoll_decompress(stream, written, ZCOLL_FLOAT, restored, n);
 *
 *     zcoll_comm* zc;
 *     zcoll_comm_create(MPI_COMM_WORLD, "rel:1e-4", &zc);          // not collective
 *     zcoll_allreduce(zc, MPI_IN_PLACE, grad, n, MPI_FLOAT, MPI_SUM); // a collective over the communicator
 *     double bound = zcoll_comm_error_bound(zc);                      // |result - exact| <= bound, every element
 *     zcoll_comm_free(zc);
 *
 * Every function returns ZCOLL_SUCCESS or an error code, and never aborts the program; after an error,
 * zcoll_error_message() says what was wrong (naming the argument and the value expected). */
#ifndef ZCOLL_H
#define ZCOLL_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Results. */
enum {
  ZCOLL_SUCCESS = 0,
  ZCOLL_ERR_ARGUMENT = 1,  /* a bad argument: the message names it */
  ZCOLL_ERR_FORMAT = 2,    /* a stream that is damaged, truncated or of another codec or type */
  ZCOLL_ERR_TRANSPORT = 3, /* MPI failed */
  ZCOLL_ERR_OTHER = 4      /* anything else (out of memory) */
};

/* The value types of the codecs. (ZCOLL_TYPE_INT_RANGE_ makes any int a valid value of the type, so
 * that a wrong one is an error the library reports, in C and C++ alike.) */
typedef enum { ZCOLL_FLOAT = 0, ZCOLL_DOUBLE = 1, ZCOLL_TYPE_INT_RANGE_ = 0x7fffffff } zcoll_type;

/* What the last failed call on this thread was told: a message that names the argument. */
const char* zcoll_error_message(void);

/* ---- codecs ---------------------------------------------------------------------------------------- */

typedef struct zcoll_codec zcoll_codec;

/* A codec of the registry (`zcoll-bench codec --help` lists them: fzlight, highratio-2d, int8, ...) at
 * `error_bound` ("rel:1e-4", "abs:0.01"; codecs that set their own bound, as the casts, take NULL),
 * optionally on a grid of `dims` extents, slowest first (the row-wise codecs: rows × row length). */
int zcoll_codec_create(const char* name, const char* error_bound, const size_t* shape, size_t dims, zcoll_codec** codec);
void zcoll_codec_free(zcoll_codec* codec);

/* The largest stream `count` values can need. */
int zcoll_compress_bound(const zcoll_codec* codec, zcoll_type type, size_t count, size_t* bytes);
/* Compresses `count` values into `stream` (`capacity` bytes, at least zcoll_compress_bound's). */
int zcoll_compress(const zcoll_codec* codec, zcoll_type type, const void* values, size_t count, void* stream,
                   size_t capacity, size_t* written);
/* The value type and count a stream holds, and the absolute error bound it states. */
int zcoll_stream_info(const void* stream, size_t bytes, zcoll_type* type, size_t* count, double* error_bound);
/* Decompresses a stream of any registered codec into `count` values (the stream's count and type). */
int zcoll_decompress(const void* stream, size_t bytes, zcoll_type type, void* values, size_t count);

/* ---- compressed collectives on an MPI communicator ---------------------------------------------------- */

typedef struct zcoll_comm zcoll_comm;

/* zcoll's collectives (FZLight, ring and scatter-allgather schedules) over `comm` at `error_bound`. Not
 * collective: each schedule's own communicator is split from `comm` by its first call, on every rank. The
 * caller keeps `comm` alive until zcoll_comm_free. Values are MPI_FLOAT or MPI_DOUBLE, operations MPI_SUM,
 * MPI_MIN or MPI_MAX; MPI_IN_PLACE as in MPI. Every rank makes the same calls in the same order. */
int zcoll_comm_create(MPI_Comm comm, const char* error_bound, zcoll_comm** zcomm);
/* The same from a Fortran handle (MPI_Comm_f2c). */
int zcoll_comm_create_f(MPI_Fint comm, const char* error_bound, zcoll_comm** zcomm);
void zcoll_comm_free(zcoll_comm* zcomm);
/* The absolute error bound of this rank's result of the last call: |result - exact| on every element. */
double zcoll_comm_error_bound(const zcoll_comm* zcomm);
/* The compression ratio of this rank's last call (bytes an uncompressed schedule sends / bytes sent). */
double zcoll_comm_ratio(const zcoll_comm* zcomm);

int zcoll_allreduce(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, MPI_Op op);
int zcoll_reduce(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, MPI_Op op,
                 int root);
int zcoll_reduce_scatter_block(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t recvcount,
                               MPI_Datatype type, MPI_Op op);
int zcoll_allgather(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type);
int zcoll_bcast(zcoll_comm* zcomm, void* buffer, size_t count, MPI_Datatype type, int root);
int zcoll_scatter(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, int root);
int zcoll_gather(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type, int root);
int zcoll_alltoall(zcoll_comm* zcomm, const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype type);

#ifdef __cplusplus
}
#endif

#endif /* ZCOLL_H */
