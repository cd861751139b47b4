#pragma once
/// DCT-MP (Algorithm 2, §2.2): for each row of `dim` values (one sample's activations), keep the
/// K = ceil(keep_fraction · dim) entries of largest |x|; the kept values and the mask travel forward, and
/// the backward pass applies the same mask to the gradient (mask.hpp: apply_mask, gather_masked).
///
/// Exactly K entries per row, so the values of row r sit at kept_values[r·K, (r+1)·K) and a receiver can
/// pair them with the mask without counting:
/// - ties at the K-th largest |x| are broken by the lower column, so the mask is deterministic;
/// - NaN ranks above +Inf (all NaNs alike) and counts toward K: a row with NaNs sends them first, so a
///   broken activation is seen downstream; ±Inf ranks next;
/// - zeros are kept only when a row has fewer than K non-zero entries (the count per row is fixed).
///
///     const std::size_t rows = x.size() / dim, k = zcoll::sparsify::row_keep_count(dim, 0.05);
///     std::vector<std::byte> mask(zcoll::sparsify::mask_size_bytes(x.size()));
///     std::vector<float> values(rows * k);
///     zcoll::sparsify::row_topk(zcoll::exec::Host{}, std::span<const float>(x), dim, 0.05, mask, values);  // forward
///     zcoll::sparsify::gather_masked(zcoll::exec::Host{}, std::span<const float>(grad), mask, grad_values); // backward

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/sparsify/magnitude_key.hpp"
#include "zcoll/sparsify/mask.hpp"
#include "zcoll/sparsify/topk_threshold.hpp"

