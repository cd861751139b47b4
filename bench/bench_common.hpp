#pragma once
// What both zcoll-bench commands need: option parsing helpers and the median of timings.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace zcoll_bench {

/// The non-empty parts of `text` between separators.
inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

/// "4096", "64K", "1M", "2G" (binary multiples, as nccl-tests reads them), 1 byte to 1 TiB;
/// std::invalid_argument naming `option` otherwise.
inline std::size_t parse_size(const std::string& text, const char* option) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string suffix = text.substr(digits);
  const std::size_t unit = suffix.empty() ? 1
                           : suffix == "K" || suffix == "k" ? std::size_t{1} << 10
                           : suffix == "M" || suffix == "m" ? std::size_t{1} << 20
                           : suffix == "G" || suffix == "g" ? std::size_t{1} << 30
                                                            : 0;
  constexpr std::size_t largest = std::size_t{1} << 40;
  const std::size_t bytes = digits == 0 || digits > 13 ? 0 : std::stoull(text.substr(0, digits));
  if (unit == 0 || bytes == 0 || bytes > largest / unit) {
    throw std::invalid_argument(std::string(option) + ": '" + text +
                                "' is not a size from 1 byte to 1 TiB (a number with an optional K, M or G)");
  }
  return bytes * unit;
}

/// A CSV field: quoted (RFC 4180) when it holds a comma, a quote or a line break.
inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

/// A JSON string (RFC 8259): quoted, with quotes, backslashes and control characters escaped.
inline std::string json_string(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string quoted = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (byte < 0x20) {
      quoted += "\\u00";
      quoted += hex[byte >> 4];
      quoted += hex[byte & 0xF];
    } else {
      quoted += c;
    }
  }
  return quoted + '"';
}

/// A JSON number, or null for NaN and ±Inf (which JSON cannot hold).
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

/// The whole of `text` as a number; std::invalid_argument naming `option` otherwise.
inline double parse_number(const std::string& text, const char* option) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw std::invalid_argument(std::string(option) + ": '" + text + "' is not a number");
  }
  return value;
}

inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

}  // namespace zcoll_bench
