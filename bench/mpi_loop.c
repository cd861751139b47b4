/* mpi_loop: an ordinary MPI timing loop — MPI_Allreduce, MPI_Bcast or MPI_Allgather of a real field — that
 * knows nothing of zcoll. docs/performance.md times it with and without libzcoll-mpi.so preloaded.
 *
 *     mpirun -n 4 zcoll-mpi-loop --op allreduce --mib 16,64 --field bench/data/navy_winds_uwnd_132x73x144.f32 --reps 7
 *
 * Each rank's message is the field (float32 values) repeated to the size, starting at a rank-dependent
 * offset; --mib is the message per rank (allgather: each rank's block). Prints, from rank 0, one line per
 * size: op, ranks, MiB, the median and the fastest of --reps timed calls (after one untimed call), each
 * the slowest rank's time between barriers. */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static float* read_field(const char* path, long* count) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  const long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  *count = bytes / (long)sizeof(float);
  float* values = malloc((size_t)*count * sizeof(float));
  if (values == NULL || fread(values, sizeof(float), (size_t)*count, f) != (size_t)*count) {
    free(values);
    values = NULL;
  }
  fclose(f);
  return values;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* op = "allreduce";
  const char* sizes = "16";
  const char* path = NULL;
  int reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--op") == 0) op = argv[i + 1];
    else if (strcmp(argv[i], "--mib") == 0) sizes = argv[i + 1];
    else if (strcmp(argv[i], "--field") == 0) path = argv[i + 1];
    else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
  }
  const int known = strcmp(op, "allreduce") == 0 || strcmp(op, "bcast") == 0 || strcmp(op, "allgather") == 0;
  long field_count = 0;
  float* field = path != NULL ? read_field(path, &field_count) : NULL;
  if (!known || field == NULL || field_count == 0 || reps < 1) {
    if (rank == 0) fprintf(stderr, "usage: zcoll-mpi-loop --op allreduce|bcast|allgather --mib N[,N...] --field FILE.f32 [--reps R]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0) printf("op,ranks,mib,median_s,min_s\n");

  char* list = strdup(sizes);
  for (char* item = strtok(list, ","); item != NULL; item = strtok(NULL, ",")) {
    const long n = (long)(atof(item) * 1048576.0 / sizeof(float));
    float* data = malloc((size_t)n * sizeof(float));
    float* all = strcmp(op, "allgather") == 0 ? malloc((size_t)n * sizeof(float) * (size_t)size) : NULL;
    double* times = malloc((size_t)reps * sizeof(double));
    for (int rep = -1; rep < reps; ++rep) {
      const long offset = (long)rank * 7919;
      for (long i = 0; i < n; ++i) data[i] = field[(i + offset) % field_count];
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      if (strcmp(op, "allreduce") == 0) MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (strcmp(op, "bcast") == 0) MPI_Bcast(data, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
      else MPI_Allgather(data, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, MPI_COMM_WORLD);
      double mine = MPI_Wtime() - start, slowest = 0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (rep >= 0) times[rep] = slowest;
    }
    qsort(times, (size_t)reps, sizeof(double), compare_doubles);
    if (rank == 0) printf("%s,%d,%s,%.9f,%.9f\n", op, size, item, times[reps / 2], times[0]);
    free(data);
    free(all);
    free(times);
  }
  free(list);
  free(field);
  MPI_Finalize();
  return 0;
}
