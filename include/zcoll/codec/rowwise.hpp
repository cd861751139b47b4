#pragma once
/// RowwiseQuantized<Bits>: row-wise min-max quantization to 8, 4 or 2 bits as a codec, its body FBGEMM's
/// fused row-wise layout (quantize/rowwise.hpp), so the bytes after the prefix are what TorchRec's
/// quantized comms send. The ratio is fixed by Bits and the row length; the bound follows from the data.
///
///     zcoll::Int4 codec{{.shape = {rows, dim}}};       // config.error_bound is ignored
///     std::vector<std::byte> stream = codec.compress(values);
///     std::vector<float> restored = codec.decompress<float>(stream);
///
/// A stream is the 48-byte header of core/stream_header.hpp in its unchunked form (codec kind
/// codec_ids::rowwise_int8 / rowwise_int4 / rowwise_int2, stage bytes 0, no fill value, chunk length and
/// count 0; value count n a multiple of dim; error bound the largest row bound e(S, B) of
/// quantize/rowwise.hpp, 0 without rows), the row length, then the fused rows:
///
/// | offset | bytes                 | field                                                              |
/// |-------:|----------------------:|--------------------------------------------------------------------|
/// |      0 |                    48 | the stream header                                                  |
/// |     48 |                     4 | dim (u32, >= 1): values per row                                    |
/// |     52 | (n / dim) × row_bytes | the rows in FBGEMM's fused layout: codes, then scale and bias      |
///
/// row_bytes is dim + 8 for 8 bits (f32 scale and bias) and ceil(dim × Bits / 8) + 4 for 4 and 2 bits
/// (f16 scale and bias). Decompression checks every field: the codec id and value type, dim >= 1, a count
/// that is a multiple of dim, a body of exactly (n / dim) × row_bytes bytes, each scale finite and >= +0
/// (an 8-bit scale with its low 8 mantissa bits zero, and 255 × scale + max(bias, 0) <= FLT_MAX, as the
/// encoder writes it), each bias finite, the unused bits of a row's last byte zero, and a header bound
/// equal to the largest row bound, recomputed; anything else is a format_error. Values decode to
/// code × scale + bias rounded once to float (widened for f64 data).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/span_codec.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/rowwise.hpp"

namespace zcoll {

namespace detail {

/// The codec id of row-wise quantization to Bits bits (codec/codec_id.hpp).
template <int Bits>
consteval codec_id rowwise_codec_id() {
  static_assert(Bits == 8 || Bits == 4 || Bits == 2,
                "RowwiseQuantized<Bits>: Bits must be 8, 4 or 2 (FBGEMM's fused row-wise bit rates)");
  return own_layout_codec_id<Bits == 8   ? codec_ids::rowwise_int8
                              : Bits == 4 ? codec_ids::rowwise_int4
                                          : codec_ids::rowwise_int2>();
}

}  // namespace detail

/// Row-wise min-max quantization of rows of config.shape.back() values; see the stream layout above.
template <int Bits>
class RowwiseQuantized : public span_codec<RowwiseQuantized<Bits>> {
 public:
  using layout = quantize::rowwise_layout<Bits>;

  static constexpr codec_id id = detail::rowwise_codec_id<Bits>();
  /// The bound follows from each row's range (header comment of quantize/rowwise.hpp), not from
  /// config.error_bound, which is ignored.
  static constexpr bool uses_error_bound = false;
  /// Bytes of the stream before the rows: the header and dim.
  static constexpr std::size_t prefix_size_bytes = stream_header_size_bytes + 4;

  /// "rowwise-int8", "rowwise-int4", "rowwise-int2".
  static std::string name() { return "rowwise-int" + std::to_string(Bits); }

