#pragma once
/// The raw bits of a context-coded chunk (encode/context_ans.hpp): variable-width fields read by bit
/// position, least significant bit of each byte first.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace zcoll::encode::detail {

/// The raw bits of a chunk, from a copy followed by 8 zero bytes, read by bit position: each read loads
/// the eight bytes at the position, without a check or a branch and with two registers of state. A
/// malformed chunk may read past its bits: the loads then stop at the copy's end, the position goes on
/// counting, and at_padded_end() says so afterwards.
class raw_bit_source {
 public:
  explicit raw_bit_source(std::span<const std::byte> bytes)
      : bytes_(bytes.size() + padding_bytes), bits_(8 * std::uint64_t{bytes.size()}) {
    std::copy(bytes.begin(), bytes.end(), bytes_.begin());
  }

  std::uint32_t read(unsigned width_bits) {
    const std::uint64_t at = std::min(position_, bits_);
    std::uint64_t word;
    std::memcpy(&word, bytes_.data() + at / 8, 8);
    position_ += width_bits;
    return static_cast<std::uint32_t>((word >> (at % 8)) & ((std::uint64_t{1} << width_bits) - 1));
  }

  /// For a vector reader, which loads the eight bytes at min(position, size_bits()) / 8 as read() does: the
  /// copy, whose last eight bytes are zero, its bits, and where reading is.
  const std::byte* padded_bytes() const { return bytes_.data(); }
  std::uint64_t size_bits() const { return bits_; }
  std::uint64_t position() const { return position_; }
  void advance(std::uint64_t bits) { position_ += bits; }

  /// Every bit read but the last byte's padding, and that zero.
  bool at_padded_end() const {
    if (position_ > bits_ || bits_ - position_ >= 8) return false;
    return position_ % 8 == 0 || (std::to_integer<unsigned>(bytes_[position_ / 8]) >> (position_ % 8)) == 0;
  }

 private:
  static constexpr std::size_t padding_bytes = 8;
  std::vector<std::byte> bytes_;
  std::uint64_t bits_;
  std::uint64_t position_ = 0;
};

}  // namespace zcoll::encode::detail
