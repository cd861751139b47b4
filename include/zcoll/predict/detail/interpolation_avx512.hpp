#pragma once
/// The interpolation walk's runs 16 points at a time in AVX-512 (F): the forward walk (residuals and
/// reconstructions from the targets) and the inverse (reconstructions from the residuals, in place).
/// Runs of stride 1, 2 and 4 take vectors (on the shared 2-D fields 96 % of a chunk's points): a strided
/// run's words are every other (every fourth) lane of two (four) loads, put back by masked stores; on the
/// Zen 4 VM gathers and scatters instead made the walk slower than a point at a time.
/// A batch computes in 32-bit lanes what for_each_in_run computes in 64-bit integers, so it is taken
/// only where that cannot overflow (every neighbour's code below 2^26 in magnitude, every residual below
/// 2^30), and the forward batch only where no lane is stored exactly; any other batch, and every run of
/// another stride, go through for_each_in_run. The values are therefore the scalar walk's, bit for bit
/// (tests/predict/interpolation_test.cpp compares the two). Host only.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/predict/detail/interpolation_run.hpp"

#if ZCOLL_HAS_AVX512
#include <immintrin.h>
#endif

namespace zcoll::predict::detail {

/// Which form walks a chunk's runs: 16 points a vector where the build has AVX-512, or a point at a time
/// alone, which the tests compare with it.
enum class walk_lanes { vector, scalar };
inline constexpr walk_lanes walk_default_lanes = ZCOLL_HAS_AVX512 ? walk_lanes::vector : walk_lanes::scalar;

#if ZCOLL_HAS_AVX512

// GCC 12 reports its own unmasked AVX-512 intrinsics as reading an uninitialized vector (GCC bug 105593,
// as in encode/detail/context_ans_avx512.hpp); nothing here reads one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

inline constexpr std::int64_t run_batch = 16;

/// Whether a run's points can go 16 at a time: strides 1, 2 and 4, which hold all of the finest level's
/// points and most of the next two's.
inline bool run_in_vectors(const interpolation_run& r) { return r.stride == 1 || r.stride == 2 || r.stride == 4; }

/// The words a batch of `points` (1 to 16) points reads at p[stride * j]: bit k of `read` for p[k], from
/// p[0] to p[stride * (points - 1)], no further.
struct batch_words {
  std::uint64_t read;
  std::int64_t stride;

  static batch_words of(std::int64_t stride, std::int64_t points) {
    const auto span = static_cast<unsigned>(stride * (points - 1) + 1);
    return {span == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << span) - 1, stride};
  }
  /// The mask of the 16 words from p[16 k] (of the 8 from p[8 k]).
  __mmask16 sixteenth(int k) const { return static_cast<__mmask16>(read >> (16 * k)); }
  __mmask8 eighth(int k) const { return static_cast<__mmask8>(read >> (8 * k)); }
};

/// Lane selections of a two-vector permute: every other word (0, 2, ..., 30), every fourth into the low
/// half (0, 4, ..., 28, then unused), and the two low halves of a pair.
ZCOLL_ALWAYS_INLINE __m512i every_other_word() {
  return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
}
ZCOLL_ALWAYS_INLINE __m512i every_fourth_word() {
  return _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
}
ZCOLL_ALWAYS_INLINE __m512i low_halves() {
  return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
}

/// The batch's words p[stride * j] as the 16 lanes of a vector (0 past the batch's points).
ZCOLL_ALWAYS_INLINE __m512i load_run_words(const std::uint32_t* p, const batch_words& w) {
  const auto part = [&](int k) { return _mm512_maskz_loadu_epi32(w.sixteenth(k), p + 16 * k); };
  if (w.stride == 1) return part(0);
  if (w.stride == 2) return _mm512_permutex2var_epi32(part(0), every_other_word(), part(1));
  const __m512i fourth = every_fourth_word();
  return _mm512_permutex2var_epi32(_mm512_permutex2var_epi32(part(0), fourth, part(1)), low_halves(),
                                   _mm512_permutex2var_epi32(part(2), fourth, part(3)));
}

