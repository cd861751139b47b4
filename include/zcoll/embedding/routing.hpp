#pragma once
/// Rank-wise routing (FusedRec §3, Fig. 3 step a.3): every id has one owner rank, chosen by a hash of the
/// id alone, so equal ids of different categories of a group meet at the same owner (row-wise sharding of
/// every table of the group by the same hash, which also balances skewed ids over the ranks). The unique
/// keys of a group are reordered so that the keys of each destination are contiguous, as an all-to-all's
/// send buffer needs them, and the permutation I_s is kept to undo it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/error.hpp"
#include "zcoll/embedding/key_hash.hpp"

namespace zcoll::embedding {

/// The rank that owns the rows of `id`, in every category.
inline int owner_of(std::uint64_t id, int ranks) {
  return static_cast<int>(mix64(id) % static_cast<std::uint64_t>(ranks));
}

/// A group's unique keys in send order: destination after destination, within one destination segment
/// after segment, within one segment in their unique order (a stable counting sort).
struct rankwise_route {
  std::vector<std::uint64_t> sorted_ids;  ///< the keys in send order
  std::vector<std::size_t> position;      ///< I_s: unique key k is sorted_ids[position[k]]
  std::vector<std::size_t> counts;        ///< counts[dest * segments + c]: ids of segment c sent to dest
  std::size_t segments = 0;

  /// Ids sent to `dest`, all segments.
  std::size_t dest_count(int dest) const {
    std::size_t n = 0;
    for (std::size_t c = 0; c < segments; ++c) n += counts[static_cast<std::size_t>(dest) * segments + c];
    return n;
  }
};

/// keys / key_offsets as segment_unique returns them.
inline rankwise_route rankwise_sort(std::span<const std::uint64_t> keys, std::span<const std::size_t> key_offsets,
                                    int ranks) {
  if (ranks < 1) throw argument_error("rankwise_sort: ranks " + std::to_string(ranks) + " must be at least 1");
  if (key_offsets.empty() || key_offsets.back() != keys.size()) {
    throw argument_error("rankwise_sort: key_offsets must end at keys.size() = " + std::to_string(keys.size()) +
                         " (one entry per segment and one more, as segment_unique returns them)");
  }
  rankwise_route r;
  r.segments = key_offsets.size() - 1;
  const std::size_t cells = static_cast<std::size_t>(ranks) * r.segments;
  r.counts.assign(cells, 0);
  std::vector<int> dest(keys.size());
  for (std::size_t c = 0; c < r.segments; ++c) {
    for (std::size_t k = key_offsets[c]; k < key_offsets[c + 1]; ++k) {
      dest[k] = owner_of(keys[k], ranks);
      ++r.counts[static_cast<std::size_t>(dest[k]) * r.segments + c];
    }
  }
  std::vector<std::size_t> next(cells, 0);  // the next free position of each (dest, segment) cell
  for (std::size_t cell = 1; cell < cells; ++cell) next[cell] = next[cell - 1] + r.counts[cell - 1];
  r.sorted_ids.resize(keys.size());
  r.position.resize(keys.size());
  for (std::size_t c = 0; c < r.segments; ++c) {
    for (std::size_t k = key_offsets[c]; k < key_offsets[c + 1]; ++k) {
      const std::size_t at = next[static_cast<std::size_t>(dest[k]) * r.segments + c]++;
      r.sorted_ids[at] = keys[k];
      r.position[k] = at;
    }
  }
  return r;
}

}  // namespace zcoll::embedding
