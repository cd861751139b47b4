#pragma once
/// HostStaging: the staging space (collective/staging.hpp) on host memory. A staged call on it takes the
/// steps it takes on a GPU — every outgoing block compressed in batches into the device_out area, the
/// streams copied to host_out for the transport, the received ones copied to device_in and decompressed
/// in batches — with memcpy for the copies and the host driver (compress_batch on exec::Host) for the
/// codec, and host loops for a reduction's extent and combine. It is how the device collectives' staging
/// is tested without a GPU; on the host it also compresses a call's blocks as one batch. Its device
/// areas are host memory, which every transport takes: with device_transfer::direct a call hands the
/// transport its device_wire areas, the steps of a call over CUDA-aware MPI (automatic, the default, does
/// so only where the transport says it takes device memory).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/add.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/collective/staging.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/half_value.hpp"
#include "zcoll/core/reduce_op.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll {

class HostStaging {
 public:
  /// `exec` runs the codec (its threads compress each stream; the bytes do not depend on them);
  /// `transfer` says where the compressed bytes meet the transport (staging.hpp).
  explicit HostStaging(exec::Host exec = {}, device_transfer transfer = device_transfer::automatic)
      : exec_(exec), transfer_(transfer) {}

  static constexpr bool device_memory_is_host_memory = true;
  device_transfer transfer() const { return transfer_; }

  std::span<std::byte> area(staging_area which, std::size_t bytes) {
    std::vector<std::byte>& buffer = areas_[static_cast<std::size_t>(which)];
    if (buffer.size() < bytes) buffer.resize(bytes);
    return std::span<std::byte>(buffer).first(bytes);
  }

  void copy(std::span<std::byte> to, std::span<const std::byte> from) {
    if (to.size() != from.size()) {
      throw argument_error("HostStaging::copy: " + std::to_string(from.size()) + " bytes into " + std::to_string(to.size()));
    }
    if (!from.empty()) std::memcpy(to.data(), from.data(), from.size());
  }

  void wait() {}  // every step ran when it was called

  static constexpr std::size_t max_batch_streams() { return ~std::size_t{0}; }
  bool& in_use() { return in_use_; }

  template <codec C>
  std::size_t workspace_bytes(const C&, std::span<const std::size_t>) const {
    return 0;
  }

  /// Writes the streams of `counts` values back to back in `out` and their sizes in `sizes`; a codec
  /// that refuses the values raises its argument_error here.
  template <codec C, floating_value T>
  void compress(const C& codec, std::span<const T> values, std::span<const std::size_t> counts, std::span<std::byte> out,
                std::span<std::byte>, std::span<std::uint64_t> sizes) {
    compress_batch(exec_, codec, values, counts, out, sizes);
  }

  template <codec C>
  void check_compressed(const C&, std::span<const std::byte>, std::size_t) const {}  // compress raised already

  /// Decodes stream s, sizes[s] bytes at offsets[s] of `in`, into the next counts[s] values of `values`;
  /// returns the first stream that did not decode.
  template <codec C, floating_value T>
  std::optional<batch_fault> decompress(const C& codec, std::span<const std::byte> in, std::span<const std::uint64_t> offsets,
                                        std::span<const std::uint64_t> sizes, std::span<T> values,
                                        std::span<const std::size_t> counts, std::span<std::byte>) {
    std::size_t first = 0;
    for (std::size_t s = 0; s < counts.size(); ++s) {
      try {
        codec.decompress(exec_, in.subspan(offsets[s], sizes[s]), values.subspan(first, counts[s]));
      } catch (const error& e) {  // format_error, or argument_error for a stream of another length
        return batch_fault{s, e.what()};
      }
      first += counts[s];
    }
    return std::nullopt;
  }

  /// The smallest and largest finite value other than the fill value (lowest > highest: none).
  template <floating_value T>
  value_extent<double> extent(std::span<const T> values, std::optional<bits_of<T>> fill_bits) const {
    const value_extent<T> found = find_value_extent(exec_, values, fill_bits);
    return {found.lowest, found.highest};
  }

  /// target = op(target, incoming) element-wise (a copy of incoming where `reduce` is false).
  template <floating_value T, class Op>
  void combine(Op op, std::span<T> target, std::span<const T> incoming, bool reduce) {
    check_staging_lengths("HostStaging::combine", incoming.size(), target.size());
    detail::combine_into(target.data(), incoming.data(), target.size(), reduce, op);
  }

  /// The stream of a + b (zcoll::add) from streams a and b of `count` values, into `out`; returns the sum.
  template <floating_value T, codec C>
  std::span<std::byte> add(const C& codec, std::span<const std::byte> a, std::span<const std::byte> b, std::span<std::byte> out,
                           std::size_t) {
    return zcoll::add(exec_, codec, a, b, out);
  }

  /// 16-bit values widened to float, and float values rounded to 16 bits (returns the largest rounding).
  template <half_value H>
  void widen(std::span<const H> from, std::span<float> to) {
    check_staging_lengths("HostStaging::widen", from.size(), to.size());
    zcoll::widen<H>(from, to);
  }
  template <half_value H>
  double narrow(std::span<const float> from, std::span<H> to) {
    check_staging_lengths("HostStaging::narrow", from.size(), to.size());
    return zcoll::narrow<H>(from, to);
  }

 private:
  exec::Host exec_;
  device_transfer transfer_;
  std::array<std::vector<std::byte>, staging_areas> areas_;
  bool in_use_ = false;
};

}  // namespace zcoll
