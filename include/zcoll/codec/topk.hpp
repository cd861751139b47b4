#pragma once
/// TopK: DCT-DP's gradient sparsifier (Algorithm 1) as a codec. Entries with |x| >= tau are sent exactly
/// with their indices, the rest decode to 0; tau is the top-K threshold of sparsify/topk_threshold.hpp
/// (or its Laplace estimate), recomputed every threshold_life_span calls by a threshold_schedule.
///
///     const zcoll::TopK codec{{}, {.keep_fraction = 0.01, .threshold_life_span = 1000}};
///     zcoll::codec_state<zcoll::TopK> thresholds;          // the caller's: one entry per tensor
///     std::vector<std::byte> stream(codec.max_compressed_size<float>(grad.size()));
///     auto written = codec.compress_with_residual(zcoll::exec::Host{}, thresholds.at(layer), grad, stream,
///                                                 residual);  // EF: e = z - C(z)
///     codec.decompress(zcoll::exec::Host{}, written, restored);
///     thresholds.at(layer).last;                            // what the call did (tau, kept fraction)
///
/// The codec is an immutable value; like DCT-DP, which keeps tau per layer, the threshold schedule of a
/// tensor lives in a TopK::state the caller owns and passes in (codec/keyed_state.hpp), so one TopK
/// serves every tensor and thread. Without a state a call recomputes tau, as a life span of 1 does. Which
/// entries are kept is the rule of topk_threshold.hpp: |x| >= tau
/// and x != 0, every NaN (sent bit for bit) and so every ±Inf; -0.0 decodes to +0.0. codec_config's
/// error_bound, chunk_values, fill_value and shape do not apply to a sparsifier and are ignored.
///
/// Stream: the 48-byte header of core/stream_header.hpp with codec kind 0x20 (codec_ids::topk), chunk
/// length 0 and chunk count 0 (an unchunked body), flags 0, and as error bound the largest |x| dropped
/// (0 when nothing is): every finite entry decodes within it, kept ones exactly. Then, little-endian:
///
/// | offset        | bytes       | field                                                                   |
/// |--------------:|------------:|-------------------------------------------------------------------------|
/// |            48 |           1 | index form: 0 = gaps, 1 = bitmap                                        |
/// |            49 |           8 | kept count k (u64), <= value count n                                    |
/// |            57 | k·sizeof(T) | the kept values in increasing index order, bit for bit                  |
/// | 57 + k·sizeof |        rest | the index section, which ends the stream:                               |
/// |               |             | form 0: k + 1 unsigned LEB128 varints (7 bits per byte, low first, high |
/// |               |             |   bit = more; at most 10 bytes, minimal: no trailing 0x00 byte). Varint |
/// |               |             |   i < k is index_i - index_{i-1} - 1 with index_{-1} = -1; varint k is  |
/// |               |             |   n - 1 - index_{k-1} (n when k = 0), so the gaps and k add up to n;    |
/// |               |             | form 1: mask_size_bytes(n) = ceil(n / 8) bytes, bit i mod 8 of byte     |
/// |               |             |   i / 8 set iff entry i is kept (sparsify/mask.hpp); k bits set, the    |
/// |               |             |   bits past n zero.                                                     |
///
/// The encoder writes the gaps when they take fewer bytes than the bitmap (below about one kept entry in
/// eight), else the bitmap, so a stream is at most 57 + n·sizeof(T) + ceil(n / 8) bytes. The decoder
/// checks every field: the form, k <= n, the section sizes, strictly increasing indices below n (by
/// construction of the gaps), the gap sum, the bitmap's popcount and padding, and that nothing trails.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/sparsify/magnitude_key.hpp"
#include "zcoll/sparsify/mask.hpp"
#include "zcoll/sparsify/threshold_schedule.hpp"
#include "zcoll/sparsify/topk_threshold.hpp"

