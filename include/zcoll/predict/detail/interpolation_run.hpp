#pragma once
/// A run of the interpolation walk: points of one step, evenly spaced in the chunk, whose neighbours all
/// lie in the chunk, so that one prediction form serves them all without checks. The walk hands its runs
/// to the caller whole (most of a chunk's points are in runs), which predicts and applies them a point at
/// a time (for_each_in_run) or 16 at a time (interpolation_avx512.hpp); both give the same values.

#include <array>
#include <cstddef>
#include <cstdint>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::predict::detail {

/// How a run's points are predicted from their neighbours at -3s, -s, +s and +3s along the step's axis
/// (predict/interpolation.hpp has the formulas): all four, the three-point forms where the one at +3s or
/// at -3s is missing, -s and +s, or -s alone.
enum class run_form : std::uint8_t { cubic, without_last, without_first, linear, first_only };

/// `count` points at chunk indices first + stride * j, with neighbour k (-3s, -s, +s, +3s) at
/// first + reach[k] + stride * j; the form reads only the neighbours it names.
struct interpolation_run {
  std::int64_t first = 0;
  std::int64_t stride = 1;
  std::int64_t count = 0;
  run_form form = run_form::linear;
  std::array<std::int64_t, 4> reach{};
};

/// The prediction of the point at chunk index i of a run of form F, in 64-bit integers of the 32-bit codes.
template <run_form F>
ZCOLL_ALWAYS_INLINE std::int64_t predict_in_run(const std::uint32_t* recon, const std::array<std::int64_t, 4>& reach,
                                                std::int64_t i) {
  const auto q = [&](unsigned k) -> std::int64_t { return static_cast<std::int32_t>(recon[i + reach[k]]); };
  if constexpr (F == run_form::cubic) {
    return (-q(0) + 9 * q(1) + 9 * q(2) - q(3) + 8) >> 4;
  } else if constexpr (F == run_form::without_last) {
    return (-q(0) + 6 * q(1) + 3 * q(2) + 4) >> 3;
  } else if constexpr (F == run_form::without_first) {
    return (3 * q(1) + 6 * q(2) - q(3) + 4) >> 3;
  } else if constexpr (F == run_form::linear) {
    return (q(1) + q(2) + 1) >> 1;
  } else {
    return q(1);
  }
}

/// body.template operator()<F>() for the form F that `form` names.
template <class Body>
ZCOLL_ALWAYS_INLINE void with_run_form(run_form form, Body body) {
  switch (form) {
    case run_form::cubic: body.template operator()<run_form::cubic>(); break;
    case run_form::without_last: body.template operator()<run_form::without_last>(); break;
    case run_form::without_first: body.template operator()<run_form::without_first>(); break;
    case run_form::linear: body.template operator()<run_form::linear>(); break;
    case run_form::first_only: body.template operator()<run_form::first_only>(); break;
  }
}

/// `point(chunk index, prediction)` for each of the run's points, in order.
template <class Point>
ZCOLL_ALWAYS_INLINE void for_each_in_run(const interpolation_run& r, const std::uint32_t* recon, Point point) {
  with_run_form(r.form, [&]<run_form F>() ZCOLL_LAMBDA_ALWAYS_INLINE {
    for (std::int64_t j = 0, i = r.first; j < r.count; ++j, i += r.stride) {
      point(static_cast<std::size_t>(i), predict_in_run<F>(recon, r.reach, i));
    }
  });
}

/// The forward walk's targets as the pipeline has them: value i in code steps, values[i] *
/// steps_per_unit, or for a lane stored exactly (bit i % 32 of exact[i / 32]) its code, codes[i]. A
/// callable target like any other, which the vector runs also read 16 lanes at a time. Where the build
/// has FMA the product and the prediction's subtraction are rounded once (target_minus), in the scalar
/// and the vector form alike, which is what GCC's contraction of the plain expression gave before.
template <floating_value V>
struct chunk_targets {
  const V* values;
  double steps_per_unit;
  const block_mask* exact;  // one mask a block of the chunk
  std::size_t blocks;       // the chunk's blocks
  const std::int32_t* codes;

  bool is_exact(std::size_t i) const { return (exact[i / block_values] >> (i % block_values)) & 1u; }
  /// Bit k set: point i + k is stored exactly (k < 64; 0 past the chunk).
  std::uint64_t exact_from(std::size_t i) const {
    const std::size_t block = i / block_values, bit = i % block_values;
    std::uint64_t lanes = exact[block] >> bit;
    if (block + 1 < blocks) lanes |= std::uint64_t{exact[block + 1]} << (block_values - bit);
    if (block + 2 < blocks && bit > 0) lanes |= std::uint64_t{exact[block + 2]} << (2 * block_values - bit);
    return lanes;
  }
  double operator()(std::size_t i) const {
    return is_exact(i) ? static_cast<double>(codes[i]) : static_cast<double>(values[i]) * steps_per_unit;
  }
  /// target(i) - p.
  double target_minus(std::size_t i, double p) const {
    if (is_exact(i)) return static_cast<double>(codes[i]) - p;
#if defined(__FMA__) || ZCOLL_HAS_AVX512
    return __builtin_fma(static_cast<double>(values[i]), steps_per_unit, -p);
#else
    return static_cast<double>(values[i]) * steps_per_unit - p;
#endif
  }
};

/// Whether a forward walk's target is the pipeline's (whose runs the vector form can read).
template <class Target>
inline constexpr bool is_chunk_targets = false;
template <floating_value V>
inline constexpr bool is_chunk_targets<chunk_targets<V>> = true;

}  // namespace zcoll::predict::detail
