#pragma once
/// The exact top-K threshold of DCT-DP (Algorithm 1, lines 4-5): tau = the K-th largest |x|, K =
/// ceil(keep_fraction · n), found in O(n) by a radix select on magnitude keys instead of a sort.
///
/// Which entries a threshold keeps (`threshold_keeps`): every x with |x| >= tau and x != 0, and every NaN.
/// - Zeros are never kept: dropping one loses nothing, and a sparse tensor whose K-th largest |x| is 0
///   would otherwise be sent dense.
/// - NaNs are always kept (sent bit for bit, so a broken gradient is seen downstream, never hidden) and do
///   not count toward K: tau is the K-th largest |x| among the non-NaN entries. A threshold is a number
///   that DCT-DP reuses for threshold_life_span calls, so it must not be NaN itself.
/// - ±Inf is the largest magnitude, so it is always kept (tau <= +Inf).
/// - Ties at tau are all kept, as Algorithm 1's mask I(|W| >= tau) keeps them: the kept count is K or
///   more when |x| repeats (row_topk.hpp keeps exactly K per row instead).
/// - When fewer than K entries are non-NaN, tau = 0: everything but zeros is kept.
///
///     std::vector<std::uint32_t> scratch;  // reused between calls: the select allocates nothing then
///     float tau = zcoll::sparsify::topk_threshold(zcoll::exec::Host{}, std::span<const float>(grad), 0.01, scratch);

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/sparsify/magnitude_key.hpp"

