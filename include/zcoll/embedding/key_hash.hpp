#pragma once
/// The one hash the embedding layer uses: routing an id to its owner, placing (category, id) keys in
/// key_table, and initializing rows. SplitMix64's finalizer (Steele, Lea & Flood, "Fast splittable
/// pseudorandom number generators", OOPSLA 2014): a bijection on 64 bits whose outputs pass BigCrush, so
/// sequential or Zipf-skewed ids still spread evenly over ranks and table slots.

#include <cstdint>

namespace zcoll::embedding {

constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A hash of a (category, id) key: equal ids of different categories hash apart.
constexpr std::uint64_t key_hash(std::uint32_t category, std::uint64_t id) {
  return mix64(id ^ mix64(category));
}

}  // namespace zcoll::embedding
