#pragma once
/// The sum of two chunks of pipeline streams written with the same bin width (zcoll::add, codec/add.hpp),
/// without dequantizing: the predictors of the addable pipelines (none, Lorenzo 1-D, 2-D, 3-D) are linear
/// in the integer codes, modulo 2^32 as they compute, so the residuals of a sum of codes are the sums of
/// the residuals. A chunk pair is added in one of two ways:
///
/// - **block by block** (both chunks coded, with or without exceptions: the usual case): each block pair
///   is added in its encoded form where the encoder can (BitShuffle adds on the bit planes,
///   encode/detail/bitshuffle_block_sum.hpp), else its residuals are decoded, added and encoded again; a
///   block whose residuals are all zero (one byte with BitShuffle) is not read at all: the other block is
///   copied (hZCCL's shortcut). Nothing is predicted back or dequantized. The codes of the sum must stay
///   within the quantizer's code range: a code is a sum of residuals of its chunk (Lorenzo's inverse is a
///   prefix sum over the values before it, in every dimension, with 0 outside the chunk; without
///   prediction a code is its residual), so the sum of the residual magnitudes bounds every code; only
///   when that bound passes the range are the codes computed and checked. When either chunk has
///   exception lanes (fill values, outliers, and the float-rounding misses of fields whose values are
///   large against the bound), the blocks up to the last such lane are decoded to codes (with 1-D
///   Lorenzo and BitShuffle only those holding one: the others move the running code on by the sum of
///   their residuals, read off their bit planes), the blocks holding one are dequantized, and those
///   lanes become the sum's exceptions as below. A block pair that holds the fill value at the same
///   lanes and no outlier (land in two fields of one grid) is not dequantized: each of its exception
///   lanes is a fill lane of the sum, whose fill value is fill_a + fill_b (addition_fills).
/// - **lane by lane** (a chunk stored verbatim in either stream, a summed code out of range, or a coded
///   form with its exceptions not smaller than the values): both chunks are decoded to values as the
///   decoder does, keeping their residuals and exception lanes.
///
/// Lanes that were exceptions in either chunk, and lanes whose summed code leaves the code range, become
/// exceptions of the sum holding what decompress-then-add gives for them (a + b in T, a NaN as the
/// canonical quiet NaN, so that a + b and b + a are the same bytes; a sum equal to the sum's fill value,
/// as fill + fill is, is a fill lane, any other an outlier); both ways write the same bytes for them. A
/// chunk stored verbatim in either stream, or a sum whose coded form would not be smaller than its
/// values, is stored verbatim as the sums a + b.
///
/// Either way the coded lanes of the sum decode to float(qa + qb) · 2eb: one rounding, where decompressing
/// both and adding rounds three times.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "zcoll/codec/detail/exception_section.hpp"
#include "zcoll/codec/detail/pipeline_add_tile.hpp"
#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/codec/detail/pipeline_chunk.hpp"
#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/predict/none.hpp"

#if ZCOLL_HAS_AVX2
#include <immintrin.h>
#endif

namespace zcoll::detail {

/// The buffers of the lane-by-lane path, sized for one chunk and not zero-filled (each is written
/// before it is read).
template <floating_value T>
struct chunk_sum_buffers {
  explicit chunk_sum_buffers(std::size_t chunk_values)
      : residuals_a(buffer<std::uint32_t>(padded_to_blocks(chunk_values))),
        residuals_b(buffer<std::uint32_t>(padded_to_blocks(chunk_values))),
        residuals_sum(buffer<std::uint32_t>(padded_to_blocks(chunk_values))), values_a(buffer<T>(chunk_values)),
        values_b(buffer<T>(chunk_values)), sums(buffer<T>(padded_to_blocks(chunk_values))),
        lanes_a(buffer<block_mask>(padded_to_blocks(chunk_values) / block_values)),
        lanes_b(buffer<block_mask>(padded_to_blocks(chunk_values) / block_values)),
        outliers_a(buffer<block_mask>(padded_to_blocks(chunk_values) / block_values)),
        outliers_b(buffer<block_mask>(padded_to_blocks(chunk_values) / block_values)),
        entries_a(buffer<std::uint32_t>(padded_to_blocks(chunk_values) / block_values)),
        entries_b(buffer<std::uint32_t>(padded_to_blocks(chunk_values) / block_values)) {
    exceptions.reserve(padded_to_blocks(chunk_values) / block_values);
  }
  template <class U>
  static std::unique_ptr<U[]> buffer(std::size_t size) { return std::make_unique_for_overwrite<U[]>(size); }

