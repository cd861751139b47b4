#pragma once
/// The CUDA driver's algorithm for TopK (codec/topk.cuh), as the parts each thread runs: written once,
/// compiled for the device and for the host tests, which run the same parts in loops with std scans in
/// place of CUB's (tests/codec/detail/topk_tile_test.cpp) and compare the bytes with the host driver's.
///
/// Compression, for n values in words of 32 (w = 0 .. ceil(n / 32) - 1):
/// 1. the exact threshold (topk_threshold.hpp's K-th largest magnitude key, NaN ranked as 0) by a radix
///    select from the top: per digit of 11 bits, a histogram of the keys that share the settled high bits
///    (topk_histogram_part), then the bin holding the K-th largest is picked (topk_choose_in);
///    3 digits for f32, 6 for f64. Skipped while the threshold's life span lasts (it stays in the record);
/// 2. topk_classify_word: the word's keep mask, kept count and last kept index, its largest dropped key,
///    and the residual of error feedback;
/// 3. inclusive scans over the words: kept counts (sum) and last kept index + 1 (max);
/// 4. topk_scatter_word: the kept values to their place, and the bytes of the word's index gaps; then
///    topk_write_residual for each value (x itself may be the residual);
/// 5. an inclusive sum of the gap bytes; topk_finish (one thread): the form (gaps when smaller than the
///    bitmap, as the host decides), the header and the stream's size;
/// 6. topk_index_word: the word's gap varints, or its bitmap bytes.
///
/// Decompression: topk_plan_of (one thread) checks the header and locates the sections; then either the
/// bitmap's words (popcounts, a scan, topk_bitmap_scatter_word) or the gap varints in words of 8 index
/// bytes (topk_gap_word_of counts the varints ending in the word and their advance, scans, then
/// topk_gap_scatter_word places the values); topk_verify checks the totals between the two passes, so a
/// stream that does not decode writes no kept value (the gaps form zeroes the output first).

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/codec/topk.hpp"
#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/sparsify/magnitude_key.hpp"
#include "zcoll/sparsify/mask.hpp"
#include "zcoll/sparsify/topk_threshold.hpp"

