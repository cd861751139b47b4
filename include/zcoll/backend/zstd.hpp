#pragma once
/// zstd as the lossless back end (Debian libzstd-dev; the zcoll target links it): each coded chunk's
/// bytes after its kind byte become one zstd frame, with its content size, when that is smaller. At the
/// coarse bounds most residuals are 0 and a Huffman code spends at least a bit on each; zstd takes the
/// runs of those bits down to a few bits per run, as in SZ3.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <zstd.h>

#include "zcoll/backend/concepts.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll::backend {

/// zstd at level 1, the fastest of its standard levels: on HighRatio's chunks level 3 compressed within
/// 1 % of it and level 9 up to 2 % better (docs/performance.md, issue 21).
struct Zstd {
  static constexpr std::uint8_t id = backend_zstd;
  static constexpr const char* name = "zstd";
  static constexpr int level = 1;

  /// One worker's zstd contexts and buffer, reused from chunk to chunk.
  class context {
   public:
    /// Packs the coded chunk (kind byte first) in place when its frame is smaller; returns the size.
    std::size_t pack(std::span<std::byte> chunk) {
      if (chunk.size() < 2) return chunk.size();
      const std::size_t body = chunk.size() - 1;
      buffer_.resize(ZSTD_compressBound(body));
      if (!compress_) compress_.reset(ZSTD_createCCtx());
      if (!compress_) throw error("zstd: ZSTD_createCCtx failed (out of memory)");
      const std::size_t packed =
          ZSTD_compressCCtx(compress_.get(), buffer_.data(), buffer_.size(), chunk.data() + 1, body, level);
      if (ZSTD_isError(packed)) throw error(std::string("zstd: ") + ZSTD_getErrorName(packed));
      if (packed >= body) return chunk.size();
      chunk[0] = static_cast<std::byte>(std::to_integer<std::uint8_t>(chunk[0]) | packed_chunk);
      std::memcpy(chunk.data() + 1, buffer_.data(), packed);
      return 1 + packed;
    }

    /// The chunk as the encoder wrote it: itself when not packed, else its frame unpacked after the kind
    /// byte (without the packed bit) in this context's buffer, of at most `capacity` bytes.
    std::span<const std::byte> unpack(std::span<const std::byte> chunk, std::size_t capacity) {
      if (chunk.empty() || (std::to_integer<std::uint8_t>(chunk[0]) & packed_chunk) == 0) return chunk;
      const std::span<const std::byte> frame = chunk.subspan(1);
      const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
      if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
        throw format_error("zstd: a packed chunk does not start with a zstd frame that states its size");
      }
      if (size + 1 > capacity) {
        throw format_error("zstd: a packed chunk unpacks to " + std::to_string(size) + " bytes, more than the " +
                           std::to_string(capacity - 1) + " a chunk may hold");
      }
      buffer_.resize(1 + static_cast<std::size_t>(size));
      buffer_[0] = static_cast<std::byte>(std::to_integer<std::uint8_t>(chunk[0]) & ~packed_chunk);
      if (!decompress_) decompress_.reset(ZSTD_createDCtx());
      if (!decompress_) throw error("zstd: ZSTD_createDCtx failed (out of memory)");
      const std::size_t got =
          ZSTD_decompressDCtx(decompress_.get(), buffer_.data() + 1, static_cast<std::size_t>(size), frame.data(), frame.size());
      if (ZSTD_isError(got) || got != size) {
        throw format_error(std::string("zstd: a packed chunk does not unpack: ") +
                           (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame"));
      }
      return buffer_;
    }

   private:
    struct free_compress {
      void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
    };
    struct free_decompress {
      void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
    };
    std::unique_ptr<ZSTD_CCtx, free_compress> compress_;
    std::unique_ptr<ZSTD_DCtx, free_decompress> decompress_;
    std::vector<std::byte> buffer_;
  };
};

static_assert(lossless_backend<Zstd>);

}  // namespace zcoll::backend
