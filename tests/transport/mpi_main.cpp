// The Catch2 runner of zcoll-mpi-tests: MPI is initialized before the session and finalized after it,
// and every rank runs the same test cases in the same order (the tests communicate, so a rank that
// skipped one would leave the others waiting). Each rank returns Catch's result; mpirun exits non-zero
// when any rank does, so a failure on one rank fails the ctest entry.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <boost/mpi/environment.hpp>

int main(int argc, char* argv[]) {
  boost::mpi::environment environment(argc, argv);
  return Catch::Session().run(argc, argv);
}
