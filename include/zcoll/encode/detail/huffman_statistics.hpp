#pragma once
/// What a Huffman model is built from: the histogram of zigzag symbols, the escapes' payload, and the
/// size the bit-plane coding of encode/bitshuffle.hpp would give the same residuals (the fallback).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/encode/detail/bitshuffle_block.hpp"
#include "zcoll/encode/detail/huffman_chunk.hpp"
#include "zcoll/encode/detail/huffman_code.hpp"

namespace zcoll::encode::detail {

/// Counts over the residuals of every chunk of a stream. add() runs once over every value of the input,
/// so it is a vectorized zigzag-and-clamp per 32-value block followed by plain counter increments into
/// four interleaved sub-histograms: consecutive equal symbols (the common case of concentrated
/// residuals) then hit four different counters instead of waiting on one store-to-load chain.
class huffman_statistics {
 public:
  /// Histogram bins: the direct symbols 0..cap-1, then one bin for every symbol at or above the cap.
  static constexpr std::size_t bins = huffman_alphabet_cap + 1;
  static constexpr std::uint32_t escape_bin = huffman_alphabet_cap;

  huffman_statistics() : partial_(sub_histograms * stride, 0), total_(bins, 0) {}

  /// Adds one chunk's residuals: its symbols, and the size of its 32-value bit-plane blocks (the last
  /// one padded with zeros, as the fallback codes it).
  void add(std::span<const std::int32_t> residuals) {
    chunk_overhead_bits_ += huffman_chunk_overhead_bits(residuals.size());
    values_ += residuals.size();
    // A block adds at most block_values / sub_histograms to any counter (its padding included).
    constexpr std::size_t slice_values = flush_blocks * block_values;
    for (std::size_t first = 0; first < residuals.size(); first += slice_values) {
      const auto slice = residuals.subspan(first, std::min(slice_values, residuals.size() - first));
      const std::size_t blocks = (slice.size() + block_values - 1) / block_values;
      if (unflushed_blocks_ + blocks > flush_blocks) flush();
      unflushed_blocks_ += blocks;
      add_slice(slice);
    }
  }

  void merge(const huffman_statistics& other) {
    const std::vector<std::uint64_t> counts = other.histogram();
    for (std::size_t s = 0; s < bins; ++s) total_[s] += counts[s];
    values_ += other.values_;
    escape_payload_bits_ += other.escape_payload_bits_;
    bitplane_bytes_ += other.bitplane_bytes_;
    chunk_overhead_bits_ += other.chunk_overhead_bits_;
  }

  /// Occurrences of `symbol` (< bins; escape_bin counts every symbol at or above the cap).
  std::uint64_t count(std::uint32_t symbol) const {
    std::uint64_t c = total_[symbol];
    for (std::size_t h = 0; h < sub_histograms; ++h) c += partial_[h * stride + symbol];
    return c;
  }
  /// Every bin's count at once (what make_model reads).
  std::vector<std::uint64_t> histogram() const {
    std::vector<std::uint64_t> h(total_);
    for (std::size_t p = 0; p < sub_histograms; ++p) {
      for (std::size_t s = 0; s < bins; ++s) h[s] += partial_[p * stride + s];
    }
    return h;
  }
  std::uint64_t escape_count() const { return count(escape_bin); }
  /// Bits the escaped residuals take after their escape codeword: a 5-bit width, then the bits.
  std::uint64_t escape_payload_bits() const { return escape_payload_bits_; }
  /// Bytes the bit-plane blocks of encode/bitshuffle.hpp would take for every chunk added.
  std::uint64_t bitplane_bytes() const { return bitplane_bytes_; }
  /// Bits of chunk framing a Huffman coding adds (stream sizes and expected padding).
  std::uint64_t chunk_overhead_bits() const { return chunk_overhead_bits_; }
  std::uint64_t value_count() const { return values_; }

 private:
  // 32-bit counters in four sub-histograms: equal symbols in a row (residuals concentrated on 0) then
  // wait on the same counter only every fourth value. The counters move to the 64-bit totals before
  // any could overflow. (The huffman timing program, G symbols/s for Laplacian b = 0.3 / Gaussian
  // sigma 2 / 20 / 300: 4 × u32 1.7 / 1.9 / 2.0 / 1.8; 8 × u32 1.9 / 2.0 / 2.0 / 1.4, the 128 KiB no
  // longer fitting L1; 16-bit counters 1.1 to 1.7.)
  using counter = std::uint32_t;
  static constexpr std::size_t sub_histograms = 4;
  static constexpr std::size_t flush_blocks = 0xFFFF'FFFF / (block_values / sub_histograms);
  // Sub-histograms 16 KiB + 64 bytes apart: at a multiple of 4 KiB, the same symbol's counters in
  // different sub-histograms would alias in the store-to-load forwarding check (4K aliasing).
  static constexpr std::size_t stride = bins + 64 / sizeof(counter);

