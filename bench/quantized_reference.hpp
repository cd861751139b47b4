#pragma once
// The "quantization + off-the-shelf lossless coder" baseline of ../shared/baselines.md, built from zcoll's
// own linear quantizer so that it differs from a zcoll pipeline only in the coder: codes at the row's
// bound (quantize::Linear, bins of 2·eb), optionally 1-D Lorenzo residuals on the codes (as SZ-style
// compressors do), zigzag, then LZ4 or zstd on the 32-bit words. Values the quantizer cannot bound
// (NaN, ±Inf, out of code range) and declared fill values go in a second stream, exactly.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "byte_coders.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/predict/lorenzo.hpp"
#include "zcoll/quantize/linear.hpp"

namespace zcoll_bench {

/// What the codes are before the lossless coder: the codes themselves (embedding rows: neighbouring
/// values of a vector are independent) or 1-D Lorenzo residuals q_i - q_{i-1} over the whole buffer.
enum class code_prediction { none, lorenzo1d };

/// One buffer through quantize → predict → zigzag → byte coder and back, single-threaded, into scratch
/// sized at construction (a timed call allocates nothing). Bench-only stream, never sent:
///
/// | bytes | field                                                                        |
/// |-------|------------------------------------------------------------------------------|
/// | 8     | value count n (u64)                                                          |
/// | 8     | absolute error bound eb (f64) the codes were made at                         |
/// | 8     | the fill value's bit pattern (u64; read only where the fill mask has lanes)  |
/// | 8 × 4 | coded bytes of: codes, fill mask, outlier mask (0 = no such lanes); outlier count |
/// | ...   | the n zigzagged codes (u32), coded                                           |
/// | ...   | fill mask, outlier mask: one u32 per block of 32 values, each coded          |
/// | ...   | the outlier values (T), in order, raw                                        |
///
/// An exception's code repeats the code before it (as in zcoll::Pipeline), so it costs no residual.
template <zcoll::floating_value T>
class quantized_reference {
  using bits = zcoll::bits_of<T>;
  using quantizer = zcoll::quantize::Linear::block_quantizer<T>;
  static constexpr std::size_t lanes = zcoll::block_values;
  static constexpr std::size_t header_bytes = 8 + 8 + 8 + 4 * 8;

 public:
  quantized_reference(byte_coder coder, code_prediction prediction, std::size_t count)
      : coder_(std::move(coder)),
        prediction_(prediction),
        count_(count),
        blocks_((count + lanes - 1) / lanes),
        codes_(blocks_ * lanes),
        fill_mask_(blocks_),
        outlier_mask_(blocks_) {
    outliers_.reserve(count);
  }

  /// "linear+lorenzo1d+zstd-3": zcoll's stage names, then the coder's.
  std::string name() const { return name_of(coder_, prediction_); }

  static std::string name_of(const byte_coder& coder, code_prediction prediction) {
    return std::string("linear+") + (prediction == code_prediction::lorenzo1d ? "lorenzo1d+" : "none+") + coder.name;
  }

  std::size_t max_compressed_bytes() const {
    return header_bytes + coder_.max_compressed_bytes(count_ * 4) + 2 * coder_.max_compressed_bytes(blocks_ * 4) +
           count_ * sizeof(T);
  }

  /// The stream for `values` (count values) at `bound` (a relative one over the finite, non-fill values).
  std::span<std::byte> compress(std::span<const T> values, const zcoll::bound& bound,
                                std::optional<double> fill_value, std::span<std::byte> out) {
    check_count(values.size());
    const std::optional<bits> fill = zcoll::fill_bits_of<T>(fill_value);
    const double eb = absolute_bound(bound, values, fill);
    const bool any_exception = quantize_all(values, quantizer(eb), fill);

    // The body first (its section sizes are known only once coded), then the header before it.
    std::size_t offset = header_bytes;
    const auto code_into = [&](std::span<const std::byte> bytes) {
      const std::size_t written = coder_.compress(bytes, out.subspan(offset));
      offset += written;
      return written;
    };
    const std::size_t code_bytes = code_into(std::as_bytes(std::span(codes_).first(count_)));
    const bool any_fill =
        any_exception && std::any_of(fill_mask_.begin(), fill_mask_.end(), [](std::uint32_t m) { return m != 0; });
    const bool any_outlier = !outliers_.empty();
    const std::size_t fill_bytes = any_fill ? code_into(std::as_bytes(std::span(fill_mask_))) : 0;
    const std::size_t outlier_bytes = any_outlier ? code_into(std::as_bytes(std::span(outlier_mask_))) : 0;
    zcoll::byte_writer raw(out.subspan(offset));
    raw.write_bytes(std::as_bytes(std::span(outliers_)));
    offset += raw.offset();

    zcoll::byte_writer header(out.first(header_bytes));
    header.write(static_cast<std::uint64_t>(count_));
    header.write(eb);
    header.write(static_cast<std::uint64_t>(fill.value_or(0)));
    header.write(static_cast<std::uint64_t>(code_bytes));
    header.write(static_cast<std::uint64_t>(fill_bytes));
    header.write(static_cast<std::uint64_t>(outlier_bytes));
    header.write(static_cast<std::uint64_t>(outliers_.size()));
    return out.first(offset);
  }