namespace zcoll {

/// The sparsifier's numbers: TopK(codec_config, topk_config{.keep_fraction = 0.01}).
struct topk_config {
  /// Fraction of the entries kept, in (0, 1]: 0.01 sends the top 1 % (the paper's 99 % sparsity).
  double keep_fraction = 0.01;
  /// Calls a threshold lives for (>= 1). The default 1 recomputes it on every call, so that every
  /// stream is a pure function of its input; DCT-DP trains with 1000.
  std::uint32_t threshold_life_span = 1;
  /// How tau is recomputed: the exact top-K threshold or the Laplace estimate.
  sparsify::threshold_method threshold = sparsify::threshold_method::exact;
};

/// What the last compress call of a TopK did: the paper's Laplace estimate and reused thresholds keep
/// a fraction that differs from the target, and this is where to read it.
struct topk_report {
  std::uint64_t count = 0;                ///< values compressed
  std::uint64_t kept_count = 0;           ///< entries sent (NaNs and ties at tau included)
  double target_keep_fraction = 0.0;      ///< topk_config::keep_fraction
  double threshold = 0.0;                 ///< tau used
  bool threshold_recomputed = false;      ///< tau was computed on this call (else reused)
  sparsify::threshold_method method_used = sparsify::threshold_method::exact;  ///< how tau was found
  double max_dropped_magnitude = 0.0;     ///< the stream's error bound

