#pragma once
/// Cast<Format>: the low-precision baseline as a codec. Every value is rounded to fp16, bf16 or an FP8
/// format (quantize/cast.hpp): a fixed ratio (2x or 4x from f32, 4x or 8x from f64) and a relative
/// precision of Format::relative_precision, but no error bound the caller chooses.
///
///     zcoll::FP16 codec;                               // config.error_bound is ignored
///     std::vector<std::byte> stream = codec.compress(values);
///     std::vector<float> restored = codec.decompress<float>(stream);
///
/// A stream is the 48-byte header of core/stream_header.hpp in its unchunked form (codec kind
/// codec_ids::cast_fp16, cast_bf16, cast_fp8_e4m3 or cast_fp8_e5m2, stage bytes 0, no fill value, chunk
/// length and count 0; the error bound that of every finite value, +inf when one overflowed to ±Inf),
/// then the codes:
///
/// | offset | bytes     | field                                                                          |
/// |-------:|----------:|--------------------------------------------------------------------------------|
/// |      0 |        48 | the stream header                                                              |
/// |     48 | n × s     | the n codes in value order, little-endian; s = 2 (fp16, bf16) or 1 (FP8)       |
///
/// The stream is exactly 48 + n × sizeof(storage) bytes. The error bound is
/// quantize::rounding_error_bound at the largest finite |x| of the data: half an ulp of the format at that
/// magnitude (or half the smallest subnormal spacing), the saturation error of E4M3 if larger, never more
/// than that magnitude, and +inf after an overflow. NaN comes back as NaN of the same sign; ±Inf as ±Inf
/// (as NaN of the same sign for E4M3, which has no infinities: see quantize/cast.hpp).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "zcoll/core/checked_size.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/span_codec.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/quantize/cast.hpp"

namespace zcoll {

namespace detail {

/// The codec id of a cast to Format (codec/codec_id.hpp).
template <class Format>
consteval codec_id cast_codec_id() {
  if constexpr (std::is_same_v<Format, quantize::fp16>) {
    return own_layout_codec_id<codec_ids::cast_fp16>();
  } else if constexpr (std::is_same_v<Format, quantize::bf16>) {
    return own_layout_codec_id<codec_ids::cast_bf16>();
  } else if constexpr (std::is_same_v<Format, quantize::fp8_e4m3>) {
    return own_layout_codec_id<codec_ids::cast_fp8_e4m3>();
  } else {
    static_assert(std::is_same_v<Format, quantize::fp8_e5m2>,
                  "Cast<Format>: Format must be quantize::fp16, bf16, fp8_e4m3 or fp8_e5m2 (each has a codec id in "
                  "codec/codec_id.hpp)");
    return own_layout_codec_id<codec_ids::cast_fp8_e5m2>();
  }
}

/// The largest finite |x| of x[0, n), or 0 when there is none: a max over the magnitude bits of the
/// finite values (whose order is the values' order), one accumulator per lane so that it vectorises;
/// signed words, whose compares AVX2 has, hold magnitudes.
template <floating_value T>
T largest_finite_magnitude(const T* x, std::size_t n) {
  using word = std::make_signed_t<bits_of<T>>;
  constexpr std::size_t lanes = 32;
  constexpr word magnitude_mask = std::numeric_limits<word>::max();
  constexpr word max_finite = std::bit_cast<word>(std::numeric_limits<T>::max());
  word largest[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) {
      const word magnitude = std::bit_cast<word>(x[i + j]) & magnitude_mask;
      largest[j] = std::max(largest[j], magnitude <= max_finite ? magnitude : word{0});
    }
  }
  word result = 0;
  for (; i < n; ++i) {
    const word magnitude = std::bit_cast<word>(x[i]) & magnitude_mask;
    result = std::max(result, magnitude <= max_finite ? magnitude : word{0});
  }
  for (std::size_t j = 0; j < lanes; ++j) result = std::max(result, largest[j]);
  return std::bit_cast<T>(result);
}

}  // namespace detail

/// Rounds every value to Format; see the stream layout above.
template <class Format>
class Cast : public span_codec<Cast<Format>> {
 public:
  using format_type = Format;
  using storage = typename Format::storage;

  static constexpr codec_id id = detail::cast_codec_id<Format>();
  /// The cast ignores config.error_bound: its precision is the format's.
  static constexpr bool uses_error_bound = false;
  /// Largest relative error of a normal value that does not overflow: 2^-11 fp16, 2^-8 bf16, 2^-4 E4M3,
  /// 2^-3 E5M2 (half an ulp at the start of a binade).
  static constexpr double relative_precision = Format::relative_precision;

  /// "cast-fp16", "cast-bf16", "cast-fp8-e4m3", "cast-fp8-e5m2".
  static std::string name() { return std::string("cast-") + Format::name; }

  /// error_bound, chunk_values and shape are ignored; a fill value is refused, since a cast
  /// could keep it exactly only when the format can represent it.
  explicit Cast(codec_config config = {}) : config_(std::move(config)) {
    if (config_.fill_value) {
      throw argument_error("codec_config: fill_value " + std::to_string(*config_.fill_value) + " is set; " + name() +
                           " takes no fill value (leave fill_value empty)");
    }
  }

  const codec_config& config() const { return config_; }
  /// This codec with another error bound, every other setting kept (what a reduction hop needs).
  Cast with_error_bound(const bound& error_bound) const {
    codec_config config = config_;
    config.error_bound = error_bound;
    return Cast(std::move(config));
  }

