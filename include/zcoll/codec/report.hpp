#pragma once
/// What a codec did to one input: ratio and the measured error, for callers who ask.

#include <bit>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/concepts.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

struct codec_report {
  std::string codec;
  std::size_t input_bytes = 0;
  std::size_t compressed_bytes = 0;
  double ratio = 0.0;        ///< input_bytes / compressed_bytes
  double error_bound = 0.0;  ///< the absolute bound the stream states
  /// The fill value the stream declares: the value of the data's type nearest to the configured one
  /// (core/fill_value.hpp; -1e34 on f32 data is -9.99999979e33), or nothing.
  std::optional<double> fill_value;
  error_stats error;
};

/// Compresses and decompresses `in` with `codec` and measures the result against it.
///
///     auto r = zcoll::evaluate(zcoll::FZLight{{.error_bound = zcoll::relative(1e-3)}}, zcoll::exec::Host{}, data);
///     // r.ratio, r.error.max_abs_error, r.error.bound_held()
template <codec C, floating_value T>
codec_report evaluate(const C& codec, const exec::Host& exec, std::span<const T> in) {
  std::vector<std::byte> stream(codec.template max_compressed_size<T>(in.size()));
  const auto written = codec.compress(exec, in, std::span<std::byte>(stream));
  std::vector<T> restored(in.size());
  codec.decompress(exec, written, restored);
  const stream_header header = read_stream_header(written);
  std::optional<bits_of<T>> fill;
  if (header.has_fill_value) fill = static_cast<bits_of<T>>(header.fill_bits);
  codec_report report;
  if (fill) report.fill_value = fill_value_of<T>(*fill);
  report.codec = C::name();
  report.input_bytes = in.size_bytes();
  report.compressed_bytes = written.size();
  report.ratio = static_cast<double>(in.size_bytes()) / static_cast<double>(written.size());
  report.error_bound = header.error_bound;
  report.error = measure_error(in, std::span<const T>(restored), header.error_bound, fill);
  return report;
}

}  // namespace zcoll