namespace zcoll::sparsify {

/// Throws argument_error unless 0 < keep_fraction <= 1.
inline void check_keep_fraction(double keep_fraction, const char* who) {
  if (!(keep_fraction > 0.0 && keep_fraction <= 1.0)) {
    throw argument_error(std::string(who) + ": keep_fraction " + std::to_string(keep_fraction) +
                         " must be in (0, 1] (the fraction of entries kept; 0.01 keeps the top 1 %)");
  }
}

/// K = ceil(keep_fraction · n), at least 1 for n > 0, at most n.
inline std::size_t topk_count(std::size_t n, double keep_fraction) {
  check_keep_fraction(keep_fraction, "topk_count");
  if (n == 0) return 0;
  const double k = std::ceil(keep_fraction * static_cast<double>(n));
  if (!(k < static_cast<double>(n))) return n;
  return std::max<std::size_t>(1, static_cast<std::size_t>(k));
}

/// The key a threshold ranks x by: its magnitude key, with NaN at 0 so that NaNs never count toward K.
template <floating_value T>
constexpr bits_of<T> threshold_rank_key(T x) {
  const bits_of<T> key = magnitude_key(x);
  return key > infinity_key<T> ? bits_of<T>{0} : key;
}

/// The smallest magnitude key `tau` keeps: max(key(tau), 1), so that ±0 is never kept.
template <floating_value T>
constexpr bits_of<T> kept_key_floor(T tau) {
  return std::max<bits_of<T>>(magnitude_key(tau), 1);
}

/// Whether threshold `tau` keeps x: |x| >= tau and x != 0, or x is NaN (its key lies above every floor).
template <floating_value T>
constexpr bool threshold_keeps(T x, T tau) {
  return magnitude_key(x) >= kept_key_floor(tau);
}

namespace detail {

/// Bits of a radix digit: 2^11 bins of 8 bytes (16 KiB, twice for the two interleaved histograms) stay in
/// L1, and a 31-bit f32 key takes three digits (11 + 11 + 9), the first of which (8 exponent bits and 3
/// mantissa bits) already leaves few candidates for the data DCT-DP sees.
inline constexpr unsigned radix_digit_bits = 11;
inline constexpr std::size_t radix_bins = std::size_t{1} << radix_digit_bits;
using radix_histogram = std::array<std::size_t, radix_bins>;

/// Below this many candidates the last digits are settled by std::nth_element.
inline constexpr std::size_t select_small_candidates = 256;

/// The bin holding the rank-th largest key (1-based) and that key's rank within the bin.
struct bin_choice {
  std::size_t bin = 0;
  std::size_t rank = 0;
};

inline bin_choice choose_bin(const radix_histogram& histogram, std::size_t rank) {
  for (std::size_t b = radix_bins; b-- > 0;) {
    if (rank <= histogram[b]) return {b, rank};
    rank -= histogram[b];
  }
  return {0, rank};  // unreachable while rank <= the histogram's total
}

/// Histogram of (threshold_rank_key(x) >> shift) over x[first, last). Two interleaved histograms, so
/// that neighbouring equal keys (frequent: the exponent repeats) do not wait on each other's increment.
template <floating_value T>
void histogram_top_digit(const T* x, std::size_t first, std::size_t last, unsigned shift, radix_histogram& out) {
  std::array<std::uint32_t, radix_bins> even{}, odd{};
  // u32 counters never wrap: they are flushed every 2^31 values.
  constexpr std::size_t flush_every = std::size_t{1} << 31;
  auto flush = [&] {
    for (std::size_t b = 0; b < radix_bins; ++b) out[b] += std::size_t{even[b]} + odd[b];
    even.fill(0);
    odd.fill(0);
  };
  std::size_t i = first;
  while (i < last) {
    const std::size_t stop = last - i > flush_every ? i + flush_every : last;
    for (; i + 2 <= stop; i += 2) {
      ++even[static_cast<std::size_t>(threshold_rank_key(x[i]) >> shift)];
      ++odd[static_cast<std::size_t>(threshold_rank_key(x[i + 1]) >> shift)];
    }
    if (i < stop) ++even[static_cast<std::size_t>(threshold_rank_key(x[i++]) >> shift)];
    flush();
  }
}

/// What a scan of x against a window [lo, hi] of keys found.
struct window_scan {
  std::size_t above = 0;   ///< keys > hi
  std::size_t inside = 0;  ///< keys in [lo, hi], copied out
  bool overflow = false;   ///< more than `capacity` keys were inside: the scan stopped early
};

/// Counts the keys of x[first, last) above `hi` and copies those in [lo, hi] to `out` (at most
/// `capacity`). Per block of 32: flags and counts in a loop that vectorizes, then only the (few) keys
/// inside the window are copied, so the scan runs near the speed of reading x.
template <floating_value T>
window_scan scan_window(const T* x, std::size_t first, std::size_t last, bits_of<T> lo, bits_of<T> hi,
                        bits_of<T>* out, std::size_t capacity) {
  using key = bits_of<T>;
  constexpr std::size_t lanes = 32;
  window_scan scan;
  auto copy_inside = [&](const key* keys, std::uint32_t word) {
    if (static_cast<std::size_t>(zcoll::popcount(word)) > capacity - scan.inside) return false;
    for (; word != 0; word &= word - 1) out[scan.inside++] = keys[zcoll::countr_zero(word)];
    return true;
  };
  const auto window_width = static_cast<key>(hi - lo);  // lo <= hi
  std::size_t i = first;
  for (; i + lanes <= last; i += lanes) {
    alignas(64) key keys[lanes];
    alignas(64) std::uint32_t inside[lanes];
    std::uint32_t above = 0;
    const T* xs = x + i;
    for (std::size_t j = 0; j < lanes; ++j) {
      const key magnitude = std::bit_cast<key>(xs[j]) & magnitude_bits<T>;
      const key k = magnitude > infinity_key<T> ? key{0} : magnitude;  // threshold_rank_key, spelled out
      keys[j] = k;
      inside[j] = static_cast<key>(k - lo) <= window_width ? ~0u : 0u;  // lo <= k <= hi; (a & b) did not vectorize
      above += static_cast<std::uint32_t>(k > hi);
    }
    scan.above += above;
    const std::uint32_t word = lanes_nonzero(inside);
    if (word != 0 && !copy_inside(keys, word)) {
      scan.overflow = true;
      return scan;
    }
  }
  for (; i < last; ++i) {
    const key k = threshold_rank_key(x[i]);
    scan.above += static_cast<std::size_t>(k > hi);
    if (k >= lo && k <= hi && !copy_inside(&k, 1u)) {
      scan.overflow = true;
      return scan;
    }
  }
  return scan;
}

/// Runs scan_window on each worker's range of x, each copying into its own slice of `out` (slice w at
/// w · capacity_per_worker; `out` holds worker_count slices), then moves the slices together. Returns
/// the totals.
template <floating_value T>
window_scan scan_window_parallel(const exec::Host& exec, std::span<const T> x, bits_of<T> lo, bits_of<T> hi,
                                 bits_of<T>* out, std::size_t capacity_per_worker) {
  const std::size_t workers = exec::worker_count(exec, x.size());
  std::vector<window_scan> scans(workers);
  exec::for_each_range(exec, x.size(), [&](std::size_t w, std::size_t first, std::size_t last) {
    scans[w] = scan_window(x.data(), first, last, lo, hi, out + w * capacity_per_worker, capacity_per_worker);
  });
  window_scan total;
  for (std::size_t w = 0; w < workers; ++w) {
    total.overflow |= scans[w].overflow;
    if (w > 0) std::copy_n(out + w * capacity_per_worker, scans[w].inside, out + total.inside);
    total.above += scans[w].above;
    total.inside += scans[w].inside;
  }
  return total;
}

/// The rank-th largest (1-based) of the candidate keys, which agree on their bits from bit `shift` up:
/// radix digits downward from there, each pass keeping the candidates of one bin (in place), until few
/// are left for std::nth_element.
template <class Key>
Key select_among(std::span<Key> candidates, std::size_t rank, unsigned shift) {
  std::size_t size = candidates.size();
  Key* keys = candidates.data();
  while (shift > 0 && size > select_small_candidates) {
    const unsigned width = std::min(shift, radix_digit_bits);
    shift -= width;
    const Key digit_mask = (Key{1} << width) - 1;
    radix_histogram histogram{};
    for (std::size_t i = 0; i < size; ++i) ++histogram[static_cast<std::size_t>((keys[i] >> shift) & digit_mask)];
    const bin_choice choice = choose_bin(histogram, rank);
    rank = choice.rank;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size; ++i) {
      const Key key = keys[i];
      keys[kept] = key;
      kept += static_cast<std::size_t>(((key >> shift) & digit_mask) == choice.bin);
    }
    size = kept;
  }
  // The rank-th largest of what is left (all of it, once every digit is settled: then the keys are equal).
  std::nth_element(keys, keys + (rank - 1), keys + size, [](Key a, Key b) { return a > b; });
  return keys[rank - 1];
}

}  // namespace detail

