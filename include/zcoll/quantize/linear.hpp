#pragma once
/// Linear quantization with an error bound: q = round(x / 2eb), x' = q * 2eb, every value re-checked.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "zcoll/core/barrier.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"

#if ZCOLL_HAS_AVX2
#include <immintrin.h>
#endif

namespace zcoll::quantize {

/// Bins of width 2·eb centred on the multiples of 2·eb: round to nearest keeps |x - x'| <= eb with one
/// bin fewer per value than fZ-light's truncation into bins of width eb (one more bit of ratio).
///
/// The bound is guaranteed in exact arithmetic, whatever the compiler flags: the encoder reconstructs
/// each value with the decoder's own single multiply, passes it through memory (detail::materialize)
/// so no FMA contraction can change it, and checks |x - x'| against a threshold lowered by the rounding
/// of the subtraction. Values that fail — NaN, ±Inf, values beyond the code range, values the rounding
/// of x' pushes past the bound — are reported to the pipeline, which stores them exactly.
struct Linear {
  static constexpr std::uint8_t id = 1;
  static constexpr const char* name = "linear";
  static constexpr bool uses_error_bound = true;

  template <floating_value T>
  class block_quantizer {
   public:
    /// Largest |code|: float(q) is exact up to 2^24 for f32; for f64, residuals of codes below 2^30
    /// still fit a signed 32-bit word.
    static constexpr std::int32_t max_code = std::is_same_v<T, float> ? (1 << 24) : (1 << 30) - 1;

    ZCOLL_HOST_DEVICE explicit block_quantizer(double error_bound)
        : error_bound_(error_bound),
          step_(static_cast<T>(2.0 * error_bound)),
          inverse_step_(static_cast<T>(0.5 / error_bound)),
          check_bound_(lowered_check_bound(error_bound)) {}

    /// False when no step of type T honours the bound (eb = 0, or so small or large that 2eb or its
    /// inverse is 0 or infinite in T): the pipeline then stores values exactly.
    ZCOLL_HOST_DEVICE bool usable() const {
      return error_bound_ > 0.0 && step_ > T(0) && step_ <= std::numeric_limits<T>::max() &&
             inverse_step_ > T(0) && inverse_step_ <= std::numeric_limits<T>::max() && check_bound_ > T(0);
    }

    /// The bound the stream states: what every finite, stored-as-code value is within.
    ZCOLL_HOST_DEVICE double guaranteed_bound() const { return error_bound_; }

    /// The bin width 2eb in T: dequantize(q) = q * step().
    ZCOLL_HOST_DEVICE T step() const { return step_; }

    /// Codes for 32 values; returns the lanes whose code would break the bound (their code is 0 when
    /// out of range; the check of |x - x'| then fails too, as |x| > 2^24 * 2eb).
    ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE block_mask quantize(const T* ZCOLL_RESTRICT x, std::int32_t* ZCOLL_RESTRICT codes) const {
      alignas(64) T reconstructed[block_values];
      constexpr T code_limit = static_cast<T>(max_code);
      for (std::size_t j = 0; j < block_values; ++j) {
        const T rounded = std::nearbyint(x[j] * inverse_step_);
        // Zero the lanes out of range before converting, so the conversion never sees NaN or a value
        // beyond the code range. Range test and select are integer operations on the bit pattern (for
        // |r| it is ordered like the value, NaN above all): a floating-point compare or select here keeps
        // GCC from vectorising the loop under the default -ftrapping-math.
        using bits = bits_of<T>;
        const bits keep = std::bit_cast<bits>(std::abs(rounded)) <= std::bit_cast<bits>(code_limit) ? ~bits{0} : 0;
        const T bounded = std::bit_cast<T>(static_cast<bits>(std::bit_cast<bits>(rounded) & keep));
        const auto q = static_cast<std::int32_t>(bounded);
        codes[j] = q;
        reconstructed[j] = zcoll::detail::uncontracted_product(static_cast<T>(q), step_);  // the decoder's dequantize
      }
      zcoll::detail::materialize(reconstructed);
      return ~lanes_within(x, reconstructed);
    }

    /// Values for the first `lanes` codes (read as two's complement words).
    ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE void dequantize(const std::uint32_t* ZCOLL_RESTRICT codes, T* ZCOLL_RESTRICT out,
                                        std::size_t lanes) const {
      // Never fused with what the caller does next (zcoll::add on the device adds two reconstructions).
      for (std::size_t j = 0; j < lanes; ++j) {
        out[j] = zcoll::detail::uncontracted_product(static_cast<T>(static_cast<std::int32_t>(codes[j])), step_);
      }
    }

    /// Lanes whose reconstruction x' (a value this quantizer's dequantize, or one of a finer quantizer's,
    /// wrote and the caller passed through memory) is within the bound: |x - x'| <= eb in exact arithmetic
    /// (never for NaN or ±Inf). The interpolation predictor checks its reconstructions with it.
    ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE block_mask lanes_within(const T* ZCOLL_RESTRICT x, const T* ZCOLL_RESTRICT reconstructed) const {
#if ZCOLL_HAS_AVX2
      if constexpr (std::is_same_v<T, float>) {
        const __m256 magnitude_bits = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
        const __m256 bound = _mm256_set1_ps(check_bound_);
        block_mask within = 0;
        for (int k = 0; k < 4; ++k) {
          const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + 8 * k), _mm256_loadu_ps(reconstructed + 8 * k));
          const __m256 ok = _mm256_cmp_ps(_mm256_and_ps(d, magnitude_bits), bound, _CMP_LE_OQ);
          within |= static_cast<block_mask>(_mm256_movemask_ps(ok)) << (8 * k);
        }
        return within;
      } else {
        const __m256d magnitude_bits = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
        const __m256d bound = _mm256_set1_pd(check_bound_);
        block_mask within = 0;
        for (int k = 0; k < 8; ++k) {
          const __m256d d = _mm256_sub_pd(_mm256_loadu_pd(x + 4 * k), _mm256_loadu_pd(reconstructed + 4 * k));
          const __m256d ok = _mm256_cmp_pd(_mm256_and_pd(d, magnitude_bits), bound, _CMP_LE_OQ);
          within |= static_cast<block_mask>(_mm256_movemask_pd(ok)) << (4 * k);
        }
        return within;
      }
#else
      block_mask within = 0;
      for (std::size_t j = 0; j < block_values; ++j) {
        within |= static_cast<block_mask>(std::abs(x[j] - reconstructed[j]) <= check_bound_) << j;
      }
      return within;
#endif
    }

   private:
    /// The largest threshold c in T such that a computed |x - x'| <= c proves the exact |x - x'| <= eb:
    /// the subtraction rounds by at most a factor (1 ± 2^-p), so c = eb (1 - 2^-(p-1)), rounded down.
    ZCOLL_HOST_DEVICE static T lowered_check_bound(double eb) {
      constexpr int p = std::numeric_limits<T>::digits;
      const double c = eb * (1.0 - std::ldexp(1.0, -(p - 1)));
      T t = static_cast<T>(c);
      if (static_cast<double>(t) > c) t = std::nextafter(t, T(0));
      return t;
    }

    double error_bound_;
    T step_;
    T inverse_step_;
    T check_bound_;
  };
};

}  // namespace zcoll::quantize
