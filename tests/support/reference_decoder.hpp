#pragma once
/// An independent decoder of zcoll streams, written from the format documentation alone
/// (core/stream_header.hpp, codec/pipeline.hpp, encode/detail/bitshuffle_block.hpp, quantize/linear.hpp):
/// it shares no code with the library's decoder beyond the value types. Tests compare its output with the
/// library's bit for bit, and use its census to prove that a stream holds the chunk kinds and exception
/// entries a test needs.

#include <catch2/catch.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "zcoll/core/value_type.hpp"

namespace zcoll_test {

struct stream_census {
  std::size_t coded_chunks = 0;
  std::size_t verbatim_chunks = 0;
  std::size_t exception_chunks = 0;
  std::size_t fill_runs = 0;
  std::size_t fill_run_blocks = 0;
  std::size_t masked_blocks = 0;
  std::size_t outliers = 0;
  std::size_t fill_lanes = 0;
  std::size_t zero_plane_blocks = 0;
  /// Blocks inside fill runs that were not encoded as one byte (must be 0 with the Lorenzo predictor).
  std::size_t fill_run_blocks_over_one_byte = 0;
};

template <class T>
struct reference_result {
  std::vector<T> values;
  stream_census census;
};

enum class reference_predictor { none, lorenzo };
enum class reference_encoder { raw, bitshuffle };

namespace detail {

template <class V>
V load(std::span<const std::byte> s, std::size_t at) {
  REQUIRE(at + sizeof(V) <= s.size());
  V v;
  std::memcpy(&v, s.data() + at, sizeof(V));
  return v;
}

}  // namespace detail

/// Decodes a stream written by Pipeline<Linear, P, E> (or Identity, whose chunks are all verbatim).
template <zcoll::floating_value T>
reference_result<T> reference_decode(std::span<const std::byte> s, reference_predictor predictor,
                                     reference_encoder encoder) {
  using detail::load;
  REQUIRE(s.size() >= 48);
  REQUIRE(load<std::uint32_t>(s, 0) == 0x4C4F'435Au);  // "ZCOL"
  REQUIRE(load<std::uint8_t>(s, 4) == 2);
  REQUIRE(load<std::uint8_t>(s, 5) == 0x80);  // a pipeline: quantizer, predictor, encoder ids follow
  REQUIRE(load<std::uint8_t>(s, 6) == (sizeof(T) == 4 ? 1 : 2));
  const bool has_fill = load<std::uint8_t>(s, 7) == 1;
  REQUIRE(load<std::uint8_t>(s, 11) == 0);  // no lossless back-end
  const auto count = static_cast<std::size_t>(load<std::uint64_t>(s, 16));
  const double eb = load<double>(s, 24);
  const auto fill_bits = load<std::uint64_t>(s, 32);
  const std::uint32_t chunk_values = load<std::uint32_t>(s, 40);
  const std::uint32_t chunks = load<std::uint32_t>(s, 44);
  REQUIRE(chunks == (count + chunk_values - 1) / chunk_values);
  const T fill = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(fill_bits));
  const T step = static_cast<T>(2.0 * eb);  // quantize/linear.hpp: x' = q * 2eb, in T

  reference_result<T> r;
  r.values.assign(count, T(0));
  std::size_t at = 48 + 4 * std::size_t{chunks};
  for (std::uint32_t c = 0; c < chunks; ++c) {
    const std::size_t size = load<std::uint32_t>(s, 48 + 4 * std::size_t{c});
    REQUIRE(at + size <= s.size());
    const std::span<const std::byte> chunk = s.subspan(at, size);
    at += size;
    const std::size_t first_value = std::size_t{c} * chunk_values;
    const std::size_t n = std::min<std::size_t>(chunk_values, count - first_value);
    T* out = r.values.data() + first_value;
    const auto kind = load<std::uint8_t>(chunk, 0);
    if (kind == 1) {
      ++r.census.verbatim_chunks;
      REQUIRE(size == 1 + n * sizeof(T));
      std::memcpy(out, chunk.data() + 1, n * sizeof(T));
      continue;
    }
    REQUIRE((kind == 0 || kind == 2));
    ++(kind == 0 ? r.census.coded_chunks : r.census.exception_chunks);
    const std::size_t blocks = (n + 31) / 32;
    std::vector<std::size_t> block_bytes(blocks);
    std::size_t pos = 1;
    std::uint32_t previous = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
      std::uint32_t residual[32] = {};
      if (encoder == reference_encoder::raw) {
        for (std::size_t j = 0; j < 32; ++j) residual[j] = load<std::uint32_t>(chunk, pos + 4 * j);
        block_bytes[b] = 128;
      } else {
        const unsigned planes = load<std::uint8_t>(chunk, pos);
        REQUIRE(planes <= 32);
        block_bytes[b] = planes == 0 ? 1 : 5 + 4 * std::size_t{planes};
        if (planes == 0) ++r.census.zero_plane_blocks;
        if (planes > 0) {
          const auto sign = load<std::uint32_t>(chunk, pos + 1);
          for (unsigned p = 0; p < planes; ++p) {
            const auto plane = load<std::uint32_t>(chunk, pos + 5 + 4 * std::size_t{p});
            for (unsigned j = 0; j < 32; ++j) residual[j] |= ((plane >> j) & 1u) << p;
          }
          for (unsigned j = 0; j < 32; ++j) {
            if ((sign >> j) & 1u) residual[j] = 0u - residual[j];
          }
        }
      }
      pos += block_bytes[b];
      for (std::size_t j = 0; j < 32; ++j) {
        std::uint32_t code = residual[j];
        if (predictor == reference_predictor::lorenzo) code = previous += residual[j];  // prefix sum mod 2^32
        if (32 * b + j < n) out[32 * b + j] = static_cast<T>(static_cast<std::int32_t>(code)) * step;
      }
    }
    if (kind == 2) {
      const auto entries = load<std::uint16_t>(chunk, pos);
      pos += 2;
      REQUIRE(entries >= 1);
      std::size_t next_block = 0;
      for (std::size_t e = 0; e < entries; ++e) {
        const std::size_t first = load<std::uint16_t>(chunk, pos);
        const std::size_t blocks_in_entry = load<std::uint16_t>(chunk, pos + 2);
        const auto type = load<std::uint8_t>(chunk, pos + 4);
        pos += 5;
        REQUIRE(blocks_in_entry >= 1);
        REQUIRE(first >= next_block);
        REQUIRE(first + blocks_in_entry <= blocks);
        next_block = first + blocks_in_entry;
        const std::size_t begin = 32 * first, end = std::min(n, 32 * (first + blocks_in_entry));
        if (type == 0) {
          REQUIRE(has_fill);
          ++r.census.fill_runs;
          r.census.fill_run_blocks += blocks_in_entry;
          for (std::size_t b = first; b < first + blocks_in_entry; ++b) {
            if (block_bytes[b] != 1) ++r.census.fill_run_blocks_over_one_byte;
          }
          for (std::size_t i = begin; i < end; ++i) out[i] = fill;
          continue;
        }
        REQUIRE(type == 1);
        REQUIRE(blocks_in_entry == 1);
        ++r.census.masked_blocks;
        const auto fill_mask = load<std::uint32_t>(chunk, pos);
        const auto outlier_mask = load<std::uint32_t>(chunk, pos + 4);
        pos += 8;
        REQUIRE((fill_mask & outlier_mask) == 0);
        REQUIRE((fill_mask | outlier_mask) != 0);
        for (unsigned j = 0; j < 32; ++j) {
          if ((fill_mask >> j) & 1u) {
            REQUIRE(has_fill);
            REQUIRE(begin + j < end);
            out[begin + j] = fill;
            ++r.census.fill_lanes;
          }
        }
        for (unsigned j = 0; j < 32; ++j) {
          if ((outlier_mask >> j) & 1u) {
            REQUIRE(begin + j < end);
            out[begin + j] = load<T>(chunk, pos);
            pos += sizeof(T);
            ++r.census.outliers;
          }
        }
      }
    }
    REQUIRE(pos == size);
  }
  REQUIRE(at == s.size());
  return r;
}

}  // namespace zcoll_test
