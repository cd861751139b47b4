#pragma once
/// The Huffman code itself: the symbol alphabet, optimal length-limited code lengths (Huffman, or
/// package-merge when the limit binds), the canonical codewords they define and their lookup tables.
/// Shared by the model builder and the model reader.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll::encode::detail {

/// Longest codeword: 12 bits. The one-level decode table then has 4096 entries (16 KiB, half of a Zen 3
/// L1), one refill of 56+ bits serves four codewords, and a code holds up to 4096 symbols. Bits per
/// residual against an unlimited Huffman code (4 Mi residuals, one code): Gaussian sigma 2 / 10 / 20
/// +0.03% / +0.13% / +0.23% (L = 11: +0.13% / +0.31% / +0.55%; L = 15: +0.00% / +0.00% / +0.02%),
/// Laplacian b = 3 +0.32% (L = 11 +0.66%, L = 15 +0.02%); only wide alphabets lose more (sigma 300,
/// 2600 symbols: +4.0%, and L = 11 cannot hold them). L = 15 would need a two-level table and a branch
/// per codeword in the decoder.
inline constexpr unsigned huffman_max_code_length = 12;
inline constexpr std::size_t huffman_table_entries = std::size_t{1} << huffman_max_code_length;

/// Zigzag symbols 0..4094 (residuals -2047..2047) may be coded directly; the escape symbol takes the
/// index just past the last direct one, so a code has at most 4096 = 2^12 symbols and always fits the
/// length limit (a larger cap could not). Quantized embeddings (sigma 2..20 quantization steps) and
/// Lorenzo residuals of smooth fields stay far inside; the histogram of 4096 bins stays small enough to
/// count into four copies in L1 (detail/huffman_statistics.hpp).
inline constexpr std::uint32_t huffman_alphabet_cap = huffman_table_entries - 1;

/// 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...: small magnitudes of either sign get small symbols.
constexpr std::uint32_t zigzag(std::int32_t residual) {
  const auto u = static_cast<std::uint32_t>(residual);
  return (u << 1) ^ (0u - (u >> 31));
}

/// The inverse of zigzag, in unsigned (two's-complement) arithmetic.
constexpr std::uint32_t unzigzag(std::uint32_t symbol) { return (symbol >> 1) ^ (0u - (symbol & 1u)); }

/// An escaped symbol follows its escape codeword as a 5-bit field w - 1, then its w low bits, where w is
/// its bit width (at least 1): 6 to 37 bits.
inline constexpr unsigned huffman_escape_width_bits = 5;
constexpr unsigned huffman_escape_value_bits(std::uint32_t symbol) {
  return symbol == 0 ? 1u : static_cast<unsigned>(std::bit_width(symbol));
}
constexpr unsigned huffman_escape_payload_bits(std::uint32_t symbol) {
  return huffman_escape_width_bits + huffman_escape_value_bits(symbol);
}

/// The low `length` bits of `code` in reverse order: canonical codes are defined most significant bit
/// first, the bit streams are read least significant bit first.
constexpr std::uint32_t reverse_bits(std::uint32_t code, unsigned length) {
  std::uint32_t x = code;
  x = ((x >> 1) & 0x5555'5555u) | ((x & 0x5555'5555u) << 1);
  x = ((x >> 2) & 0x3333'3333u) | ((x & 0x3333'3333u) << 2);
  x = ((x >> 4) & 0x0F0F'0F0Fu) | ((x & 0x0F0F'0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF'00FFu) | ((x & 0x00FF'00FFu) << 8);
  x = (x >> 16) | (x << 16);
  return length == 0 ? 0u : x >> (32 - length);
}

/// `keys` sorted by an LSD radix sort, 8 bits a pass over the bits any key uses: no comparisons, so no
/// mispredicted branches (std::sort of 3000 histogram keys: 55 us; this: under 10 us).
inline void radix_sort(std::vector<std::uint64_t>& keys) {
  std::uint64_t used_bits = 0;
  for (const auto k : keys) used_bits |= k;
  const unsigned passes = (static_cast<unsigned>(std::bit_width(used_bits)) + 7) / 8;
  // Every pass's digit counts from one scan.
  std::vector<std::uint64_t> sorted(keys.size());
  for (unsigned pass = 0; pass < passes; ++pass) {
    const unsigned shift = 8 * pass;
    std::array<std::uint32_t, 256> start{};
    for (const auto k : keys) ++start[(k >> shift) & 0xFF];
    std::uint32_t sum = 0;
    for (auto& s : start) sum += std::exchange(s, sum);
    for (const auto k : keys) sorted[start[(k >> shift) & 0xFF]++] = k;
    keys.swap(sorted);
  }
}

