#pragma once
// Reference compressors for `zcoll-bench codec --reference` that are not lossless byte coders: ZFP in
// fixed-accuracy mode (Debian libzfp-dev), present only when the build found it (ZCOLL_BENCH_HAS_ZFP,
// set by bench/CMakeLists.txt). ZFP is lossy and works on the field's shape, so it does not fit
// byte_coder. Its tolerance is a target its transform almost always meets, not a promise like zcoll's
// bounds: the bench checks every value against it and shows a break, without failing the run for it.

#include <bit>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "byte_coders.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"

#if ZCOLL_BENCH_HAS_ZFP
#include <zfp.h>
#endif

namespace zcoll_bench {

/// The bound of a reference row in the data's units: a relative one over the finite, non-fill values,
/// as zcoll's codecs and the quantized reference take it.
template <zcoll::floating_value T>
double reference_error_bound(const zcoll::bound& bound, std::span<const T> values, std::optional<double> fill_value) {
  if (bound.mode == zcoll::bound_mode::absolute) return bound.value;
  const auto fill = zcoll::fill_bits_of<T>(fill_value);
  return zcoll::absolute_bound(bound, zcoll::find_value_extent(zcoll::exec::Host{1}, values, fill).range());
}

#if ZCOLL_BENCH_HAS_ZFP
/// ZFP's extents for a C-order shape (slowest first, as --dims): reversed, since ZFP's x is the fastest
/// axis, without extents of 1 (a 1 x N field is 1-D to ZFP's blocks), and with the slowest extents
/// folded into one when more than ZFP's four remain. An empty shape is one axis of `count` values.
inline std::vector<std::size_t> zfp_extents(std::span<const std::size_t> shape, std::size_t count) {
  constexpr std::size_t zfp_max_dims = 4;
  std::size_t product = 1;
  for (const auto extent : shape) product *= extent;
  if (!shape.empty() && product != count) {
    throw std::invalid_argument("zfp: the shape holds " + std::to_string(product) + " values, the data " +
                                std::to_string(count));
  }
  std::vector<std::size_t> fastest_first;
  for (auto extent = shape.rbegin(); extent != shape.rend(); ++extent) {
    if (*extent == 1) continue;
    if (fastest_first.size() == zfp_max_dims) {
      fastest_first.back() *= *extent;
    } else {
      fastest_first.push_back(*extent);
    }
  }
  if (fastest_first.empty()) fastest_first.push_back(count);
  return fastest_first;
}

/// One field through ZFP's fixed-accuracy mode and back, serially, into a stream buffer it owns (sized
/// at construction with zfp_stream_maximum_size, so a timed call allocates nothing). The stream holds
/// ZFP's blocks only, no ZFP header: the shape and tolerance stay in this object.
///
///   zfp_accuracy_reference<float> zfp(shape, values.size(), 0.01);
///   const std::size_t bytes = zfp.compress(values);
///   zfp.decompress(restored);  // the stream compress wrote last
template <zcoll::floating_value T>
class zfp_accuracy_reference {
 public:
  zfp_accuracy_reference(std::span<const std::size_t> shape, std::size_t count, double tolerance)
      : count_(count), extents_(zfp_extents(shape, count)), field_(make_field(extents_)) {
    stream_.reset(zfp_stream_open(nullptr));
    if (!stream_) throw std::runtime_error("zfp: zfp_stream_open failed");
    // ZFP rounds the tolerance down to a power of two (its minimum bit plane); the row keeps the one asked for.
    zfp_stream_set_accuracy(stream_.get(), tolerance);
    if (!zfp_stream_set_execution(stream_.get(), zfp_exec_serial)) {
      throw std::runtime_error("zfp: zfp_stream_set_execution(serial) failed");
    }
    buffer_.resize(zfp_stream_maximum_size(stream_.get(), field_.get()));
    bits_.reset(stream_open(buffer_.data(), buffer_.size()));
    if (!bits_) throw std::runtime_error("zfp: stream_open failed");
    zfp_stream_set_bit_stream(stream_.get(), bits_.get());
  }

