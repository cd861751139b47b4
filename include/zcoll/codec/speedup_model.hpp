#pragma once
/// Choosing a codec by what it would save on a given link: the DLRM compression paper's speed-up model.
///
/// Sending n bytes over a link of bandwidth B takes n/B; compressing first takes n/Tc + n/(CR·B) + n/Td.
/// Their quotient is the modelled speed-up
///
///     speedup = 1 / (1/CR + B·(1/Tc + 1/Td))
///
/// with CR the ratio, Tc and Td the compress and decompress throughputs (bytes of input per second). A
/// high ratio wins on slow links, a fast codec on fast ones; below 1 compression does not pay.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/concepts.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

/// A codec's throughputs, bytes of input per second: measured once (measure_candidate) or configured.
struct codec_speed {
  double compress_bytes_per_second = 0.0;    ///< Tc
  double decompress_bytes_per_second = 0.0;  ///< Td
};

/// What one candidate did on a sample.
struct candidate_measurement {
  std::string codec;
  double ratio = 1.0;                        ///< CR: input bytes / stream bytes
  double compress_bytes_per_second = 0.0;    ///< Tc
  double decompress_bytes_per_second = 0.0;  ///< Td
};

/// The modelled speed-up of `m` on a link of `link_bytes_per_second`.
inline double modeled_speedup(const candidate_measurement& m, double link_bytes_per_second) {
  if (!(link_bytes_per_second > 0.0)) {
    throw argument_error("modeled_speedup: link_bytes_per_second " + std::to_string(link_bytes_per_second) +
                         " must be > 0");
  }
  if (!(m.ratio > 0.0) || !(m.compress_bytes_per_second > 0.0) || !(m.decompress_bytes_per_second > 0.0)) {
    throw argument_error("modeled_speedup: " + m.codec + " needs a ratio and throughputs > 0");
  }
  return 1.0 / (1.0 / m.ratio + link_bytes_per_second * (1.0 / m.compress_bytes_per_second +
                                                        1.0 / m.decompress_bytes_per_second));
}

/// The index of the candidate with the highest modelled speed-up (the first of equals).
inline std::size_t select_fastest(std::span<const candidate_measurement> candidates, double link_bytes_per_second) {
  if (candidates.empty()) throw argument_error("select_fastest: no candidates");
  std::size_t best = 0;
  double best_speedup = modeled_speedup(candidates[0], link_bytes_per_second);
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    const double s = modeled_speedup(candidates[i], link_bytes_per_second);
    if (s > best_speedup) {
      best = i;
      best_speedup = s;
    }
  }
  return best;
}

/// Compresses and decompresses `sample` with `codec` and times both: the fastest of `repeat` runs,
/// after one warm-up (the sample is small, so the minimum is the least disturbed run).
template <codec C, floating_value T>
candidate_measurement measure_candidate(const C& codec, const exec::Host& exec, std::span<const T> sample,
                                        unsigned repeat = 3) {
  using clock = std::chrono::steady_clock;
  std::vector<std::byte> stream(codec.template max_compressed_size<T>(sample.size()));
  std::vector<T> restored(sample.size());
  std::span<std::byte> written = codec.compress(exec, sample, std::span<std::byte>(stream));
  codec.decompress(exec, written, restored);
  double compress_s = 1e300, decompress_s = 1e300;
  for (unsigned r = 0; r < std::max(1u, repeat); ++r) {
    auto start = clock::now();
    written = codec.compress(exec, sample, std::span<std::byte>(stream));
    compress_s = std::min(compress_s, std::chrono::duration<double>(clock::now() - start).count());
    start = clock::now();
    codec.decompress(exec, written, restored);
    decompress_s = std::min(decompress_s, std::chrono::duration<double>(clock::now() - start).count());
  }
  // A clock tick is the shortest time we can tell apart from zero.
  const double tick = std::chrono::duration<double>(clock::duration(1)).count();
  const double bytes = static_cast<double>(sample.size_bytes());
  return {C::name(), bytes / static_cast<double>(written.size()), bytes / std::max(compress_s, tick),
          bytes / std::max(decompress_s, tick)};
}

}  // namespace zcoll
