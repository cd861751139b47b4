#pragma once
/// zcoll-bench coll: the collective benchmark, called by zcoll-bench's main for the `coll` command.

namespace zcoll_bench {

/// Runs `zcoll-bench coll ...` (argv[1] is "coll"); returns the process exit code: 0 when every
/// compressed result held its stated bound, 2 for a wrong option, 3 when a bound did not hold or the
/// uncompressed schedule moved data inexactly, 1 for any other failure.
int coll_main(int argc, char** argv);

}  // namespace zcoll_bench