/// The symbols of non-zero weight in increasing weight, ties by symbol, so that the code is the same on
/// every platform. Weight and symbol are packed into one integer key where they fit (histogram counts
/// below 2^51 always do).
inline std::vector<std::uint32_t> symbols_by_weight(std::span<const std::uint64_t> weights) {
  const auto symbol_bits = static_cast<unsigned>(std::bit_width(weights.size()));
  std::uint64_t heaviest = 0;
  for (const auto w : weights) heaviest = std::max(heaviest, w);
  std::vector<std::uint32_t> symbols;
  if (symbol_bits < 64 && static_cast<unsigned>(std::bit_width(heaviest)) <= 64 - symbol_bits) {
    std::vector<std::uint64_t> keys(weights.size());
    std::size_t used = 0;
    for (std::size_t s = 0; s < weights.size(); ++s) {
      keys[used] = (weights[s] << symbol_bits) | s;
      used += weights[s] != 0 ? 1 : 0;
    }
    keys.resize(used);
    radix_sort(keys);
    symbols.resize(used);
    const std::uint64_t symbol_mask = (std::uint64_t{1} << symbol_bits) - 1;
    for (std::size_t i = 0; i < used; ++i) symbols[i] = static_cast<std::uint32_t>(keys[i] & symbol_mask);
    return symbols;
  }
  for (std::size_t s = 0; s < weights.size(); ++s) {
    if (weights[s] != 0) symbols.push_back(static_cast<std::uint32_t>(s));
  }
  std::stable_sort(symbols.begin(), symbols.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return weights[a] < weights[b]; });
  return symbols;
}

/// Huffman's code lengths for leaves of increasing weight (the two-queue method: the merged nodes come
/// out in increasing weight too, so no heap is needed). O(leaves).
inline std::vector<unsigned> huffman_depths(std::span<const std::uint64_t> leaf_weights) {
  const std::size_t m = leaf_weights.size();
  std::vector<std::uint64_t> merged(m - 1);
  std::vector<std::size_t> parent(2 * m - 1);  // nodes: leaves 0..m-1, merged node k is m + k
  std::size_t leaf = 0, front = 0;
  const auto lightest = [&](std::size_t made) {
    if (leaf < m && (front == made || leaf_weights[leaf] <= merged[front])) return leaf++;
    return m + front++;
  };
  const auto weight = [&](std::size_t node) { return node < m ? leaf_weights[node] : merged[node - m]; };
  for (std::size_t k = 0; k + 1 < m; ++k) {
    const std::size_t a = lightest(k), b = lightest(k);
    merged[k] = weight(a) + weight(b);
    parent[a] = parent[b] = m + k;
  }
  // A node's parent was made after it: depths top-down in reverse order of making.
  std::vector<unsigned> depth(2 * m - 1, 0);
  for (std::size_t node = 2 * m - 2; node-- > 0;) depth[node] = depth[parent[node]] + 1;
  depth.resize(m);
  return depth;
}

