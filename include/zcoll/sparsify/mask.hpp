#pragma once
/// Packed element masks, and applying one to a tensor: DCT-MP's backward pass (Algorithm 2, lines 12-14)
/// sends X_grad ⊙ M with the mask M the forward pass chose.
///
/// Layout: bit (i mod 8) of byte i / 8 is element i (least significant bit first), mask_size_bytes(count)
/// bytes, bits past `count` zero. It is the layout of the TopK stream's bitmap form, so a mask can be
/// sent as it is; on a little-endian machine it is also the layout of 32- or 64-bit words.
///
///     std::vector<std::byte> mask(zcoll::sparsify::mask_size_bytes(grad.size()));
///     // ... filled by row_topk in the forward pass ...
///     zcoll::sparsify::apply_mask(zcoll::exec::Host{}, grad, mask, masked_grad);      // dense, zeros elsewhere
///     auto n = zcoll::sparsify::gather_masked(zcoll::exec::Host{}, grad, mask, values); // packed

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::sparsify {

/// Bytes of a mask over `count` elements.
constexpr std::size_t mask_size_bytes(std::size_t count) { return count / 8 + (count % 8 != 0 ? 1 : 0); }

/// Whether element `i` is set.
inline bool mask_test(std::span<const std::byte> mask, std::size_t i) {
  return ((std::to_integer<unsigned>(mask[i / 8]) >> (i % 8)) & 1u) != 0;
}

namespace detail {

/// Elements per mask word: the work unit of the mask loops (32 bits, 4 bytes).
inline constexpr std::size_t mask_word_values = 32;

/// Mask bits of elements [32 w, 32 w + 32) ∩ [0, count): whole words are one 4-byte load, the last
/// partial word only reads the bytes the mask has.
ZCOLL_HOST_DEVICE inline std::uint32_t load_mask_word(const std::byte* mask, std::size_t word, std::size_t count) {
  const std::size_t first_byte = word * 4;
  const std::size_t bytes = std::min<std::size_t>(4, mask_size_bytes(count) - first_byte);
  std::uint32_t w = 0;
  std::memcpy(&w, mask + first_byte, bytes);
  return w;
}

/// Stores the bits of elements [32 w, min(32 w + 32, count)) of a mask.
ZCOLL_HOST_DEVICE inline void store_mask_word(std::byte* mask, std::size_t word, std::size_t count, std::uint32_t w) {
  const std::size_t first_byte = word * 4;
  const std::size_t bytes = std::min<std::size_t>(4, mask_size_bytes(count) - first_byte);
  std::memcpy(mask + first_byte, &w, bytes);
}

constexpr std::size_t mask_word_count(std::size_t count) {
  return count / mask_word_values + (count % mask_word_values != 0 ? 1 : 0);
}

inline void check_mask_size(const char* who, std::span<const std::byte> mask, std::size_t count) {
  if (mask.size() != mask_size_bytes(count)) {
    throw argument_error(std::string(who) + ": mask has " + std::to_string(mask.size()) + " bytes, " +
                         std::to_string(mask_size_bytes(count)) + " are needed for " + std::to_string(count) +
                         " elements");
  }
}

/// out[j] = bit j of w ? x[j] : +0 for a whole word; bit operations only, so the loop vectorizes. The
/// word goes through a local block because out may be x (in place), and GCC at -O2 does not vectorize a
/// loop whose stores may alias its loads.
template <floating_value T>
inline void select_word(const T* x, std::uint32_t w, T* out) {
  using bits = bits_of<T>;
  alignas(64) T selected[mask_word_values];
  for (std::size_t j = 0; j < mask_word_values; ++j) {
    const bits keep = static_cast<bits>(0) - static_cast<bits>((w >> j) & 1u);
    selected[j] = std::bit_cast<T>(static_cast<bits>(std::bit_cast<bits>(x[j]) & keep));
  }
  std::memcpy(out, selected, sizeof selected);
}

/// Set bits of mask words [first, last).
inline std::size_t popcount_words(const std::byte* mask, std::size_t first, std::size_t last, std::size_t count) {
  std::size_t set = 0;
  for (std::size_t w = first; w < last; ++w) set += static_cast<std::size_t>(zcoll::popcount(load_mask_word(mask, w, count)));
  return set;
}

/// Set bits before each worker's range of words, plus the total at the end.
inline std::vector<std::size_t> worker_offsets(const exec::Host& exec, const std::byte* mask, std::size_t count) {
  const std::size_t words = mask_word_count(count);
  const std::size_t workers = exec::worker_count(exec, words);
  std::vector<std::size_t> offsets(workers + 1, 0);
  exec::for_each_range(exec, words, [&](std::size_t w, std::size_t first, std::size_t last) {
    offsets[w + 1] = popcount_words(mask, first, last, count);
  });
  for (std::size_t w = 0; w < workers; ++w) offsets[w + 1] += offsets[w];
  return offsets;
}

}  // namespace detail

/// Set bits of a mask (the number of elements it selects).
inline std::size_t mask_popcount(std::span<const std::byte> mask) {
  std::size_t set = 0;
  std::size_t i = 0;
  for (; i + 8 <= mask.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, mask.data() + i, 8);
    set += static_cast<std::size_t>(zcoll::popcount(w));
  }
  for (; i < mask.size(); ++i) set += static_cast<std::size_t>(zcoll::popcount(std::to_integer<unsigned>(mask[i])));
  return set;
}

