#pragma once
/// Bit counts of unsigned words that are right on the host and on the device.
///
/// Why not <bit>: with libstdc++ 12 and nvcc 13, std::countr_zero and std::countr_one of any width, and
/// std::countl_zero and std::popcount of 64-bit words, compile in device code to a constant (the word's
/// width) or to nothing: libstdc++ writes them with GCC builtins that nvcc does not lower for the device,
/// and no diagnostic is given. The first run of the CUDA kernels on a GPU found it (every exception lane
/// pointed at lane 32). Code that the device compiles calls these instead; on the host they are <bit>'s.

#include <bit>
#include <concepts>
#include <cstdint>

#include "zcoll/core/config.hpp"

namespace zcoll {

/// Unsigned words of 32 or 64 bits, the widths with device intrinsics.
template <class U>
concept bit_word = std::same_as<U, std::uint32_t> || std::same_as<U, std::uint64_t>;

/// Zero bits below the lowest one bit (the width for 0).
template <bit_word U>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE int countr_zero(U x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(U) == 4) {
    return x == 0 ? 32 : __ffs(static_cast<int>(x)) - 1;
  } else {
    return x == 0 ? 64 : __ffsll(static_cast<long long>(x)) - 1;
  }
#else
  return std::countr_zero(x);
#endif
}

/// One bits below the lowest zero bit.
template <bit_word U>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE int countr_one(U x) {
  return countr_zero(static_cast<U>(~x));
}

/// Zero bits above the highest one bit (the width for 0).
template <bit_word U>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE int countl_zero(U x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(U) == 4) {
    return __clz(static_cast<int>(x));
  } else {
    return __clzll(static_cast<long long>(x));
  }
#else
  return std::countl_zero(x);
#endif
}

/// One bits.
template <bit_word U>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE int popcount(U x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(U) == 4) {
    return __popc(x);
  } else {
    return __popcll(x);
  }
#else
  return std::popcount(x);
#endif
}

}  // namespace zcoll
