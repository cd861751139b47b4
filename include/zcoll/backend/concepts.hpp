#pragma once
/// What a lossless back end is: the last stage of a pipeline, applied chunk by chunk to the bytes the
/// encoder and the exception section wrote (SZ3 runs zstd over its Huffman bytes the same way). A chunk
/// it makes smaller is stored packed, marked by the packed_chunk bit of its kind byte; one it cannot is
/// stored as the encoder wrote it, so a back end never makes a stream longer.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace zcoll::backend {

/// The bit of a chunk's kind byte that says the back end packed the bytes after it.
inline constexpr std::uint8_t packed_chunk = 0x80;

/// B::id is its byte in the stream header (0 = none); B::context holds one worker's state: pack(chunk)
/// packs a coded chunk (kind byte first) in place when that saves bytes and returns its size, and
/// unpack(chunk, capacity) returns the chunk as the encoder wrote it (in the context's memory, at most
/// `capacity` bytes), or throws format_error.
template <class B>
concept lossless_backend = std::default_initializable<typename B::context> &&
                           requires(typename B::context& c, std::span<std::byte> chunk, std::span<const std::byte> in,
                                    std::size_t capacity) {
                             { B::id } -> std::convertible_to<std::uint8_t>;
                             { B::name } -> std::convertible_to<const char*>;
                             { c.pack(chunk) } -> std::same_as<std::size_t>;
                             { c.unpack(in, capacity) } -> std::same_as<std::span<const std::byte>>;
                           };

}  // namespace zcoll::backend
