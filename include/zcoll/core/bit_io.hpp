#pragma once
/// Bounds-checked bit streams, least significant bit first within each little-endian byte — the order
/// the variable-length encoders (Huffman, vector-LZ) use.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zcoll/core/error.hpp"

namespace zcoll {

/// Appends bit fields of up to 57 bits to a byte span; flush() writes the last partial byte.
class bit_writer {
 public:
  explicit bit_writer(std::span<std::byte> bytes) : bytes_(bytes) {}

  /// Appends the low `width_bits` bits of `value` (width_bits <= 57).
  void write(std::uint64_t value, unsigned width_bits) {
    if (width_bits > max_width_bits) {
      throw argument_error("bit_writer::write: width_bits " + std::to_string(width_bits) + " exceeds 57");
    }
    const std::uint64_t field = width_bits == 0 ? 0 : value & (~std::uint64_t{0} >> (64 - width_bits));
    pending_ |= field << pending_bits_;
    pending_bits_ += width_bits;
    while (pending_bits_ >= 8) {
      put_byte(static_cast<std::byte>(pending_ & 0xFF));
      pending_ >>= 8;
      pending_bits_ -= 8;
    }
  }

  /// Writes the pending bits, zero-padded to a whole byte; returns the bytes written in all.
  std::size_t flush() {
    if (pending_bits_ > 0) {
      put_byte(static_cast<std::byte>(pending_ & 0xFF));
      pending_ = 0;
      pending_bits_ = 0;
    }
    return offset_;
  }

  static constexpr unsigned max_width_bits = 57;

 private:
  void put_byte(std::byte b) {
    if (offset_ >= bytes_.size()) {
      throw argument_error("bit_writer: output buffer of " + std::to_string(bytes_.size()) + " bytes is full");
    }
    bytes_[offset_++] = b;
  }

  std::span<std::byte> bytes_;
  std::size_t offset_ = 0;
  std::uint64_t pending_ = 0;
  unsigned pending_bits_ = 0;
};

/// Reads bit fields written by bit_writer; reading past the end raises format_error.
class bit_reader {
 public:
  explicit bit_reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  std::uint64_t read(unsigned width_bits) {
    if (width_bits > bit_writer::max_width_bits) {
      throw argument_error("bit_reader::read: width_bits " + std::to_string(width_bits) + " exceeds 57");
    }
    while (buffered_bits_ < width_bits) {
      if (offset_ >= bytes_.size()) {
        throw format_error("bit stream ends after " + std::to_string(bytes_.size()) + " bytes, inside a " +
                           std::to_string(width_bits) + "-bit field");
      }
      buffer_ |= std::to_integer<std::uint64_t>(bytes_[offset_++]) << buffered_bits_;
      buffered_bits_ += 8;
    }
    const std::uint64_t value = width_bits == 0 ? 0 : buffer_ & (~std::uint64_t{0} >> (64 - width_bits));
    buffer_ = width_bits == 64 ? 0 : buffer_ >> width_bits;
    buffered_bits_ -= width_bits;
    return value;
  }

  /// Whole bytes consumed so far (a partially read byte counts as consumed).
  std::size_t bytes_consumed() const { return offset_; }

 private:
  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
  std::uint64_t buffer_ = 0;
  unsigned buffered_bits_ = 0;
};

}  // namespace zcoll
