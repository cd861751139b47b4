#pragma once
/// A team's decoding of a chunk's blocks, shared by the CUDA decoder's tiles (pipeline_tile.hpp: a block
/// encoder's chunks, a Huffman chunk's bit-plane fallback) and VectorLZ's bit-plane literals
/// (vector_lz_tile.hpp), and the word sum their scans use.

#include <cstddef>
#include <cstdint>

#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::detail {

struct add_words {
  ZCOLL_HOST_DEVICE std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return a + b; }
};

/// Where a coded chunk's blocks are: each block's first byte gives its size, so one thread walks them.
struct block_walk {
  bool ok = true;       ///< false: a block is malformed or runs past the chunk's end
  std::size_t end = 1;  ///< the byte after the last block (where the walk stopped, when not ok)
};
template <class E>
ZCOLL_HOST_DEVICE block_walk walk_blocks(const std::byte* chunk, std::size_t size, std::size_t blocks, std::uint32_t* starts) {
  block_walk walk;
  for (std::size_t k = 0; k < blocks && walk.ok; ++k) {
    const std::size_t bytes = walk.end < size ? E::block_bytes(chunk[walk.end]) : 0;
    walk.ok = bytes > 0 && bytes <= size - walk.end;
    starts[k] = static_cast<std::uint32_t>(walk.end);
    walk.end += bytes;
  }
  return walk;
}

/// Step 2 of decompress_tile for blocks (a block encoder's, or a Huffman chunk's bit-plane fallback):
/// thread 0 walks the chunk's blocks (each one's first byte gives its size) into the team's words, then
/// each thread decodes its block into `residuals`; with `zero_padding`, the last block's lanes past the
/// chunk must be zero residuals (the fallback pads so). With `staging` (room for the chunk's values)
/// the team copies the chunk's bytes there first (a coded chunk is smaller than its values), so that the
/// walk, a chain of dependent loads, and the decoders read shared memory. Returns whether the chunk's
/// blocks decoded (the same on every thread); `coded_end` is where they end.
template <class BlockEncoder, floating_value T, class Team, class Fail>
ZCOLL_HOST_DEVICE bool decode_blocks(Team& team, const std::byte* chunk, std::size_t size, std::size_t n, std::size_t blocks,
                                     T* staging, std::uint32_t chunk_values, std::uint32_t* residuals, std::size_t& coded_end,
                                     const Fail& fail, bool zero_padding) {
  const unsigned b = team.rank();
  const std::byte* blocks_at = chunk;
  if (staging != nullptr && size <= std::size_t{chunk_values} * sizeof(T)) {
    auto* const staged_bytes = reinterpret_cast<std::byte*>(staging);
    for (std::size_t i = b; i < size; i += team.size()) staged_bytes[i] = chunk[i];
    team.sync();
    blocks_at = staged_bytes;
  }
  std::uint32_t* const starts = team.words();
  const unsigned status = team.size(), end_of_blocks = team.size() + 1;
  if (b == 0) {
    const block_walk walk = walk_blocks<BlockEncoder>(blocks_at, size, blocks, starts);
    if (!walk.ok) fail(decode_fault_code::bad_block, walk.end);
    starts[status] = walk.ok ? 1 : 0;
    starts[end_of_blocks] = static_cast<std::uint32_t>(walk.end);
  }
  team.sync();
  if (starts[status] == 0) return false;
  coded_end = starts[end_of_blocks];
  bool padded_with_zeros = true;
  if (b < blocks) {
    BlockEncoder::decode_checked_block(blocks_at + starts[b], residuals);
    const std::size_t lanes = n - b * block_values < block_values ? n - b * block_values : block_values;
    for (std::size_t j = lanes; zero_padding && j < block_values; ++j) padded_with_zeros &= residuals[j] == 0;
    if (!padded_with_zeros) fail(decode_fault_code::bad_block, starts[b]);
  }
  if (!zero_padding) return true;
  std::uint32_t failed = 0;
  (void)team.exclusive_scan(padded_with_zeros ? 0u : 1u, add_words{}, 0u, failed);
  return failed == 0;
}

}  // namespace zcoll::detail