  /// Bytes compress writes for `count` values: always exactly this many.
  template <floating_value T>
  static std::size_t max_compressed_size(std::size_t count) {
    return checked_add(stream_header_size_bytes, checked_multiply(count, sizeof(storage), "max_compressed_size", "count"),
                       "max_compressed_size", "stream bytes");
  }

  using span_codec<Cast>::decompress;

  /// Convenience: a new vector of the stream's values, one thread. The header is validated before the
  /// allocation, so a corrupted count cannot ask for more than the stream's body holds.
  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    std::vector<T> values(static_cast<std::size_t>(read_header<T>(in).count));
    decompress_values(exec::Host{}, in, std::span<T>(values));
    return values;
  }

 private:
  friend class span_codec<Cast>;
  /// Values per step of the encode loop: 4096 values (16 KiB of f32, 32 KiB of f64) stay in L1 between
  /// finding their largest magnitude and encoding them.
  static constexpr std::size_t block_values = 4096;
  /// Blocks per work item of for_each_range: 64K values, so a small input runs on one thread.
  static constexpr std::size_t blocks_per_part = 16;
  static constexpr std::size_t part_values = block_values * blocks_per_part;
  /// One slot per worker for the largest magnitude; more threads than this are not used.
  static constexpr std::size_t max_workers = 256;

  template <floating_value T>
  std::span<std::byte> compress_values(const exec::Host& exec, std::span<const T> in, std::span<std::byte> out) const {
    const std::size_t count = in.size();
    const std::size_t needed = max_compressed_size<T>(count);
    if (out.size() < needed) {
      throw argument_error("compress: out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" +
                           std::to_string(count) + ") = " + std::to_string(needed) + " are needed");
    }
    std::byte* const body = out.data() + stream_header_size_bytes;
    const std::size_t parts = (count + part_values - 1) / part_values;
    const exec::Host workers{
        static_cast<unsigned>(std::min<std::size_t>(exec::worker_count(exec, parts), max_workers))};
    T largest[max_workers] = {};
    exec::for_each_range(workers, parts, [&](std::size_t w, std::size_t begin, std::size_t end) {
      const std::size_t first = begin * part_values, last = std::min(count, end * part_values);
      largest[w] = encode_range(in.data() + first, last - first, body + first * sizeof(storage));
    });
    const T largest_magnitude = *std::max_element(largest, largest + max_workers);

    stream_header header;
    header.codec = id;
    header.type = value_type_of<T>;
    header.count = count;
    header.error_bound = quantize::rounding_error_bound<Format>(largest_magnitude);
    byte_writer prefix(out.first(stream_header_size_bytes));
    write_stream_header(prefix, header);
    return out.first(needed);
  }

  /// Encodes x[0, n) to `body` block by block; returns the largest finite |x|. A block is read from
  /// memory by the first pass and from L1 by the second.
  template <floating_value T>
  static T encode_range(const T* x, std::size_t n, std::byte* body) {
    T largest = 0;
    for (std::size_t first = 0; first < n; first += block_values) {
      const std::size_t size = std::min(block_values, n - first);
      largest = std::max(largest, detail::largest_finite_magnitude(x + first, size));
      quantize::encode_bytes<Format>(std::span<const T>(x + first, size),
                                     std::span<std::byte>(body + first * sizeof(storage), size * sizeof(storage)));
    }
    return largest;
  }

  /// Reads and checks the header: this codec, type T, unchunked, no fill value, and a body of exactly
  /// count codes.
  template <floating_value T>
  static stream_header read_header(std::span<const std::byte> in) {
    const stream_header header = read_stream_header(in);
    require_codec_and_type(header, id, name, value_type_of<T>);
    require_unchunked_without_fill(header, name());
    const std::size_t body_bytes = in.size() - stream_header_size_bytes;
    if (header.count != body_bytes / sizeof(storage) || body_bytes % sizeof(storage) != 0) {
      throw format_error("value count " + std::to_string(header.count) + " needs a body of count x " +
                         std::to_string(sizeof(storage)) + " bytes, the stream has " + std::to_string(body_bytes));
    }
    return header;
  }

  template <floating_value T>
  void decompress_values(const exec::Host& exec, std::span<const std::byte> in, std::span<T> out) const {
    const stream_header header = read_header<T>(in);
    if (header.count != out.size()) {
      throw argument_error("decompress: out holds " + std::to_string(out.size()) + " values, the stream " +
                           std::to_string(header.count));
    }
    const std::byte* const body = in.data() + stream_header_size_bytes;
    const std::size_t count = out.size();
    const std::size_t parts = (count + part_values - 1) / part_values;
    exec::for_each_range(exec, parts, [&](std::size_t, std::size_t begin, std::size_t end) {
      const std::size_t first = begin * part_values, last = std::min(count, end * part_values);
      decode_range(body + first * sizeof(storage), out.data() + first, last - first);
    });
  }

  template <floating_value T>
  static void decode_range(const std::byte* body, T* out, std::size_t n) {
    quantize::decode_bytes<Format>(std::span<const std::byte>(body, n * sizeof(storage)), std::span<T>(out, n));
  }

  codec_config config_;
};

/// The presets: the casts of mixed-precision training and of the FP8 papers.
using FP16 = Cast<quantize::fp16>;
using BF16 = Cast<quantize::bf16>;
using FP8E4M3 = Cast<quantize::fp8_e4m3>;
using FP8E5M2 = Cast<quantize::fp8_e5m2>;

}  // namespace zcoll