/// Package-merge (Larmore and Hirschberg 1990) for leaves of increasing weight: the coin collector's
/// lists, deepest level first. Level 0 holds the leaves; level j the leaves merged with the pairs
/// (packages) of level j-1, a leaf before a package of equal weight. Only whether each item is a leaf
/// is kept per level. (A branch-free merge, or one from both ends, measured no faster: 100 us for 3000
/// symbols either way, the cost of 12 levels of 6000 items.)
inline std::vector<unsigned> package_merge_depths(std::span<const std::uint64_t> leaf_weights, unsigned max_length) {
  const std::size_t m = leaf_weights.size(), width = 2 * m;
  constexpr std::uint64_t sentinel = ~std::uint64_t{0};  // ends both lists, so the merge has one bound
  std::vector<std::uint8_t> is_leaf(std::size_t{max_length} * width, 0);
  std::vector<std::uint64_t> leaves(leaf_weights.begin(), leaf_weights.end()), packages(m + 1);
  leaves.push_back(sentinel);
  std::vector<std::uint64_t> items(leaf_weights.begin(), leaf_weights.end());
  for (std::size_t i = 0; i < m; ++i) is_leaf[i] = 1;
  for (unsigned level = 1; level < max_length; ++level) {
    const std::size_t package_count = items.size() / 2;
    for (std::size_t p = 0; p < package_count; ++p) packages[p] = items[2 * p] + items[2 * p + 1];
    packages[package_count] = sentinel;
    std::uint8_t* ZCOLL_RESTRICT leaf = is_leaf.data() + level * width;
    const std::size_t count = m + package_count;
    items.resize(count);
    for (std::size_t k = 0, l = 0, p = 0; k < count; ++k) {
      const bool take_leaf = leaves[l] <= packages[p];
      items[k] = take_leaf ? leaves[l++] : packages[p++];
      leaf[k] = take_leaf ? 1 : 0;
    }
  }
  // The 2m - 2 cheapest items of the top list; each leaf among the items chosen at a level adds one bit
  // to that leaf's length, and each package chosen asks for its two items one level deeper. Leaves keep
  // their weight order within every list, so the chosen leaves are always the cheapest ones.
  std::vector<unsigned> depth(m, 0);
  std::size_t need = 2 * m - 2;
  for (unsigned level = max_length; level-- > 0 && need > 0;) {
    const std::uint8_t* leaf = is_leaf.data() + level * width;
    std::size_t chosen_leaves = 0;
    for (std::size_t i = 0; i < need; ++i) chosen_leaves += leaf[i];
    for (std::size_t i = 0; i < chosen_leaves; ++i) ++depth[i];
    need = 2 * (need - chosen_leaves);
  }
  return depth;
}

/// Optimal code lengths of at most `max_length` bits: the minimum of sum(weight * length) over all
/// prefix codes within the limit. Huffman's algorithm first, which is optimal when its longest code
/// fits (quantized residuals with up to a few hundred symbols: almost always); package-merge otherwise,
/// which is optimal under the limit where Huffman followed by a depth-fixing heuristic (Huff0's) is
/// only close to it. O(symbols * max_length), once per stream. Symbols of weight 0 get length 0 (no
/// codeword); a single symbol gets a 1-bit code. The code is complete (Kraft sum 1) whenever two or
/// more symbols have a weight.
inline void limited_code_lengths(std::span<const std::uint64_t> weights, unsigned max_length,
                                 std::span<std::uint8_t> lengths) {
  std::fill(lengths.begin(), lengths.end(), std::uint8_t{0});
  const std::vector<std::uint32_t> leaves = symbols_by_weight(weights);
  const std::size_t m = leaves.size();
  if (m == 0) return;
  if (m == 1) {
    lengths[leaves[0]] = 1;
    return;
  }
  if (max_length >= 64 || m > (std::size_t{1} << max_length)) {
    throw argument_error("limited_code_lengths: " + std::to_string(m) + " symbols do not fit codewords of at most " +
                         std::to_string(max_length) + " bits");
  }
  std::vector<std::uint64_t> leaf_weights(m);
  for (std::size_t i = 0; i < m; ++i) leaf_weights[i] = weights[leaves[i]];
  std::vector<unsigned> depth = huffman_depths(leaf_weights);
  if (*std::max_element(depth.begin(), depth.end()) > max_length) depth = package_merge_depths(leaf_weights, max_length);
  for (std::size_t i = 0; i < m; ++i) lengths[leaves[i]] = static_cast<std::uint8_t>(depth[i]);
}

/// Canonical codewords of the given lengths (RFC 1951 §3.2.2 order: shorter codes first, then by
/// symbol), returned bit-reversed for least-significant-bit-first streams. Lengths must satisfy Kraft.
inline std::vector<std::uint32_t> canonical_codes_reversed(std::span<const std::uint8_t> lengths) {
  std::array<std::uint32_t, 33> count_of_length{};
  for (const auto l : lengths) ++count_of_length[l];
  count_of_length[0] = 0;
  std::array<std::uint32_t, 33> next_code{};
  for (unsigned l = 1; l < next_code.size(); ++l) next_code[l] = (next_code[l - 1] + count_of_length[l - 1]) << 1;
  std::vector<std::uint32_t> codes(lengths.size(), 0);
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] != 0) codes[s] = reverse_bits(next_code[lengths[s]]++, lengths[s]);
  }
  return codes;
}