  std::unique_ptr<std::uint32_t[]> residuals_a, residuals_b, residuals_sum;
  std::unique_ptr<T[]> values_a, values_b;
  std::unique_ptr<T[]> sums;  // padded to whole blocks: the fill test and the exception path take a block at a time
  std::unique_ptr<block_mask[]> lanes_a, lanes_b;        // each block's exception lanes (fill or outlier)
  std::unique_ptr<block_mask[]> outliers_a, outliers_b;  // the outliers among them
  std::unique_ptr<std::uint32_t[]> entries_a, entries_b;  // each block's exception entry (index_exception_lanes)
  std::vector<block_exceptions> exceptions;
};

/// Per-worker scratch of the lane-by-lane path: allocated by the first chunk that takes that path (most
/// sums have none; zero-filling buffers for a chunk cost more than adding a small stream).
template <floating_value T>
class chunk_sum_scratch {
 public:
  explicit chunk_sum_scratch(std::size_t chunk_values) : chunk_values_(chunk_values) {}

  chunk_sum_buffers<T>& buffers() {
    if (!buffers_) buffers_.emplace(chunk_values_);
    return *buffers_;
  }

 private:
  std::size_t chunk_values_;
  std::optional<chunk_sum_buffers<T>> buffers_;
};

template <class P, class E>
struct pipeline_add {
  using chunk = pipeline_chunk<P, E>;
  /// Without prediction a code is its residual; with Lorenzo it is a sum of the chunk's residuals.
  static constexpr bool codes_are_residuals = std::is_same_v<P, predict::None>;
  /// A block without exception lanes moves the predictor on by the sum of its residuals alone (1-D
  /// Lorenzo, where the encoder can sum blocks without decoding them: BitShuffle).
  /// (The accumulator appears in expressions, not as a parameter: clang 14 takes a parameter of a type
  /// that does not exist as an error, not as an unmet requirement.)
  static constexpr bool skips_blocks_by_sum = requires(typename P::state& s, const std::byte* block) {
    std::declval<typename E::residual_sums&>().add(block);
    P::skip_block(s, std::declval<typename E::residual_sums&>().take());
  };

  /// The blocks of both operands skipped since the last one decoded (skips_blocks_by_sum): their
  /// residual sums and how many. catch_up() moves the predictors past them before the next block is
  /// decoded; where blocks are decoded one after another (fill values in most), it takes no sum of
  /// nothing.
  template <class ResidualSums>
  struct skipped_blocks {
    ResidualSums a, b;
    std::size_t count = 0;

    ZCOLL_ALWAYS_INLINE void add(const std::byte* block_a, const std::byte* block_b) {
      a.add(block_a);
      b.add(block_b);
      ++count;
    }
    template <class State>
    ZCOLL_ALWAYS_INLINE void catch_up(State& state_a, State& state_b) {
      if (count == 0) return;
      P::skip_block(state_a, a.take());
      P::skip_block(state_b, b.take());
      count = 0;
    }
  };

  /// Writes the sum of chunks `a` and `b` (each of `n` values) at `out` (room for 1 + n·sizeof(T)
  /// bytes); returns its size. `new_state()` makes the predictor's state at the chunk's start.
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::size_t add_chunk(const BlockQuantizer& quantizer, const addition_fills<T>& fills, const NewState& new_state,
                               std::span<const std::byte> a, std::span<const std::byte> b, std::size_t n, std::byte* out,
                               chunk_sum_scratch<T>& scratch, std::size_t chunk_number) {
    const auto kind = [&](std::span<const std::byte> c) {
      if (c.empty()) throw format_error("chunk " + std::to_string(chunk_number) + " is empty");
      return static_cast<chunk_kind>(std::to_integer<std::uint8_t>(c[0]));
    };
    const auto coded = [](chunk_kind k) { return k == chunk_kind::coded || k == chunk_kind::coded_with_exceptions; };
    if (coded(kind(a)) && coded(kind(b)) && quantizer.usable()) {
      if (const auto size = add_blocks<T>(quantizer, fills, new_state, a, b, n, out, scratch, chunk_number)) return *size;
    }
    return add_lanes<T>(quantizer, fills, new_state, a, b, n, out, scratch.buffers(), chunk_number);
  }

