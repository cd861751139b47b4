#pragma once
/// Bit-shuffle encoder: per 32-residual block a bit-width byte, sign bits and fixed-length bit planes;
/// all-zero blocks cost one byte (fZ-light, ZCCL paper §3.3). Format in detail/bitshuffle_block.hpp.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/encode/detail/bitshuffle_block.hpp"
#include "zcoll/encode/detail/bitshuffle_block_sum.hpp"

namespace zcoll::encode {

/// Fixed-length bit-plane encoding of integer residuals, the fastest encoder of the family.
struct BitShuffle {
  static constexpr std::uint8_t id = 1;
  static constexpr const char* name = "bitshuffle";
  static constexpr std::size_t max_block_bytes = detail::bitshuffle_max_block_bytes;

  /// Writes 32 residuals at `out` (room for max_block_bytes); returns the block's size. Bytes of that
  /// room past the size may be overwritten as scratch.
  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static std::size_t encode_block(const std::int32_t* residuals, std::byte* out) {
    return detail::bitshuffle_encode_block(residuals, out);
  }

  /// The size of the block whose first byte is `first`, or 0 when no block starts so.
  ZCOLL_HOST_DEVICE static constexpr std::size_t block_bytes(std::byte first) {
    const unsigned planes = std::to_integer<unsigned>(first);
    return planes > 32 ? 0 : detail::bitshuffle_block_bytes(planes);
  }

  /// Whether the block whose first byte is `first` holds 32 zero residuals (it is that one byte).
  ZCOLL_HOST_DEVICE static constexpr bool zero_block(std::byte first) { return first == std::byte{0}; }

  /// A bound on the magnitudes of the block whose first byte is `first`: 2^planes - 1.
  ZCOLL_HOST_DEVICE static constexpr std::uint64_t magnitude_bound(std::byte first) {
    return (std::uint64_t{1} << std::min(32u, std::to_integer<unsigned>(first))) - 1;
  }

  /// The sum of the block's residuals modulo 2^32, from its planes without decoding it: each plane p
  /// adds 2^p for every lane of positive sign holding its bit and subtracts 2^p for every negative one.
  /// The caller has checked that block_bytes(block[0]) bytes are there.
  ZCOLL_HOST_DEVICE static std::uint32_t residual_sum(const std::byte* block) {
    const unsigned planes = std::to_integer<unsigned>(block[0]);
    if (planes == 0) return 0;
    const std::uint32_t negative = detail::bitshuffle_word(block + 1);
#if ZCOLL_HAS_AVX512_POPCOUNT
    if (planes <= 16) return detail::bitshuffle_residual_sum_16(block + 5, planes, negative);
#endif
    std::uint32_t sum = 0;
    for (unsigned p = 0; p < planes; ++p) {
      const std::uint32_t plane = detail::bitshuffle_word(block + 5 + 4 * p);
      const auto up = static_cast<std::uint32_t>(zcoll::popcount(plane & ~negative));
      const auto down = static_cast<std::uint32_t>(zcoll::popcount(plane & negative));
      sum += (up - down) << p;
    }
    return sum;
  }

  /// The sum of the residuals of a run of blocks (zcoll::add's exception path skips the blocks between
  /// those it decodes), modulo 2^32: take() gives what the blocks added since the last take() sum to,
  /// as residual_sum of each would. Where the CPU has AVX-512's popcount, the blocks of up to 16 planes
  /// add their planes' balances in one vector, weighted and summed across lanes only in take()
  /// (docs/performance.md, issue 19's eighth round); wider blocks add their residual_sum.
  class residual_sums {
   public:
    /// Adds the block at `block`, whose block_bytes(block[0]) bytes the caller has checked are there.
    ZCOLL_ALWAYS_INLINE void add(const std::byte* block) {
#if ZCOLL_HAS_AVX512_POPCOUNT
      const unsigned planes = std::to_integer<unsigned>(block[0]);
      if (planes <= 16) {
        // A block of 0 planes is its one byte: no signs to read, and no plane loaded.
        const std::uint32_t negative = planes > 0 ? detail::bitshuffle_word(block + 1) : 0u;
        balance_ = _mm512_add_epi32(balance_, detail::bitshuffle_plane_balance_16(block + 5, planes, negative));
        return;
      }
#endif
      sum_ += residual_sum(block);
    }

    /// The sum of the blocks added since the last take(), which starts the next run.
    ZCOLL_ALWAYS_INLINE std::uint32_t take() {
      std::uint32_t sum = sum_;
      sum_ = 0;
#if ZCOLL_HAS_AVX512_POPCOUNT
      sum += detail::bitshuffle_weighted_sum_16(balance_);
      balance_ = _mm512_setzero_si512();
#endif
      return sum;
    }

   private:
    std::uint32_t sum_ = 0;
#if ZCOLL_HAS_AVX512_POPCOUNT
    __m512i balance_ = _mm512_setzero_si512();
#endif
  };

  /// Writes the block of the sum of the whole blocks at `a` and `b` at `out` (room for max_block_bytes)
  /// and returns its size: the bytes encode_block writes for the sum of their residuals (modulo 2^32),
  /// computed on the bit planes without decoding (detail/bitshuffle_block_sum.hpp).
  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static std::size_t add_blocks(const std::byte* a, const std::byte* b, std::byte* out) {
    return detail::bitshuffle_add_blocks(a, b, out);
  }

  /// Decodes the block at `in`, whose block_bytes(in[0]) bytes the caller has checked are there.
  ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE static void decode_checked_block(const std::byte* in, std::uint32_t* residuals) {
    detail::bitshuffle_decode_block(std::to_integer<unsigned>(in[0]), in, residuals);
  }

  /// Reads one block from the front of `in` into 32 residuals; returns the bytes consumed.
  ZCOLL_ALWAYS_INLINE static std::size_t decode_block(std::span<const std::byte> in, std::uint32_t* residuals) {
    if (in.empty()) throw format_error("bitshuffle: block header missing at end of chunk");
    const std::size_t size = block_bytes(in[0]);
    if (size == 0) {
      throw format_error("bitshuffle: block has " + std::to_string(std::to_integer<unsigned>(in[0])) +
                         " bit planes (at most 32)");
    }
    if (size > in.size()) {
      throw format_error("bitshuffle: block of " + std::to_string(size) + " bytes truncated to " +
                         std::to_string(in.size()));
    }
    decode_checked_block(in.data(), residuals);
    return size;
  }
};

}  // namespace zcoll::encode