/// The batch's lanes of v to p[stride * j], leaving the words between them.
ZCOLL_ALWAYS_INLINE void store_run_words(std::uint32_t* p, const batch_words& w, __m512i v) {
  if (w.stride == 1) {
    _mm512_mask_storeu_epi32(p, w.sixteenth(0), v);
    return;
  }
  if (w.stride == 2) {
    const __m512i low = _mm512_setr_epi32(0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0);
    const __m512i high = _mm512_setr_epi32(8, 0, 9, 0, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15, 0);
    _mm512_mask_storeu_epi32(p, w.sixteenth(0) & 0x5555, _mm512_permutexvar_epi32(low, v));
    _mm512_mask_storeu_epi32(p + 16, w.sixteenth(1) & 0x5555, _mm512_permutexvar_epi32(high, v));
    return;
  }
  // Lanes 0, 4, 8, 12 of the k-th 16 words take v's lanes 4k to 4k + 3.
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0);
  for (int k = 0; k < 4; ++k) {
    const __m512i from = _mm512_add_epi32(spread, _mm512_set1_epi32(4 * k));
    _mm512_mask_storeu_epi32(p + 16 * k, w.sixteenth(k) & 0x1111, _mm512_permutexvar_epi32(from, v));
  }
}

/// The batch's targets' values at p[stride * j] as two vectors of 8 doubles (lanes 0-7, 8-15).
ZCOLL_ALWAYS_INLINE void load_run_values(const float* p, const batch_words& w, __m512d& low, __m512d& high) {
  const __m512 v = _mm512_castsi512_ps(load_run_words(reinterpret_cast<const std::uint32_t*>(p), w));
  low = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  high = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
ZCOLL_ALWAYS_INLINE void load_run_values(const double* p, const batch_words& w, __m512d& low, __m512d& high) {
  const auto part = [&](int k) { return _mm512_maskz_loadu_pd(w.eighth(k), p + 8 * k); };
  if (w.stride == 1) {
    low = part(0);
    high = part(1);
  } else if (w.stride == 2) {
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    low = _mm512_permutex2var_pd(part(0), even, part(1));
    high = _mm512_permutex2var_pd(part(2), even, part(3));
  } else {
    // Every fourth double of two vectors into the low half, then two low halves.
    const __m512i fourth = _mm512_setr_epi64(0, 4, 8, 12, 0, 0, 0, 0), halves = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
    const auto quarter = [&](int k) { return _mm512_permutex2var_pd(part(2 * k), fourth, part(2 * k + 1)); };
    low = _mm512_permutex2var_pd(quarter(0), halves, quarter(1));
    high = _mm512_permutex2var_pd(quarter(2), halves, quarter(3));
  }
}

/// The lanes whose word, read as a signed code, lies in (-2^26, 2^26).
ZCOLL_ALWAYS_INLINE __mmask16 small_codes(__m512i q) {
  return _mm512_cmplt_epu32_mask(_mm512_add_epi32(q, _mm512_set1_epi32(1 << 26)), _mm512_set1_epi32(1 << 27));
}

/// The predictions of a batch of a run of form F from chunk index i on, in 32-bit lanes; `fits` is
/// cleared where a neighbour's code is too large for them to equal predict_in_run's.
template <run_form F>
ZCOLL_ALWAYS_INLINE __m512i predict_run_batch(const std::uint32_t* recon, const interpolation_run& r, std::int64_t i,
                                              const batch_words& w, bool& fits) {
  const auto q = [&](unsigned k) { return load_run_words(recon + i + r.reach[k], w); };
  const auto times = [](__m512i x, int shift) { return _mm512_slli_epi32(x, shift); };
  __m512i p;
  __mmask16 small;
  if constexpr (F == run_form::cubic) {
    const __m512i aa = q(0), a = q(1), b = q(2), bb = q(3);
    const __m512i sum = _mm512_add_epi32(a, b);
    const __m512i nine = _mm512_add_epi32(times(sum, 3), sum);
    p = _mm512_srai_epi32(_mm512_add_epi32(_mm512_sub_epi32(nine, _mm512_add_epi32(aa, bb)), _mm512_set1_epi32(8)), 4);
    small = small_codes(aa) & small_codes(a) & small_codes(b) & small_codes(bb);
  } else if constexpr (F == run_form::without_last) {
    const __m512i aa = q(0), a = q(1), b = q(2);
    const __m512i six_a = _mm512_add_epi32(times(a, 2), times(a, 1)), three_b = _mm512_add_epi32(times(b, 1), b);
    p = _mm512_srai_epi32(_mm512_add_epi32(_mm512_sub_epi32(_mm512_add_epi32(six_a, three_b), aa), _mm512_set1_epi32(4)), 3);
    small = small_codes(aa) & small_codes(a) & small_codes(b);
  } else if constexpr (F == run_form::without_first) {
    const __m512i a = q(1), b = q(2), bb = q(3);
    const __m512i three_a = _mm512_add_epi32(times(a, 1), a), six_b = _mm512_add_epi32(times(b, 2), times(b, 1));
    p = _mm512_srai_epi32(_mm512_add_epi32(_mm512_sub_epi32(_mm512_add_epi32(three_a, six_b), bb), _mm512_set1_epi32(4)), 3);
    small = small_codes(a) & small_codes(b) & small_codes(bb);
  } else if constexpr (F == run_form::linear) {
    const __m512i a = q(1), b = q(2);
    p = _mm512_srai_epi32(_mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_set1_epi32(1)), 1);
    small = small_codes(a) & small_codes(b);
  } else {
    p = q(1);
    small = 0xFFFF;
  }
  fits = fits && small == 0xFFFF;
  return p;
}

