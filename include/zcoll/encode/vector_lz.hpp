#pragma once
/// Vector-based LZ: a chunk encoder whose pattern is one whole embedding vector (DLRM compression
/// paper, §III-D "Vector-based LZ Encoding" and §III-E "Compressor Fine-tuning").
///
/// Embedding lookups repeat rows (query frequencies follow a power law), and a repeated row repeats all
/// `dim` codes of its vector. So the match length is fixed to one vector: the encoder hashes each vector,
/// looks up the most recent earlier vector of the chunk with that hash (walking a chain of earlier
/// vectors of the same hash slot, so a shared slot never hides a repeat), compares it in full, and emits
/// a back-reference if it is within the window. No byte-wise match extension, no variable lengths: a
/// vector either matches whole or is a literal. The tokens are therefore exactly "distance to the
/// nearest equal earlier vector within the window, else 0", whatever the hash function.
///
/// Chunk format (a chunk of n residuals, dim = model.dim, V = ceil(n / dim) vectors, all little-endian):
///
/// | bytes | field                                                                                       |
/// |-------|---------------------------------------------------------------------------------------------|
/// | V     | one token byte per vector, in order: 0 = literal; d in 1..window = a copy of the vector d   |
/// |       | vectors back (d <= the vector's index). A partial last vector (n % dim != 0, only at the   |
/// |       | end of a stream) is always a literal                                                        |
/// | rest  | the literal vectors' residuals, concatenated in vector order (L of them), as ceil(L / 32)   |
/// |       | bit-shuffle blocks (format in encode/detail/bitshuffle_block.hpp), the last block padded    |
/// |       | with zero residuals; the decoder knows where the chunk ends from the tokens                 |
///
/// A chunk where nothing matches is its plain bit-shuffle blocks plus one byte per vector. Tokens are
/// whole bytes, not a literal/match bitmap followed by the distances: on Zipf(1.05) lookups of Gaussian
/// rows (dim 32..128, error bound 0.01..0.05) the bitmap made chunks only 0.5-2.9% smaller, and byte
/// tokens let the decoder copy without bit extraction.
///
/// Model (the stream's parameter section):
///
/// | bytes | field                                                                 |
/// |-------|-----------------------------------------------------------------------|
/// | 4     | dim: the vector length (u32, 1..65536)                                |
/// | 1     | window: how many vectors back a match may reach (u8, 1..255)          |
/// | rest  | the literals' Huffman model (encode/huffman.hpp)                      |
///
/// Literals with a Huffman code: the literal section is instead one Huffman chunk (encode/huffman.hpp)
/// of the L literal residuals. The DLRM paper's two encoders in one: matches take the repeated rows,
/// the code takes the entropy of the rest (a Huffman model that would not beat bit-plane blocks is
/// its fallback, and the section is the bit-plane blocks above).
///
///     const auto model = VectorLZ::make_model({}, {.match_window = 255}, {.chunk_values = 4096, .row_length = 64});
///     auto size = VectorLZ::encode_chunk(model, residuals, out);   // nullopt: did not fit
///     VectorLZ::decode_chunk(model, out.first(*size), decoded);

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/encode/huffman.hpp"

namespace zcoll::encode {

namespace detail {

/// Final mix of a vector hash (murmur3's 32-bit finalizer): the table index takes the top bits.
ZCOLL_ALWAYS_INLINE std::uint32_t finish_hash(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}

/// A hash of one vector's codes: per lane, a base-33 polynomial over the codes of that lane (shift and
/// add, so no multiply on the loop's dependency chain); the lanes then weighted by odd constants and
/// summed. A change of any one code changes the hash (33^k and the weights are odd, hence invertible).
/// The hash only picks candidates, which are compared in full, so the stream does not depend on it:
/// the AVX2 and portable forms may differ.
ZCOLL_ALWAYS_INLINE std::uint32_t vector_hash(const std::int32_t* codes, std::size_t dim) {
#if ZCOLL_HAS_AVX2
  // Two accumulators of 8 lanes halve the dependency chain; a tail of under 8 codes is a masked load,
  // which reads nothing past the vector.
  const auto step = [](__m256i h, __m256i x) { return _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(h, 5), h), x); };
  __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    a = step(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i)));
    b = step(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i + 8)));
  }
  if (i + 8 <= dim) {
    a = step(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i)));
    i += 8;
  }
  if (i < dim) {
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(dim - i)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    b = step(b, _mm256_maskload_epi32(codes + i, lanes));
  }
  alignas(32) static constexpr std::uint32_t weight[16] = {
      0x9E3779B1u, 0x85EBCA77u, 0x6C8E9CF5u, 0x27D4EB2Fu, 0x165667B1u, 0x7A2646D3u, 0x7D7046C5u, 0x355A4F09u,
      0x2545F491u, 0x4CF5AD43u, 0x61C88647u, 0x1B873593u, 0x5BD1E995u, 0x68E31DA5u, 0x3C6EF373u, 0x0B4B82E1u};
  const __m256i weighted =
      _mm256_add_epi32(_mm256_mullo_epi32(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(weight))),
                       _mm256_mullo_epi32(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(weight + 8))));
  __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(weighted), _mm256_extracti128_si256(weighted, 1));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0x4E));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0xB1));
  return finish_hash(static_cast<std::uint32_t>(_mm_cvtsi128_si32(sum)));
