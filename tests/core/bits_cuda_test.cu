// core/bits.hpp on a device: the counts of 32- and 64-bit words are <bit>'s, word for word. (<bit>'s own
// countr_zero compiles to a constant in device code with nvcc 13 and libstdc++ 12: this pins the fix.)

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "zcoll/core/exec.cuh"
#include "zcoll/core/bits.hpp"

namespace {

template <class U>
__global__ void count_bits(const U* words, int* counts, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  counts[4 * i + 0] = zcoll::countr_zero(words[i]);
  counts[4 * i + 1] = zcoll::countr_one(words[i]);
  counts[4 * i + 2] = zcoll::countl_zero(words[i]);
  counts[4 * i + 3] = zcoll::popcount(words[i]);
}

template <class U>
std::vector<U> words() {
  std::vector<U> w{0, 1, 2, 3, static_cast<U>(~U{0}), static_cast<U>(~U{0} - 1), static_cast<U>(U{1} << (8 * sizeof(U) - 1))};
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 200; ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto x = static_cast<U>(state >> (64 - 8 * sizeof(U)));
    w.push_back(x);
    w.push_back(static_cast<U>(x << (k % (8 * sizeof(U)))));  // low zeros
    w.push_back(static_cast<U>(~(x << (k % (8 * sizeof(U))))));  // low ones
  }
  return w;
}

template <class U>
void check_counts() {
  const auto host = words<U>();
  const auto n = static_cast<unsigned>(host.size());
  U* d_words = nullptr;
  int* d_counts = nullptr;
  zcoll::cuda::check_call(cudaMalloc(&d_words, n * sizeof(U)), "cudaMalloc");
  zcoll::cuda::check_call(cudaMalloc(&d_counts, 4 * n * sizeof(int)), "cudaMalloc");
  zcoll::cuda::check_call(cudaMemcpy(d_words, host.data(), n * sizeof(U), cudaMemcpyHostToDevice), "cudaMemcpy");
  count_bits<<<(n + 127) / 128, 128>>>(d_words, d_counts, n);
  std::vector<int> counts(4 * n);
  zcoll::cuda::check_call(cudaMemcpy(counts.data(), d_counts, counts.size() * sizeof(int), cudaMemcpyDeviceToHost),
                          "cudaMemcpy");
  cudaFree(d_words);
  cudaFree(d_counts);
  for (unsigned i = 0; i < n; ++i) {
    INFO(8 * sizeof(U) << "-bit word " << host[i]);
    CHECK(counts[4 * i + 0] == std::countr_zero(host[i]));
    CHECK(counts[4 * i + 1] == std::countr_one(host[i]));
    CHECK(counts[4 * i + 2] == std::countl_zero(host[i]));
    CHECK(counts[4 * i + 3] == std::popcount(host[i]));
  }
}

}  // namespace

TEST_CASE("core/bits.hpp: the device's bit counts are <bit>'s", "[cuda][bits]") {
  check_counts<std::uint32_t>();
  check_counts<std::uint64_t>();
}