namespace detail {

/// Up to this many values the threshold is one std::nth_element over a copy of the keys.
inline constexpr std::size_t small_select_values = std::size_t{1} << 16;

/// Keys sampled to place the window of the sampled select: 16384 keys give the K-th largest's rank in
/// the sample to a standard deviation of sqrt(16384 · p (1 - p)) <= 64 ranks, and the window spans
/// 4 of those plus 16 ranks each side, so for K = 1 % of n about 0.7 % of the entries are candidates.
inline constexpr std::size_t sample_values = 16384;

/// Ranks the window reaches each side of the expected rank of the K-th largest in the sample, for
/// p = K / n: 4 standard deviations of that rank, sqrt(sample_values · p (1 - p)), plus 16.
inline std::size_t window_margin(double p) {
  return static_cast<std::size_t>(4.0 * std::sqrt(static_cast<double>(sample_values) * p * (1.0 - p))) + 16;
}

/// The rank-th largest key (1-based) of x: K-th largest |x| in one scan of x when the sample places the
/// window right, or nothing (the caller then takes the radix path). The window is [the sample's key
/// `margin` ranks below the expected rank, the one `margin` ranks above]; the scan counts the keys above
/// it and copies those inside, and the K-th largest is inside exactly when above < K <= above + inside.
/// The sample is taken at fixed positions, so the result never depends on chance or on the thread count.
template <floating_value T>
std::optional<bits_of<T>> sampled_select(const exec::Host& exec, std::span<const T> x, std::size_t rank,
                                         std::vector<bits_of<T>>& scratch) {
  using key = bits_of<T>;
  const std::size_t n = x.size(), stride = n / sample_values;
  const std::size_t workers = exec::worker_count(exec, n);
  // scratch: the sample, then one slice of candidates per worker, each with room for twice the
  // expected candidates of a worker plus slack for small ranges.
  const std::size_t margin = window_margin(static_cast<double>(rank) / static_cast<double>(n));
  const double window_fraction = static_cast<double>(2 * margin + 1) / static_cast<double>(sample_values);
  const std::size_t capacity = std::min(
      n, static_cast<std::size_t>(2.0 * window_fraction * static_cast<double>(n / workers + 1)) + 4096);
  if (scratch.size() < sample_values + workers * capacity) scratch.resize(sample_values + workers * capacity);
  const std::span<key> sample(scratch.data(), sample_values);
  for (std::size_t i = 0; i < sample_values; ++i) sample[i] = threshold_rank_key(x[i * stride + stride / 2]);

  // The K-th largest's rank in the sample.
  const auto centre =
      static_cast<std::size_t>(static_cast<double>(rank) / static_cast<double>(n) * static_cast<double>(sample_values));
  auto sample_key = [&](std::size_t r) {  // the (r + 1)-th largest of the sample
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(r), sample.end(), std::greater<key>{});
    return sample[r];
  };
  const key hi = centre > margin ? sample_key(centre - margin) : infinity_key<T>;
  const key lo = centre + margin < sample_values ? sample_key(centre + margin) : key{0};
  if (lo > hi) return std::nullopt;

