#pragma once
/// The error bound as a value: zcoll::absolute(0.01) or zcoll::relative(1e-4) (relative to the value range).

#include <cmath>
#include <cstdio>
#include <string>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll {

/// How the bound is stated: in the data's units, or as a fraction of the value range max - min
/// (taken over the finite values that are not the declared fill value, as SZ3's REL mode does).
enum class bound_mode : unsigned char { absolute, relative };

/// A pointwise bound |x - x'| <= eb. `value` 0 means lossless.
struct bound {
  bound_mode mode = bound_mode::absolute;
  double value = 0.0;

  friend bool operator==(const bound&, const bound&) = default;
};

/// |x - x'| <= `eb`, in the data's units.
inline bound absolute(double eb) {
  if (!(eb >= 0.0) || !std::isfinite(eb)) {
    throw argument_error("absolute: error bound " + std::to_string(eb) + " must be finite and >= 0");
  }
  return {bound_mode::absolute, eb};
}

/// |x - x'| <= `fraction` * (max - min) of the input's finite, non-fill values.
inline bound relative(double fraction) {
  if (!(fraction >= 0.0) || !std::isfinite(fraction)) {
    throw argument_error("relative: fraction " + std::to_string(fraction) + " must be finite and >= 0");
  }
  return {bound_mode::relative, fraction};
}

/// The absolute bound that `b` means for data whose range is `value_range`, rounded down so the
/// stated guarantee holds exactly. A range that is not finite (values near ±max of the type) gives a
/// bound that no quantizer step can honour, so the codec falls back to storing values exactly.
ZCOLL_HOST_DEVICE inline double absolute_bound(const bound& b, double value_range) {
  if (b.mode == bound_mode::absolute) return b.value;
  if (!(value_range > 0.0)) return 0.0;
  const double eb = b.value * value_range;
  if (!std::isfinite(eb)) return eb;
  // fraction * range is rounded to nearest; step down one ulp so that eb <= fraction * range exactly.
  return eb > 0.0 ? std::nextafter(eb, 0.0) : 0.0;
}

/// "abs 0.01", "rel 1e-04".
inline std::string to_string(const bound& b) {
  char text[32];
  std::snprintf(text, sizeof text, "%s %g", b.mode == bound_mode::absolute ? "abs" : "rel", b.value);
  return text;
}

}  // namespace zcoll