/// Batches are taken in groups: every batch of a group is predicted (its words loaded) before the first is
/// stored. A stride-2 step along a row stores its points between the neighbours that the next batch
/// loads, and a load that overlaps a masked store still in flight waits until the store is written (it
/// is not forwarded): a batch at a time, the inverse walk took 1.27 ns a value on ECHAM5's planes on the
/// Zen 4 VM, in groups 1.08.
inline constexpr std::int64_t batches_per_group = 8;

/// A group's batches: batch k's first point is at chunk index first + k * 16 * stride; the last batch
/// has `last_points` points.
struct batch_group {
  std::int64_t first;
  std::int64_t stride;
  std::int64_t batches;
  std::int64_t last_points;

  std::int64_t points(std::int64_t k) const { return k + 1 == batches ? last_points : run_batch; }
  std::int64_t first_of(std::int64_t k) const { return first + k * run_batch * stride; }
  batch_words words(std::int64_t k) const { return batch_words::of(stride, points(k)); }
};

/// Calls group.template operator()<F>(batch_group) for each group of the run's batches: 16 points a
/// batch, the last one the run's last count % 16.
template <class Group>
ZCOLL_ALWAYS_INLINE void for_each_group(const interpolation_run& r, Group group) {
  with_run_form(r.form, [&]<run_form F>() ZCOLL_LAMBDA_ALWAYS_INLINE {
    constexpr std::int64_t group_points = batches_per_group * run_batch;
    for (std::int64_t j = 0; j < r.count; j += group_points) {
      const std::int64_t points = std::min(group_points, r.count - j);
      const std::int64_t batches = (points + run_batch - 1) / run_batch;
      group.template operator()<F>(
          batch_group{r.first + j * r.stride, r.stride, batches, points - (batches - 1) * run_batch});
    }
  });
}

/// The points of batch k of a group a point at a time (for_each_in_run).
template <class Point>
ZCOLL_ALWAYS_INLINE void batch_by_points(const interpolation_run& r, const std::uint32_t* recon, const batch_group& g,
                                         std::int64_t k, Point point) {
  interpolation_run part = r;
  part.first = g.first_of(k);
  part.count = g.points(k);
  for_each_in_run(part, recon, point);
}