  /// The row length is zcoll::row_length(config), config.shape.back(); error_bound and chunk_values
  /// are ignored. A flat config (empty shape), a row length of 0 or above 2^32 - 1, or a fill
  /// value (the layout has no code to keep one exactly) is an argument_error.
  explicit RowwiseQuantized(codec_config config) : config_(std::move(config)), dim_(row_length(config_)) {
    if (config_.shape.empty()) {
      throw argument_error("codec_config: shape is empty; " + name() +
                           " quantizes rows and needs shape = {rows, dim} (the row length is its last extent)");
    }
    if (dim_ == 0 || dim_ > std::numeric_limits<std::uint32_t>::max()) {
      throw argument_error("codec_config: row length shape.back() = " + std::to_string(dim_) + " must be in [1, " +
                           std::to_string(std::numeric_limits<std::uint32_t>::max()) + "] for " + name());
    }
    if (config_.fill_value) {
      throw argument_error("codec_config: fill_value " + std::to_string(*config_.fill_value) + " is set; " + name() +
                           " takes no fill value (leave fill_value empty)");
    }
  }

  const codec_config& config() const { return config_; }
  /// This codec with another error bound, every other setting kept (what a reduction hop needs).
  RowwiseQuantized with_error_bound(const bound& error_bound) const {
    codec_config config = config_;
    config.error_bound = error_bound;
    return RowwiseQuantized(std::move(config));
  }

  /// Values per row.
  std::size_t dim() const { return dim_; }

  /// Bytes compress writes for `count` values (a multiple of dim): always exactly this many.
  template <floating_value T>
  std::size_t max_compressed_size(std::size_t count) const {
    check_count("max_compressed_size", count);
    const std::size_t rows_bytes = layout::fused_bytes(count / dim_, dim_);
    if (rows_bytes > std::numeric_limits<std::size_t>::max() - prefix_size_bytes) {
      throw argument_error("max_compressed_size: " + std::to_string(count) + " values exceed the addressable size");
    }
    return prefix_size_bytes + rows_bytes;
  }

  using span_codec<RowwiseQuantized>::decompress;

  /// Convenience: a new vector of the stream's values, one thread. The stream's sizes are validated before
  /// the allocation, so a corrupted count cannot ask for more than the body holds.
  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    std::vector<T> values(static_cast<std::size_t>(read_layout<T>(in).header.count));
    decompress_values(exec::Host{}, in, std::span<T>(values));
    return values;
  }

 private:
  friend class span_codec<RowwiseQuantized>;
  /// One slot per worker for its largest row bound; more threads than this are not used.
  static constexpr std::size_t max_workers = 256;

  /// A stream's header and row length, checked against each other and the stream's size.
  struct stream_rows {
    stream_header header;
    std::size_t dim = 0;
    std::size_t rows = 0;
  };

  void check_count(const char* function, std::size_t count) const {
    if (count % dim_ != 0) {
      throw argument_error(std::string(function) + ": " + std::to_string(count) +
                           " values are not a whole number of rows of dim " + std::to_string(dim_) +
                           " (codec_config.shape.back())");
    }
  }

  template <floating_value T>
  std::span<std::byte> compress_values(const exec::Host& exec, std::span<const T> in, std::span<std::byte> out) const {
    const std::size_t needed = max_compressed_size<T>(in.size());
    if (out.size() < needed) {
      throw argument_error("compress: out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" +
                           std::to_string(in.size()) + ") = " + std::to_string(needed) + " are needed");
    }
    const std::size_t rows = in.size() / dim_;
    std::byte* const body = out.data() + prefix_size_bytes;
    const exec::Host workers{static_cast<unsigned>(std::min<std::size_t>(exec::worker_count(exec, rows), max_workers))};
    double largest[max_workers] = {};
    exec::for_each_range(workers, rows, [&](std::size_t w, std::size_t begin, std::size_t end) {
      largest[w] = quantize::detail::quantize_row_range<Bits, T>(in.data(), dim_, begin, end, body);
    });

    stream_header header;
    header.codec = id;
    header.type = value_type_of<T>;
    header.count = in.size();
    header.error_bound = *std::max_element(largest, largest + max_workers);
    byte_writer prefix(out.first(prefix_size_bytes));
    write_stream_header(prefix, header);
    prefix.write(static_cast<std::uint32_t>(dim_));
    return out.first(needed);
  }

