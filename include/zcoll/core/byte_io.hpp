#pragma once
/// Bounds-checked little-endian reading and writing of a byte span: the only way zcoll touches a stream.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "zcoll/core/error.hpp"

namespace zcoll {

static_assert(std::endian::native == std::endian::little,
              "zcoll streams are little-endian and the byte I/O copies words as they are in memory: "
              "a big-endian port must byte-swap in byte_reader/byte_writer");

/// Reads little-endian values from a byte span; every read past the end raises format_error.
class byte_reader {
 public:
  explicit byte_reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  template <class V>
    requires std::is_trivially_copyable_v<V>
  V read(const char* what) {
    V value;
    std::memcpy(&value, take(sizeof(V), what).data(), sizeof(V));
    return value;
  }

  /// The next `size_bytes` bytes, consumed.
  std::span<const std::byte> take(std::size_t size_bytes, const char* what) {
    if (size_bytes > remaining()) overrun(size_bytes, what);
    auto part = bytes_.subspan(offset_, size_bytes);
    offset_ += size_bytes;
    return part;
  }

  std::size_t offset() const { return offset_; }
  /// The bytes not read yet, without reading them.
  std::span<const std::byte> rest() const { return bytes_.subspan(offset_); }
  std::size_t remaining() const { return bytes_.size() - offset_; }

 private:
  // Out of line, so that the checked reads stay small enough to inline on the hot path.
  [[noreturn, gnu::cold, gnu::noinline]] void overrun(std::size_t size_bytes, const char* what) const {
    throw format_error(std::string(what) + ": needs " + std::to_string(size_bytes) + " bytes at offset " +
                       std::to_string(offset_) + ", only " + std::to_string(remaining()) + " remain");
  }

  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
};

/// Writes little-endian values into a byte span. Writers size their output with max_compressed_size
/// first, so running out of room is a caller's error (argument_error), never silent truncation.
class byte_writer {
 public:
  explicit byte_writer(std::span<std::byte> bytes) : bytes_(bytes) {}

  template <class V>
    requires std::is_trivially_copyable_v<V>
  void write(const V& value) {
    std::memcpy(claim(sizeof(V)).data(), &value, sizeof(V));
  }

  void write_bytes(std::span<const std::byte> data) {
    if (!data.empty()) std::memcpy(claim(data.size()).data(), data.data(), data.size());
  }

  /// The next `size_bytes` bytes, to be filled by the caller.
  std::span<std::byte> claim(std::size_t size_bytes) {
    if (size_bytes > remaining()) overrun(size_bytes);
    auto part = bytes_.subspan(offset_, size_bytes);
    offset_ += size_bytes;
    return part;
  }

  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return bytes_.size() - offset_; }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void overrun(std::size_t size_bytes) const {
    throw argument_error("output buffer too small: needs " + std::to_string(size_bytes) + " more bytes at offset " +
                         std::to_string(offset_) + ", only " + std::to_string(remaining()) + " remain");
  }

  std::span<std::byte> bytes_;
  std::size_t offset_ = 0;
};

}  // namespace zcoll
