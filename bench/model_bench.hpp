#pragma once
// zcoll-bench model: the performance model of compressed collectives (bench/collective_model.hpp).

namespace zcoll_bench {

/// argv[1] is "model"; returns the process exit status.
int model_main(int argc, char** argv);

}  // namespace zcoll_bench
