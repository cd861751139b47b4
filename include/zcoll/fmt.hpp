#pragma once
/// fmt formatters for zcoll's values and reports: include it in a program that links fmt
/// (`find_package(fmt)`, `fmt::fmt`); nothing else in zcoll includes it or needs fmt.
///
///     #include <zcoll/fmt.hpp>
///     fmt::print("{}\n", zcoll::evaluate(codec, zcoll::exec::Host{}, std::span<const float>(field)));
///     // linear+lorenzo1d+bitshuffle: 4194304 -> 1142578 bytes (ratio 3.67), bound 0.00441 held
///     //   (max error 0.00441, PSNR 84.77 dB, NRMSE 5.78e-05)
///     fmt::print("{}\n", coll.last_report());
///
/// Each formatter takes the format specification of a string (`{:>60}`, say) and applies it to the whole.

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "zcoll/codec/report.hpp"
#include "zcoll/collective/collective_report.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::fmt_detail {

/// The formatters below: a text, then the string's format specification applied to it.
struct text_formatter : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto write(const std::string& text, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(text, ctx);
  }
};

}  // namespace zcoll::fmt_detail

/// "abs 0.01", "rel 0.0001": zcoll::to_string's form.
template <>
struct fmt::formatter<zcoll::bound> : zcoll::fmt_detail::text_formatter {
  template <class FormatContext>
  auto format(const zcoll::bound& b, FormatContext& ctx) const {
    return write(zcoll::to_string(b), ctx);
  }
};

/// "f32", "f64".
template <>
struct fmt::formatter<zcoll::value_type> : zcoll::fmt_detail::text_formatter {
  template <class FormatContext>
  auto format(zcoll::value_type type, FormatContext& ctx) const {
    return write(zcoll::to_string(type), ctx);
  }
};

/// "max error 0.00441, PSNR 84.77 dB, NRMSE 5.78e-05", and what was not restored when the bound broke.
template <>
struct fmt::formatter<zcoll::error_stats> : zcoll::fmt_detail::text_formatter {
  template <class FormatContext>
  auto format(const zcoll::error_stats& e, FormatContext& ctx) const {
    std::string text = fmt::format("max error {:.3g}, PSNR {:.2f} dB, NRMSE {:.3g}", e.max_abs_error, e.psnr_db, e.nrmse);
    if (e.bound_violations != 0) text += fmt::format(", {} values beyond the bound", e.bound_violations);
    if (e.exact_mismatches != 0) text += fmt::format(", {} NaN/Inf/fill values not restored exactly", e.exact_mismatches);
    return write(text, ctx);
  }
};

/// "linear+lorenzo1d+bitshuffle: 4194304 -> 1142578 bytes (ratio 3.67), bound 0.00441 held (max error ...)".
template <>
struct fmt::formatter<zcoll::codec_report> : zcoll::fmt_detail::text_formatter {
  template <class FormatContext>
  auto format(const zcoll::codec_report& r, FormatContext& ctx) const {
    std::string text = fmt::format("{}: {} -> {} bytes (ratio {:.2f}), bound {:.3g} {}", r.codec, r.input_bytes,
                                   r.compressed_bytes, r.ratio, r.error_bound,
                                   r.error.bound_held() ? "held" : "BROKEN");
    if (r.fill_value) text += fmt::format(", fill value {}", *r.fill_value);
    text += fmt::format(" ({})", r.error);
    return write(text, ctx);
  }
};

/// "allreduce, ring, linear+lorenzo1d+bitshuffle on 4 ranks: 1146880 of 3145728 raw bytes sent (ratio 2.74) in
/// 12.3 ms (compress 1.1, communicate 9.8, decompress 0.9, reduce 0.5 ms); error bound 0.0132 (statistical
/// 0.00882, 3 compressions in a chain)".
template <>
struct fmt::formatter<zcoll::collective_report> : zcoll::fmt_detail::text_formatter {
  template <class FormatContext>
  auto format(const zcoll::collective_report& r, FormatContext& ctx) const {
    std::string text = fmt::format(
        "{}, {}, {} on {} rank{}: {} of {} raw bytes sent (ratio {:.2f}{}) in {:.3g} ms (compress {:.3g}, communicate "
        "{:.3g}, decompress {:.3g}, reduce {:.3g} ms); error bound {:.3g}",
        r.operation, r.schedule, r.codec, r.ranks, r.ranks == 1 ? "" : "s", r.bytes_sent, r.raw_bytes_sent, r.ratio,
        r.compressed ? "" : ", not compressed", 1e3 * r.total_s, 1e3 * r.compress_s, 1e3 * r.communicate_s,
        1e3 * r.decompress_s, 1e3 * r.reduce_s, r.error_bound);
    if (r.compressions_in_chain > 1) {
      text += fmt::format(" (statistical {:.3g}, {} compressions in a chain)", r.statistical_error_bound,
                          r.compressions_in_chain);
    }
    return write(text, ctx);
  }
};
