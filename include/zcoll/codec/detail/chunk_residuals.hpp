#pragma once
/// The pipeline's cache of residuals between its statistics pass and its coding pass, with a chunk
/// encoder (codec/pipeline.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zcoll/codec/detail/pipeline_block.hpp"

namespace zcoll::detail {

/// What a chunk encoder's stream may need beyond the chunks' room: up to 3 bytes a chunk to align
/// chunk_residuals' slots to 4 bytes.
inline constexpr std::size_t residual_slot_padding_bytes = 3;

/// And once a stream: room for the last chunk's residuals rounded up to a block, so that the statistics
/// pass writes a short last chunk straight into its slot as it does the others (a copy from scratch
/// before: on a 2-D field of one chunk, the Penobscot section, that copy and the fresh pages of its
/// scratch were 7 % of HighRatio's compression time).
inline constexpr std::size_t residual_tail_padding_bytes = 4 * (block_values - 1);

/// Every chunk's residuals and exceptions from the statistics pass, for the coding pass (or nothing,
/// when not kept). The residuals wait in the caller's output buffer rather than in an allocation of 4
/// bytes a value: malloc maps an allocation above its mmap threshold (at most 32 MiB with glibc) anew
/// on every call, and the page faults of such a cache halved the compression speed of inputs of more
/// than 8 Mi values (docs/performance.md).
///
/// Layout. The coding pass gives chunk c the window [W + c × stride, W + (c + 1) × stride), W =
/// first_slot_offset() (4-byte aligned, past the largest parameter section), stride = slot_stride() (a
/// chunk's room plus 3 bytes, a multiple of 4): a worker's region starts at its first chunk's window
/// (the first worker's earlier), and every chunk takes no more than its room, so chunk c is written
/// inside [W, end of window c). The slots (S = 4 × chunk_values bytes) of a worker's chunks [begin, end)
/// lie densely, ending where window end - 1 begins: slot c = W + e × stride - (e - c) × S with
/// e = min(end, chunks - 1), so the last chunk's slot starts at its own window and needs only its own
/// (perhaps shorter) residuals rounded up to a block, which max_compressed_size has room for. Slot c + 1 starts at or after
/// window c's end (a slot is no larger than a window), so writing chunk c overwrites no residuals still to
/// be read but slot c's own, which it reads first where the two may meet, and those of chunks its
/// worker coded before; other workers' windows hold none of its slots. Both passes split the chunks over
/// `workers` as exec::for_each_range does. Dense slots matter for f64 data, whose residuals fill half a
/// window: a slot at the start of each window spread them over twice the pages (docs/performance.md).
class chunk_residuals {
 public:
  chunk_residuals(std::span<std::byte> out, std::size_t after_prefix, std::size_t chunk_capacity,
                  std::uint32_t chunk_values, std::size_t chunks, std::size_t workers, bool keep)
      : out_(out),
        first_slot_(after_prefix + (4 - reinterpret_cast<std::uintptr_t>(out.data() + after_prefix) % 4) % 4),
        stride_(chunk_capacity + residual_slot_padding_bytes),
        slot_bytes_(4 * std::size_t{chunk_values}),
        chunks_(chunks),
        workers_(workers == 0 ? 1 : workers),
        exceptions_(keep ? chunks : 0) {}
  bool kept() const { return !exceptions_.empty(); }
  std::size_t first_slot_offset() const { return first_slot_; }
  std::size_t slot_stride() const { return stride_; }
  /// Slot `chunk`: room for chunk_values residuals (a whole chunk, or a shorter last one's padded blocks:
  /// residual_tail_padding_bytes past the room of its values).
  std::int32_t* slot(std::size_t chunk) const {
    const std::size_t end = std::min(range_end(chunk), chunks_ - 1);
    return reinterpret_cast<std::int32_t*>(out_.data() + first_slot_ + end * stride_ - (end - chunk) * slot_bytes_);
  }
  /// Keeps a chunk's residuals (copied into its slot unless written there) and exceptions.
  void keep(std::size_t chunk, std::span<const std::int32_t> residuals,
            std::span<const block_exceptions> e) {
    if (residuals.data() != slot(chunk)) std::copy(residuals.begin(), residuals.end(), slot(chunk));
    exceptions_[chunk].assign(e.begin(), e.end());
  }
  std::span<const block_exceptions> exceptions(std::size_t chunk) const { return exceptions_[chunk]; }
  /// Asks the core to bring slot `chunk`'s first `count` residuals into its second-level cache (a hint:
  /// what is read does not change). The coding pass asks for the next chunk's before it codes one: the
  /// statistics pass wrote them long before, so they wait in memory, where the encoder's first pass over
  /// a chunk (a stream of loads that the core's own prefetcher did not run ahead of) stalled on them for
  /// a tenth of HighRatio's compression time on an 18.75 MB field (docs/performance.md, issue 21).
  void prefetch(std::size_t chunk, std::size_t count) const {
#if defined(__GNUC__)
    constexpr std::size_t line_bytes = 64;
    const auto* const first = reinterpret_cast<const char*>(slot(chunk));
    for (std::size_t at = 0; at < 4 * count; at += line_bytes) __builtin_prefetch(first + at, 0, 2);
#else
    (void)chunk, (void)count;
#endif
  }

 private:
  /// The end of the range of chunks `chunk` is in: exec::for_each_range gives worker w [N w / W, N (w + 1) / W).
  std::size_t range_end(std::size_t chunk) const {
    std::size_t w = chunk * workers_ / chunks_;  // a lower bound of the worker, off by at most one
    while (chunks_ * (w + 1) / workers_ <= chunk) ++w;
    return chunks_ * (w + 1) / workers_;
  }

  std::span<std::byte> out_;
  std::size_t first_slot_;
  std::size_t stride_;      // a chunk's room (1 + a multiple of 4 bytes) and 3: a multiple of 4
  std::size_t slot_bytes_;  // 4 bytes a residual, chunk_values of them
  std::size_t chunks_;
  std::size_t workers_;
  std::vector<std::vector<block_exceptions>> exceptions_;  // each chunk's, written by its worker
};

}  // namespace zcoll::detail
