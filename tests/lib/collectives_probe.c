/* collectives_probe: an ordinary MPI program in C that calls the collectives and records what it gave
 * and got. It is run twice by the tests, as it is and with an interposition library preloaded, and knows
 * nothing of either: tests/interpose/check_probe.py compares the runs.
 *
 *   mpirun -np 4 collectives_probe OUT_DIR [VALUES]
 *
 * Every rank writes OUT_DIR/rank<R>.bin: for each call, a record of its input ("in") and one of its
 * result ("out"), each a 64-byte label, the value type (0 float, 1 double, 2 int), the count (int64) and
 * the values. A label is "<call>|<operation>|<kind>|<root>" where kind says whether the call moves
 * contiguous float or double values of at least VALUES (default 5000) per rank with a predefined
 * operation on MPI_COMM_WORLD ("large"), or is anything else ("other": integers, user operations,
 * derived types, a small message, a communicator named "probe-excluded"). */
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { type_float = 0, type_double = 1, type_int = 2 };

static FILE* out;
static int rank, size;
static int calls;

static size_t type_bytes(int type) { return type == type_double ? sizeof(double) : sizeof(float); }

static void record_call(int call, const char* direction, const char* operation, const char* kind, int root, int type,
                        const void* values, long long count) {
  char label[64] = {0};
  int32_t header[2] = {type, 0};
  int64_t n = count;
  snprintf(label, sizeof label, "%s|%d|%s|%s|%d", direction, call, operation, kind, root);
  fwrite(label, 1, sizeof label, out);
  fwrite(header, sizeof header, 1, out);
  fwrite(&n, sizeof n, 1, out);
  if (count > 0) fwrite(values, type_bytes(type), (size_t)count, out);
}

/* A record of the current call. */
static void record(const char* direction, const char* operation, const char* kind, int root, int type,
                   const void* values, long long count) {
  record_call(calls, direction, operation, kind, root, type, values, count);
}

/* A smooth field with a rank-dependent phase, and a few values far from the others. */
static void fill_float(float* v, long long n, int salt) {
  for (long long i = 0; i < n; ++i) {
    v[i] = (float)(sin(0.001 * (double)i + 0.7 * rank + salt) * (10.0 + rank) + 0.01 * (double)(i % 17));
  }
  if (n > 10) v[n / 3] = 250.0f + (float)rank;
}

static void fill_double(double* v, long long n, int salt) {
  for (long long i = 0; i < n; ++i) v[i] = cos(0.0007 * (double)i - 0.3 * rank + salt) * (3.0 + rank);
}

