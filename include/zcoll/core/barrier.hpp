#pragma once
/// A compiler barrier that makes values pass through memory.

#include <atomic>

namespace zcoll::detail {

/// After this call the compiler must reload what `data` points to: values computed before it are no
/// longer visible as expressions. The quantizer uses it so that a reconstruction x' = q * step, stored
/// and reloaded, cannot be fused with the later x - x' into one FMA under -ffp-contract=fast: the encoder
/// then checks the very value the decoder will compute (a single, uncontractible multiply).
inline void materialize(const void* data) {
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "r"(data) : "memory");
#else
  (void)data;
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace zcoll::detail
