// zcoll-bench coll for `--type f64`: coll_bench.cpp compiled for double (coll_bench.hpp says why).
#define ZCOLL_COLL_BENCH_F64 1
#include "coll_bench.cpp"
