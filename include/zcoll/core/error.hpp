#pragma once
/// The one exception hierarchy of zcoll. Messages name the argument, the value and what was expected.

#include <stdexcept>
#include <string>

namespace zcoll {

/// Base of every exception zcoll throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A compressed stream is malformed: truncated, corrupted, or of another codec or value type.
/// Decoders raise it instead of reading or writing out of bounds.
class format_error : public error {
 public:
  explicit format_error(const std::string& what) : error("zcoll format error: " + what) {}
};

/// A caller passed an argument outside what the call accepts.
class argument_error : public error {
 public:
  explicit argument_error(const std::string& what) : error("zcoll argument error: " + what) {}
};

/// A transport (MPI, in-process) failed to move bytes.
class transport_error : public error {
 public:
  explicit transport_error(const std::string& what) : error("zcoll transport error: " + what) {}
};

}  // namespace zcoll