#else
  std::uint32_t lane[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= dim; i += 8) {
    for (std::size_t l = 0; l < 8; ++l) lane[l] = (lane[l] << 5) + lane[l] + static_cast<std::uint32_t>(codes[i + l]);
  }
  for (std::size_t l = 0; i < dim; ++i, ++l) lane[l] = (lane[l] << 5) + lane[l] + static_cast<std::uint32_t>(codes[i]);
  constexpr std::uint32_t weight[8] = {0x9E3779B1u, 0x85EBCA77u, 0x6C8E9CF5u, 0x27D4EB2Fu,
                                       0x165667B1u, 0x7A2646D3u, 0x7D7046C5u, 0x355A4F09u};
  std::uint32_t h = 0;
  for (std::size_t l = 0; l < 8; ++l) h += lane[l] * weight[l];
  return finish_hash(h);
#endif
}

/// Whether two vectors of `dim` codes are equal. Inline and without early exit: a candidate that
/// passed the hash check is almost always equal, so the whole vector is read anyway, and a call to
/// memcmp cost more than the comparison of a 32-code vector.
ZCOLL_ALWAYS_INLINE bool vectors_equal(const std::int32_t* a, const std::int32_t* b, std::size_t dim) {
#if ZCOLL_HAS_AVX2
  __m256i differ = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 8 <= dim; i += 8) {
    differ = _mm256_or_si256(differ, _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)),
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i))));
  }
  if (i < dim) {
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(dim - i)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    differ = _mm256_or_si256(differ, _mm256_xor_si256(_mm256_maskload_epi32(a + i, lanes), _mm256_maskload_epi32(b + i, lanes)));
  }
  return _mm256_testz_si256(differ, differ) != 0;
#else
  std::uint32_t differ = 0;
  for (std::size_t i = 0; i < dim; ++i) differ |= static_cast<std::uint32_t>(a[i] ^ b[i]);
  return differ == 0;
#endif
}

/// Copies a vector of `dim` codes from an earlier one (they never overlap: the source ends at or
/// before the destination). Inline: a call to memcpy per vector cost more than the copy of a short one.
ZCOLL_ALWAYS_INLINE void copy_vector(std::uint32_t* ZCOLL_RESTRICT to, const std::uint32_t* ZCOLL_RESTRICT from,
                                     std::size_t dim) {
#if ZCOLL_HAS_AVX2
  std::size_t i = 0;
  for (; i + 8 <= dim; i += 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i)));
  }
  if (i < dim) {
    // Masked: lanes past the vector are neither read nor written.
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(dim - i)),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_epi32(reinterpret_cast<int*>(to + i), lanes,
                           _mm256_maskload_epi32(reinterpret_cast<const int*>(from + i), lanes));
  }
#else
  std::memcpy(to, from, dim * sizeof(std::uint32_t));
#endif
}

/// Appends residuals to the literal section as bit-shuffle blocks of 32, never writing past `end`.
/// Whole blocks of the input are encoded in place; the rest waits in `pending` for the next literal.
class literal_block_writer {
 public:
  literal_block_writer(std::byte* begin, std::byte* end) : cursor_(begin), end_(end) {}