  /// "zfp-accuracy-3d": the dimensionality ZFP ran on.
  std::string name() const { return "zfp-accuracy-" + std::to_string(extents_.size()) + "d"; }

  /// The compressed size of `values` (count values); the stream stays in this object.
  std::size_t compress(std::span<const T> values) {
    check_count(values.size());
    // ZFP reads, never writes, the field it compresses; its field struct has no const pointer.
    zfp_field_set_pointer(field_.get(), const_cast<T*>(values.data()));
    zfp_stream_rewind(stream_.get());
    const std::size_t written = zfp_compress(stream_.get(), field_.get());
    if (written == 0) throw std::runtime_error("zfp: zfp_compress failed");
    return written;
  }

  /// The values of the stream `compress` wrote last, into `out` (count values).
  void decompress(std::span<T> out) {
    check_count(out.size());
    zfp_field_set_pointer(field_.get(), out.data());
    zfp_stream_rewind(stream_.get());
    if (zfp_decompress(stream_.get(), field_.get()) == 0) throw std::runtime_error("zfp: zfp_decompress failed");
  }

 private:
  struct field_deleter {
    void operator()(zfp_field* field) const { zfp_field_free(field); }
  };
  struct stream_deleter {
    void operator()(zfp_stream* stream) const { zfp_stream_close(stream); }
  };
  struct bits_deleter {
    void operator()(bitstream* bits) const { stream_close(bits); }
  };

  static std::unique_ptr<zfp_field, field_deleter> make_field(const std::vector<std::size_t>& x_first) {
    constexpr zfp_type type = sizeof(T) == 4 ? zfp_type_float : zfp_type_double;
    zfp_field* field = nullptr;
    switch (x_first.size()) {
      case 1: field = zfp_field_1d(nullptr, type, x_first[0]); break;
      case 2: field = zfp_field_2d(nullptr, type, x_first[0], x_first[1]); break;
      case 3: field = zfp_field_3d(nullptr, type, x_first[0], x_first[1], x_first[2]); break;
      default: field = zfp_field_4d(nullptr, type, x_first[0], x_first[1], x_first[2], x_first[3]); break;
    }
    if (!field) throw std::runtime_error("zfp: cannot allocate the field");
    return std::unique_ptr<zfp_field, field_deleter>(field);
  }

  void check_count(std::size_t n) const {
    if (n != count_) {
      throw std::invalid_argument("zfp: " + std::to_string(n) + " values, sized for " + std::to_string(count_));
    }
  }

  std::size_t count_;
  std::vector<std::size_t> extents_;  ///< x (fastest) first
  std::unique_ptr<zfp_field, field_deleter> field_;
  std::unique_ptr<zfp_stream, stream_deleter> stream_;
  std::vector<std::byte> buffer_;
  std::unique_ptr<bitstream, bits_deleter> bits_;
};
#endif

/// The reference rows this build lacks, and why: the byte coders', then ZFP's, SZ3's and SZp's.
inline std::vector<missing_coder> missing_references() {
  auto missing = missing_byte_coders();
#if !ZCOLL_BENCH_HAS_ZFP
  missing.push_back({"zfp", "zfp (libzfp was not found when zcoll-bench was built; install libzfp-dev)"});
#endif
#if !ZCOLL_BENCH_HAS_SZ3
  missing.push_back({"sz3", "sz3 (no SZ3 source folder when zcoll-bench was built; configure with -DZCOLL_SZ3_DIR=...)"});
#endif
#if !ZCOLL_BENCH_HAS_SZP
  missing.push_back({"szp", "szp (no SZp source folder or OpenMP when zcoll-bench was built; configure with -DZCOLL_SZP_DIR=...)"});
#endif
  return missing;
}

}  // namespace zcoll_bench