  /// Reads and checks header and row length: this codec, type T, unchunked, no fill value, a finite bound,
  /// dim >= 1, a count of whole rows and a body of exactly their bytes.
  template <floating_value T>
  static stream_rows read_layout(std::span<const std::byte> in) {
    stream_rows s;
    s.header = read_stream_header(in);
    const stream_header& h = s.header;
    require_codec_and_type(h, id, name, value_type_of<T>);
    require_unchunked_without_fill(h, name());
    if (!std::isfinite(h.error_bound)) {
      throw format_error("a " + name() + " stream states a finite error bound, not " + std::to_string(h.error_bound));
    }
    byte_reader reader(in.subspan(stream_header_size_bytes));
    s.dim = reader.read<std::uint32_t>("row length (dim)");
    if (s.dim == 0) throw format_error("row length (dim) is 0");
    if (h.count % s.dim != 0) {
      throw format_error("value count " + std::to_string(h.count) + " is not a whole number of rows of dim " +
                         std::to_string(s.dim));
    }
    const std::uint64_t rows = h.count / s.dim;
    const std::size_t body_bytes = in.size() - prefix_size_bytes;
    const std::size_t row_bytes = layout::row_bytes(s.dim);
    if (rows > body_bytes / row_bytes || rows * row_bytes != body_bytes) {
      throw format_error(std::to_string(rows) + " rows of dim " + std::to_string(s.dim) + " need a body of " +
                         std::to_string(rows) + " x " + std::to_string(row_bytes) + " bytes, the stream has " +
                         std::to_string(body_bytes));
    }
    s.rows = static_cast<std::size_t>(rows);
    return s;
  }

  /// Checks a row's scale, bias and padding bits as the encoder writes them (the check the device
  /// decoder makes too, quantize::detail::check_stored_row).
  static void check_row(const std::byte* row, std::size_t dim, const quantize::detail::row_scale_bias& sb,
                        std::size_t r) {
    const auto fault = quantize::detail::check_stored_row<Bits>(row, dim, sb);
    if (fault != quantize::detail::stored_row_fault::none) {
      throw format_error("row " + std::to_string(r) + ": " + quantize::detail::to_string(fault) + " (scale " +
                         std::to_string(sb.scale) + ", bias " + std::to_string(sb.bias) + ")");
    }
  }

  template <floating_value T>
  void decompress_values(const exec::Host& exec, std::span<const std::byte> in, std::span<T> out) const {
    const stream_rows s = read_layout<T>(in);
    if (s.header.count != out.size()) {
      throw argument_error("decompress: out holds " + std::to_string(out.size()) + " values, the stream " +
                           std::to_string(s.header.count));
    }
    const std::byte* const body = in.data() + prefix_size_bytes;
    const std::size_t dim = s.dim, row_bytes = layout::row_bytes(dim), code_bytes = layout::code_bytes(dim);
    const exec::Host workers{static_cast<unsigned>(std::min<std::size_t>(exec::worker_count(exec, s.rows), max_workers))};
    double largest[max_workers] = {};
    exec::for_each_range(workers, s.rows, [&](std::size_t w, std::size_t begin, std::size_t end) {
      double worker_largest = 0.0;
      for (std::size_t r = begin; r < end; ++r) {
        const std::byte* row = body + r * row_bytes;
        const auto sb = quantize::detail::load_scale_bias<Bits>(row + code_bytes);
        check_row(row, dim, sb, r);
        worker_largest = std::max(worker_largest, quantize::row_error_bound<Bits>(sb.scale, sb.bias));
        quantize::detail::dequantize_row<Bits, T>(row, dim, sb, out.data() + r * dim);
      }
      largest[w] = worker_largest;
    });
    const double bound = *std::max_element(largest, largest + max_workers);
    if (std::bit_cast<std::uint64_t>(bound) != std::bit_cast<std::uint64_t>(s.header.error_bound)) {  // -0 too
      throw format_error("header states error bound " + std::to_string(s.header.error_bound) +
                         ", the rows' scales and biases give " + std::to_string(bound));
    }
  }

  codec_config config_;
  std::size_t dim_;
};

/// The presets: the 8-, 4- and 2-bit row-wise quantization of the quantized-collectives paper.
using Int8 = RowwiseQuantized<8>;
using Int4 = RowwiseQuantized<4>;
using Int2 = RowwiseQuantized<2>;

}  // namespace zcoll