  double obtained_keep_fraction() const {
    return count == 0 ? 0.0 : static_cast<double>(kept_count) / static_cast<double>(count);
  }
};

namespace detail::topk {

enum class index_form : std::uint8_t { gaps = 0, bitmap = 1 };

inline constexpr std::size_t form_offset = stream_header_size_bytes;
inline constexpr std::size_t kept_count_offset = form_offset + 1;
inline constexpr std::size_t values_offset = kept_count_offset + 8;
inline constexpr std::size_t max_varint_bytes = 10;

constexpr std::size_t varint_size_bytes(std::uint64_t v) {
  std::size_t bytes = 1;
  for (; v >= 0x80; v >>= 7) ++bytes;
  return bytes;
}

ZCOLL_HOST_DEVICE inline std::byte* put_varint(std::byte* p, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<std::byte>((v & 0x7F) | 0x80);
  *p++ = static_cast<std::byte>(v);
  return p;
}

/// What one worker's share of the threshold pass found.
struct pass_result {
  std::size_t kept = 0;
  std::uint64_t max_dropped_key = 0;  ///< the largest dropped magnitude key (an f32 key zero-extended)
};

/// The threshold pass over x[first, last) (first a multiple of 32): sets the mask bits of the entries
/// whose key is >= floor, appends their values at `values` (unaligned bytes), and writes the residual
/// (x where dropped, +0 where kept) when `residual` is not null. Within a block the values are gathered
/// before the residual is written, so the residual may be x itself.
template <floating_value T>
pass_result threshold_pass(const T* x, std::size_t first, std::size_t last, std::size_t count, bits_of<T> floor,
                              std::byte* mask, std::byte* values, T* residual) {
  using bits = bits_of<T>;
  constexpr std::size_t lanes = sparsify::detail::mask_word_values;
  bits dropped[lanes] = {};  // per-lane largest dropped key: integer max vectorizes
  pass_result result;
  std::byte* cursor = values;
  for (std::size_t i = first; i < last; i += lanes) {
    const std::size_t width = std::min(lanes, last - i);
    const T* xs = x + i;
    alignas(64) std::uint32_t keep[lanes];
    alignas(64) T dropped_values[lanes];  // the block's residual, copied out after the gather
    auto classify = [&](std::size_t j, bits b) {
      const bits key = b & sparsify::magnitude_bits<T>;
      const bits all = static_cast<bits>(0) - static_cast<bits>(key >= floor);
      keep[j] = static_cast<std::uint32_t>(all);
      dropped[j] = std::max<bits>(dropped[j], key & ~all);
      dropped_values[j] = std::bit_cast<T>(static_cast<bits>(b & ~all));
    };
    if (width == lanes) {  // the fixed trip count vectorizes
      for (std::size_t j = 0; j < lanes; ++j) classify(j, std::bit_cast<bits>(xs[j]));
    } else {  // the last block: missing lanes are +0, which no threshold keeps
      for (std::size_t j = 0; j < lanes; ++j) classify(j, j < width ? std::bit_cast<bits>(xs[j]) : bits{0});
    }
    const std::uint32_t word = lanes_nonzero(keep);
    sparsify::detail::store_mask_word(mask, i / lanes, count, word);
    for (std::uint32_t w = word; w != 0; w &= w - 1) {
      std::memcpy(cursor, xs + zcoll::countr_zero(w), sizeof(T));
      cursor += sizeof(T);
    }
    if (residual != nullptr) std::memcpy(residual + i, dropped_values, width * sizeof(T));
  }
  for (std::size_t j = 0; j < lanes; ++j) result.max_dropped_key = std::max<std::uint64_t>(result.max_dropped_key, dropped[j]);
  result.kept = static_cast<std::size_t>(cursor - values) / sizeof(T);
  return result;
}

/// Bits of mask bytes [8 w, 8 w + 8) ∩ [0, mask_bytes), as one little-endian word.
inline std::uint64_t load_mask_word64(const std::byte* mask, std::size_t word, std::size_t mask_bytes) {
  std::uint64_t w = 0;
  std::memcpy(&w, mask + 8 * word, std::min<std::size_t>(8, mask_bytes - 8 * word));
  return w;
}

/// Writes the gap varints of a mask over `count` entries at `out`; returns their size, or nothing as soon
/// as they would exceed `budget` bytes (the bitmap is then smaller). `out` must not reach the mask
/// within the budget.
inline std::optional<std::size_t> write_gaps(const std::byte* mask, std::size_t count, std::byte* out, std::size_t budget) {
  const std::size_t mask_bytes = sparsify::mask_size_bytes(count);
  std::byte* p = out;
  std::byte* const limit = out + budget;
  std::uint64_t next = 0;  // the first index the gaps do not cover yet
  auto put = [&](std::uint64_t gap) {
    if (static_cast<std::size_t>(limit - p) < varint_size_bytes(gap)) return false;
    p = put_varint(p, gap);
    return true;
  };
  for (std::size_t w = 0; 8 * w < mask_bytes; ++w) {
    for (std::uint64_t bits = load_mask_word64(mask, w, mask_bytes); bits != 0; bits &= bits - 1) {
      const std::uint64_t index = 64 * std::uint64_t{w} + static_cast<std::uint64_t>(zcoll::countr_zero(bits));
      if (!put(index - next)) return std::nullopt;
      next = index + 1;
    }
  }
  if (!put(count - next)) return std::nullopt;
  return static_cast<std::size_t>(p - out);
}

/// Reads one minimal LEB128 varint of at most 64 bits.
inline std::uint64_t read_varint(byte_reader& in) {
  std::uint64_t v = 0;
  for (unsigned i = 0;; ++i) {
    const auto b = in.read<std::uint8_t>("topk index gap");
    if (i == max_varint_bytes - 1 && b > 1) throw format_error("topk index gap varint overflows 64 bits");
    v |= std::uint64_t{b & 0x7Fu} << (7 * i);
    if ((b & 0x80u) == 0) {
      if (b == 0 && i > 0) throw format_error("topk index gap varint is not minimal (ends in a zero byte)");
      return v;
    }
  }
}

/// The body of a stream, located and size-checked (not yet decoded).
struct body {
  index_form form = index_form::gaps;
  std::uint64_t kept = 0;
  std::span<const std::byte> values;
  std::span<const std::byte> index;
};

template <floating_value T>
body locate_body(std::span<const std::byte> stream, std::uint64_t count) {
  byte_reader in(stream.subspan(form_offset));
  body b;
  const auto form = in.read<std::uint8_t>("topk index form");
  if (form > 1) throw format_error("topk index form " + std::to_string(form) + " is neither 0 (gaps) nor 1 (bitmap)");
  b.form = static_cast<index_form>(form);
  b.kept = in.read<std::uint64_t>("topk kept count");
  if (b.kept > count) {
    throw format_error("topk kept count " + std::to_string(b.kept) + " exceeds the value count " + std::to_string(count));
  }
  if (b.kept > in.remaining() / sizeof(T)) {
    throw format_error("topk kept values: " + std::to_string(b.kept) + " values do not fit in the " +
                       std::to_string(in.remaining()) + " bytes left");
  }
  b.values = in.take(static_cast<std::size_t>(b.kept) * sizeof(T), "topk kept values");
  b.index = in.take(in.remaining(), "topk index section");
  if (b.form == index_form::bitmap && b.index.size() != sparsify::mask_size_bytes(static_cast<std::size_t>(count))) {
    throw format_error("topk bitmap has " + std::to_string(b.index.size()) + " bytes, " +
                       std::to_string(sparsify::mask_size_bytes(static_cast<std::size_t>(count))) + " expected for " +
                       std::to_string(count) + " values");
  }
  return b;
}

/// Checks a bitmap: k bits set, none past `count`.
inline void check_bitmap(std::span<const std::byte> mask, std::size_t count, std::uint64_t kept) {
  if (count % 8 != 0 && (std::to_integer<unsigned>(mask.back()) >> (count % 8)) != 0) {
    throw format_error("topk bitmap has bits set past the value count " + std::to_string(count));
  }
  const std::size_t set = sparsify::mask_popcount(mask);
  if (set != kept) {
    throw format_error("topk bitmap selects " + std::to_string(set) + " entries, the kept count is " + std::to_string(kept));
  }
}

/// Decodes (out != nullptr) or only validates (out == nullptr) a gaps section.
template <floating_value T>
void decode_gaps(const body& b, std::size_t count, T* out) {
  byte_reader in(b.index);
  std::uint64_t next = 0;
  const std::byte* value = b.values.data();
  for (std::uint64_t i = 0; i < b.kept; ++i) {
    const std::uint64_t gap = read_varint(in);
    if (gap >= count - next) {  // next <= index < count, without overflow
      throw format_error("topk index gap " + std::to_string(gap) + " after index " + std::to_string(next) +
                         " reaches past the value count " + std::to_string(count));
    }
    const std::uint64_t index = next + gap;
    if (out != nullptr) {
      std::fill(out + next, out + index, T(0));
      std::memcpy(out + index, value, sizeof(T));
    }
    value += sizeof(T);
    next = index + 1;
  }
  const std::uint64_t tail = read_varint(in);
  if (tail != count - next) {
    throw format_error("topk trailing gap " + std::to_string(tail) + " does not reach the value count " +
                       std::to_string(count) + " from index " + std::to_string(next));
  }
  if (in.remaining() != 0) throw format_error("topk stream has " + std::to_string(in.remaining()) + " bytes past its index gaps");
  if (out != nullptr) std::fill(out + next, out + count, T(0));
}

/// Decodes a checked bitmap section.
template <floating_value T>
void decode_bitmap(const body& b, std::size_t count, T* out) {
  const std::byte* value = b.values.data();
  for (std::size_t w = 0; w < sparsify::detail::mask_word_count(count); ++w) {
    const std::size_t i = w * sparsify::detail::mask_word_values;
    std::fill_n(out + i, std::min(sparsify::detail::mask_word_values, count - i), T(0));
    for (std::uint32_t bits = sparsify::detail::load_mask_word(b.index.data(), w, count); bits != 0; bits &= bits - 1) {
      std::memcpy(out + i + static_cast<std::size_t>(zcoll::countr_zero(bits)), value, sizeof(T));
      value += sizeof(T);
    }
  }
}

}  // namespace detail::topk

/// The top-K sparsifier of DCT-DP; see the file comment for the stream.
class TopK {
 public:
  static constexpr codec_id id = own_layout_codec_id<codec_ids::topk>();
  /// TopK keeps a fraction of the entries; it takes no error bound (the header states the bound it met).
  static constexpr bool uses_error_bound = false;

