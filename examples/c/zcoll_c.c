/* zcoll from C (include/zcoll.h, link libzcoll-c): a field compressed and restored within its bound,
 * errors reported as codes with a message, and a compressed allreduce checked against MPI's.
 *
 *     mpirun -n 3 zcoll-example-c
 *
 * Exits non-zero when anything is not as zcoll.h says (CI runs it). */
#include <zcoll.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "zcoll-example-c: FAILED: %s (%s)\n", what, zcoll_error_message());
    ++failures;
  }
}

static void codecs(int rank) {
  enum { n = 100000 };
  float* field = malloc(n * sizeof(float));
  float* restored = malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) field[i] = (float)(sin(0.001 * i) * 20.0 + cos(0.013 * i));
  field[n / 2] = NAN; /* stored exactly, as NaN */

  zcoll_codec* codec = NULL;
  expect(zcoll_codec_create("fzlight", "rel:1e-4", NULL, 0, &codec) == ZCOLL_SUCCESS, "create fzlight");
  size_t capacity = 0, written = 0;
  expect(zcoll_compress_bound(codec, ZCOLL_FLOAT, n, &capacity) == ZCOLL_SUCCESS, "compress bound");
  unsigned char* stream = malloc(capacity);
  expect(zcoll_compress(codec, ZCOLL_FLOAT, field, n, stream, capacity, &written) == ZCOLL_SUCCESS, "compress");

  zcoll_type type;
  size_t count = 0;
  double bound = 0;
  expect(zcoll_stream_info(stream, written, &type, &count, &bound) == ZCOLL_SUCCESS, "stream info");
  expect(type == ZCOLL_FLOAT && count == n && bound > 0, "the stream says float, n values and a bound");
  expect(zcoll_decompress(stream, written, ZCOLL_FLOAT, restored, n) == ZCOLL_SUCCESS, "decompress");
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    if (i == n / 2) continue;
    const double e = fabs((double)restored[i] - (double)field[i]);
    if (e > worst) worst = e;
  }
  expect(worst <= bound, "every value within the stated bound");
  expect(isnan(restored[n / 2]), "NaN restored as NaN");
  if (rank == 0) {
    printf("zcoll-example-c: fzlight rel 1e-4: %d floats -> %zu bytes (ratio %.2f), max error %.3g <= bound %.3g\n", n,
           written, (double)(n * sizeof(float)) / (double)written, worst, bound);
  }

  /* Errors: codes and a message naming what was wrong; nothing aborts. */
  expect(zcoll_decompress(stream, written / 2, ZCOLL_FLOAT, restored, n) == ZCOLL_ERR_FORMAT, "a truncated stream");
  if (rank == 0) printf("zcoll-example-c: truncated stream -> %s\n", zcoll_error_message());
  expect(zcoll_decompress(stream, written, ZCOLL_DOUBLE, restored, n / 2) != ZCOLL_SUCCESS, "the wrong type");
  zcoll_codec* unknown = NULL;
  expect(zcoll_codec_create("sz9", "rel:1e-4", NULL, 0, &unknown) == ZCOLL_ERR_ARGUMENT && unknown == NULL,
         "an unknown codec");
  if (rank == 0) printf("zcoll-example-c: unknown codec -> %s\n", zcoll_error_message());
  expect(zcoll_codec_create("fzlight", "1e-4", NULL, 0, &unknown) == ZCOLL_ERR_ARGUMENT, "a bound without rel: or abs:");

  zcoll_codec_free(codec);
  free(stream);
  free(field);
  free(restored);
}

static void collectives(int rank, int size) {
  enum { n = 200000 };
  float* mine = malloc(n * sizeof(float));
  float* exact = malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) mine[i] = (float)(sin(0.0005 * i + rank) * (5.0 + rank));
  MPI_Allreduce(mine, exact, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

  zcoll_comm* zc = NULL;
  expect(zcoll_comm_create(MPI_COMM_WORLD, "rel:1e-4", &zc) == ZCOLL_SUCCESS, "create the collectives");
  expect(zcoll_allreduce(zc, MPI_IN_PLACE, mine, n, MPI_FLOAT, MPI_SUM) == ZCOLL_SUCCESS, "allreduce");
  const double bound = zcoll_comm_error_bound(zc);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const double e = fabs((double)mine[i] - (double)exact[i]);
    if (e > worst) worst = e;
  }
  /* MPI's float sum rounds too: the two results may differ by the bound and both sums' rounding. */
  expect(worst <= bound + 2.0 * size * 64.0 * ldexp(1.0, -24), "the allreduce within its bound of MPI's");
  expect(zcoll_allreduce(zc, MPI_IN_PLACE, mine, n, MPI_INT, MPI_SUM) == ZCOLL_ERR_ARGUMENT, "integers are refused");
  if (rank == 0) {
    printf("zcoll-example-c: allreduce of %d floats on %d ranks: ratio %.2f, max difference from MPI %.3g, bound %.3g\n",
           n, size, zcoll_comm_ratio(zc), worst, bound);
  }
  zcoll_comm_free(zc);
  free(mine);
  free(exact);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  codecs(rank);
  collectives(rank, size);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