namespace zcoll::detail {

inline constexpr std::uint64_t topk_word_values = sparsify::detail::mask_word_values;
/// Index bytes per word of the gap decoder: 8, so that a stream's few hundred KB of gaps still make
/// tens of thousands of threads (32 left the H100's decoder waiting on a few thousand).
inline constexpr std::uint64_t topk_index_word_bytes = 8;
inline constexpr unsigned topk_digit_bits = 11;
inline constexpr std::uint32_t topk_histogram_bins = 1u << topk_digit_bits;

/// TopK::id as a value device code can use (a static member would be odr-used there).
ZCOLL_HOST_DEVICE constexpr codec_id topk_codec_id() { return own_layout_codec_id<codec_ids::topk>(); }
static_assert(topk_codec_id() == TopK::id);

/// Words of 32 values over n: the mask's words (sparsify/mask.hpp).
ZCOLL_HOST_DEVICE constexpr std::uint64_t topk_words(std::uint64_t count) { return sparsify::detail::mask_word_count(count); }

/// Digits of the radix select: ceil(key width / 11), from the top.
template <floating_value T>
inline constexpr unsigned topk_digits = (sparsify::magnitude_key_width<T> + topk_digit_bits - 1) / topk_digit_bits;

/// Digit d's bit position and width: the top 11 bits first, the last digit what is left.
struct topk_digit {
  unsigned shift;
  unsigned width;
};
template <floating_value T>
ZCOLL_HOST_DEVICE constexpr topk_digit topk_digit_of(unsigned d) {
  const unsigned high = sparsify::magnitude_key_width<T> - topk_digit_bits * d;
  const unsigned width = high < topk_digit_bits ? high : topk_digit_bits;
  return {high - width, width};
}

/// The radix select's progress: the high bits of the K-th largest key settled so far, and its rank
/// (1-based) among the keys that share them.
struct topk_select_state {
  std::uint64_t prefix;
  std::uint64_t rank;
};

/// What a compression leaves on the device, read back by cuda::topk_report_of; its threshold key is
/// what a reused threshold is taken from.
struct topk_record {
  std::uint64_t threshold_key;    ///< key of tau (an f32 key zero-extended)
  std::uint64_t max_dropped_key;  ///< the largest dropped magnitude key
  std::uint64_t kept;
  std::uint64_t stream_bytes;
  std::uint32_t form;             ///< topk::index_form
  std::uint32_t recomputed;       ///< tau was computed by this call
};

/// Calls add(bin) for each of x[i], i = thread, thread + threads, ... < n, whose key shares the settled
/// bits of `s` above digit d: the bin is its digit d. Four values are loaded before any is counted, so a
/// GPU thread has four loads in flight (one at a time left an H100 at half its read bandwidth).
template <floating_value T, class Add>
ZCOLL_HOST_DEVICE void topk_histogram_part(const T* x, std::uint64_t n, unsigned d, const topk_select_state& s,
                                           std::uint64_t thread, std::uint64_t threads, Add add) {
  constexpr unsigned in_flight = 4;
  const topk_digit digit = topk_digit_of<T>(d);
  const unsigned above = digit.shift + digit.width;  // at most 63: no shift by the key's whole width
  const std::uint64_t mask = (std::uint64_t{1} << digit.width) - 1;
  for (std::uint64_t i = thread; i < n; i += in_flight * threads) {
    std::uint64_t keys[in_flight];
    for (unsigned u = 0; u < in_flight; ++u) {
      const std::uint64_t j = i + u * threads;
      keys[u] = j < n ? sparsify::threshold_rank_key(x[j]) : ~std::uint64_t{0};  // past n: matches no prefix
    }
    for (unsigned u = 0; u < in_flight; ++u) {
      if (i + u * threads < n && (keys[u] >> above) == (s.prefix >> above)) {
        add(static_cast<std::uint32_t>((keys[u] >> digit.shift) & mask));
      }
    }
  }
}

/// Settles digit d if the rank-th largest key lies in bins [low, high) of its histogram, `above` keys
/// lying in the bins above `high`: then sets the digit and the rank within the bin, and returns true
/// (the host's choose_bin, for one range of bins; the whole histogram is low = 0, high = 2^width).
template <floating_value T, class Count>
ZCOLL_HOST_DEVICE bool topk_choose_in(const Count* histogram, unsigned d, std::uint32_t low, std::uint32_t high,
                                      std::uint64_t above, topk_select_state& s) {
  if (s.rank <= above) return false;
  std::uint64_t rank = s.rank - above;
  for (std::uint32_t b = high; b-- > low;) {
    const auto count = static_cast<std::uint64_t>(histogram[b]);
    if (rank <= count) {
      s.prefix |= std::uint64_t{b} << topk_digit_of<T>(d).shift;
      s.rank = rank;
      return true;
    }
    rank -= count;
  }
  return false;
}

/// What the threshold pass found in one word of 32 entries.
struct topk_word {
  std::uint32_t mask;              ///< bit j: entry 32 w + j is kept
  std::uint32_t kept;
  std::uint64_t last_plus_one;     ///< the last kept index + 1, 0 when none is kept
  std::uint64_t max_dropped_key;
};

/// Classifies word w, whose `lanes` values (at most 32) are at `values` (the word in x, or a copy of it:
/// the CUDA kernel stages its words in shared memory to read x coalesced), against the smallest kept key
/// `floor` (sparsify::kept_key_floor).
template <floating_value T>
ZCOLL_HOST_DEVICE topk_word topk_classify_word(const T* values, std::uint64_t lanes, std::uint64_t w, bits_of<T> floor) {
  using bits = bits_of<T>;
  topk_word word{0, 0, 0, 0};
  for (std::uint64_t j = 0; j < lanes; ++j) {
    bits b;
    std::memcpy(&b, values + j, sizeof b);
    const bits key = b & sparsify::magnitude_bits<T>;
    if (key >= floor) {
      word.mask |= 1u << j;
      word.last_plus_one = w * topk_word_values + j + 1;
    } else if (key > word.max_dropped_key) {
      word.max_dropped_key = key;
    }
  }
  word.kept = static_cast<std::uint32_t>(zcoll::popcount(word.mask));
  return word;
}

/// Values in word w of n.
ZCOLL_HOST_DEVICE constexpr std::uint64_t topk_lanes_of_word(std::uint64_t n, std::uint64_t w) {
  const std::uint64_t first = w * topk_word_values;
  return n - first < topk_word_values ? n - first : topk_word_values;
}

/// Copies word w's kept values to `values` + `before` (the kept entries of the words before it) and
/// returns the bytes of their index gaps; `previous_plus_one` is the last kept index before the word + 1
/// (0 when none).
template <floating_value T>
ZCOLL_HOST_DEVICE std::uint64_t topk_scatter_word(const T* x, std::uint64_t w, std::uint32_t mask, std::uint64_t before,
                                                  std::uint64_t previous_plus_one, std::byte* values) {
  std::uint64_t gap_bytes = 0;
  for (std::uint32_t m = mask; m != 0; m &= m - 1) {
    const std::uint64_t index = w * topk_word_values + static_cast<std::uint64_t>(zcoll::countr_zero(m));
    std::memcpy(values + before * sizeof(T), x + index, sizeof(T));
    ++before;
    gap_bytes += topk::varint_size_bytes(index - previous_plus_one);
    previous_plus_one = index + 1;
  }
  return gap_bytes;
}

/// Entry i's residual of error feedback, x - decoded: x where dropped, +0 where kept; written as bits (a
/// copy through a float register could flush a denormal). Callers write it after the word's kept values
/// are copied, so the residual may be x itself.
template <floating_value T>
ZCOLL_HOST_DEVICE void topk_write_residual(const T* x, std::uint64_t i, bool kept, T* residual) {
  bits_of<T> b = 0;
  if (!kept) std::memcpy(&b, x + i, sizeof b);
  std::memcpy(residual + i, &b, sizeof b);
}

/// Decides the form as the host does (gaps only when kept + 1 < bitmap bytes and the gaps, their tail
/// included, take fewer bytes than the bitmap), writes the header, form and kept count at `out`, and
/// fills the record; `next` is the last kept index + 1, `gap_bytes` the gaps of the kept entries.
template <floating_value T>
ZCOLL_HOST_DEVICE void topk_finish(std::uint64_t n, std::uint64_t kept, std::uint64_t next, std::uint64_t gap_bytes,
                                   std::byte* out, topk_record& record) {
  const std::uint64_t bitmap_bytes = sparsify::mask_size_bytes(n);
  const std::uint64_t all_gap_bytes = gap_bytes + topk::varint_size_bytes(n - next);
  const bool gaps = kept + 1 < bitmap_bytes && all_gap_bytes <= bitmap_bytes - 1;
  stream_header header;
  header.codec = topk_codec_id();
  header.type = value_type_of<T>;
  header.count = n;
  header.error_bound = static_cast<double>(sparsify::magnitude_of_key<T>(static_cast<bits_of<T>>(record.max_dropped_key)));
  header.chunk_values = 0;
  header.chunk_count = 0;
  store_stream_header(header, out);
  out[topk::form_offset] = static_cast<std::byte>(gaps ? topk::index_form::gaps : topk::index_form::bitmap);
  std::memcpy(out + topk::kept_count_offset, &kept, sizeof kept);
  record.kept = kept;
  record.form = static_cast<std::uint32_t>(gaps ? topk::index_form::gaps : topk::index_form::bitmap);
  record.stream_bytes = topk::values_offset + kept * sizeof(T) + (gaps ? all_gap_bytes : bitmap_bytes);
}

/// Writes word w's part of the index section at `index`: its gap varints at byte `gap_offset` (the
/// gaps of the words before it), and after the last word's the tail gap up to n; or its bitmap bytes.
ZCOLL_HOST_DEVICE inline void topk_index_word(std::uint64_t n, std::uint64_t w, std::uint32_t mask, topk::index_form form,
                                              std::uint64_t previous_plus_one, std::uint64_t gap_offset,
                                              std::byte* index) {
  if (form == topk::index_form::bitmap) {
    sparsify::detail::store_mask_word(index, w, n, mask);
    return;
  }
  std::byte* p = index + gap_offset;
  for (std::uint32_t m = mask; m != 0; m &= m - 1) {
    const std::uint64_t at = w * topk_word_values + static_cast<std::uint64_t>(zcoll::countr_zero(m));
    p = topk::put_varint(p, at - previous_plus_one);
    previous_plus_one = at + 1;
  }
  if (w + 1 == topk_words(n)) topk::put_varint(p, n - previous_plus_one);
}

// ---------------------------------------------------------------------------------------------------
// Decompression

/// Why a TopK index section does not decode (the detail of a bad_sparse_index fault).
enum class topk_index_fault : std::uint8_t {
  bad_form = 1,        // the form byte is neither 0 nor 1
  kept_over_count,     // more kept entries than values
  values_truncated,    // the kept values do not fit in the stream
  bitmap_size,         // a bitmap of other than ceil(n / 8) bytes
  bitmap_padding,      // bits set past the value count
  bitmap_popcount,     // the bitmap selects other than the kept count
  varint_overflow,     // a gap of more than 64 bits
  varint_not_minimal,  // a gap ending in a zero byte
  varint_truncated,    // the section ends inside a gap
  gap_past_count,      // a gap reaches past the value count
  gap_count,           // other than kept + 1 gaps
  gap_sum,             // the gaps do not add up to the value count
};

inline const char* to_string(topk_index_fault fault) {
  switch (fault) {
    case topk_index_fault::bad_form: return "index form is neither 0 (gaps) nor 1 (bitmap)";
    case topk_index_fault::kept_over_count: return "kept count exceeds the value count";
    case topk_index_fault::values_truncated: return "the kept values do not fit in the stream";
    case topk_index_fault::bitmap_size: return "bitmap is not ceil(count / 8) bytes";
    case topk_index_fault::bitmap_padding: return "bitmap has bits set past the value count";
    case topk_index_fault::bitmap_popcount: return "bitmap selects other than the kept count";
    case topk_index_fault::varint_overflow: return "index gap varint overflows 64 bits";
    case topk_index_fault::varint_not_minimal: return "index gap varint is not minimal (ends in a zero byte)";
    case topk_index_fault::varint_truncated: return "index section ends inside a gap varint";
    case topk_index_fault::gap_past_count: return "an index gap reaches past the value count";
    case topk_index_fault::gap_count: return "the index section holds other than kept count + 1 gaps";
    case topk_index_fault::gap_sum: return "the index gaps do not add up to the value count";
  }
  return "unknown index fault";
}

/// Where a checked stream's sections are.
struct topk_plan {
  std::uint32_t form;
  std::uint64_t kept;
  std::uint64_t values_at;
  std::uint64_t index_at;
  std::uint64_t index_bytes;
};

/// Checks what the host decoder checks before the index (header, codec and type, the unchunked form, the
/// count asked for, a finite bound, form, kept count, section sizes) and locates the sections.
template <floating_value T>
ZCOLL_HOST_DEVICE decode_fault topk_plan_of(const std::byte* stream, std::uint64_t length, std::uint64_t count,
                                            topk_plan& plan) {
  const decode_fault fault{0, 0, 0, 0};
  const auto fail = [](decode_fault_code code, std::uint64_t detail) { return stream_fault(0, code, detail); };
  const auto bad_index = [&](topk_index_fault f) { return fail(decode_fault_code::bad_sparse_index, static_cast<std::uint64_t>(f)); };
  stream_header h;
  const header_fault parsed = parse_stream_header(stream, length, h);
  if (parsed == header_fault::truncated) return fail(decode_fault_code::short_stream, length);
  if (parsed != header_fault::none) return fail(decode_fault_code::bad_header, static_cast<std::uint64_t>(parsed));
  if (!(h.codec == topk_codec_id()) || h.type != value_type_of<T>) return fail(decode_fault_code::wrong_codec, 0);
  if (h.chunk_values != 0 || h.chunk_count != 0 || h.has_fill_value) return fail(decode_fault_code::not_unchunked, 0);
  if (h.count != count) return fail(decode_fault_code::wrong_count, 0);
  if (!(h.error_bound <= 1.7976931348623157e308)) return fail(decode_fault_code::bad_error_bound, 0);
  if (length < topk::values_offset) return fail(decode_fault_code::short_stream, length);
  const auto form = std::to_integer<std::uint8_t>(stream[topk::form_offset]);
  if (form > 1) return bad_index(topk_index_fault::bad_form);
  std::uint64_t kept;
  std::memcpy(&kept, stream + topk::kept_count_offset, sizeof kept);
  if (kept > count) return bad_index(topk_index_fault::kept_over_count);
  if (kept > (length - topk::values_offset) / sizeof(T)) return bad_index(topk_index_fault::values_truncated);
  plan.form = form;
  plan.kept = kept;
  plan.values_at = topk::values_offset;
  plan.index_at = topk::values_offset + kept * sizeof(T);
  plan.index_bytes = length - plan.index_at;
  if (form == static_cast<std::uint8_t>(topk::index_form::bitmap) && plan.index_bytes != sparsify::mask_size_bytes(count)) {
    return bad_index(topk_index_fault::bitmap_size);
  }
  return fault;
}

/// Word w of a bitmap section: its bits, or a padding fault (bits past `count` in the last word).
ZCOLL_HOST_DEVICE inline bool topk_bitmap_word(const std::byte* index, std::uint64_t count, std::uint64_t w,
                                               std::uint32_t& bits) {
  bits = sparsify::detail::load_mask_word(index, w, count);
  const std::uint64_t lanes = count - w * topk_word_values;
  return lanes >= topk_word_values || (bits >> lanes) == 0;
}

/// Writes word w's 32 values (fewer in the last word): the kept ones from `values` + `before` in order,
/// zeros elsewhere.
template <floating_value T>
ZCOLL_HOST_DEVICE void topk_bitmap_scatter_word(const std::byte* values, std::uint64_t count, std::uint64_t w,
                                                std::uint32_t bits, std::uint64_t before, T* out) {
  const std::uint64_t first = w * topk_word_values;
  const std::uint64_t lanes = count - first < topk_word_values ? count - first : topk_word_values;
  for (std::uint64_t j = 0; j < lanes; ++j) {
    T v = T(0);
    if ((bits >> j) & 1u) std::memcpy(&v, values + (before++) * sizeof(T), sizeof(T));
    out[first + j] = v;
  }
}

/// Saturating sum: the advance of hostile gaps cannot wrap around to the expected total.
struct topk_saturating_add {
  ZCOLL_HOST_DEVICE std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const {
    return a + b < a ? ~std::uint64_t{0} : a + b;
  }
};

/// The gap varints ending in index bytes [8 v, 8 v + 8): how many, and the sum of gap + 1 over them.
struct topk_gap_word {
  std::uint64_t ends;
  std::uint64_t advance;
};

/// Decodes the varint ending at index byte `end` (its high bit clear), checking it as the host's
/// read_varint does; a varint starts after the previous byte with a clear high bit.
ZCOLL_HOST_DEVICE inline topk_index_fault topk_varint_ending_at(const std::byte* index, std::uint64_t end,
                                                                std::uint64_t& value) {
  std::uint64_t length = 1;
  while (length <= topk::max_varint_bytes && end >= length &&
         (std::to_integer<unsigned>(index[end - length]) & 0x80u) != 0) {
    ++length;
  }
  const auto last = std::to_integer<unsigned>(index[end]);
  if (length > topk::max_varint_bytes || (length == topk::max_varint_bytes && last > 1)) {
    return topk_index_fault::varint_overflow;
  }
  if (length > 1 && last == 0) return topk_index_fault::varint_not_minimal;
  value = 0;
  for (std::uint64_t i = 0; i < length; ++i) {
    value |= std::uint64_t{std::to_integer<unsigned>(index[end + 1 - length + i]) & 0x7Fu} << (7 * i);
  }
  return topk_index_fault{};
}

/// Counts word v's varints and their advance; a fault for a bad varint, a gap past `count`, or a section
/// that ends inside a varint.
ZCOLL_HOST_DEVICE inline topk_index_fault topk_gap_word_of(const std::byte* index, std::uint64_t index_bytes,
                                                           std::uint64_t count, std::uint64_t v, topk_gap_word& word) {
  word = {0, 0};
  const std::uint64_t first = v * topk_index_word_bytes;
  const std::uint64_t last = index_bytes - first < topk_index_word_bytes ? index_bytes : first + topk_index_word_bytes;
  for (std::uint64_t j = first; j < last; ++j) {
    if ((std::to_integer<unsigned>(index[j]) & 0x80u) != 0) {
      if (j + 1 == index_bytes) return topk_index_fault::varint_truncated;
      continue;
    }
    std::uint64_t gap = 0;
    const topk_index_fault f = topk_varint_ending_at(index, j, gap);
    if (f != topk_index_fault{}) return f;
    if (gap > count) return topk_index_fault::gap_past_count;
    ++word.ends;
    word.advance = topk_saturating_add{}(word.advance, gap + 1);
  }
  return topk_index_fault{};
}

/// Places the kept values whose gaps end in word v: `ends_before` gaps and an advance of
/// `advance_before` precede the word (index i = advance so far - 1); the last gap, the tail, places none.
template <floating_value T>
ZCOLL_HOST_DEVICE void topk_gap_scatter_word(const std::byte* index, std::uint64_t index_bytes, const std::byte* values,
                                             std::uint64_t kept, std::uint64_t count, std::uint64_t v,
                                             std::uint64_t ends_before, std::uint64_t advance_before, T* out) {
  const std::uint64_t first = v * topk_index_word_bytes;
  const std::uint64_t last = index_bytes - first < topk_index_word_bytes ? index_bytes : first + topk_index_word_bytes;
  for (std::uint64_t j = first; j < last; ++j) {
    if ((std::to_integer<unsigned>(index[j]) & 0x80u) != 0) continue;
    std::uint64_t gap = 0;
    if (topk_varint_ending_at(index, j, gap) != topk_index_fault{}) return;  // verified before: unreachable
    advance_before += gap + 1;
    if (ends_before < kept && advance_before - 1 < count) {
      std::memcpy(out + (advance_before - 1), values + ends_before * sizeof(T), sizeof(T));
    }
    ++ends_before;
  }
}

/// The totals' checks between the passes: the bitmap selects `kept` entries; or there are kept + 1 gaps
/// and they add up to count + 1 (the kept indices below count, the tail reaching it).
ZCOLL_HOST_DEVICE inline topk_index_fault topk_verify(const topk_plan& plan, std::uint64_t count, std::uint64_t selected,
                                                      std::uint64_t ends, std::uint64_t advance) {
  if (plan.form == static_cast<std::uint32_t>(topk::index_form::bitmap)) {
    return selected == plan.kept ? topk_index_fault{} : topk_index_fault::bitmap_popcount;
  }
  if (ends != plan.kept + 1) return plan.index_bytes == 0 ? topk_index_fault::varint_truncated : topk_index_fault::gap_count;
  if (advance != count + 1) return topk_index_fault::gap_sum;
  return topk_index_fault{};
}

}  // namespace zcoll::detail
