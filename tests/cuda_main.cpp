// The runner of the CUDA tests: without a CUDA device it runs nothing and exits 77, which ctest reports
// as skipped. With one, a kernel that misbehaves fails its test like any other.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device (%s)\n", status != cudaSuccess ? cudaGetErrorString(status) : "none found");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