/// Kraft sum of the lengths, scaled by 2^max_length: 2^max_length for a complete prefix code.
inline std::uint64_t scaled_kraft_sum(std::span<const std::uint8_t> lengths, unsigned max_length) {
  std::uint64_t sum = 0;
  for (const auto l : lengths) {
    if (l != 0) sum += std::uint64_t{1} << (max_length - l);
  }
  return sum;
}

/// The lookup forms of a complete code over the direct symbols 0..n-1 and the escape symbol n.
struct huffman_tables {
  /// n: the escape's index, and the number of symbols that may have a codeword of their own.
  std::uint32_t escape_symbol = 0;
  /// (reversed codeword << 5) | length of the escape.
  std::uint32_t escape_entry = 0;
  /// Per symbol 0..n: (reversed codeword << 5) | length, or 0 where the symbol is escaped (no codeword
  /// of its own, and the escape's own slot), so the encoder's one test is `entry == 0`.
  std::vector<std::uint32_t> encode;
  /// Per value of the next 12 stream bits: residual * 64 + codeword length. The length in the low 6 bits
  /// lets the decoder shift by the entry itself (x86 shifts use the count's low 6 bits). Direct
  /// residuals lie in -2047..2047, so residual -2048 (entries below -2047 * 64) marks the escape.
  std::vector<std::int32_t> decode;
};

inline constexpr std::int32_t huffman_decode_escape_below = -2047 * 64;
inline constexpr unsigned huffman_decode_length_bits = 6;

/// Fills the decode table (huffman_table_entries entries) of a complete code whose `symbols` lengths
/// (n + 1: the direct symbols, then the escape) satisfy Kraft exactly; host and CUDA decoders alike. The
/// codewords are canonical_codes_reversed's, computed in place.
ZCOLL_HOST_DEVICE inline void fill_huffman_decode_table(const std::uint8_t* lengths, std::uint32_t symbols,
                                                        std::int32_t* decode) {
  std::uint32_t next_code[huffman_max_code_length + 2] = {};
  std::uint32_t count_of_length[huffman_max_code_length + 1] = {};
  for (std::uint32_t s = 0; s < symbols; ++s) ++count_of_length[lengths[s]];
  count_of_length[0] = 0;
  for (unsigned l = 1; l <= huffman_max_code_length; ++l) next_code[l] = (next_code[l - 1] + count_of_length[l - 1]) << 1;
  for (std::uint32_t s = 0; s < symbols; ++s) {
    const unsigned length = lengths[s];
    if (length == 0) continue;
    const std::uint32_t code = reverse_bits(next_code[length]++, length);
    const std::int32_t residual = s + 1 == symbols ? -2048 : static_cast<std::int32_t>(unzigzag(s));
    const std::int32_t decoded = residual * 64 + static_cast<std::int32_t>(length);
    for (std::uint32_t i = code; i < huffman_table_entries; i += std::uint32_t{1} << length) decode[i] = decoded;
  }
}

/// The tables of a complete code: `lengths` holds the n + 1 lengths, the escape's last, each at most
/// huffman_max_code_length, with Kraft sum exactly 1 (the model reader checks both).
inline huffman_tables make_huffman_tables(std::span<const std::uint8_t> lengths) {
  huffman_tables t;
  t.escape_symbol = static_cast<std::uint32_t>(lengths.size() - 1);
  const std::vector<std::uint32_t> codes = canonical_codes_reversed(lengths);
  t.encode.assign(lengths.size(), 0);
  t.decode.assign(huffman_table_entries, 0);
  for (std::uint32_t s = 0; s < lengths.size(); ++s) {
    const unsigned length = lengths[s];
    if (length == 0) continue;
    const std::uint32_t entry = (codes[s] << 5) | length;
    if (s == t.escape_symbol) {
      t.escape_entry = entry;
    } else {
      t.encode[s] = entry;
    }
  }
  fill_huffman_decode_table(lengths.data(), static_cast<std::uint32_t>(lengths.size()), t.decode.data());
  return t;
}

}  // namespace zcoll::encode::detail
