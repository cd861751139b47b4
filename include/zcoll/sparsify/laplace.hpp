#pragma once
/// The statistical threshold estimate of DCT (§2.2 and Appendix B): fit a Laplace distribution to the
/// tensor in one pass and take tau from its quantile function, instead of selecting the K-th largest |x|.
///
/// The paper fits "the mean and variance of the Laplace random variable R" and solves P(R >= tau) = eta.
/// Selecting by magnitude needs the two-sided tail, so here tau solves P(|R| >= tau) = keep_fraction for
/// R ~ Laplace(mu, b) with mu = the mean and b = sigma / sqrt(2) (Var R = 2 b^2), over the finite entries.
/// Closed forms, with m = |mu| and c = exp(-m / b):
/// - tau >= m:  P(|R| >= tau) = exp(-(tau - m) / b) (1 + c^2) / 2,
///              so tau = m + b ln((1 + c^2) / (2 keep_fraction))      when keep_fraction <= (1 + c^2) / 2;
/// - tau <  m:  P(|R| >= tau) = 1 - (c / 2)(u - 1 / u) with u = exp(tau / b),
///              so tau = m + b ln((1 - keep_fraction) + sqrt((1 - keep_fraction)^2 + c^2))   otherwise.
/// The two agree at tau = m, and tau = 0 at keep_fraction = 1. A constant tensor (b = 0) gives tau = m.
///
/// The estimate is approximate by design: the fraction actually kept is the empirical tail of the data
/// at tau, which matches keep_fraction only as far as the data are Laplace (the paper's Fig. 6b shows the
/// occupancy drifting from 25 % to 13 % during training). TopK reports the fraction it obtained.
///
///     auto fit = zcoll::sparsify::fit_laplace(zcoll::exec::Host{}, std::span<const float>(activations));
///     if (fit.usable()) tau = zcoll::sparsify::laplace_magnitude_threshold(fit, 0.05);

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/sparsify/magnitude_key.hpp"
#include "zcoll/sparsify/topk_threshold.hpp"

namespace zcoll::sparsify {

/// Laplace(location, scale) fitted to a tensor's finite entries by their mean and variance.
struct laplace_fit {
  double location = 0.0;          ///< mu, the mean
  double scale = 0.0;             ///< b = sqrt(variance / 2)
  std::size_t finite_count = 0;   ///< entries the fit saw (NaN and ±Inf are left out)

  /// False when there were no finite entries or the moments overflowed (|x| beyond ~1e154 in f64):
  /// then the caller needs the exact threshold instead.
  bool usable() const { return finite_count > 0 && std::isfinite(location) && std::isfinite(scale); }
};

namespace detail {

/// Sums of a block of entries, shifted by one entry of the tensor so that a large mean does not cancel
/// the variance away: Σd and Σd² with d = x - shift over the finite x.
struct shifted_moments {
  double sum = 0.0;
  double sum_of_squares = 0.0;
  std::size_t count = 0;
};

/// Values per block of moments. Blocks are summed in index order whatever the thread count, so the fit
/// (and so tau) does not depend on exec.threads.
inline constexpr std::size_t moment_block_values = 16384;

/// The moments of x[0, n), n <= moment_block_values; 16 accumulator lanes, so the loop vectorizes
/// without reassociating a single sum.
template <floating_value T>
shifted_moments moments_of(const T* x, std::size_t n, double shift) {
  constexpr std::size_t lanes = 16;
  double sum[lanes] = {}, squares[lanes] = {};
  std::uint64_t count[lanes] = {};
  // Non-finite entries contribute d = +0: the difference is computed for every lane and masked away
  // by bits, which keeps the loop free of branches (GCC vectorizes it; a ?: on doubles it did not).
  auto add = [&](std::size_t j, T v) {
    const std::uint64_t finite = magnitude_key(v) < infinity_key<T> ? 1u : 0u;
    const double raw = static_cast<double>(v) - shift;
    const double d = std::bit_cast<double>(std::bit_cast<std::uint64_t>(raw) & (std::uint64_t{0} - finite));
    sum[j] += d;
    squares[j] += d * d;
    count[j] += finite;
  };
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) add(j, x[i + j]);
  }
  for (std::size_t j = 0; i + j < n; ++j) add(j, x[i + j]);
  shifted_moments m;
  for (std::size_t j = 0; j < lanes; ++j) {
    m.sum += sum[j];
    m.sum_of_squares += squares[j];
    m.count += static_cast<std::size_t>(count[j]);
  }
  return m;
}

}  // namespace detail