  static std::string name() { return "topk"; }

  /// What one tensor carries from call to call: its threshold schedule (tau and the calls since it was
  /// computed), what the last call did, and the passes' scratch (kept: a call allocates nothing once warm).
  struct state {
    std::optional<sparsify::threshold_schedule> schedule;  ///< made by the first call, from the codec's settings
    topk_report last;                                      ///< what the last call did
    std::vector<detail::topk::pass_result> passes;
  };

  /// The defaults of topk_config: keep 1 %, exact threshold, recomputed on every call.
  explicit TopK(codec_config config = {}) : TopK(std::move(config), topk_config{}) {}

  TopK(codec_config config, topk_config sparsity)
      : config_(std::move(config)),
        sparsity_(sparsity),
        schedule_config_{.keep_fraction = sparsity.keep_fraction,
                         .threshold_life_span = sparsity.threshold_life_span,
                         .method = sparsity.threshold} {
    sparsify::threshold_schedule::check(schedule_config_);  // now, not on the first call
  }

  const codec_config& config() const { return config_; }
  /// This codec with another error bound, every other setting kept (what a reduction hop needs).
  TopK with_error_bound(const bound& error_bound) const {
    codec_config config = config_;
    config.error_bound = error_bound;
    return TopK(std::move(config), sparsity_);
  }
  const topk_config& sparsity() const { return sparsity_; }