  /// The values of a stream `compress` wrote, into `out` (count values).
  void decompress(std::span<const std::byte> stream, std::span<T> out) {
    check_count(out.size());
    zcoll::byte_reader in(stream);
    const auto count = in.read<std::uint64_t>("count");
    const auto eb = in.read<double>("error bound");
    const auto fill = static_cast<bits>(in.read<std::uint64_t>("fill bits"));
    const auto code_bytes = in.read<std::uint64_t>("code bytes");
    const auto fill_bytes = in.read<std::uint64_t>("fill mask bytes");
    const auto outlier_bytes = in.read<std::uint64_t>("outlier mask bytes");
    const auto outlier_count = in.read<std::uint64_t>("outlier count");
    if (count != count_) {
      throw std::runtime_error("quantized reference: a stream of " + std::to_string(count) + " values");
    }
    coder_.decompress(in.take(code_bytes, "codes"), std::as_writable_bytes(std::span(codes_).first(count_)));
    const bool any_exception = fill_bytes > 0 || outlier_bytes > 0;
    if (any_exception) {
      decompress_mask(in, fill_bytes, fill_mask_, "fill mask");
      decompress_mask(in, outlier_bytes, outlier_mask_, "outlier mask");
    }
    const auto outlier_values = in.take(outlier_count * sizeof(T), "outliers");

    const quantizer q(eb);
    zcoll::predict::Lorenzo1D::state state;
    std::size_t next_outlier = 0;
    for (std::size_t b = 0; b < blocks_; ++b) {
      std::uint32_t* codes = codes_.data() + b * lanes;
      unzigzag(codes);
      if (prediction_ == code_prediction::lorenzo1d) zcoll::predict::Lorenzo1D::inverse(state, codes);
      const std::size_t first = b * lanes, valid = std::min(lanes, count_ - first);
      q.dequantize(codes, out.data() + first, valid);
      if (any_exception && (fill_mask_[b] | outlier_mask_[b]) != 0) {
        for (std::uint32_t m = fill_mask_[b]; m != 0; m &= m - 1) {
          out[first + static_cast<std::size_t>(std::countr_zero(m))] = std::bit_cast<T>(fill);
        }
        for (std::uint32_t m = outlier_mask_[b]; m != 0; m &= m - 1) {
          if (next_outlier >= outlier_count) throw std::runtime_error("quantized reference: too few outliers");
          std::memcpy(&out[first + static_cast<std::size_t>(std::countr_zero(m))],
                      outlier_values.data() + sizeof(T) * next_outlier++, sizeof(T));
        }
      }
    }
  }

  /// The absolute bound a stream's codes were made at.
  static double error_bound_of(std::span<const std::byte> stream) {
    zcoll::byte_reader in(stream);
    (void)in.read<std::uint64_t>("count");
    return in.read<double>("error bound");
  }

 private:
  /// The bound in the data's units; a relative one over the finite, non-fill values, as zcoll's codecs.
  static double absolute_bound(const zcoll::bound& bound, std::span<const T> values, std::optional<bits> fill) {
    if (bound.mode == zcoll::bound_mode::absolute) return bound.value;
    return zcoll::absolute_bound(bound, zcoll::find_value_extent(zcoll::exec::Host{1}, values, fill).range());
  }

