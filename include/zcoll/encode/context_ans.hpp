#pragma once
/// Context-modelled rANS: the residuals' tokens coded with asymmetric numeral systems (Duda 2013, the
/// range variant) under one of nine frequency tables, chosen by the magnitudes of the two residuals
/// before each (encode/detail/context_ans_alphabet.hpp). Unlike a Huffman code it spends less than a bit on
/// a likely residual, and the context captures the runs and clusters of zeros that a coarse bound leaves
/// behind an interpolation predictor: the coder of HighRatio (codec/presets.hpp).
///
///     Pipeline<Linear, predict::Interpolation<2>, ContextAns, backend::Zstd> codec(
///         {.error_bound = zcoll::relative(1e-2)});
///
/// Speed on one core of the 2-core Xeon development VM (chunks of 65536 residuals of geometric
/// magnitudes, 0.6 to 8 bits a value, -O3 -march=native), with the four segments of the first format:
/// statistics.add 0.8-0.9 ns a residual, encode_chunk 2.5-3.2 ns, decode_chunk 2.6-2.8 ns; a Huffman code
/// decodes about three times as fast, at a bit a value at least. The 32 segments of this format let
/// AVX-512 run them as vector lanes (encode/detail/context_ans_avx512.hpp): HighRatio decompresses
/// 1.4-1.7x as fast with it on a Zen 5 core and compresses a few per cent faster (docs/performance.md,
/// "Eighth round", which has HighRatio's speed and ratio with each form of the coder). Builds with AVX2
/// and without AVX-512 run them as the lanes of four vectors (encode/detail/context_ans_avx2.hpp), and
/// the symbol pass eight residuals a step (docs/performance.md, "Tenth round").
///
/// A residual r has the zigzag symbol v (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...); v < 16 is its own
/// token, a larger v of bit width w + 1 has token 16 + 4 (w - 4) + (the two bits of v below its leading
/// one) and is followed by its w - 2 lowest bits, raw. The stream's model (the pipeline's parameter
/// section) holds per context the token frequencies normalized to 2^12:
///
/// | bytes | field                                                                                     |
/// |-------|-------------------------------------------------------------------------------------------|
/// | 1     | tokens n (1..128): tokens 0..n-1 may occur                                                |
/// | 4     | u32 mask: bit c set when context c has a table: c = 9 x the residual's level class (0..2, |
/// |       | given by the caller, 0 when it gives none) + 3 x the class of the previous residual + the |
/// |       | class of the one before it (classes: 0 for 0, 1 for +-1, 2 for larger; 0 before a segment)|
/// | ...   | per context with a table, the frequencies of tokens 0..n-1: f in 1..127 is one byte f,    |
/// |       | f in 128..4096 the bytes 0x80 | (f & 0x7F), f >> 7; r zeros (1..256) the bytes 0, r - 1.  |
/// |       | Each table sums to 4096.                                                                  |
///
/// A chunk of N residuals is 32 segments of L consecutive residuals, L = ceil(N / 32) rounded up to an
/// odd multiple of 32 (the last segments shorter or empty), each with its own state and context (0
/// before its first residual), coded round by round: residual k of segment 0, 1, ..., 31, then residual
/// k + 1 of each (the "coding order"):
///
/// | bytes | field                                                                                     |
/// |-------|-------------------------------------------------------------------------------------------|
/// | 4     | u32 E: bytes of raw bits                                                                  |
/// | 4     | u32 W: 16-bit words of the coder                                                          |
/// | E     | the raw bits of every residual with v >= 16, in the coding order, least significant bit   |
/// |       | of each byte first, zero-padded                                                           |
/// | 128   | u32 states x0..x31 in [2^15, 2^31), one a segment                                         |
/// | 2 W   | the words: decoding a residual of segment s takes slot t = x_s & 4095 of its context's    |
/// |       | table, the token whose cumulative range [c, c + f) holds t, sets x_s = f (x_s >> 12) +    |
/// |       | t - c and, when x_s is below 2^15, x_s = x_s << 16 | the next word                        |
///
/// Every state ends at 2^15 and every word and raw bit is read, or the chunk is malformed.
///
/// Level classes: a chunk predictor whose residuals differ by kind (an interpolation walk's levels: the
/// finest level's residuals are nearly all 0 at a coarse bound, the coarser levels' are not) gives each
/// residual its class, 0, 1 or 2, to the statistics, the encoder and the decoder alike; the stream does
/// not hold them (the decoder's predictor knows them). Where the caller gives none, every residual is of
/// class 0 and nine contexts are used.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/encode/detail/context_ans_chunk.hpp"
#include "zcoll/encode/detail/context_ans_model.hpp"

