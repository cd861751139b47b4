#pragma once
/// Lorenzo prediction in integer space. 1-D here: r_i = q_i - q_{i-1}, restarting at each chunk; 2-D
/// and 3-D in predict/lorenzo_grid.hpp.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/predict/lorenzo_grid.hpp"

#if ZCOLL_HAS_AVX2
#include <immintrin.h>
#endif

namespace zcoll::predict {

/// Predicting on codes, not values ("dual quantization"), keeps chunks independent and exact: the
/// decoder's prefix sum reproduces the encoder's codes bit for bit. Arithmetic wraps modulo 2^32, so
/// a corrupted stream decodes to garbage values, never to undefined behaviour.
struct Lorenzo1D {
  static constexpr std::uint8_t id = 1;
  static constexpr const char* name = "lorenzo1d";

  /// The last code of the previous block; a chunk starts from 0.
  struct state {
    std::uint32_t previous = 0;
  };

  /// The state after a block whose residuals sum to `residual_sum` (modulo 2^32), without its codes: the
  /// inverse is a running sum, so the block's last code is the previous one plus that sum.
  ZCOLL_HOST_DEVICE static void skip_block(state& s, std::uint32_t residual_sum) { s.previous += residual_sum; }

  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static void forward(state& s, const std::int32_t* ZCOLL_RESTRICT codes,
                                          std::int32_t* ZCOLL_RESTRICT residuals) {
#if ZCOLL_HAS_AVX2
    // The codes were just stored: an unaligned load of codes[j - 1] would straddle two stores and miss
    // store-to-load forwarding, so the shifted vector is built in registers instead.
    const __m256i rotate = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    __m256i before = _mm256_set1_epi32(static_cast<int>(s.previous));
    for (std::size_t k = 0; k < block_values; k += 8) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + k));
      const __m256i shifted = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(v, rotate),
                                                 _mm256_permutevar8x32_epi32(before, rotate), 0x01);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(residuals + k), _mm256_sub_epi32(v, shifted));
      before = v;
    }
#else
    residuals[0] = static_cast<std::int32_t>(static_cast<std::uint32_t>(codes[0]) - s.previous);
    for (std::size_t j = 1; j < block_values; ++j) {
      residuals[j] = static_cast<std::int32_t>(static_cast<std::uint32_t>(codes[j]) -
                                               static_cast<std::uint32_t>(codes[j - 1]));
    }
#endif
    s.previous = static_cast<std::uint32_t>(codes[block_values - 1]);
  }

  /// Codes from residuals, in place.
  /// Codes from residuals, in place: an inclusive prefix sum.
  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static void inverse(state& s, std::uint32_t* values) {
#if ZCOLL_HAS_AVX2
    // Scan each 8 lanes on their own (log steps within each 128-bit half, then the low half's total
    // into the high half), then add the running total. Only that last add is a chain from vector to
    // vector and block to block: one add per 8 lanes, where carrying the total through each scan
    // made the whole chunk one long dependency chain.
    __m256i local[4], total[4];
    for (std::size_t k = 0; k < 4; ++k) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values + 8 * k));
      v = _mm256_add_epi32(v, _mm256_slli_si256(v, 4));
      v = _mm256_add_epi32(v, _mm256_slli_si256(v, 8));
      const __m256i low_total = _mm256_shuffle_epi32(v, 0xFF);  // lane 3 (and 7) broadcast in each half
      local[k] = _mm256_add_epi32(v, _mm256_permute2x128_si256(low_total, low_total, 0x08));
      total[k] = _mm256_permutevar8x32_epi32(local[k], _mm256_set1_epi32(7));
    }
    __m256i running = _mm256_set1_epi32(static_cast<int>(s.previous));
    for (std::size_t k = 0; k < 4; ++k) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(values + 8 * k), _mm256_add_epi32(local[k], running));
      running = _mm256_add_epi32(running, total[k]);
    }
    s.previous = static_cast<std::uint32_t>(_mm256_cvtsi256_si32(running));
#else
    std::uint32_t running = s.previous;
    for (std::size_t j = 0; j < block_values; ++j) {
      running += values[j];
      values[j] = running;
    }
    s.previous = running;
#endif
  }
};

/// Lorenzo<1>, Lorenzo<2>, Lorenzo<3>: the predictor for data of that many dimensions.
template <unsigned N>
using Lorenzo = std::conditional_t<N == 1, Lorenzo1D, LorenzoGrid<N>>;

}  // namespace zcoll::predict