  /// False when the blocks no longer fit.
  ZCOLL_ALWAYS_INLINE bool append(const std::int32_t* residuals, std::size_t count) {
    if (pending_count_ > 0) {
      const std::size_t take = std::min(block_values - pending_count_, count);
      std::memcpy(pending_ + pending_count_, residuals, take * sizeof(std::int32_t));
      pending_count_ += take;
      residuals += take;
      count -= take;
      if (pending_count_ < block_values) return true;
      pending_count_ = 0;
      if (!put_block(pending_)) return false;
    }
    for (; count >= block_values; count -= block_values, residuals += block_values) {
      if (!put_block(residuals)) return false;
    }
    if (count > 0) std::memcpy(pending_, residuals, count * sizeof(std::int32_t));
    pending_count_ = count;
    return true;
  }

  /// Pads and writes the last block; false when it does not fit.
  bool finish() {
    if (pending_count_ == 0) return true;
    std::fill(pending_ + pending_count_, pending_ + block_values, 0);
    pending_count_ = 0;
    return put_block(pending_);
  }

  std::byte* cursor() const { return cursor_; }

 private:
  // With room for a whole block the encoder writes in place (it may use that room as scratch);
  // near the end it encodes aside and the block is kept only if it fits, as the pipeline does.
  ZCOLL_ALWAYS_INLINE bool put_block(const std::int32_t* block) {
    const auto room = static_cast<std::size_t>(end_ - cursor_);
    if (room >= BitShuffle::max_block_bytes) {
      cursor_ += BitShuffle::encode_block(block, cursor_);
      return true;
    }
    std::byte aside[BitShuffle::max_block_bytes];
    const std::size_t size = BitShuffle::encode_block(block, aside);
    if (size > room) return false;
    std::memcpy(cursor_, aside, size);
    cursor_ += size;
    return true;
  }

  std::byte* cursor_;
  std::byte* end_;
  alignas(32) std::int32_t pending_[block_values];
  std::size_t pending_count_ = 0;
};

/// Reads the literal section's blocks on demand and hands out its residuals in order.
class literal_block_reader {
 public:
  explicit literal_block_reader(std::span<const std::byte> section) : section_(section) {}

  ZCOLL_ALWAYS_INLINE void take(std::uint32_t* residuals, std::size_t count) {
    if (buffered_ > 0) {
      const std::size_t k = std::min(buffered_, count);
      std::memcpy(residuals, buffer_ + block_values - buffered_, k * sizeof(std::uint32_t));
      buffered_ -= k;
      residuals += k;
      count -= k;
    }
    for (; count >= block_values; count -= block_values, residuals += block_values) {
      offset_ += BitShuffle::decode_block(section_.subspan(offset_), residuals);
    }
    if (count > 0) {
      offset_ += BitShuffle::decode_block(section_.subspan(offset_), buffer_);
      std::memcpy(residuals, buffer_, count * sizeof(std::uint32_t));
      buffered_ = block_values - count;
    }
  }

  /// Checks that the padding of the last block is zero; returns the bytes the blocks took.
  std::size_t finish() const {
    for (std::size_t j = block_values - buffered_; j < block_values; ++j) {
      if (buffer_[j] != 0) {
        throw format_error("vector-lz: padding residual " + std::to_string(j) + " of the last literal block is " +
                           std::to_string(buffer_[j]) + ", not 0");
      }
    }
    return offset_;
  }

 private:
  std::span<const std::byte> section_;
  std::size_t offset_ = 0;
  alignas(32) std::uint32_t buffer_[block_values];
  std::size_t buffered_ = 0;
};

/// Finds, for each vector of a chunk in turn, the most recent earlier vector equal to it within the
/// window. A hash table gives the latest vector of each slot; vectors of one slot are chained (as
/// zlib chains its hash heads), so a slot shared by two different vectors never hides a repeat: a
/// repeat within the window is always found, whatever the hash collisions.
class match_finder {
 public:
  match_finder(std::size_t vectors, unsigned window) : window_(window), shift_(32 - table_bits(vectors, window)) {
    // Any initial value is harmless (a candidate is used only after a full comparison); 0 avoids
    // reading uninitialized memory.
    std::memset(latest_, 0, sizeof(std::uint16_t) << (32 - shift_));
  }

