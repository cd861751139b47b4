#pragma once
/// No lossless back end: chunks are stored as the encoder wrote them.

#include <cstddef>
#include <cstdint>
#include <span>

#include "zcoll/core/stream_header.hpp"

namespace zcoll::backend {

struct None {
  static constexpr std::uint8_t id = backend_none;
  static constexpr const char* name = "none";

  struct context {
    std::size_t pack(std::span<std::byte> chunk) { return chunk.size(); }
    std::span<const std::byte> unpack(std::span<const std::byte> chunk, std::size_t) { return chunk; }
  };
};

}  // namespace zcoll::backend
