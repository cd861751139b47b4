#pragma once
/// DCT-DP's threshold life span (Algorithm 1, lines 3-8): tau is recomputed only on every
/// threshold_life_span-th call and reused in between, because the top-K threshold of a layer's gradient
/// drifts slowly (the paper's Fig. 2: within 26 % of its running mean at 95 % sparsity) while finding it
/// costs a pass over the tensor. The paper trains with a life span of 1000.
///
/// One schedule follows one tensor (DCT-DP keeps tau per layer). A call whose tensor has another length
/// or value type than the one tau was computed for starts the schedule over: a threshold of another
/// tensor means nothing.
///
///     zcoll::sparsify::threshold_schedule schedule{{.keep_fraction = 0.01, .threshold_life_span = 1000}};
///     for (int step = 0; ; ++step) {
///       float tau = schedule.next(zcoll::exec::Host{}, std::span<const float>(grad));  // sorts on step 0, 1000, ...
///       ...
///     }

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/sparsify/laplace.hpp"
#include "zcoll/sparsify/topk_threshold.hpp"

namespace zcoll::sparsify {

/// How tau is found when it is recomputed.
enum class threshold_method : std::uint8_t {
  exact,    ///< the K-th largest |x| (topk_threshold.hpp)
  laplace,  ///< the Laplace estimate (laplace.hpp); falls back to exact when the fit is not usable
};

inline const char* to_string(threshold_method method) {
  return method == threshold_method::exact ? "exact" : "laplace";
}

struct threshold_schedule_config {
  /// Fraction of the entries kept, in (0, 1]: 0.01 keeps the top 1 % (the paper's 99 % sparsity).
  double keep_fraction = 0.01;
  /// Calls a threshold lives for, >= 1: tau is recomputed on calls 0, L, 2L, ... (1 = every call).
  std::uint32_t threshold_life_span = 1;
  threshold_method method = threshold_method::exact;

  friend bool operator==(const threshold_schedule_config&, const threshold_schedule_config&) = default;
};

/// What one call of threshold_schedule::next did.
struct threshold_decision {
  double threshold = 0.0;        ///< tau, exactly (an f32 tau is held in double without rounding)
  bool recomputed = false;       ///< tau was computed on this call (else reused)
  threshold_method method_used = threshold_method::exact;  ///< how the current tau was found
  std::uint64_t call_index = 0;  ///< this call's index since the schedule (re)started
};

/// The stateful threshold of one tensor; not thread-safe (TopK guards its own with a mutex).
class threshold_schedule {
 public:
  explicit threshold_schedule(threshold_schedule_config config = {}) : config_(config) { check(config_); }

  /// argument_error unless `config` is one a schedule can follow (what the constructor checks).
  static void check(const threshold_schedule_config& config) {
    check_keep_fraction(config.keep_fraction, "threshold_schedule");
    if (config.threshold_life_span == 0) {
      throw argument_error("threshold_schedule: threshold_life_span 0 must be >= 1 (calls a threshold lives for)");
    }
  }

  const threshold_schedule_config& config() const { return config_; }

  /// The threshold for this call on `x`: recomputed on calls 0, L, 2L, ... of the current tensor,
  /// otherwise the previous one. Returns what the call did; the threshold as T is
  /// static_cast<T>(decision.threshold), which is exact.
  template <floating_value T>
  threshold_decision next(const exec::Host& exec, std::span<const T> x) {
    if (!has_tensor_ || tensor_type_ != value_type_of<T> || tensor_count_ != x.size()) restart<T>(x.size());
    const std::uint64_t call = calls_++;
    if (call % config_.threshold_life_span == 0) {
      last_.threshold = static_cast<double>(compute<T>(exec, x));
      last_.recomputed = true;
    } else {
      last_.recomputed = false;
    }
    last_.call_index = call;
    return last_;
  }

  /// The decision of the last call (threshold 0 and call_index 0 before any).
  const threshold_decision& last() const { return last_; }

  /// Forgets tau: the next call recomputes it.
  void reset() { has_tensor_ = false; }

 private:
  template <floating_value T>
  void restart(std::size_t count) {
    has_tensor_ = true;
    tensor_type_ = value_type_of<T>;
    tensor_count_ = count;
    calls_ = 0;
  }

  template <floating_value T>
  T compute(const exec::Host& exec, std::span<const T> x) {
    if (config_.method == threshold_method::laplace) {
      const laplace_fit fit = fit_laplace(exec, x, moment_scratch_);
      if (fit.usable()) {
        last_.method_used = threshold_method::laplace;
        return laplace_threshold<T>(fit, config_.keep_fraction);
      }
    }
    last_.method_used = threshold_method::exact;
    if constexpr (sizeof(T) == 4) {
      return topk_threshold(exec, x, config_.keep_fraction, key_scratch_f32_);
    } else {
      return topk_threshold(exec, x, config_.keep_fraction, key_scratch_f64_);
    }
  }

  threshold_schedule_config config_;
  threshold_decision last_;
  bool has_tensor_ = false;
  value_type tensor_type_ = value_type::f32;
  std::size_t tensor_count_ = 0;
  std::uint64_t calls_ = 0;
  // Scratch kept between calls, so that a recomputation allocates nothing once warm.
  std::vector<std::uint32_t> key_scratch_f32_;
  std::vector<std::uint64_t> key_scratch_f64_;
  std::vector<detail::shifted_moments> moment_scratch_;
};

}  // namespace zcoll::sparsify