  /// The distance in vectors (1..window) to the most recent earlier vector equal to vector v of
  /// `residuals` (vectors of `dim`), or 0; records vector v. Call for v = 0, 1, 2, ... in turn.
  ZCOLL_ALWAYS_INLINE std::size_t find(const std::int32_t* residuals, std::size_t v, std::size_t dim) {
    const std::int32_t* x = residuals + v * dim;
    const std::uint32_t hash = vector_hash(x, dim);
    const std::uint32_t slot = hash >> shift_;
    // Indices are kept mod 2^16 and distances computed mod 2^16: a distance is then at most the
    // index, so no candidate lies before the chunk's start; each link moves strictly back, so the
    // walk ends once it leaves the window. Ring entries of vectors within the window are never stale.
    std::size_t distance = (v - latest_[slot]) & 0xFFFFu;
    ring_hash_[v & ring_mask] = hash;
    ring_previous_[v & ring_mask] = latest_[slot];
    latest_[slot] = static_cast<std::uint16_t>(v);
    while (distance - 1 < window_) {
      const std::size_t u = v - distance;
      if (ring_hash_[u & ring_mask] == hash && vectors_equal(x, x - distance * dim, dim)) {
        return distance;
      }
      const std::size_t step = (u - ring_previous_[u & ring_mask]) & 0xFFFFu;
      if (step == 0) break;
      distance += step;
    }
    return 0;
  }

 private:
  static constexpr unsigned max_table_bits = 12;
  static constexpr std::size_t ring_mask = 255;  // the ring holds the last 256 vectors: the window and v

  // About 8 slots per vector a match can reach keeps chains short; at most 4096 (8 KiB cleared per chunk).
  static unsigned table_bits(std::size_t vectors, unsigned window) {
    const std::size_t live = std::max<std::size_t>(1, std::min<std::size_t>(vectors, window));
    return std::min(max_table_bits, static_cast<unsigned>(std::bit_width(live)) + 3u);
  }

  std::size_t window_;
  unsigned shift_;
  std::uint16_t latest_[std::size_t{1} << max_table_bits];
  std::uint32_t ring_hash_[ring_mask + 1];
  std::uint16_t ring_previous_[ring_mask + 1];
};

}  // namespace detail

/// How a chunk of `values` residuals splits into vectors of `dim`: `full` whole ones, then a partial one
/// of `tail` values (only at a stream's end); `count` tokens in all. The host's VectorLZ and the device
/// decoder (codec/detail/vector_lz_tile.hpp) both split chunks with it.
struct chunk_vectors {
  std::size_t dim, full, tail, count;
};
ZCOLL_HOST_DEVICE constexpr chunk_vectors split_into_vectors(std::size_t values, std::size_t dim) {
  const std::size_t full = values / dim;
  const std::size_t tail = values - full * dim;
  return {dim, full, tail, full + (tail > 0 ? 1 : 0)};
}

/// Whether vector v's token is one the decoders take: a whole vector's within the window and the chunk's
/// start (a copy from vector v - token), a partial last vector's 0 (always a literal).
ZCOLL_HOST_DEVICE constexpr bool vector_token_valid(std::uint32_t token, std::size_t v, const chunk_vectors& split,
                                                    std::uint32_t window) {
  return v < split.full ? token <= window && token <= v : token == 0;
}

/// Vector-based LZ over one chunk of residuals; a match is a whole vector of `dim` codes.
struct VectorLZ {
  static constexpr std::uint8_t id = 3;
  static constexpr const char* name = "vector-lz";
  static constexpr bool needs_statistics = true;

  /// The residual histogram the literals' Huffman code is built from.
  using statistics = Huffman::statistics;

  struct model {
    /// Codes per vector: the pattern length, shape.back().
    std::uint32_t dim = 1;
    /// How many vectors back a match may reach (the token is one byte, hence at most 255).
    std::uint8_t window = 255;
    /// How the literal vectors are coded: a Huffman code, or (the default, and Huffman's own fallback
    /// when a code would not be smaller) bit-plane blocks.
    Huffman::model literals = {};
    friend bool operator==(const model& a, const model& b) {
      return a.dim == b.dim && a.window == b.window && a.literals.serialized == b.literals.serialized;
    }
  };

  static constexpr std::size_t lz_model_bytes = 5;
  static constexpr std::size_t max_model_bytes = lz_model_bytes + Huffman::max_model_bytes;
  static constexpr unsigned max_window = 255;

  /// VectorLZ's own setting: {.match_window = 64} (a Pipeline with this encoder takes it beside its
  /// codec_config).
  struct settings {
    /// How many previous vectors a match may reach back, 1..255 (the DLRM paper's window; the token
    /// that names it is one byte).
    std::uint32_t match_window = max_window;
    friend bool operator==(const settings&, const settings&) = default;
  };

  /// argument_error unless the window is in 1..255.
  static void check(const settings& s) {
    if (s.match_window < 1 || s.match_window > max_window) {
      throw argument_error("vector-lz settings: match_window " + std::to_string(s.match_window) + " must be in 1..255");
    }
  }

