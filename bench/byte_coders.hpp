#pragma once
// Off-the-shelf lossless byte coders for the reference rows of `zcoll-bench codec`: LZ4, zstd and Blosc
// from the system libraries (Debian liblz4-dev, libzstd-dev, libblosc-dev), each present only when the
// build found it (ZCOLL_BENCH_HAS_LZ4, ZCOLL_BENCH_HAS_ZSTD, ZCOLL_BENCH_HAS_BLOSC, set by
// bench/CMakeLists.txt).

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#if ZCOLL_BENCH_HAS_LZ4
#include <lz4.h>
#endif
#if ZCOLL_BENCH_HAS_ZSTD
#include <zstd.h>
#endif
#if ZCOLL_BENCH_HAS_BLOSC
#include <blosc.h>
#endif

namespace zcoll_bench {

/// A lossless coder of byte buffers. Callers size `compress`'s output with max_compressed_bytes;
/// `decompress` must restore exactly `out.size()` bytes. Contexts live in the closures, so a timed
/// call allocates nothing.
struct byte_coder {
  std::string name;  ///< "lz4", "zstd-1", "zstd-3", "blosc-lz4"
  std::function<std::size_t(std::size_t input_bytes)> max_compressed_bytes;
  std::function<std::size_t(std::span<const std::byte> in, std::span<std::byte> out)> compress;
  std::function<void(std::span<const std::byte> in, std::span<std::byte> out)> decompress;
};

#if ZCOLL_BENCH_HAS_LZ4
/// LZ4_compress_default (acceleration 1): the fastest common lossless baseline.
inline byte_coder lz4_coder() {
  const auto checked_int = [](std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE)) {
      throw std::invalid_argument("lz4: " + std::to_string(bytes) + " bytes exceed LZ4_MAX_INPUT_SIZE (" +
                                  std::to_string(LZ4_MAX_INPUT_SIZE) + ")");
    }
    return static_cast<int>(bytes);
  };
  return {
      .name = "lz4",
      .max_compressed_bytes =
          [=](std::size_t n) { return static_cast<std::size_t>(LZ4_compressBound(checked_int(n))); },
      .compress =
          [=](std::span<const std::byte> in, std::span<std::byte> out) {
            const int written = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                                                     reinterpret_cast<char*>(out.data()), checked_int(in.size()),
                                                     checked_int(out.size()));
            if (written <= 0 && !in.empty()) throw std::runtime_error("lz4: LZ4_compress_default failed");
            return static_cast<std::size_t>(written);
          },
      .decompress =
          [=](std::span<const std::byte> in, std::span<std::byte> out) {
            const int restored = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()),
                                                     reinterpret_cast<char*>(out.data()), checked_int(in.size()),
                                                     checked_int(out.size()));
            if (restored < 0 || static_cast<std::size_t>(restored) != out.size()) {
              throw std::runtime_error("lz4: LZ4_decompress_safe restored " + std::to_string(restored) +
                                       " bytes, expected " + std::to_string(out.size()));
            }
          },
  };
}
#endif

#if ZCOLL_BENCH_HAS_ZSTD
/// ZSTD_compressCCtx at `level`, one compression and one decompression context per coder.
inline byte_coder zstd_coder(int level) {
  const std::shared_ptr<ZSTD_CCtx> compressor(ZSTD_createCCtx(), ZSTD_freeCCtx);
  const std::shared_ptr<ZSTD_DCtx> decompressor(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!compressor || !decompressor) throw std::runtime_error("zstd: cannot create a context");
  return {
      .name = "zstd-" + std::to_string(level),
      .max_compressed_bytes = [](std::size_t n) { return ZSTD_compressBound(n); },
      .compress =
          [=](std::span<const std::byte> in, std::span<std::byte> out) {
            const std::size_t written =
                ZSTD_compressCCtx(compressor.get(), out.data(), out.size(), in.data(), in.size(), level);
            if (ZSTD_isError(written)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(written));
            return written;
          },
      .decompress =
          [=](std::span<const std::byte> in, std::span<std::byte> out) {
            const std::size_t restored =
                ZSTD_decompressDCtx(decompressor.get(), out.data(), out.size(), in.data(), in.size());
            if (ZSTD_isError(restored)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(restored));
            if (restored != out.size()) {
              throw std::runtime_error("zstd: restored " + std::to_string(restored) + " bytes, expected " +
                                       std::to_string(out.size()));
            }
          },
  };
}
#endif

