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

/// Every chunk's residuals and exceptions from the statistics pass, for the coding pass (or nothing,
/// when not kept). The residuals wait in the caller's output buffer rather than in an allocation of 4
/// bytes a value: malloc maps an allocation above its mmap threshold (at most 32 MiB with glibc) anew
/// on every call, and the page faults of such a cache halved the compression speed of inputs of more
/// than 8 Mi values (docs/performance.md).
///
/// Layout: slot c holds chunk c's residuals at the 4-byte aligned `first_slot_offset() + c *
/// slot_stride()`, past the largest parameter section; slot_stride() is a chunk's room plus 3 bytes.
/// The coding pass writes chunk c from at most slot c's start (its worker's region starts at slot
/// `begin`, the first worker's earlier, and every chunk written before takes no more than its room) to
/// at most slot c + 1's start, so it overwrites no residuals still to be read but slot c's own, which
/// it reads first where the two may meet. max_compressed_size holds every slot.
class chunk_residuals {
 public:
  chunk_residuals(std::span<std::byte> out, std::size_t after_prefix, std::size_t chunk_capacity,
                  std::size_t chunks, bool keep)
      : out_(out),
        first_slot_(after_prefix + (4 - reinterpret_cast<std::uintptr_t>(out.data() + after_prefix) % 4) % 4),
        stride_(chunk_capacity + residual_slot_padding_bytes),
        exceptions_(keep ? chunks : 0) {}
  bool kept() const { return !exceptions_.empty(); }
  std::size_t first_slot_offset() const { return first_slot_; }
  std::size_t slot_stride() const { return stride_; }
  /// Slot `chunk`: room for the chunk rounded up to 32 values, except for a shorter last chunk.
  std::int32_t* slot(std::size_t chunk) const {
    return reinterpret_cast<std::int32_t*>(out_.data() + first_slot_ + chunk * stride_);
  }
  /// Keeps a chunk's residuals (copied into its slot unless written there) and exceptions.
  void keep(std::size_t chunk, std::span<const std::int32_t> residuals,
            std::span<const block_exceptions> e) {
    if (residuals.data() != slot(chunk)) std::copy(residuals.begin(), residuals.end(), slot(chunk));
    exceptions_[chunk].assign(e.begin(), e.end());
  }
  std::span<const block_exceptions> exceptions(std::size_t chunk) const { return exceptions_[chunk]; }

 private:
  std::span<std::byte> out_;
  std::size_t first_slot_;
  std::size_t stride_;  // a chunk's room (1 + a multiple of 4 bytes) and 3: a multiple of 4
  std::vector<std::vector<block_exceptions>> exceptions_;  // each chunk's, written by its worker
};

}  // namespace zcoll::detail