/// Fits Laplace(mu, b) to the finite entries of x in one pass (mean and variance). `scratch` holds one
/// partial sum per block of 16384 values and may be reused between calls.
template <floating_value T>
laplace_fit fit_laplace(const exec::Host& exec, std::span<const T> x, std::vector<detail::shifted_moments>& scratch) {
  const auto first_finite = std::find_if(x.begin(), x.end(), [](T v) { return magnitude_key(v) < infinity_key<T>; });
  if (first_finite == x.end()) return {};
  const double shift = static_cast<double>(*first_finite);
  const std::size_t blocks = x.size() / detail::moment_block_values + (x.size() % detail::moment_block_values != 0);
  scratch.resize(blocks);
  exec::for_each_range(exec, blocks, [&](std::size_t, std::size_t first, std::size_t last) {
    for (std::size_t b = first; b < last; ++b) {
      const std::size_t begin = b * detail::moment_block_values;
      scratch[b] = detail::moments_of(x.data() + begin, std::min(detail::moment_block_values, x.size() - begin), shift);
    }
  });
  detail::shifted_moments total;
  for (const auto& m : scratch) {
    total.sum += m.sum;
    total.sum_of_squares += m.sum_of_squares;
    total.count += m.count;
  }
  // Overflowed moments (|x| beyond ~1e154 in f64) would turn into a variance of NaN or 0 below.
  if (!std::isfinite(total.sum) || !std::isfinite(total.sum_of_squares)) {
    return {shift, std::numeric_limits<double>::infinity(), total.count};
  }
  const double n = static_cast<double>(total.count);
  const double mean_shift = total.sum / n;
  const double variance = std::max(0.0, total.sum_of_squares / n - mean_shift * mean_shift);
  return {shift + mean_shift, std::sqrt(variance / 2.0), total.count};
}

/// fit_laplace with a scratch buffer of its own.
template <floating_value T>
laplace_fit fit_laplace(const exec::Host& exec, std::span<const T> x) {
  std::vector<detail::shifted_moments> scratch;
  return fit_laplace(exec, x, scratch);
}

/// tau with P(|R| >= tau) = keep_fraction for R ~ Laplace(fit.location, fit.scale); see the file comment.
/// `fit` must be usable().
inline double laplace_magnitude_threshold(const laplace_fit& fit, double keep_fraction) {
  check_keep_fraction(keep_fraction, "laplace_magnitude_threshold");
  const double m = std::abs(fit.location), b = fit.scale;
  if (keep_fraction >= 1.0) return 0.0;
  if (!(b > 0.0)) return m;
  const double c = std::exp(-m / b);
  const double tail_at_m = (1.0 + c * c) / 2.0;  // P(|R| >= m)
  if (keep_fraction <= tail_at_m) return m + b * std::log(tail_at_m / keep_fraction);
  const double drop = 1.0 - keep_fraction;
  return std::max(0.0, m + b * std::log(drop + std::sqrt(drop * drop + c * c)));
}

/// The threshold as a value of T: the estimate rounded to nearest (+Inf when it exceeds T's range; it
/// then keeps only ±Inf and NaN).
template <floating_value T>
T laplace_threshold(const laplace_fit& fit, double keep_fraction) {
  const double tau = laplace_magnitude_threshold(fit, keep_fraction);
  // Beyond T's largest finite value (plus half an ulp) the conversion would be undefined: say +Inf.
  if (tau > static_cast<double>(std::numeric_limits<T>::max())) {
    const T rounded = static_cast<T>(std::min(tau, static_cast<double>(std::numeric_limits<T>::max())));
    return std::nextafter(rounded, std::numeric_limits<T>::infinity());
  }
  return static_cast<T>(tau);
}

}  // namespace zcoll::sparsify