  /// The vector length from the layout's row length, the window from the settings; a chunk must hold
  /// whole vectors, so that no vector straddles two chunks.
  static model make_model(const statistics& residuals, const settings& s, const chunk_layout& layout) {
    check(s);
    const std::size_t dim = layout.row_length;
    if (dim == 0) {
      throw argument_error(
          "codec_config: shape is empty or ends in 0; vector-lz needs the vector length >= 1 as shape.back() "
          "(shape = {rows, dim})");
    }
    if (dim > layout.chunk_values || layout.chunk_values % dim != 0) {
      throw argument_error("codec_config: chunk_values " + std::to_string(layout.chunk_values) +
                           " must be a multiple of the vector length " + std::to_string(dim) +
                           " (shape.back()) for vector-lz");
    }
    return {.dim = static_cast<std::uint32_t>(dim),
            .window = static_cast<std::uint8_t>(s.match_window),
            .literals = Huffman::make_model(residuals)};
  }

  static std::size_t model_size_bytes(const model& m) {
    return lz_model_bytes + Huffman::model_size_bytes(m.literals);
  }

  static void write_model(const model& m, byte_writer& out) {
    out.write(m.dim);
    out.write(m.window);
    Huffman::write_model(m.literals, out);
  }

  static model read_model(byte_reader& in) {
    const auto dim = in.read<std::uint32_t>("vector-lz model: vector length");
    const auto window = in.read<std::uint8_t>("vector-lz model: match window");
    if (dim < 1 || dim > common_max_chunk_values) {
      throw format_error("vector-lz model: vector length " + std::to_string(dim) + " is outside 1..65536");
    }
    if (window < 1) throw format_error("vector-lz model: match window 0 is outside 1..255");
    return {.dim = dim, .window = window, .literals = Huffman::read_model(in)};
  }

  /// Writes the chunk into `out`; its size, or nothing when it does not fit (nothing is written past
  /// `out` either way).
  static std::optional<std::size_t> encode_chunk(const model& m, std::span<const std::int32_t> residuals,
                                                 std::span<std::byte> out) {
    const chunk_vectors shape = vectors_of(m, residuals.size());
    const auto [dim, full_vectors, tail, vectors] = shape;
    if (out.size() < vectors) return std::nullopt;
    if (!m.literals.bitplane_fallback) return encode_with_coded_literals(m, residuals, out, shape);

    std::byte* const tokens = out.data();
    detail::literal_block_writer literals(out.data() + vectors, out.data() + out.size());
    detail::match_finder matches(vectors, m.window);
    const std::int32_t* x = residuals.data();
    for (std::size_t v = 0; v < full_vectors; ++v, x += dim) {
      const std::size_t distance = matches.find(residuals.data(), v, dim);
      tokens[v] = static_cast<std::byte>(distance);
      if (distance == 0 && !literals.append(x, dim)) return std::nullopt;
    }
    if (tail > 0) {
      tokens[full_vectors] = std::byte{0};
      if (!literals.append(x, tail)) return std::nullopt;
    }
    if (!literals.finish()) return std::nullopt;
    return static_cast<std::size_t>(literals.cursor() - out.data());
  }

  /// Fills `residuals` (exactly the chunk's values) from the front of `in`; returns the bytes read (what
  /// follows is the pipeline's: the exception section). Raises format_error on a token past the window
  /// or the chunk's start, a truncated literal section, or non-zero padding.
  static std::size_t decode_chunk(const model& m, std::span<const std::byte> in, std::span<std::uint32_t> residuals) {
    const chunk_vectors shape = vectors_of(m, residuals.size());
    const auto [dim, full_vectors, tail, vectors] = shape;
    if (in.size() < vectors) {
      throw format_error("vector-lz: chunk of " + std::to_string(in.size()) + " bytes is shorter than its " +
                         std::to_string(vectors) + " token bytes");
    }
    const auto* tokens = reinterpret_cast<const std::uint8_t*>(in.data());
    check_tokens(m, tokens, shape);
    if (!m.literals.bitplane_fallback) {
      return decode_with_coded_literals(m, in, tokens, residuals, shape);
    }

    detail::literal_block_reader literals(in.subspan(vectors));
    std::uint32_t* y = residuals.data();
    for (std::size_t v = 0; v < full_vectors; ++v, y += dim) {
      const std::size_t distance = tokens[v];
      if (distance != 0) {
        detail::copy_vector(y, y - distance * dim, dim);
      } else {
        literals.take(y, dim);
      }
    }
    if (tail > 0) literals.take(y, tail);
    return vectors + literals.finish();
  }