 private:
  /// The size of the block at `offset` of `c`, checked to lie inside it. Inlined, the throw kept out of
  /// line: as a call it kept add_blocks' cursors in memory (measured: a tenth of the add's time).
  ZCOLL_ALWAYS_INLINE static std::size_t checked_block_bytes(std::span<const std::byte> c, std::size_t offset,
                                                             std::size_t chunk_number) {
    const std::size_t size = offset < c.size() ? E::block_bytes(c[offset]) : 0;
    if (size == 0 || size > c.size() - offset) [[unlikely]] throw_malformed_block(offset, chunk_number);
    return size;
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_malformed_block(std::size_t offset,
                                                                         std::size_t chunk_number) {
    throw format_error("chunk " + std::to_string(chunk_number) + ": block at byte " + std::to_string(offset) +
                       " is malformed or runs past the chunk's end");
  }

  /// sum = a + b, modulo 2^32. With AVX2 in the 8-lane vectors the decoder stored: a wider load of
  /// what two narrower stores just wrote misses store-to-load forwarding (measured: the add was the
  /// hottest instruction of add_blocks with AVX-512 loads).
  ZCOLL_ALWAYS_INLINE static void add_residuals(const std::uint32_t* a, const std::uint32_t* b, std::int32_t* sum) {
#if ZCOLL_HAS_AVX2
    for (std::size_t k = 0; k < block_values; k += 8) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k));
      const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(sum + k), _mm256_add_epi32(x, y));
    }
#else
    for (std::size_t j = 0; j < block_values; ++j) sum[j] = static_cast<std::int32_t>(a[j] + b[j]);
