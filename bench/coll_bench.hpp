#pragma once
/// zcoll-bench coll: the collective benchmark, called by zcoll-bench's main for the `coll` command.

namespace zcoll_bench {

/// Runs `zcoll-bench coll ...` (argv[1] is "coll"); returns the process exit code: 0 when every
/// compressed result held its stated bound, 2 for a wrong option, 3 when a bound did not hold or the
/// uncompressed schedule moved data inexactly, 1 for any other failure.
int coll_main(int argc, char** argv);

/// The same for `--type f64`, which coll_main hands over to: its own translation unit
/// (coll_bench_f64.cpp compiles coll_bench.cpp for double), so the two value types' instantiations,
/// most of zcoll-bench's build time, compile in parallel.
int coll_main_f64(int argc, char** argv);

}  // namespace zcoll_bench