/// The inverse walk's run: values[i] = p + width * residual at each point (residuals in place, the
/// reconstructions so far around them), as inverse_chunk's point function `point` does.
template <class Point>
void inverse_run_avx512(const interpolation_run& r, std::uint32_t* values, std::int64_t width, Point point) {
  const __m512i w = _mm512_set1_epi32(static_cast<int>(width));
  for_each_group(r, [&]<run_form F>(const batch_group& g) ZCOLL_LAMBDA_ALWAYS_INLINE {
    __m512i reconstructed[batches_per_group];
    bool fits[batches_per_group];
    for (std::int64_t k = 0; k < g.batches; ++k) {
      const std::int64_t i = g.first_of(k);
      fits[k] = true;
      const __m512i p = predict_run_batch<F>(values, r, i, g.words(k), fits[k]);
      reconstructed[k] = _mm512_add_epi32(p, _mm512_mullo_epi32(w, load_run_words(values + i, g.words(k))));
    }
    for (std::int64_t k = 0; k < g.batches; ++k) {
      if (fits[k]) {
        store_run_words(values + g.first_of(k), g.words(k), reconstructed[k]);
      } else {
        batch_by_points(r, values, g, k, point);
      }
    }
  });
}

/// The forward walk's run: each point's residual nearbyint((target - p) / width) into `residuals` and its
/// reconstruction p + width * residual into `recon`, as forward_chunk's point function `point` does.
template <class V, class Point>
void forward_run_avx512(const interpolation_run& r, const chunk_targets<V>& targets, std::int32_t* residuals,
                        std::uint32_t* recon, std::int64_t width, double inverse, Point point) {
  const __m512i w = _mm512_set1_epi32(static_cast<int>(width));
  const __m512d steps_per_unit = _mm512_set1_pd(targets.steps_per_unit), by = _mm512_set1_pd(inverse);
  const __m512d limit = _mm512_set1_pd(static_cast<double>(1 << 30));
  // A batch's points among the 64 words from its first: every one, every other or every fourth.
  const std::uint64_t point_words = r.stride == 1   ? ~std::uint64_t{0}
                                    : r.stride == 2 ? 0x5555'5555'5555'5555u
                                                    : 0x1111'1111'1111'1111u;
  for_each_group(r, [&]<run_form F>(const batch_group& g) ZCOLL_LAMBDA_ALWAYS_INLINE {
    __m512i predicted[batches_per_group];
    bool fits[batches_per_group];
    for (std::int64_t k = 0; k < g.batches; ++k) {
      const std::int64_t i = g.first_of(k);
      fits[k] = (targets.exact_from(static_cast<std::size_t>(i)) & g.words(k).read & point_words) == 0;
      predicted[k] = predict_run_batch<F>(recon, r, i, g.words(k), fits[k]);
    }
    for (std::int64_t k = 0; k < g.batches; ++k) {
      const std::int64_t i = g.first_of(k);
      const batch_words words = g.words(k);
      const __m512i p = predicted[k];
      __m512d low, high;
      load_run_values(targets.values + i, words, low, high);
      // (x steps_per_unit - p) / width, the product and the difference rounded once (target_minus).
      const __m512d d_low =
          _mm512_mul_pd(_mm512_fmsub_pd(low, steps_per_unit, _mm512_cvtepi32_pd(_mm512_castsi512_si256(p))), by);
      const __m512d d_high =
          _mm512_mul_pd(_mm512_fmsub_pd(high, steps_per_unit, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(p, 1))), by);
      const __mmask8 in_range = _mm512_cmp_pd_mask(_mm512_abs_pd(d_low), limit, _CMP_LT_OQ) &
                                _mm512_cmp_pd_mask(_mm512_abs_pd(d_high), limit, _CMP_LT_OQ);
      if (!fits[k] || in_range != 0xFF) {
        batch_by_points(r, recon, g, k, point);
        continue;
      }
      // Rounded in the current direction (nearest, ties to even), as nearbyint does.
      const __m512i residual =
          _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtpd_epi32(d_low)), _mm512_cvtpd_epi32(d_high), 1);
      store_run_words(reinterpret_cast<std::uint32_t*>(residuals) + i, words, residual);
      store_run_words(recon + i, words, _mm512_add_epi32(p, _mm512_mullo_epi32(w, residual)));
    }
  });
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // ZCOLL_HAS_AVX512

}  // namespace zcoll::predict::detail