  void flush() {
    for (std::size_t h = 0; h < sub_histograms; ++h) {
      for (std::size_t s = 0; s < bins; ++s) total_[s] += std::exchange(partial_[h * stride + s], counter{0});
    }
    unflushed_blocks_ = 0;
  }

  void add_slice(std::span<const std::int32_t> residuals) {
    const std::size_t full_blocks = residuals.size() / block_values;
    for (std::size_t b = 0; b < full_blocks; ++b) add_block(residuals.data() + b * block_values);
    if (const std::size_t tail = residuals.size() % block_values; tail != 0) {
      alignas(32) std::int32_t padded[block_values] = {};  // the fallback pads with zero residuals
      std::copy_n(residuals.data() + full_blocks * block_values, tail, padded);
      add_block(padded);
      for (std::size_t j = tail; j < block_values; ++j) --partial_[(j % sub_histograms) * stride];  // no symbols
    }
  }

  /// One block: its 32 histogram slots and its bit-plane size from one vectorizable pass, then the
  /// counter increments, unrolled so that each is a single read-modify-write at a constant offset.
  ZCOLL_ALWAYS_INLINE void add_block(const std::int32_t* ZCOLL_RESTRICT residuals) {
    alignas(32) std::uint32_t slot[block_values];
    std::uint32_t magnitudes = 0;
    for (std::size_t j = 0; j < block_values; ++j) {
      const std::int32_t r = residuals[j];
      slot[j] = std::min(zigzag(r), escape_bin);
      // |r| in unsigned arithmetic (INT32_MIN gives 2^31), ORed: its bit width is the block's plane count.
      magnitudes |= r < 0 ? 0u - static_cast<std::uint32_t>(r) : static_cast<std::uint32_t>(r);
    }
    const auto planes = static_cast<unsigned>(std::bit_width(magnitudes));
    bitplane_bytes_ += bitshuffle_block_bytes(planes);
    // zigzag(r) >= 4095 exactly when |r| >= 2048, that is when the block needs 12 planes or more.
    if (planes >= escape_planes) [[unlikely]] add_escape_payloads(residuals, slot);
#if defined(__GNUC__)
    // The slots go through memory: 32 scalar loads beat the vector lane extracts (two operations each)
    // GCC -O3 would otherwise use (1.4 against 1.9 G symbols/s in the huffman timing program).
    asm volatile("" : : "r"(slot) : "memory");
#endif
    counter* ZCOLL_RESTRICT h = partial_.data();
#if defined(__GNUC__) && !defined(__CUDACC__)  // host code; nvcc knows no GCC pragmas
#pragma GCC unroll 8
#endif
    for (std::size_t j = 0; j < block_values; j += sub_histograms) {
      ++h[slot[j]];
      ++h[stride + slot[j + 1]];
      ++h[2 * stride + slot[j + 2]];
      ++h[3 * stride + slot[j + 3]];
    }
  }

  static constexpr unsigned escape_planes = std::bit_width(escape_bin) ;

  /// Adds 5 + bit_width(symbol) for the escaped symbols of a block. The bit width of a symbol s >= 4095
  /// is 9 + the exponent of float(s >> 8), which converts exactly: a form the compiler vectorizes
  /// (wide residuals escape in every block).
  [[gnu::noinline]] void add_escape_payloads(const std::int32_t* ZCOLL_RESTRICT residuals,
                                             const std::uint32_t* ZCOLL_RESTRICT slot) {
    std::uint32_t bits = 0;
    for (std::size_t j = 0; j < block_values; ++j) {
      const auto scaled = static_cast<float>(static_cast<std::int32_t>(zigzag(residuals[j]) >> 8));
      const std::uint32_t width = (std::bit_cast<std::uint32_t>(scaled) >> 23) - 127 + 9;
      bits += (huffman_escape_width_bits + width) & (0u - static_cast<std::uint32_t>(slot[j] == escape_bin));
    }
    escape_payload_bits_ += bits;
  }

  std::vector<counter> partial_;        // sub_histograms × stride: lane j counts into sub-histogram j % 4
  std::vector<std::uint64_t> total_;    // what flush() moved out of partial_ (and merged statistics)
  std::size_t unflushed_blocks_ = 0;
  std::uint64_t values_ = 0;
  std::uint64_t escape_payload_bits_ = 0;
  std::uint64_t bitplane_bytes_ = 0;
  std::uint64_t chunk_overhead_bits_ = 0;
};

}  // namespace zcoll::encode::detail