/// out[i] = x[i] where the mask is set, +0 elsewhere (DCT-MP's X_grad ⊙ M). `out` may be `x` itself.
template <floating_value T>
void apply_mask(const exec::Host& exec, std::span<const T> x, std::span<const std::byte> mask, std::span<T> out) {
  detail::check_mask_size("apply_mask", mask, x.size());
  if (out.size() != x.size()) {
    throw argument_error("apply_mask: out holds " + std::to_string(out.size()) + " values, x has " +
                         std::to_string(x.size()));
  }
  const std::size_t count = x.size();
  exec::for_each_range(exec, detail::mask_word_count(count), [&](std::size_t, std::size_t first, std::size_t last) {
    for (std::size_t w = first; w < last; ++w) {
      const std::size_t i = w * detail::mask_word_values;
      const std::uint32_t word = detail::load_mask_word(mask.data(), w, count);
      if (i + detail::mask_word_values <= count) {
        detail::select_word(x.data() + i, word, out.data() + i);
      } else {
        for (std::size_t j = 0; i + j < count; ++j) out[i + j] = ((word >> j) & 1u) != 0 ? x[i + j] : T(0);
      }
    }
  });
}

/// Writes the x[i] whose mask bit is set to `values`, in increasing i (the order the forward pass packed
/// its kept values in); returns how many. `values` must hold mask_popcount(mask) values.
template <floating_value T>
std::size_t gather_masked(const exec::Host& exec, std::span<const T> x, std::span<const std::byte> mask,
                          std::span<T> values) {
  detail::check_mask_size("gather_masked", mask, x.size());
  const std::size_t count = x.size();
  const auto offsets = detail::worker_offsets(exec, mask.data(), count);
  if (values.size() < offsets.back()) {
    throw argument_error("gather_masked: values holds " + std::to_string(values.size()) + ", the mask selects " +
                         std::to_string(offsets.back()));
  }
  // The selected entries lie far apart in x, so each load misses the cache. Their indices are collected
  // a batch at a time and then loaded in a loop of independent loads that the CPU overlaps: loading them
  // while walking the mask kept one miss in flight and ran 3-4 times slower than memcpy of all of x.
  constexpr std::size_t batch_words = 256;
  exec::for_each_range(exec, detail::mask_word_count(count), [&](std::size_t worker, std::size_t first, std::size_t last) {
    T* cursor = values.data() + offsets[worker];
    std::uint32_t positions[batch_words * detail::mask_word_values];
    for (std::size_t batch = first; batch < last; batch += batch_words) {
      const std::size_t stop = std::min(last, batch + batch_words);
      std::size_t selected = 0;
      for (std::size_t w = batch; w < stop; ++w) {
        const auto base = static_cast<std::uint32_t>((w - batch) * detail::mask_word_values);
        for (std::uint32_t word = detail::load_mask_word(mask.data(), w, count); word != 0; word &= word - 1) {
          positions[selected++] = base + static_cast<std::uint32_t>(zcoll::countr_zero(word));
        }
      }
      const T* xs = x.data() + batch * detail::mask_word_values;
      for (std::size_t j = 0; j < selected; ++j) cursor[j] = xs[positions[j]];
      cursor += selected;
    }
  });
  return offsets.back();
}

/// The inverse of gather_masked: out[i] = the next of `values` where the mask is set, +0 elsewhere.
/// `values` must hold exactly mask_popcount(mask) values.
template <floating_value T>
void scatter_masked(const exec::Host& exec, std::span<const T> values, std::span<const std::byte> mask, std::span<T> out) {
  detail::check_mask_size("scatter_masked", mask, out.size());
  const std::size_t count = out.size();
  const auto offsets = detail::worker_offsets(exec, mask.data(), count);
  if (values.size() != offsets.back()) {
    throw argument_error("scatter_masked: values holds " + std::to_string(values.size()) + ", the mask selects " +
                         std::to_string(offsets.back()));
  }
  exec::for_each_range(exec, detail::mask_word_count(count), [&](std::size_t worker, std::size_t first, std::size_t last) {
    const T* cursor = values.data() + offsets[worker];
    for (std::size_t w = first; w < last; ++w) {
      const std::size_t i = w * detail::mask_word_values;
      T* o = out.data() + i;
      std::fill_n(o, std::min(detail::mask_word_values, count - i), T(0));
      for (std::uint32_t word = detail::load_mask_word(mask.data(), w, count); word != 0; word &= word - 1) {
        o[zcoll::countr_zero(word)] = *cursor++;
      }
    }
  });
}

}  // namespace zcoll::sparsify
