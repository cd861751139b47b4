#pragma once
/// A compiler barrier that makes values pass through memory, and a product no compiler may contract.

#include <atomic>

#include "zcoll/core/config.hpp"

namespace zcoll::detail {

/// After this call the compiler must reload what `data` points to: values computed before it are no
/// longer visible as expressions. The quantizer uses it so that a reconstruction x' = q * step, stored
/// and reloaded, cannot be fused with the later x - x' into one FMA under -ffp-contract=fast: the encoder
/// then checks the very value the decoder will compute (a single, uncontractible multiply).
ZCOLL_HOST_DEVICE inline void materialize(const void* data) {
#if defined(__CUDA_ARCH__)
  (void)data;  // on the device uncontracted_product does this job
#elif defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(data) : "memory");
#else
  (void)data;
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

/// a * b rounded once, never fused with a later addition: nvcc contracts a * b - c into an FMA by default
/// (--fmad=true), and __fmul_rn / __dmul_rn are the products it promises not to fuse. On the host the
/// caller's materialize() keeps the compiler from fusing.
template <class T>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE T uncontracted_product(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
#else
  return a * b;
#endif
}

}  // namespace zcoll::detail