#if ZCOLL_BENCH_HAS_BLOSC
/// Blosc 1 as it is most often deployed for floating-point arrays: bit shuffle of `item_bytes`-byte items
/// (the values, or 32-bit codes), then LZ4, at clevel 5 (Blosc's default), automatic block size, one
/// internal thread. The _ctx calls keep no global state, so they need no blosc_init and no lock.
inline byte_coder blosc_coder(std::size_t item_bytes) {
  constexpr int compression_level = 5;
  constexpr int internal_threads = 1;
  const char* const compressor = "lz4";
  if (blosc_compname_to_compcode(compressor) < 0) {
    throw std::runtime_error(std::string("blosc: this libblosc has no '") + compressor + "' compressor (" +
                             blosc_list_compressors() + ")");
  }
  const auto checked_size = [](std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(BLOSC_MAX_BUFFERSIZE)) {
      throw std::invalid_argument("blosc: " + std::to_string(bytes) + " bytes exceed BLOSC_MAX_BUFFERSIZE (" +
                                  std::to_string(BLOSC_MAX_BUFFERSIZE) + ")");
    }
    return bytes;
  };
  return {
      .name = "blosc-lz4",
      .max_compressed_bytes = [=](std::size_t n) { return checked_size(n) + BLOSC_MAX_OVERHEAD; },
      .compress =
          [=](std::span<const std::byte> in, std::span<std::byte> out) {
            const int written =
                blosc_compress_ctx(compression_level, BLOSC_BITSHUFFLE, item_bytes, checked_size(in.size()),
                                   in.data(), out.data(), out.size(), compressor, 0, internal_threads);
            // 0 means `out` is too small; max_compressed_bytes rules that out.
            if (written <= 0) {
              throw std::runtime_error("blosc: blosc_compress_ctx returned " + std::to_string(written));
            }
            return static_cast<std::size_t>(written);
          },
      .decompress =
          [=](std::span<const std::byte> in, std::span<std::byte> out) {
            // blosc_decompress_ctx reads the stream's length from its header: check it against `in` first.
            std::size_t stream_values_bytes = 0;
            if (blosc_cbuffer_validate(in.data(), in.size(), &stream_values_bytes) != 0 ||
                stream_values_bytes != out.size()) {
              throw std::runtime_error("blosc: not a stream of " + std::to_string(out.size()) + " bytes in " +
                                       std::to_string(in.size()) + " bytes");
            }
            const int restored = blosc_decompress_ctx(in.data(), out.data(), out.size(), internal_threads);
            if (restored < 0 || static_cast<std::size_t>(restored) != out.size()) {
              throw std::runtime_error("blosc: blosc_decompress_ctx restored " + std::to_string(restored) +
                                       " bytes, expected " + std::to_string(out.size()));
            }
          },
  };
}
#endif

/// The coders this build has: lz4, then zstd at levels 1 and 3 (level 3 is zstd's default and the
/// level of the q-zstd baseline in ../shared/baselines.md; level 1 is its fastest standard level), then
/// Blosc. `item_bytes` is the size of the items the coded buffers hold (sizeof the value type for the
/// raw values, 4 for quantization codes): only Blosc's shuffle uses it.
inline std::vector<byte_coder> available_byte_coders(std::size_t item_bytes) {
  std::vector<byte_coder> coders;
#if ZCOLL_BENCH_HAS_LZ4
  coders.push_back(lz4_coder());
#endif
#if ZCOLL_BENCH_HAS_ZSTD
  coders.push_back(zstd_coder(1));
  coders.push_back(zstd_coder(3));
#endif
#if ZCOLL_BENCH_HAS_BLOSC
  coders.push_back(blosc_coder(item_bytes));
#else
  (void)item_bytes;
#endif
  return coders;
}

/// A coder family this build lacks, and why.
struct missing_coder {
  std::string family;  ///< "lz4", "zstd", "blosc"
  std::string note;
};

inline std::vector<missing_coder> missing_byte_coders() {
  std::vector<missing_coder> missing;
#if !ZCOLL_BENCH_HAS_LZ4
  missing.push_back({"lz4", "lz4 (liblz4 was not found when zcoll-bench was built; install liblz4-dev)"});
#endif
#if !ZCOLL_BENCH_HAS_ZSTD
  missing.push_back({"zstd", "zstd (libzstd was not found when zcoll-bench was built; install libzstd-dev)"});
#endif
#if !ZCOLL_BENCH_HAS_BLOSC
  missing.push_back({"blosc", "blosc (libblosc was not found when zcoll-bench was built; install libblosc-dev)"});
#endif
  return missing;
}

}  // namespace zcoll_bench