  /// A mask section, or all zeros when the stream has none.
  void decompress_mask(zcoll::byte_reader& in, std::size_t coded_bytes, std::vector<std::uint32_t>& mask,
                       const char* what) {
    if (coded_bytes == 0) {
      std::fill(mask.begin(), mask.end(), 0u);
    } else {
      coder_.decompress(in.take(coded_bytes, what), std::as_writable_bytes(std::span(mask)));
    }
  }

  void check_count(std::size_t n) const {
    if (n != count_) {
      throw std::invalid_argument("quantized reference: " + std::to_string(n) + " values, sized for " +
                                  std::to_string(count_));
    }
  }

  /// Codes (zigzagged residuals) of every value into codes_, exception lanes into the masks and
  /// outliers_; true when there is any exception.
  bool quantize_all(std::span<const T> values, const quantizer& q, std::optional<bits> fill) {
    outliers_.clear();
    const bool usable = q.usable();
    zcoll::predict::Lorenzo1D::state state;
    std::int32_t previous_code = 0;
    zcoll::block_mask any = 0;
    for (std::size_t b = 0; b < blocks_; ++b) {
      const std::size_t first = b * lanes, valid = std::min(lanes, count_ - first);
      alignas(64) T padded[lanes];
      const T* x = values.data() + first;
      if (valid < lanes) {
        std::fill(std::copy_n(x, valid, padded), padded + lanes, T(0));
        x = padded;
      }
      const zcoll::block_mask valid_lanes =
          valid == lanes ? ~zcoll::block_mask{0} : (zcoll::block_mask{1} << valid) - 1;
      alignas(64) std::int32_t codes[lanes];
      if (!usable) std::fill_n(codes, lanes, 0);  // every value an outlier, below
      const zcoll::block_mask unbounded = (usable ? q.quantize(x, codes) : ~zcoll::block_mask{0}) & valid_lanes;
      const zcoll::block_mask fill_lanes = fill ? lanes_equal_to(x, *fill) & valid_lanes : 0;
      const zcoll::block_mask exceptions = unbounded | fill_lanes;
      fill_mask_[b] = fill_lanes;
      outlier_mask_[b] = unbounded & ~fill_lanes;
      any |= exceptions;
      if (exceptions != 0) record_exceptions(x, codes, fill_lanes, unbounded & ~fill_lanes, previous_code);
      previous_code = codes[lanes - 1];
      std::int32_t* residuals = reinterpret_cast<std::int32_t*>(codes_.data() + first);
      if (prediction_ == code_prediction::lorenzo1d) {
        zcoll::predict::Lorenzo1D::forward(state, codes, residuals);
      } else {
        std::copy_n(codes, lanes, residuals);
      }
      zigzag(codes_.data() + first);
    }
    return any != 0;
  }

  /// Exception lanes repeat the previous code; outliers are kept exactly, in lane order.
  void record_exceptions(const T* x, std::int32_t* codes, zcoll::block_mask fill_lanes, zcoll::block_mask outlier_lanes,
                         std::int32_t previous_code) {
    for (zcoll::block_mask m = fill_lanes | outlier_lanes; m != 0; m &= m - 1) {
      const auto j = static_cast<std::size_t>(std::countr_zero(m));
      codes[j] = j == 0 ? previous_code : codes[j - 1];
    }
    for (zcoll::block_mask m = outlier_lanes; m != 0; m &= m - 1) outliers_.push_back(x[std::countr_zero(m)]);
  }

  static zcoll::block_mask lanes_equal_to(const T* x, bits fill) {
    zcoll::block_mask equal = 0;
    for (std::size_t j = 0; j < lanes; ++j) equal |= zcoll::block_mask{std::bit_cast<bits>(x[j]) == fill} << j;
    return equal;
  }

  /// Signed residuals to unsigned words with small magnitudes first: 0, -1, 1, -2, ... → 0, 1, 2, 3, ...
  static void zigzag(std::uint32_t* words) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const std::uint32_t w = words[j];
      words[j] = (w << 1) ^ (0u - (w >> 31));
    }
  }

  static void unzigzag(std::uint32_t* words) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const std::uint32_t z = words[j];
      words[j] = (z >> 1) ^ (0u - (z & 1u));
    }
  }

  byte_coder coder_;
  code_prediction prediction_;
  std::size_t count_;
  std::size_t blocks_;
  std::vector<std::uint32_t> codes_;
  std::vector<std::uint32_t> fill_mask_;
  std::vector<std::uint32_t> outlier_mask_;
  std::vector<T> outliers_;
};

}  // namespace zcoll_bench
