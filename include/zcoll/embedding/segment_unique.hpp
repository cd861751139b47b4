#pragma once
/// segment_unique: FusedRec's deduplication of a fused group (§3, Fig. 3 step a.2, Fig. 5). The group is
/// the ids of several categories laid end to end (segment c is ids[offsets[c], offsets[c + 1])); duplicates
/// are removed within each segment while equal ids of different segments stay apart (a_0 and b_0 are
/// different rows of different tables). One pass over the whole group, whatever the number of segments.
///
///     ids     = {7, 3, 7,   3, 3, 9}      offsets = {0, 3, 6}   (category a: 7 3 7, category b: 3 3 9)
///     keys    = {7, 3,   3, 9}            key_offsets = {0, 2, 4}
///     inverse = {0, 1, 0,   2, 2, 3}      ids[i] == keys[inverse[i]]
///
/// Unique keys keep the order of their first occurrence, segment after segment, so the result is the
/// same whichever way the work is split.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/error.hpp"
#include "zcoll/embedding/key_table.hpp"

namespace zcoll::embedding {

struct segment_unique_result {
  std::vector<std::uint64_t> keys;         ///< the unique ids, segment after segment
  std::vector<std::size_t> key_offsets;    ///< segment c's unique ids: keys[key_offsets[c], key_offsets[c + 1])
  std::vector<std::size_t> inverse;        ///< I_u: id i of the group is keys[inverse[i]]

  std::size_t segments() const { return key_offsets.size() - 1; }
  std::size_t unique_count(std::size_t segment) const { return key_offsets[segment + 1] - key_offsets[segment]; }
};

/// argument_error unless offsets is non-decreasing from 0 to ids.size() (one entry more than segments).
inline void check_segment_offsets(const char* call, std::span<const std::size_t> offsets, std::size_t ids) {
  if (offsets.empty() || offsets.front() != 0 || offsets.back() != ids) {
    throw argument_error(std::string(call) + ": offsets must start at 0 and end at ids.size() = " + std::to_string(ids) +
                         (offsets.empty() ? " (offsets is empty)" : " (they run " + std::to_string(offsets.front()) +
                                                                        " .. " + std::to_string(offsets.back()) + ")"));
  }
  if (offsets.size() - 1 > std::numeric_limits<std::uint32_t>::max()) {
    throw argument_error(std::string(call) + ": " + std::to_string(offsets.size() - 1) + " segments exceed 2^32 - 1");
  }
  for (std::size_t c = 0; c + 1 < offsets.size(); ++c) {
    if (offsets[c + 1] < offsets[c]) {
      throw argument_error(std::string(call) + ": offsets[" + std::to_string(c + 1) + "] = " +
                           std::to_string(offsets[c + 1]) + " is below offsets[" + std::to_string(c) +
                           "] = " + std::to_string(offsets[c]) + "; offsets must not decrease");
    }
  }
}

inline segment_unique_result segment_unique(std::span<const std::uint64_t> ids, std::span<const std::size_t> offsets) {
  check_segment_offsets("segment_unique", offsets, ids.size());
  segment_unique_result r;
  r.key_offsets.assign(offsets.size(), 0);
  r.inverse.resize(ids.size());
  key_table seen(ids.size());
  for (std::size_t c = 0; c + 1 < offsets.size(); ++c) {
    for (std::size_t i = offsets[c]; i < offsets[c + 1]; ++i) {
      const auto [index, inserted] = seen.insert(static_cast<std::uint32_t>(c), ids[i]);
      if (inserted) r.keys.push_back(ids[i]);
      r.inverse[i] = index;
    }
    r.key_offsets[c + 1] = r.keys.size();
  }
  return r;
}

}  // namespace zcoll::embedding