static void* values_of(int type, long long n) {
  void* p = malloc((size_t)(n > 0 ? n : 1) * type_bytes(type));
  if (p == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  return p;
}

static void fill(int type, void* v, long long n, int salt) {
  if (type == type_float) fill_float((float*)v, n, salt);
  else fill_double((double*)v, n, salt);
}

static MPI_Datatype mpi_type(int type) { return type == type_float ? MPI_FLOAT : MPI_DOUBLE; }

static void allreduce(int type, long long n, MPI_Op op, const char* name, int in_place, const char* kind, MPI_Comm comm) {
  void* in = values_of(type, n);
  void* result = values_of(type, n);
  fill(type, in, n, calls);
  record("in", name, kind, -1, type, in, n);
  if (in_place) {
    memcpy(result, in, (size_t)n * type_bytes(type));
    MPI_Allreduce(MPI_IN_PLACE, result, (int)n, mpi_type(type), op, comm);
  } else {
    MPI_Allreduce(in, result, (int)n, mpi_type(type), op, comm);
  }
  record("out", name, kind, -1, type, result, n);
  free(in);
  free(result);
  ++calls;
}

/* Two non-blocking allreduces in flight at once, completed with MPI_Test, MPI_Wait and MPI_Waitall. */
static void iallreduce(long long n) {
  float* a = values_of(type_float, n);
  float* a_out = values_of(type_float, n);
  double* b = values_of(type_double, n);
  MPI_Request requests[2];
  int done = 0;
  const int first = calls++, second = calls++;
  fill_float(a, n, first);
  fill_double(b, n, second);
  record_call(first, "in", "iallreduce-sum", "large", -1, type_float, a, n);
  MPI_Iallreduce(a, a_out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &requests[0]);
  record_call(second, "in", "iallreduce-max", "large", -1, type_double, b, n);
  MPI_Iallreduce(MPI_IN_PLACE, b, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &requests[1]);
  MPI_Test(&requests[1], &done, MPI_STATUS_IGNORE);
  if (done) MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  if (requests[0] != MPI_REQUEST_NULL || requests[1] != MPI_REQUEST_NULL) {
    fprintf(stderr, "collectives_probe: MPI_Waitall left a request active\n");
    MPI_Abort(MPI_COMM_WORLD, 4);
  }
  record_call(first, "out", "iallreduce-sum", "large", -1, type_float, a_out, n);
  record_call(second, "out", "iallreduce-max", "large", -1, type_double, b, n);
  free(a);
  free(a_out);
  free(b);
}

static void reduce(int type, long long n, MPI_Op op, const char* name, int root, int in_place) {
  void* in = values_of(type, n);
  void* result = values_of(type, n);
  fill(type, in, n, calls);
  record("in", name, "large", root, type, in, n);
  if (in_place && rank == root) {
    memcpy(result, in, (size_t)n * type_bytes(type));
    MPI_Reduce(MPI_IN_PLACE, result, (int)n, mpi_type(type), op, root, MPI_COMM_WORLD);
  } else {
    MPI_Reduce(in, rank == root ? result : NULL, (int)n, mpi_type(type), op, root, MPI_COMM_WORLD);
  }
  record("out", name, "large", root, type, result, rank == root ? n : 0);
  free(in);
  free(result);
  ++calls;
}

static void reduce_scatter_block(int type, long long block, int in_place) {
  const long long total = block * size;
  void* in = values_of(type, total);
  void* result = values_of(type, in_place ? total : block);
  fill(type, in, total, calls);
  record("in", "reduce_scatter_block-sum", "large", -1, type, in, total);
  if (in_place) {
    memcpy(result, in, (size_t)total * type_bytes(type));
    MPI_Reduce_scatter_block(MPI_IN_PLACE, result, (int)block, mpi_type(type), MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Reduce_scatter_block(in, result, (int)block, mpi_type(type), MPI_SUM, MPI_COMM_WORLD);
  }
  record("out", "reduce_scatter_block-sum", "large", -1, type, result, block);
  free(in);
  free(result);
  ++calls;
}

static void allgather(int type, long long block, int in_place) {
  void* mine = values_of(type, block);
  char* all = values_of(type, block * size);
  fill(type, mine, block, calls);
  record("in", "allgather", "large", -1, type, mine, block);
  if (in_place) {
    memcpy(all + (size_t)rank * (size_t)block * type_bytes(type), mine, (size_t)block * type_bytes(type));
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)block, mpi_type(type), MPI_COMM_WORLD);
  } else {
    MPI_Allgather(mine, (int)block, mpi_type(type), all, (int)block, mpi_type(type), MPI_COMM_WORLD);
  }
  record("out", "allgather", "large", -1, type, all, block * size);
  free(mine);
  free(all);
  ++calls;
}

static void bcast(int type, long long n, int root) {
  void* data = values_of(type, n);
  fill(type, data, n, calls);
  record("in", "bcast", "large", root, type, data, n);
  MPI_Bcast(data, (int)n, mpi_type(type), root, MPI_COMM_WORLD);
  record("out", "bcast", "large", root, type, data, n);
  free(data);
  ++calls;
}

static void scatter(long long block, int root) {
  float* all = values_of(type_float, block * size);
  float* mine = values_of(type_float, block);
  fill_float(all, block * size, calls);
  record("in", "scatter", "large", root, type_float, all, rank == root ? block * size : 0);
  MPI_Scatter(all, (int)block, MPI_FLOAT, mine, (int)block, MPI_FLOAT, root, MPI_COMM_WORLD);
  record("out", "scatter", "large", root, type_float, mine, block);
  free(all);
  free(mine);
  ++calls;
}

