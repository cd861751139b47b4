#pragma once
/// The CUDA decoder's part for pipelines whose encoder is encode::VectorLZ (EmbeddingLZ): a chunk is one
/// token byte per vector (0: a literal; d: a copy of the vector d back), then the literal vectors'
/// residuals as one Huffman chunk or, under the model's bit-plane fallback, as bit-plane blocks
/// (encode/vector_lz.hpp). The team decodes a chunk in three steps:
///
/// 1. the tokens, a contiguous share of the vectors per thread: checked as the host checks them (within
///    the window and the chunk's start, a partial last vector a literal), and the literal vectors of
///    each share counted, so that a scan gives each share its first literal's ordinal;
/// 2. the literals into a buffer the team shares, by the Huffman decoder of huffman_tile.hpp (a thread
///    per Huffman stream) or the bit-plane blocks (a thread per block);
/// 3. each thread's block of residuals gathered: value i is lane i % dim of vector i / dim, whose copy
///    chain (a copy of a copy ...) ends at a literal, whose ordinal is its share's first plus the
///    literals before it in the share. A chain that reaches the previous lane's vector stops there. A
///    hostile stream whose chains never do costs up to a chunk's vectors per lane (time, not memory:
///    every step moves back, within the chunk).
///
/// decompress_tile (pipeline_tile.hpp) then finishes the chunk as for every encoder: the predictor, the
/// quantizer, the exception section.

#include <cstddef>
#include <cstdint>

#include "zcoll/codec/detail/block_decoding.hpp"
#include "zcoll/codec/detail/decode_fault.hpp"
#include "zcoll/codec/detail/huffman_tile.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/vector_lz.hpp"

namespace zcoll::detail {

/// Decodes VectorLZ chunk data at `chunk` (the pipeline's kind byte first, `size` bytes, n residuals) with
/// the team: thread b's block of residuals into `residuals` (`lanes` of them). `buffer` (room for n words,
/// shared by the team: the staging area, or the chunk's values) receives the literals; `staging` is
/// decode_blocks' for the bit-plane literals. Returns whether the chunk decoded (the same on every
/// thread); `coded_end` is where the exception section starts. Every thread calls it.
template <floating_value T, class Team, class Fail>
ZCOLL_HOST_DEVICE bool decode_vector_lz_chunk(Team& team, const huffman_device_model& model, const std::byte* chunk,
                                              std::size_t size, std::size_t n, T* staging, std::uint32_t chunk_values,
                                              std::uint32_t* buffer, std::uint32_t* residuals, std::size_t lanes,
                                              std::size_t& coded_end, const Fail& fail) {
  const unsigned b = team.rank(), threads = team.size();
  const encode::chunk_vectors split = encode::split_into_vectors(n, model.dim);
  if (size < 1 + split.count) {  // the tokens do not fit (the same on every thread)
    if (b == 0) fail(decode_fault_code::bad_block, size);
    return false;
  }
  const auto* const tokens = reinterpret_cast<const std::uint8_t*>(chunk + 1);

  // 1. Tokens: thread b's share of the vectors checked and its literals counted; the ordinal of each
  // share's first literal vector kept in the team's words past those decode_blocks uses.
  const std::size_t share = (split.count + threads - 1) / threads;
  const std::size_t v0 = b * share < split.count ? b * share : split.count;
  const std::size_t v1 = v0 + share < split.count ? v0 + share : split.count;
  std::uint32_t literal_vectors = 0, bad = 0;
  std::size_t first_bad = 0;
  for (std::size_t v = v0; v < v1; ++v) {
    const bool valid = encode::vector_token_valid(tokens[v], v, split, model.window);
    if (!valid && bad == 0) first_bad = v;
    bad += valid ? 0 : 1;
    literal_vectors += tokens[v] == 0 ? 1 : 0;
  }
  if (bad != 0) fail(decode_fault_code::bad_vector_token, first_bad);
  std::uint32_t bad_total = 0, literal_total = 0;
  (void)team.exclusive_scan(bad, add_words{}, 0u, bad_total);
  const std::uint32_t first_literal = team.exclusive_scan(literal_vectors, add_words{}, 0u, literal_total);
  if (bad_total != 0) return false;
  std::uint32_t* const share_first_literal = team.words() + threads + 2;
  share_first_literal[b] = first_literal;
  const std::size_t literal_values = (literal_total - (split.tail > 0 ? 1 : 0)) * split.dim + split.tail;

  // 2. The literals into the buffer. The literal section starts after the tokens: seen from
  // chunk + count, it is a chunk of L residuals whose first byte is the pipeline's kind byte's place.
  const std::byte* const literal_chunk = chunk + split.count;
  const std::size_t literal_size = size - split.count;
  if (model.bitplane) {
    std::uint32_t mine[block_values] = {};
    const std::size_t literal_blocks = (literal_values + block_values - 1) / block_values;
    if (!decode_blocks<encode::BitShuffle>(team, literal_chunk, literal_size, literal_values, literal_blocks, staging,
                                           chunk_values, mine, coded_end, fail, true)) {
      return false;
    }
    team.sync();  // every block is decoded before the buffer (maybe the staged bytes) is written
    for (std::size_t j = 0; j < block_values && b * block_values + j < literal_values; ++j) {
      buffer[b * block_values + j] = mine[j];
    }
  } else {
    std::uint64_t detail = 0;
    const huffman_share mine = decode_huffman_share(model, literal_chunk, literal_size, literal_values, b, buffer, detail);
    if (mine.failed != 0) fail(decode_fault_code::bad_block, split.count + detail);
    huffman_share all{};
    (void)team.exclusive_scan(mine, combine_huffman_shares{}, huffman_share{0, 0}, all);
    if (all.failed != 0) return false;
    coded_end = all.end;
  }
  coded_end += split.count;
  team.sync();  // the literals and the shares' first ordinals are in place

  // 3. Thread b's residuals: each value's vector, followed along its copies to a literal. The lanes'
  // vectors are consecutive, and a copy chain usually passes the previous lane's vector (a row repeated
  // run after run: tokens of 1), so the walk stops there and takes that vector's literal: one step a
  // lane instead of one a vector back.
  std::size_t known_vector = ~std::size_t{0}, known_ordinal = 0;
  for (std::size_t j = 0; j < lanes; ++j) {
    const std::size_t i = b * block_values + j, vector = i / split.dim;
    std::size_t v = vector;
    while (tokens[v] != 0 && v != known_vector) v -= tokens[v];  // tokens[v] <= v: the chain ends at a literal
    std::size_t ordinal = known_ordinal;
    if (v != known_vector) {
      const std::size_t owner = v / share;
      ordinal = share_first_literal[owner];
      for (std::size_t u = owner * share; u < v; ++u) ordinal += tokens[u] == 0 ? 1 : 0;
    }
    known_vector = vector;
    known_ordinal = ordinal;
    residuals[j] = buffer[ordinal * split.dim + i % split.dim];
  }
  return true;  // (the caller's next scan begins with a barrier: no thread overwrites the buffer before all read it)
}

}  // namespace zcoll::detail
