#pragma once
/// key_table: an open-addressing map from (category, id) keys to dense indices 0, 1, 2, ... in the order
/// the keys were first inserted. The dedup step of segment_unique and of the owner's lookup, and the
/// owner's row index: one probe sequence per key, no allocation per key (std::unordered_map allocates a
/// node per key, which dominates a dedup of millions of ids).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "zcoll/embedding/key_hash.hpp"

namespace zcoll::embedding {

class key_table {
 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  key_table() = default;
  /// Room for `keys` keys before the first rehash.
  explicit key_table(std::size_t keys) { reserve(keys); }

  std::size_t size() const { return size_; }

  void reserve(std::size_t keys) {
    std::size_t slots = 16;
    while (slots / 2 < keys) slots *= 2;  // load factor at most 1/2: short probe sequences
    if (slots > slots_.size()) rehash(slots);
  }

  /// The index of (category, id), inserting it with the next index when it is new; .second says whether
  /// it was inserted.
  std::pair<std::size_t, bool> insert(std::uint32_t category, std::uint64_t id) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    slot& s = probe(category, id);
    if (s.index != none) return {s.index, false};
    s = slot{id, category, size_};
    return {size_++, true};
  }

  /// The index of (category, id), or key_table::none.
  std::size_t find(std::uint32_t category, std::uint64_t id) const {
    if (slots_.empty()) return none;
    return const_cast<key_table*>(this)->probe(category, id).index;
  }

 private:
  struct slot {
    std::uint64_t id = 0;
    std::uint32_t category = 0;
    std::size_t index = none;
  };

  /// The slot holding (category, id), or the empty slot where it would go (linear probing).
  slot& probe(std::uint32_t category, std::uint64_t id) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = key_hash(category, id) & mask;; i = (i + 1) & mask) {
      slot& s = slots_[i];
      if (s.index == none || (s.id == id && s.category == category)) return s;
    }
  }

  void rehash(std::size_t slots) {
    std::vector<slot> old(slots, slot{});
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.index != none) probe(s.category, s.id) = s;
    }
  }

  std::vector<slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace zcoll::embedding
