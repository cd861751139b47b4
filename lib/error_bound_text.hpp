#pragma once
// An error bound written as text, as the environment of libzcoll-mpi.so and the C API take it:
// "rel:1e-4" (a fraction of the value range) or "abs:0.01".

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"

namespace zcoll::lib {

/// The bound `text` writes; argument_error naming `what` (a variable or argument name), the text and the
/// form expected, for anything else.
inline bound parse_error_bound(std::string_view what, std::string_view text) {
  const auto fail = [&]() -> bound {
    throw argument_error(std::string(what) + "='" + std::string(text) +
                         "' is not valid, expected rel:<fraction> or abs:<value>, a finite number > 0 (rel below 1), "
                         "e.g. rel:1e-4");
  };
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return fail();
  const std::string_view mode = text.substr(0, colon);
  const std::string number(text.substr(colon + 1));
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(number.c_str(), &end);
  const bool valid = !number.empty() && errno == 0 && end == number.c_str() + number.size() && std::isfinite(v) && v > 0;
  if (!valid || (mode != "rel" && mode != "abs") || (mode == "rel" && v >= 1)) return fail();
  return mode == "rel" ? relative(v) : absolute(v);
}

}  // namespace zcoll::lib