namespace zcoll::encode {

/// Context-modelled rANS coding of integer residuals, a chunk encoder (encode/concepts.hpp).
///
///     ContextAns::statistics stats;
///     stats.add(residuals, levels);                          // every chunk's residuals (levels: optional)
///     const auto model = ContextAns::make_model(stats);
///     auto size = ContextAns::encode_chunk(model, residuals, out, levels);   // nullopt: does not fit
///     ContextAns::decode_chunk(model, in, decoded, levels);
struct ContextAns {
  /// 5 since the coder's 32 segments; 4 was the coder of four, whose streams (zcoll before 2026-11-29)
  /// are refused as another codec's.
  static constexpr std::uint8_t id = 5;
  static constexpr const char* name = "context-ans";
  static constexpr bool needs_statistics = true;
  static constexpr std::size_t max_model_bytes = detail::context_ans_max_model_bytes;
  /// Chunks of up to the format's 2^20 values: the chunk's sections have 32-bit sizes, and a longer chunk
  /// lets an interpolation predictor walk more levels before a chunk's edge (docs/performance.md).
  static constexpr std::uint32_t max_chunk_values = zcoll::max_chunk_values;

  using statistics = detail::context_ans_statistics;
  using model = detail::context_ans_model;

  /// The tables of the statistics; neither settings nor layout matter to it. A token or context the
  /// statistics never saw has no frequency, and a chunk that has one is not coded (stored verbatim).
  static model make_model(const statistics& stats, const no_settings& /*settings*/ = {},
                          const chunk_layout& /*layout*/ = {}) {
    return detail::make_context_ans_model(stats);
  }

  static std::size_t model_size_bytes(const model& m) { return m.serialized.size(); }
  static void write_model(const model& m, byte_writer& out) { out.write_bytes(m.serialized); }
  /// Reads and validates a model (format_error on anything malformed).
  static model read_model(byte_reader& in) { return detail::read_context_ans_model(in); }

  /// The encoder takes each residual's level class (codec/pipeline.hpp passes a chunk predictor's).
  static constexpr bool uses_levels = true;
  static constexpr std::uint32_t level_classes = detail::ans_level_classes;

  /// Writes the chunk's residuals into `out`; the size, or nullopt when it does not fit. Writes nothing
  /// past `out` (bytes of `out` past the returned size may have been overwritten). `levels`: one class
  /// (0..2) a residual, or empty for all 0 (argument_error otherwise: detail::check_ans_levels).
  static std::optional<std::size_t> encode_chunk(const model& m, std::span<const std::int32_t> residuals,
                                                 std::span<std::byte> out, detail::ans_level_span levels = {}) {
    detail::check_ans_levels(levels, residuals.size());
    return detail::context_ans_encode_chunk(m, residuals, levels, out);
  }

  /// Fills `residuals` (as two's-complement words) from the front of `in`, given the level classes the
  /// encoder was given; returns the bytes read.
  static std::size_t decode_chunk(const model& m, std::span<const std::byte> in, std::span<std::uint32_t> residuals,
                                  detail::ans_level_span levels = {}) {
    detail::check_ans_levels(levels, residuals.size());
    return detail::context_ans_decode_chunk(m, in, levels, residuals);
  }

};

static_assert(chunk_encoder<ContextAns>);

}  // namespace zcoll::encode