namespace zcoll::sparsify {

/// K per row: ceil(keep_fraction · dim), at least 1 for dim > 0.
inline std::size_t row_keep_count(std::size_t dim, double keep_fraction) { return topk_count(dim, keep_fraction); }

/// The key a row ranks x by: its magnitude key, every NaN at one key just above +Inf.
template <floating_value T>
constexpr bits_of<T> row_rank_key(T x) {
  const bits_of<T> key = magnitude_key(x);
  return key > infinity_key<T> ? static_cast<bits_of<T>>(infinity_key<T> + 1) : key;
}

namespace detail {

/// Rows per work item: 8 rows start on a mask byte whatever `dim` is, so workers never share a byte.
inline constexpr std::size_t rows_per_group = 8;

inline void check_row_topk_arguments(const char* who, std::size_t count, std::size_t dim, std::size_t mask_bytes,
                                     std::size_t values, std::size_t keep) {
  if (dim == 0) throw argument_error(std::string(who) + ": dim 0 must be > 0 (values per row)");
  if (dim > std::size_t{0x7FFFFFFF}) {
    throw argument_error(std::string(who) + ": dim " + std::to_string(dim) + " must be < 2^31 (values per row)");
  }
  if (count % dim != 0) {
    throw argument_error(std::string(who) + ": " + std::to_string(count) + " values are not a whole number of rows of dim " +
                         std::to_string(dim));
  }
  if (mask_bytes != mask_size_bytes(count)) {
    throw argument_error(std::string(who) + ": mask has " + std::to_string(mask_bytes) + " bytes, mask_size_bytes(" +
                         std::to_string(count) + ") = " + std::to_string(mask_size_bytes(count)) + " are needed");
  }
  if (values < count / dim * keep) {
    throw argument_error(std::string(who) + ": kept_values holds " + std::to_string(values) + ", " +
                         std::to_string(count / dim) + " rows x " + std::to_string(keep) + " are needed");
  }
}

/// Keys of keys[0, n) for which pred(key) holds. Blocks of 32 with a fixed trip count: GCC vectorizes
/// those at -O2, where its cheap cost model leaves a loop of unknown length scalar.
template <class Key, class Pred>
Key count_keys(const Key* keys, std::size_t n, Pred pred) {
  constexpr std::size_t block = 32;
  Key count = 0;
  std::size_t j = 0;
  for (; j + block <= n; j += block) {
    Key in_block = 0;
    for (std::size_t i = 0; i < block; ++i) in_block += pred(keys[j + i]) ? Key{1} : Key{0};
    count += in_block;
  }
  for (; j < n; ++j) count += pred(keys[j]) ? Key{1} : Key{0};
  return count;
}

/// Which keys of a row are kept: those above `tau`, then the first `ties` (by column) equal to it.
template <class Key>
struct row_cut {
  Key tau = 0;
  std::size_t ties = 0;
};

/// The cut that keeps the k largest of keys[0, n), ties by column. The k-th largest key is built bit by
/// bit from the top: a bit is set when at least k keys are >= the threshold with it set. Each step is a
/// branch-free count over the row, which sits in L1 and vectorizes (counts are Key-wide, like the
/// compares; n < 2^31 is checked by the callers). As soon as exactly k keys are >= a candidate, those are
/// the selection and the search stops: on data without ties that happens after about log2(n) bits.
template <class Key>
row_cut<Key> find_row_cut(const Key* keys, std::size_t n, std::size_t k, unsigned width) {
  Key t = 0;
  for (unsigned bit = width; bit-- > 0;) {
    const auto candidate = static_cast<Key>(t | (Key{1} << bit));
    const Key at_least = count_keys(keys, n, [candidate](Key key) { return key >= candidate; });
    if (at_least >= k) {
      t = candidate;
      if (at_least == k) return {static_cast<Key>(candidate - 1), 0};
    }
  }
  // t is the k-th largest key: keep what is above it and fill the budget with the first ties.
  const Key above = count_keys(keys, n, [t](Key key) { return key > t; });
  return {t, k - static_cast<std::size_t>(above)};
}

/// Selects the top `keep` of one row: sets its mask bits (element `first` is bit first mod 8 of byte
/// first / 8), writes its kept values in column order and, when wanted, its residual.
template <floating_value T, bool WriteResidual>
void select_row(const T* x, std::size_t dim, std::size_t keep, std::size_t first, std::byte* mask, T* values,
                T* residual, std::vector<bits_of<T>>& keys) {
  using key = bits_of<T>;
  std::size_t j = 0;
  for (; j + 32 <= dim; j += 32) {
    for (std::size_t i = 0; i < 32; ++i) keys[j + i] = row_rank_key(x[j + i]);
  }
  for (; j < dim; ++j) keys[j] = row_rank_key(x[j]);
  const row_cut<key> cut = find_row_cut(keys.data(), dim, keep, magnitude_key_width<T>);
  std::size_t ties = cut.ties;
  // Per block of 32 columns: the kept lanes as a word (keys above tau, then the first ties), from
  // compares that vectorize; then only the kept lanes are visited.
  for (j = 0; j < dim; j += 32) {
    const std::size_t width = std::min<std::size_t>(32, dim - j);
    alignas(64) std::uint32_t above[32], equal[32];
    for (std::size_t i = 0; i < 32; ++i) {  // keys is padded to a multiple of 32
      above[i] = keys[j + i] > cut.tau ? ~0u : 0u;
      equal[i] = keys[j + i] == cut.tau ? ~0u : 0u;
    }
    const std::uint32_t valid = width == 32 ? ~0u : (1u << width) - 1;
    std::uint32_t kept = lanes_nonzero(above) & valid;
    for (std::uint32_t tie = lanes_nonzero(equal) & valid; tie != 0 && ties > 0; tie &= tie - 1, --ties) {
      kept |= tie & (0u - tie);  // the lowest column left among the ties
    }
    for (std::uint32_t w = kept; w != 0; w &= w - 1) {
      const std::size_t e = first + j + static_cast<std::size_t>(zcoll::countr_zero(w));
      mask[e / 8] |= static_cast<std::byte>(1u << (e % 8));
      *values++ = x[e - first];
    }
    if constexpr (WriteResidual) {
      if (width == 32) {
        select_word(x + j, ~kept, residual + j);
      } else {
        for (std::size_t i = 0; i < width; ++i) residual[j + i] = (kept >> i) & 1u ? T(0) : x[j + i];
      }
    }
  }
}

template <floating_value T, bool WriteResidual>
std::size_t row_topk_pass(const exec::Host& exec, std::span<const T> x, std::size_t dim, double keep_fraction,
                          std::span<std::byte> mask, std::span<T> kept_values, std::span<T> residual) {
  const std::size_t keep = row_keep_count(dim == 0 ? 1 : dim, keep_fraction);
  check_row_topk_arguments("row_topk", x.size(), dim, mask.size(), kept_values.size(), keep);
  if constexpr (WriteResidual) {
    if (residual.size() != x.size()) {
      throw argument_error("row_topk_with_residual: residual holds " + std::to_string(residual.size()) +
                           " values, x has " + std::to_string(x.size()));
    }
  }
  const std::size_t rows = x.size() / dim;
  const std::size_t groups = rows / rows_per_group + (rows % rows_per_group != 0);
  exec::for_each_range(exec, groups, [&](std::size_t, std::size_t first_group, std::size_t last_group) {
    const std::size_t first_row = first_group * rows_per_group;
    const std::size_t last_row = std::min(rows, last_group * rows_per_group);
    // This worker's mask bytes: its rows start at a multiple of 8 elements.
    const std::size_t first_byte = first_row * dim / 8;
    const std::size_t last_byte = last_row == rows ? mask.size() : last_row * dim / 8;
    std::memset(mask.data() + first_byte, 0, last_byte - first_byte);
    std::vector<bits_of<T>> keys(dim + 31, 0);  // padded for select_row's last block
    for (std::size_t r = first_row; r < last_row; ++r) {
      select_row<T, WriteResidual>(x.data() + r * dim, dim, keep, r * dim, mask.data(), kept_values.data() + r * keep,
                                   WriteResidual ? residual.data() + r * dim : nullptr, keys);
    }
  });
  return rows * keep;
}

}  // namespace detail

/// DCT-MP's forward selection: sets `mask` (mask_size_bytes(x.size()) bytes) to the top
/// row_keep_count(dim, keep_fraction) entries of each row of `dim` values and writes their values, row by
/// row in column order, to `kept_values` (at least rows · K); returns rows · K. x.size() must be a
/// multiple of dim. The result does not depend on exec.threads.
template <floating_value T>
std::size_t row_topk(const exec::Host& exec, std::span<const T> x, std::size_t dim, double keep_fraction,
                     std::span<std::byte> mask, std::span<T> kept_values) {
  return detail::row_topk_pass<T, false>(exec, x, dim, keep_fraction, mask, kept_values, {});
}

/// row_topk that also writes, in the same pass, residual[i] = x[i] - transmitted[i]: x[i] where the entry
/// is dropped, +0 where it is kept (for error feedback; residual.size() == x.size()).
template <floating_value T>
std::size_t row_topk_with_residual(const exec::Host& exec, std::span<const T> x, std::size_t dim, double keep_fraction,
                                   std::span<std::byte> mask, std::span<T> kept_values, std::span<T> residual) {
  return detail::row_topk_pass<T, true>(exec, x, dim, keep_fraction, mask, kept_values, residual);
}

}  // namespace zcoll::sparsify