  /// Bytes compress may write for `count` values: header, form, kept count, every value and a bitmap.
  template <floating_value T>
  static std::size_t max_compressed_size(std::size_t count) {
    const std::size_t values = checked_multiply(count, sizeof(T), "max_compressed_size", "count");
    return checked_add(detail::topk::values_offset + sparsify::mask_size_bytes(count), values, "max_compressed_size",
                       "stream bytes");
  }

  /// Compresses `in` into `out` (at least max_compressed_size<T>(in.size()) bytes); returns the bytes
  /// written, a prefix of `out`. The bytes do not depend on exec.threads.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, state& st, const R& in, std::span<std::byte> out) const {
    using T = std::ranges::range_value_t<R>;
    return compress_values<T>(exec, st, std::span<const T>(std::ranges::data(in), std::ranges::size(in)), out,
                              nullptr);
  }

  /// The codec interface: a call with a fresh state (tau computed on this input).
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out) const {
    state fresh;
    return compress(exec, fresh, in, out);
  }

  /// compress, also writing in the same pass residual[i] = in[i] - decoded[i]: in[i] where the entry is
  /// dropped, +0 where it is sent. This is the error e = z - C(z) of error feedback (Algorithm 1, line 11).
  /// residual.size() must equal in.size(); residual may be `in` itself (z becomes e in place).
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress_with_residual(const exec::Host& exec, state& st, const R& in, std::span<std::byte> out,
                                              std::span<std::ranges::range_value_t<R>> residual) const {
    using T = std::ranges::range_value_t<R>;
    if (residual.size() != std::ranges::size(in)) {
      throw argument_error("compress_with_residual: residual holds " + std::to_string(residual.size()) +
                           " values, the input has " + std::to_string(std::ranges::size(in)));
    }
    return compress_values<T>(exec, st, std::span<const T>(std::ranges::data(in), std::ranges::size(in)), out,
                              residual.data());
  }

  /// compress_with_residual with a fresh state.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress_with_residual(const exec::Host& exec, const R& in, std::span<std::byte> out,
                                              std::span<std::ranges::range_value_t<R>> residual) const {
    state fresh;
    return compress_with_residual(exec, fresh, in, out, residual);
  }

  /// Decompresses a whole stream into `out`, which must hold exactly the stream's value count (else
  /// argument_error). A malformed stream, or one of another codec or value type, raises format_error
  /// (out is then partly written). The index section is a serial chain of gaps: the decoder runs on one
  /// thread whatever exec says; it writes out once, in order.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  void decompress(const exec::Host& exec, std::span<const std::byte> in, R&& out) const {
    using T = std::ranges::range_value_t<R>;
    (void)exec;
    const stream_header header = checked_header<T>(in);
    if (header.count != std::ranges::size(out)) {
      throw argument_error("decompress: out holds " + std::to_string(std::ranges::size(out)) + " values, the stream " +
                           std::to_string(header.count));
    }
    decode<T>(in, header, std::ranges::data(out));
  }

  /// Convenience: a new vector holding the stream, one thread.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::vector<std::byte> compress(const R& in) const {
    return compress_to_vector(*this, in);
  }

  /// Convenience: a new vector of the stream's values. The whole stream is validated before the
  /// vector is allocated (a sparse stream may be far smaller than its values).
  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    const stream_header header = checked_header<T>(in);
    if (header.count > std::vector<T>().max_size()) {
      throw format_error("topk value count " + std::to_string(header.count) + " is too large");
    }
    decode<T>(in, header, nullptr);  // validate only
    std::vector<T> values(static_cast<std::size_t>(header.count));
    decode<T>(in, header, values.data());
    return values;
  }

 private:
  template <floating_value T>
  static stream_header checked_header(std::span<const std::byte> in) {
    const stream_header header = read_stream_header(in);
    require_codec_and_type(header, id, name, value_type_of<T>);
    require_unchunked_without_fill(header, name());
    if (!std::isfinite(header.error_bound)) {
      throw format_error("topk stream states a bound of " + std::to_string(header.error_bound) +
                         ", the largest dropped magnitude is finite");
    }
    return header;
  }

  /// Decodes into `out`, or only validates when out is null.
  template <floating_value T>
  static void decode(std::span<const std::byte> in, const stream_header& header, T* out) {
    const auto count = static_cast<std::size_t>(header.count);
    const detail::topk::body b = detail::topk::locate_body<T>(in, header.count);
    if (b.form == detail::topk::index_form::gaps) {
      detail::topk::decode_gaps<T>(b, count, out);
    } else {
      detail::topk::check_bitmap(b.index, count, b.kept);
      if (out != nullptr) detail::topk::decode_bitmap<T>(b, count, out);
    }
  }

  template <floating_value T>
  std::span<std::byte> compress_values(const exec::Host& exec, state& st, std::span<const T> in,
                                       std::span<std::byte> out, T* residual) const {
    const std::size_t count = in.size();
    const std::size_t needed = max_compressed_size<T>(count);
    if (out.size() < needed) {
      throw argument_error("compress: out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" +
                           std::to_string(count) + ") = " + std::to_string(needed) + " are needed");
    }
    // A state made under other settings (another TopK's) starts its schedule over under these.
    if (!st.schedule || !(st.schedule->config() == schedule_config_)) st.schedule.emplace(schedule_config_);
    const sparsify::threshold_decision decision = st.schedule->next(exec, in);
    const auto tau = static_cast<T>(decision.threshold);

    // Each worker writes its kept values into its own slice of the worst-case values region and its
    // mask bits after that region (where the bitmap would start were every value kept); the slices are
    // then moved together, so the bytes do not depend on the split.
    std::byte* const values = out.data() + detail::topk::values_offset;
    std::byte* const mask = values + count * sizeof(T);
    constexpr std::size_t block = sparsify::detail::mask_word_values;
    const std::size_t blocks = sparsify::detail::mask_word_count(count);
    const std::size_t workers = exec::worker_count(exec, blocks);
    std::vector<detail::topk::pass_result>& results = st.passes;  // kept between calls: no allocation
    results.assign(workers, {});
    exec::for_each_range(exec, blocks, [&](std::size_t w, std::size_t first, std::size_t last) {
      results[w] = detail::topk::threshold_pass(in.data(), first * block, std::min(last * block, count), count,
                                                sparsify::kept_key_floor(tau), mask, values + first * block * sizeof(T),
                                                residual);
    });
    std::size_t kept = 0;
    std::uint64_t max_dropped_key = 0;
    for (std::size_t w = 0; w < workers; ++w) {
      const std::byte* slice = values + blocks * w / workers * block * sizeof(T);
      if (slice != values + kept * sizeof(T)) std::memmove(values + kept * sizeof(T), slice, results[w].kept * sizeof(T));
      kept += results[w].kept;
      max_dropped_key = std::max(max_dropped_key, results[w].max_dropped_key);
    }

    // Gaps when they beat the bitmap: they take at least one byte per kept entry plus one, so only
    // kept + 1 < bitmap bytes qualifies, and then they end before the mask they are read from.
    std::byte* const index = values + kept * sizeof(T);
    const std::size_t bitmap_bytes = sparsify::mask_size_bytes(count);
    std::optional<std::size_t> gap_bytes;
    if (kept + 1 < bitmap_bytes) gap_bytes = detail::topk::write_gaps(mask, count, index, bitmap_bytes - 1);
    const auto form = gap_bytes ? detail::topk::index_form::gaps : detail::topk::index_form::bitmap;
    if (!gap_bytes) std::memmove(index, mask, bitmap_bytes);

    const double max_dropped =
        static_cast<double>(sparsify::magnitude_of_key<T>(static_cast<bits_of<T>>(max_dropped_key)));
    stream_header header;
    header.codec = id;
    header.type = value_type_of<T>;
    header.count = count;
    header.error_bound = max_dropped;
    header.chunk_values = 0;
    header.chunk_count = 0;
    byte_writer prefix(out);
    write_stream_header(prefix, header);
    prefix.write(static_cast<std::uint8_t>(form));
    prefix.write(static_cast<std::uint64_t>(kept));

    st.last = {count,         kept, sparsity_.keep_fraction, decision.threshold, decision.recomputed,
               decision.method_used, max_dropped};
    return out.first(detail::topk::values_offset + kept * sizeof(T) + gap_bytes.value_or(bitmap_bytes));
  }

  codec_config config_;
  topk_config sparsity_;
  sparsify::threshold_schedule_config schedule_config_;
};

}  // namespace zcoll