#endif
  }

  /// A bound on the magnitudes of the encoded block at `block`: from its first byte where the encoder
  /// states its bit width there (BitShuffle), else from its residuals decoded into `scratch`.
  static std::uint64_t encoded_magnitude(const std::byte* block, std::uint32_t* scratch) {
    if constexpr (requires { E::magnitude_bound(std::byte{}); }) {
      return E::magnitude_bound(block[0]);
    } else {
      E::decode_checked_block(block, scratch);
      return magnitude_bound(scratch);
    }
  }

  /// A bound on the magnitudes of 32 residuals: their bitwise OR as unsigned magnitudes.
  static std::uint64_t magnitude_bound(const std::uint32_t* residuals) {
    std::uint32_t bits = 0;
    for (std::size_t j = 0; j < block_values; ++j) {
      const auto r = static_cast<std::int32_t>(residuals[j]);
      bits |= r < 0 ? 0u - static_cast<std::uint32_t>(r) : static_cast<std::uint32_t>(r);
    }
    return bits;
  }

  /// The encoded sum of the blocks at `a` and `b` at `out` (room for E::max_block_bytes): with the
  /// encoder's own arithmetic where it has one (BitShuffle adds on the bit planes), else decoded, added
  /// and encoded again.
  ZCOLL_ALWAYS_INLINE static std::size_t add_encoded_blocks(const std::byte* a, const std::byte* b, std::byte* out) {
    if constexpr (requires { E::add_blocks(a, b, out); }) {
      return E::add_blocks(a, b, out);
    } else {
      alignas(64) std::uint32_t ra[block_values], rb[block_values];
      alignas(64) std::int32_t sum[block_values];
      E::decode_checked_block(a, ra);
      E::decode_checked_block(b, rb);
      add_residuals(ra, rb, sum);
      return E::encode_block(sum, out);
    }
  }

  /// Block by block (the file's comment says when); nothing when the sum needs the lane-by-lane path (a
  /// code out of range, or a coded form with its exceptions not smaller than the values).
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::optional<std::size_t> add_blocks(const BlockQuantizer& quantizer, const addition_fills<T>& fills,
                                               const NewState& new_state, std::span<const std::byte> a,
                                               std::span<const std::byte> b, std::size_t n, std::byte* out,
                                               chunk_sum_scratch<T>& scratch, std::size_t chunk_number) {
    std::byte* const limit = out + n * sizeof(T);  // the chunk must end up smaller than its verbatim form
    std::byte* cursor = out + 1;
    std::size_t at_a = 1, at_b = 1;
    std::uint64_t code_bound = 0;
    alignas(64) std::uint32_t residuals[block_values];  // an encoder without magnitude_bound decodes here
    const std::size_t blocks = (n + block_values - 1) / block_values;
    for (std::size_t k = 0; k < blocks; ++k) {
      const std::size_t size_a = checked_block_bytes(a, at_a, chunk_number);
      const std::size_t size_b = checked_block_bytes(b, at_b, chunk_number);
      const std::byte* block_a = a.data() + at_a;
      const std::byte* block_b = b.data() + at_b;
      at_a += size_a;
      at_b += size_b;
      const bool zero_a = encodes_zero_block<E>(block_a), zero_b = encodes_zero_block<E>(block_b);
      std::byte* const written = cursor;
      if (zero_a || zero_b) {  // the sum is the other block, as it is
        const std::byte* kept = zero_a ? block_b : block_a;
        const std::size_t size = zero_a ? size_b : size_a;
        if (size > static_cast<std::size_t>(limit - cursor)) return std::nullopt;
        std::memcpy(cursor, kept, size);
        cursor += size;
      } else if (static_cast<std::size_t>(limit - cursor) >= E::max_block_bytes) {
        cursor += add_encoded_blocks(block_a, block_b, cursor);
      } else {
        std::byte aside[E::max_block_bytes];
        const std::size_t size = add_encoded_blocks(block_a, block_b, aside);
        if (size > static_cast<std::size_t>(limit - cursor)) return std::nullopt;
        std::memcpy(cursor, aside, size);
        cursor += size;
      }
      const std::uint64_t magnitude = encoded_magnitude(written, residuals);
      code_bound = codes_are_residuals ? std::max(code_bound, magnitude) : code_bound + block_values * magnitude;
    }
    const bool exceptions_a = a[0] == static_cast<std::byte>(chunk_kind::coded_with_exceptions);
    const bool exceptions_b = b[0] == static_cast<std::byte>(chunk_kind::coded_with_exceptions);
    if ((!exceptions_a && at_a != a.size()) || (!exceptions_b && at_b != b.size())) {
      throw format_error("chunk " + std::to_string(chunk_number) + ": bytes left after the last block");
    }
    if (code_bound > static_cast<std::uint64_t>(BlockQuantizer::max_code) &&
        !codes_within_range<BlockQuantizer>(new_state, out + 1, n)) {
      return std::nullopt;
    }
    if (!exceptions_a && !exceptions_b) {
      out[0] = static_cast<std::byte>(chunk_kind::coded);
      return static_cast<std::size_t>(cursor - out);
    }
    return add_exception_lanes<T>(quantizer, fills, new_state, a, b, at_a, at_b, n, out, cursor, scratch.buffers(),
                                  chunk_number);
  }

  /// format_error unless `read` is a whole, well-formed exception section of chunk `c` at `section`.
  static void check_section_read(const exception_section_read& read, std::span<const std::byte> c, std::size_t section,
                                 std::size_t chunk_number) {
    const auto where = [&] { return "chunk " + std::to_string(chunk_number) + ": "; };
    if (read.fault != exception_fault::none) {
      throw format_error(where() + "exception section, entry " + std::to_string(read.entry) + ": " + to_string(read.fault));
    }
    if (section + read.bytes != c.size()) throw format_error(where() + "bytes left after the exception section");
  }

  /// The exception lanes of chunk `c` (coded, n values) into `lanes` (one mask per block), the outliers
  /// among them into `outliers`, and their values into `values` (`fill` for its fill lanes, where
  /// `has_fill`), from its section at `section` (none for a chunk coded without exceptions).
  template <floating_value T>
  static void read_exception_lanes(bool has_fill, T fill, std::span<const std::byte> c, std::size_t section,
                                   std::size_t n, T* values, block_mask* lanes, block_mask* outliers,
                                   std::size_t chunk_number) {
    std::fill_n(lanes, (n + block_values - 1) / block_values, block_mask{0});
    std::fill_n(outliers, (n + block_values - 1) / block_values, block_mask{0});
    if (c[0] != static_cast<std::byte>(chunk_kind::coded_with_exceptions)) return;
    const auto read = apply_exception_section(c.data() + section, c.size() - section, has_fill, fill, values, n,
                                              [&](std::size_t block, block_mask f, block_mask o) {
                                                lanes[block] = f | o;
                                                outliers[block] = o;
                                              });
    check_section_read(read, c, section, chunk_number);
  }

  /// Indexes chunk `c`'s exception section at `section` by block into `entries` (index_exception_section:
  /// a fill run costs a word a block, not its values; indexed_exception_masks and
  /// apply_indexed_exceptions read a block's back); returns one past the last block holding an exception
  /// lane (0: none, as for a chunk coded without exceptions).
  template <floating_value T>
  static std::size_t index_exception_lanes(bool has_fill, std::span<const std::byte> c, std::size_t section,
                                           std::size_t n, std::uint32_t* entries, std::size_t chunk_number) {
    const std::size_t blocks = (n + block_values - 1) / block_values;
    if (c[0] != static_cast<std::byte>(chunk_kind::coded_with_exceptions)) {
      std::fill_n(entries, blocks, no_exception_entry);
      return 0;
    }
    check_section_read(index_exception_section<T>(c.data() + section, c.size() - section, has_fill, n, entries), c,
                       section, chunk_number);
    std::size_t last = blocks;
    while (last > 0 && entries[last - 1] == no_exception_entry) --last;
    return last;
  }

  /// The sum's exceptions when either chunk has some, its blocks already written up to `cursor` (block
  /// by block, as add_blocks wrote them): the lanes stored exactly in either chunk hold a' + b', as
  /// add_lanes gives them (the same bytes), but only the blocks up to the last such block are decoded, to
  /// codes and no further, and only the blocks holding one are dequantized (not those where both hold
  /// the fill value at the same lanes and nothing else). Nothing when the section does not fit before the
  /// chunk's verbatim size.
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::optional<std::size_t> add_exception_lanes(const BlockQuantizer& quantizer, const addition_fills<T>& fills,
                                                        const NewState& new_state, std::span<const std::byte> a,
                                                        std::span<const std::byte> b, std::size_t section_a,
                                                        std::size_t section_b, std::size_t n, std::byte* out,
                                                        std::byte* cursor, chunk_sum_buffers<T>& s,
                                                        std::size_t chunk_number) {
    // One past the last block with an exception lane in either chunk.
    const std::size_t last =
        std::max(index_exception_lanes<T>(fills.in_a, a, section_a, n, s.entries_a.get(), chunk_number),
                 index_exception_lanes<T>(fills.in_b, b, section_b, n, s.entries_b.get(), chunk_number));
    const std::byte* const exceptions_a = a.data() + section_a;
    const std::byte* const exceptions_b = b.data() + section_b;

    // The sum's fill value: what a lane holding the fill value in both chunks sums to.
    const bool has_fill = fills.in_sum();
    const bits_of<T> fill_bits = fills.sum_bits();
    auto state_a = new_state(), state_b = new_state();
    alignas(64) std::uint32_t codes_a[block_values], codes_b[block_values];
    alignas(64) T block_a[block_values], block_b[block_values];
    std::size_t at_a = 1, at_b = 1;
    [[maybe_unused]] auto skipped = [] {
      if constexpr (skips_blocks_by_sum) {
        return skipped_blocks<typename E::residual_sums>{};
      } else {
        return std::monostate{};
      }
    }();
    s.exceptions.clear();
    for (std::size_t k = 0; k < last; ++k) {
      const std::size_t lanes = lanes_in_block(k, n);
      const exception_masks ea = indexed_exception_masks(exceptions_a, s.entries_a[k], lanes);
      const exception_masks eb = indexed_exception_masks(exceptions_b, s.entries_b[k], lanes);
      const block_mask either = ea.any() | eb.any();
      const std::byte* encoded_a = a.data() + at_a;
      const std::byte* encoded_b = b.data() + at_b;
      at_a += E::block_bytes(encoded_a[0]);  // the blocks were checked by add_blocks
      at_b += E::block_bytes(encoded_b[0]);
      // Both blocks hold the fill value at the same lanes and nothing else exactly (land in both fields,
      // fill runs): each of those lanes is a fill lane of the sum, known without a value of the block.
      const bool fill_alike = ea.outliers == 0 && eb.outliers == 0 && ea.fill == eb.fill;
      const std::size_t first = k * block_values;
      // The predictor moves on past every block: by the residual sums where no value is needed, else
      // by the codes (without prediction nothing carries from block to block).
      if (!fill_alike || !(skips_blocks_by_sum || codes_are_residuals)) {
        if constexpr (skips_blocks_by_sum) skipped.catch_up(state_a, state_b);
        E::decode_checked_block(encoded_a, codes_a);
        E::decode_checked_block(encoded_b, codes_b);
        P::inverse(state_a, codes_a);
        P::inverse(state_b, codes_b);
      } else if constexpr (skips_blocks_by_sum) {
        skipped.add(encoded_a, encoded_b);
      }
      if (fill_alike) {  // either == 0 too: no lane to sum
        // Fill lanes in both: both streams declare a fill value, and so the sum does (the section
        // readers refuse fill lanes in a stream without one). No outlier, so no value of s.sums is read.
        if (either != 0) s.exceptions.push_back({static_cast<std::uint16_t>(k), either, 0});
        continue;
      }
      // Every lane of the block at once, where the loops vectorize (fields with fill values have exception
      // lanes in most blocks): each operand's value, exact where it stored one, then their sum. The padding
      // lanes of a last block have codes too (zero residuals), and s.sums is padded to whole blocks.
      quantizer.dequantize(codes_a, block_a, block_values);
      quantizer.dequantize(codes_b, block_b, block_values);
      apply_indexed_exceptions<T>(exceptions_a, s.entries_a[k], lanes, fills.a, block_a);
      apply_indexed_exceptions<T>(exceptions_b, s.entries_b[k], lanes, fills.b, block_b);
      T* const sums = s.sums.get() + first;
      for (std::size_t j = 0; j < block_values; ++j) sums[j] = lane_sum(block_a[j], block_b[j]);
      const block_mask fill_lanes = has_fill ? lanes_with_bits(sums, fill_bits) & either : 0;
      s.exceptions.push_back({static_cast<std::uint16_t>(k), fill_lanes, either & ~fill_lanes});
    }
    std::byte* const limit = out + n * sizeof(T);
    const std::span<const block_exceptions> exceptions(s.exceptions);
    const std::span<const T> sums(s.sums.get(), n);  // read at the exception lanes only
    if (exception_section_bytes<T>(exceptions, n) > static_cast<std::size_t>(limit - cursor)) return std::nullopt;
    return chunk::finish_chunk(exceptions, sums, out, cursor, limit);
  }

  /// Whether every code of the coded chunk at `blocks` (n values) is within the quantizer's range.
  template <class BlockQuantizer, class NewState>
  static bool codes_within_range(const NewState& new_state, const std::byte* blocks, std::size_t n) {
    auto state = new_state();
    alignas(64) std::uint32_t codes[block_values];
    for (std::size_t first = 0; first < n; first += block_values) {
      const std::size_t size = E::block_bytes(blocks[0]);
      E::decode_checked_block(blocks, codes);
      blocks += size;
      P::inverse(state, codes);
      if (codes_out_of_range<BlockQuantizer>(codes, std::min(block_values, n - first)) != 0) return false;
    }
    return true;
  }

  /// Decodes chunk `c` of n values as the decoder does, keeping its residuals (when coded), each block's
  /// exception lanes and the outliers among them; returns its kind.
  template <floating_value T, class BlockQuantizer, class NewState>
  static chunk_kind decode_lanes(const BlockQuantizer& quantizer, bool has_fill, T fill, const NewState& new_state,
                                 std::span<const std::byte> c, std::size_t n, std::uint32_t* residuals, T* values,
                                 block_mask* lanes, block_mask* outliers, std::size_t chunk_number) {
    const std::size_t blocks = (n + block_values - 1) / block_values;
    const auto kind = static_cast<chunk_kind>(std::to_integer<std::uint8_t>(c[0]));
    const auto where = [&] { return "chunk " + std::to_string(chunk_number) + ": "; };
    if (kind == chunk_kind::verbatim) {
      std::fill_n(lanes, blocks, block_mask{0});  // a coded chunk's come from read_exception_lanes, below
      std::fill_n(outliers, blocks, block_mask{0});
      if (c.size() != 1 + n * sizeof(T)) throw format_error(where() + "verbatim chunk of the wrong size");
      std::memcpy(values, c.data() + 1, n * sizeof(T));
      return kind;
    }
    if (kind != chunk_kind::coded && kind != chunk_kind::coded_with_exceptions) {
      throw format_error(where() + "unknown chunk kind " + std::to_string(static_cast<unsigned>(kind)));
    }
    if (!quantizer.usable()) throw format_error(where() + "coded chunk in a stream whose error bound admits no quantizer step");
    auto state = new_state();
    std::size_t offset = 1;
    alignas(64) std::uint32_t codes[block_values];
    alignas(64) T tail[block_values];
    for (std::size_t k = 0; k < blocks; ++k) {
      offset += E::decode_block(c.subspan(offset), residuals + k * block_values);
      std::copy_n(residuals + k * block_values, block_values, codes);
      P::inverse(state, codes);
      const std::size_t first = k * block_values, count = std::min(block_values, n - first);
      quantizer.dequantize(codes, tail, count);
      std::copy_n(tail, count, values + first);
    }
    if (kind == chunk_kind::coded && offset != c.size()) throw format_error(where() + "bytes left after the last block");
    read_exception_lanes<T>(has_fill, fill, c, offset, n, values, lanes, outliers, chunk_number);
    return kind;
  }

  /// Lane by lane (the file's comment says when).
  template <floating_value T, class BlockQuantizer, class NewState>
  static std::size_t add_lanes(const BlockQuantizer& quantizer, const addition_fills<T>& fills, const NewState& new_state,
                               std::span<const std::byte> a, std::span<const std::byte> b, std::size_t n, std::byte* out,
                               chunk_sum_buffers<T>& s, std::size_t chunk_number) {
    const chunk_kind kind_a = decode_lanes<T>(quantizer, fills.in_a, fills.a, new_state, a, n, s.residuals_a.get(),
                                              s.values_a.get(), s.lanes_a.get(), s.outliers_a.get(), chunk_number);
    const chunk_kind kind_b = decode_lanes<T>(quantizer, fills.in_b, fills.b, new_state, b, n, s.residuals_b.get(),
                                              s.values_b.get(), s.lanes_b.get(), s.outliers_b.get(), chunk_number);
    for (std::size_t i = 0; i < n; ++i) s.sums[i] = lane_sum(s.values_a[i], s.values_b[i]);
    // The fill test below reads whole blocks.
    std::fill(s.sums.get() + n, s.sums.get() + padded_to_blocks(n), T(0));
    const std::span<const T> sums(s.sums.get(), n);
    if (kind_a == chunk_kind::verbatim || kind_b == chunk_kind::verbatim) return chunk::write_verbatim(sums, out);

    const std::size_t blocks = (n + block_values - 1) / block_values;
    auto state = new_state();
    s.exceptions.clear();
    alignas(64) std::uint32_t codes[block_values];
    const bool has_fill = fills.in_sum();  // the sum's fill value: a lane summing to it is a fill lane
    const bits_of<T> fill_bits = fills.sum_bits();
    for (std::size_t k = 0; k < blocks; ++k) {
      std::uint32_t* residuals = s.residuals_sum.get() + k * block_values;
      for (std::size_t j = 0; j < block_values; ++j) {
        residuals[j] = s.residuals_a[k * block_values + j] + s.residuals_b[k * block_values + j];
      }
      std::copy_n(residuals, block_values, codes);
      P::inverse(state, codes);
      const std::size_t first = k * block_values, lanes = std::min(block_values, n - first);
      const block_mask exact = (s.lanes_a[k] | s.lanes_b[k] | codes_out_of_range<BlockQuantizer>(codes, lanes)) & first_lanes(lanes);
      if (exact == 0) continue;
      const block_mask fill_lanes = has_fill ? lanes_with_bits(s.sums.get() + first, fill_bits) & exact : 0;
      s.exceptions.push_back({static_cast<std::uint16_t>(k), fill_lanes, exact & ~fill_lanes});
    }

    std::byte* const limit = out + n * sizeof(T);
    std::byte* cursor = out + 1;
    for (std::size_t k = 0; k < blocks; ++k) {
      const auto* residuals = reinterpret_cast<const std::int32_t*>(s.residuals_sum.get() + k * block_values);
      std::byte aside[E::max_block_bytes];
      const std::size_t size = E::encode_block(residuals, aside);
      if (size > static_cast<std::size_t>(limit - cursor)) return chunk::write_verbatim(sums, out);
      std::memcpy(cursor, aside, size);
      cursor += size;
    }
    return chunk::finish_chunk(std::span<const block_exceptions>(s.exceptions), sums, out, cursor, limit);
  }
};

}  // namespace zcoll::detail
