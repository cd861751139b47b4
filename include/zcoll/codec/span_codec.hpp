#pragma once
/// span_codec<Derived>: the range overloads every codec offers, written once. A codec derives from it and
/// implements, for each floating type T,
///
///     std::span<std::byte> compress_values(const exec::Host&, std::span<const T> in, std::span<std::byte> out) const;
///     void decompress_values(const exec::Host&, std::span<const std::byte> in, std::span<T> out) const;
///
/// (private, with `friend span_codec<Derived>;`), and keeps its own `decompress<T>(stream)` convenience,
/// which validates the stream before allocating in a way that depends on its format (then
/// `using span_codec<Derived>::decompress;` brings the overload below back into view).

#include <cstddef>
#include <ranges>
#include <span>
#include <vector>

#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

template <class Derived>
class span_codec {
 public:
  /// Compresses `in` into `out` (at least max_compressed_size<T>(in.size()) bytes); returns the bytes
  /// written, a prefix of `out`. The bytes do not depend on exec.threads.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out) const {
    using T = std::ranges::range_value_t<R>;
    return derived().compress_values(exec, std::span<const T>(std::ranges::data(in), std::ranges::size(in)), out);
  }

  /// Decompresses a whole stream into `out`, which must hold exactly the stream's value count. A malformed
  /// stream, or one of another codec or value type, raises format_error.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  void decompress(const exec::Host& exec, std::span<const std::byte> in, R&& out) const {
    using T = std::ranges::range_value_t<R>;
    derived().decompress_values(exec, in, std::span<T>(std::ranges::data(out), std::ranges::size(out)));
  }

  /// Convenience: a new vector holding the stream, one thread.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::vector<std::byte> compress(const R& in) const {
    return compress_to_vector(derived(), in);
  }

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
};

}  // namespace zcoll