static void gather(long long block, int root) {
  float* mine = values_of(type_float, block);
  float* all = values_of(type_float, block * size);
  fill_float(mine, block, calls);
  record("in", "gather", "large", root, type_float, mine, block);
  if (rank == root) {
    memcpy(all + (size_t)root * (size_t)block, mine, (size_t)block * sizeof(float));
    MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, (int)block, MPI_FLOAT, root, MPI_COMM_WORLD);
  } else {
    MPI_Gather(mine, (int)block, MPI_FLOAT, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
  }
  record("out", "gather", "large", root, type_float, all, rank == root ? block * size : 0);
  free(mine);
  free(all);
  ++calls;
}

static void alltoall(long long block) {
  float* in = values_of(type_float, block * size);
  float* result = values_of(type_float, block * size);
  fill_float(in, block * size, calls);
  record("in", "alltoall", "large", -1, type_float, in, block * size);
  MPI_Alltoall(in, (int)block, MPI_FLOAT, result, (int)block, MPI_FLOAT, MPI_COMM_WORLD);
  record("out", "alltoall", "large", -1, type_float, result, block * size);
  free(in);
  free(result);
  ++calls;
}

/* A user-defined sum: MPI must call it, whatever library is loaded. */
static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((float*)inout)[i] += ((const float*)in)[i];
}

/* The calls that must pass through untouched. */
static void others(long long n) {
  int* ints = malloc((size_t)n * sizeof(int));
  int* int_sum = malloc((size_t)n * sizeof(int));
  for (long long i = 0; i < n; ++i) ints[i] = (int)(i * 7 + rank);
  record("in", "allreduce-sum", "other", -1, type_int, ints, n);
  MPI_Allreduce(ints, int_sum, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  record("out", "allreduce-sum", "other", -1, type_int, int_sum, n);
  ++calls;
  free(ints);
  free(int_sum);

  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  allreduce(type_float, n, op, "allreduce-user", 0, "other", MPI_COMM_WORLD);
  MPI_Op_free(&op);

  /* A derived type of four floats, broadcast. */
  MPI_Datatype quad;
  MPI_Type_contiguous(4, MPI_FLOAT, &quad);
  MPI_Type_commit(&quad);
  float* data = values_of(type_float, n);
  fill_float(data, n, calls);
  record("in", "bcast", "other", 0, type_float, data, n);
  MPI_Bcast(data, (int)(n / 4), quad, 0, MPI_COMM_WORLD);
  record("out", "bcast", "other", 0, type_float, data, n);
  ++calls;
  free(data);
  MPI_Type_free(&quad);

  /* A communicator the environment may name as left alone. */
  MPI_Comm excluded;
  MPI_Comm_dup(MPI_COMM_WORLD, &excluded);
  MPI_Comm_set_name(excluded, "probe-excluded");
  allreduce(type_float, n, MPI_SUM, "allreduce-sum", 0, "other", excluded);
  MPI_Comm_free(&excluded);

  /* Below any size threshold. */
  allreduce(type_float, 100, MPI_SUM, "allreduce-sum", 0, "other", MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: collectives_probe OUT_DIR [VALUES]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long long n = argc > 2 ? atoll(argv[2]) : 5000;
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.bin", argv[1], rank);
  out = fopen(path, "wb");
  if (out == NULL) {
    fprintf(stderr, "collectives_probe: cannot write %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  allreduce(type_float, n, MPI_SUM, "allreduce-sum", 0, "large", MPI_COMM_WORLD);
  allreduce(type_float, n, MPI_MAX, "allreduce-max", 1, "large", MPI_COMM_WORLD);
  allreduce(type_double, n, MPI_SUM, "allreduce-sum", 1, "large", MPI_COMM_WORLD);
  allreduce(type_float, n, MPI_MIN, "allreduce-min", 0, "large", MPI_COMM_WORLD);
  iallreduce(n);
  reduce(type_float, n, MPI_SUM, "reduce-sum", size - 1, 0);
  reduce(type_double, n, MPI_MAX, "reduce-max", 0, 1);
  reduce_scatter_block(type_float, n, 0);
  reduce_scatter_block(type_double, n, 1);
  allgather(type_float, n, 0);
  allgather(type_double, n, 1);
  bcast(type_float, n, 0);
  bcast(type_double, n, size - 1);
  scatter(n, 0);
  gather(n, size - 1);
  alltoall(n);
  others(n);

  fclose(out);
  MPI_Finalize();
  return 0;
}