  key* const candidates = scratch.data() + sample_values;
  const window_scan scan = scan_window_parallel(exec, x, lo, hi, candidates, capacity);
  if (scan.overflow || !(scan.above < rank && rank <= scan.above + scan.inside)) return std::nullopt;
  return select_among(std::span<key>(candidates, scan.inside), rank - scan.above, magnitude_key_width<T>);
}

/// The rank-th largest key (1-based) by radix digits: a histogram of the top 11 key bits, then a scan
/// that copies the keys of the chosen bin, then passes over the shrinking candidates. Always succeeds.
template <floating_value T>
bits_of<T> radix_select(const exec::Host& exec, std::span<const T> x, std::size_t rank, std::vector<bits_of<T>>& scratch) {
  using key = bits_of<T>;
  constexpr unsigned top_shift = magnitude_key_width<T> - radix_digit_bits;
  // One histogram per worker, summed (integer counts: the sum does not depend on the split).
  const std::size_t workers = exec::worker_count(exec, x.size());
  std::vector<radix_histogram> histograms(workers, radix_histogram{});
  exec::for_each_range(exec, x.size(), [&](std::size_t w, std::size_t first, std::size_t last) {
    histogram_top_digit(x.data(), first, last, top_shift, histograms[w]);
  });
  radix_histogram total{};
  std::size_t largest_share = 0;
  for (std::size_t b = 0; b < radix_bins; ++b) {
    for (const auto& h : histograms) total[b] += h[b];
  }
  const bin_choice top = choose_bin(total, rank);
  for (const auto& h : histograms) largest_share = std::max(largest_share, h[top.bin]);
  const auto lo = static_cast<key>(static_cast<key>(top.bin) << top_shift);
  const auto hi = static_cast<key>(lo | ((key{1} << top_shift) - 1));
  if (scratch.size() < workers * largest_share) scratch.resize(workers * largest_share);
  const window_scan scan = scan_window_parallel(exec, x, lo, hi, scratch.data(), largest_share);
  return select_among(std::span<key>(scratch.data(), scan.inside), top.rank, top_shift);
}

}  // namespace detail

/// The K-th largest |x| over the non-NaN entries (K = topk_count(x.size(), keep_fraction)), exactly, in
/// O(n): usually one scan of x (a sample places a narrow window of keys; the scan counts the keys above
/// it and copies the few inside, among which the K-th largest is then selected), else a radix select
/// (two scans). 0 for an empty x or when fewer than K entries are non-NaN. `scratch` is resized as
/// needed and may be reused between calls. The result does not depend on exec.threads.
template <floating_value T>
T topk_threshold(const exec::Host& exec, std::span<const T> x, double keep_fraction, std::vector<bits_of<T>>& scratch) {
  using key = bits_of<T>;
  const std::size_t k = topk_count(x.size(), keep_fraction);
  if (k == 0) return T(0);
  if (x.size() <= detail::small_select_values) {
    scratch.resize(x.size());
    std::transform(x.begin(), x.end(), scratch.begin(), [](T v) { return threshold_rank_key(v); });
    std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k - 1), scratch.end(), std::greater<key>{});
    return magnitude_of_key<T>(scratch[k - 1]);
  }
  if (const auto sampled = detail::sampled_select(exec, x, k, scratch)) return magnitude_of_key<T>(*sampled);
  return magnitude_of_key<T>(detail::radix_select(exec, x, k, scratch));
}

/// topk_threshold on one thread with a scratch buffer of its own.
template <floating_value T>
T topk_threshold(std::span<const T> x, double keep_fraction) {
  std::vector<bits_of<T>> scratch;
  return topk_threshold(exec::Host{}, x, keep_fraction, scratch);
}

}  // namespace zcoll::sparsify
