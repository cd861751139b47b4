#pragma once
/// Every macro and feature check of zcoll, in one place.

#include <version>

#if defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
// The error-bound guarantee rests on IEEE-754 semantics: NaN and ±Inf must compare as IEEE says, or
// non-finite values would be quantized instead of stored exactly. -ffp-contract=fast and -march=native
// are fine (the codec is written so that contraction cannot change a reconstruction); -ffast-math is not.
#error "zcoll needs IEEE floating point: compile without -ffast-math / -ffinite-math-only"
#endif

#if defined(_OPENMP)
#define ZCOLL_HAS_OPENMP 1
#else
#define ZCOLL_HAS_OPENMP 0
#endif

// AVX2 paths for the per-block bit-plane math; the portable loops are used otherwise (and give the same
// bytes).
#if defined(__AVX2__) && !defined(__CUDA_ARCH__)
#define ZCOLL_HAS_AVX2 1
#else
#define ZCOLL_HAS_AVX2 0
#endif

// AVX-512 (F) for the sum of two bit-plane blocks (encode/detail/bitshuffle_block_sum.hpp), where 16
// planes fit one vector, and for the masked lane writes of core/lanes.hpp; every other block path stays
// AVX2 (tests: the native build on an AVX-512 CPU and the zcoll-tests-avx512 variant, which skips on
// CPUs without it).
#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
#define ZCOLL_HAS_AVX512 1
#else
#define ZCOLL_HAS_AVX512 0
#endif

// AVX-512 VPOPCNTDQ (lane-wise popcounts) for the residual sum of a bit-plane block read off its
// planes (encode/detail/bitshuffle_block.hpp); tested by the native build on a CPU that has it (Zen 4
// and later, Ice Lake and later).
#if ZCOLL_HAS_AVX512 && defined(__AVX512VPOPCNTDQ__)
#define ZCOLL_HAS_AVX512_POPCOUNT 1
#else
#define ZCOLL_HAS_AVX512_POPCOUNT 0
#endif

// AVX-512 BW and VBMI with GFNI (Ice Lake and later, Zen 4 and later): the bit-plane encoder, decoder
// and sum of two blocks turn planes into 16-bit lanes and back by GFNI's 8x8 bit transposes
// (encode/detail/bitshuffle_gfni.hpp); tested by the native build on a CPU that has them and by the
// zcoll-tests-avx512gfni variant.
#if ZCOLL_HAS_AVX512 && defined(__AVX512BW__) && defined(__AVX512VBMI__) && defined(__GFNI__)
#define ZCOLL_HAS_AVX512_GFNI 1
#else
#define ZCOLL_HAS_AVX512_GFNI 0
#endif

// F16C's float <-> half conversions (the row-wise quantizers' f16 scale and bias), independent of AVX2:
// a build with -mno-avx2 on an F16C machine still has them.
#if defined(__F16C__) && !defined(__CUDA_ARCH__)
#define ZCOLL_HAS_F16C 1
#else
#define ZCOLL_HAS_F16C 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ZCOLL_ALWAYS_INLINE inline __attribute__((always_inline))
// For lambdas on hot paths (the Huffman decoder's four bit sources stay in registers only if inlined).
#define ZCOLL_LAMBDA_ALWAYS_INLINE __attribute__((always_inline))
#define ZCOLL_RESTRICT __restrict__
#else
#define ZCOLL_ALWAYS_INLINE inline
#define ZCOLL_LAMBDA_ALWAYS_INLINE
#define ZCOLL_RESTRICT
#endif

// The per-block math of every stage is written once and compiled for both sides: under nvcc it is
// __host__ __device__ (the CUDA drivers in the .cuh files call it from their kernels), elsewhere it is
// plain C++. In the device pass the portable loops are used (ZCOLL_HAS_AVX2 is 0 there).
#if defined(__CUDACC__)
#define ZCOLL_HOST_DEVICE __host__ __device__
#else
#define ZCOLL_HOST_DEVICE
#endif

#define ZCOLL_VERSION_MAJOR 0
#define ZCOLL_VERSION_MINOR 1
#define ZCOLL_VERSION_PATCH 0