 private:
  static chunk_vectors vectors_of(const model& m, std::size_t values) { return split_into_vectors(values, checked_dim(m)); }

  /// Per-thread scratch for the literal residuals of one chunk (at most 65536 values).
  template <class V>
  static V* literal_scratch() {
    thread_local std::vector<V> scratch(common_max_chunk_values);
    return scratch.data();
  }

  /// Tokens as above, then the literal residuals gathered and coded as one Huffman chunk.
  static std::optional<std::size_t> encode_with_coded_literals(const model& m, std::span<const std::int32_t> residuals,
                                                               std::span<std::byte> out, chunk_vectors shape) {
    const auto [dim, full_vectors, tail, vectors] = shape;
    std::int32_t* const literals = literal_scratch<std::int32_t>();
    std::size_t literal_count = 0;
    detail::match_finder matches(vectors, m.window);
    for (std::size_t v = 0; v < full_vectors; ++v) {
      const std::size_t distance = matches.find(residuals.data(), v, dim);
      out[v] = static_cast<std::byte>(distance);
      if (distance == 0) {
        std::memcpy(literals + literal_count, residuals.data() + v * dim, dim * sizeof(std::int32_t));
        literal_count += dim;
      }
    }
    if (tail > 0) {
      out[full_vectors] = std::byte{0};
      std::memcpy(literals + literal_count, residuals.data() + full_vectors * dim, tail * sizeof(std::int32_t));
      literal_count += tail;
    }
    const auto coded = Huffman::encode_chunk(m.literals, std::span<const std::int32_t>(literals, literal_count),
                                             out.subspan(vectors));
    if (!coded) return std::nullopt;
    return vectors + *coded;
  }

  static std::size_t decode_with_coded_literals(const model& m, std::span<const std::byte> in,
                                                const std::uint8_t* tokens, std::span<std::uint32_t> residuals,
                                                chunk_vectors shape) {
    const auto [dim, full_vectors, tail, vectors] = shape;
    std::size_t literal_count = tail;
    for (std::size_t v = 0; v < full_vectors; ++v) literal_count += tokens[v] == 0 ? dim : 0;
    std::uint32_t* const literals = literal_scratch<std::uint32_t>();
    const std::size_t coded =
        Huffman::decode_chunk(m.literals, in.subspan(vectors), std::span<std::uint32_t>(literals, literal_count));
    const std::uint32_t* next = literals;
    std::uint32_t* y = residuals.data();
    for (std::size_t v = 0; v < full_vectors; ++v, y += dim) {
      if (tokens[v] != 0) {
        detail::copy_vector(y, y - std::size_t{tokens[v]} * dim, dim);
      } else {
        std::memcpy(y, next, dim * sizeof(std::uint32_t));
        next += dim;
      }
    }
    if (tail > 0) std::memcpy(y, next, tail * sizeof(std::uint32_t));
    return vectors + coded;
  }

  /// A model from make_model or read_model has dim >= 1; one built by hand might not.
  static std::size_t checked_dim(const model& m) {
    if (m.dim == 0) throw argument_error("vector-lz: model.dim is 0; the vector length must be >= 1");
    return m.dim;
  }

  /// Every token within the window and the chunk; a partial last vector's token 0 (vector_token_valid).
  static void check_tokens(const model& m, const std::uint8_t* tokens, const chunk_vectors& shape) {
    // Branch-free scan first (a valid chunk is the common case); the message needs the loop again.
    bool bad = false;
    for (std::size_t v = 0; v < shape.count; ++v) bad |= !vector_token_valid(tokens[v], v, shape, m.window);
    if (!bad) return;
    for (std::size_t v = 0; v < shape.full; ++v) {
      if (!vector_token_valid(tokens[v], v, shape, m.window)) {
        throw format_error("vector-lz: token " + std::to_string(tokens[v]) + " of vector " + std::to_string(v) +
                           " reaches before the chunk's start or past the window of " + std::to_string(m.window));
      }
    }
    throw format_error("vector-lz: token " + std::to_string(tokens[shape.full]) +
                       " of the partial last vector; a partial vector is always a literal (0)");
  }
};

}  // namespace zcoll::encode
