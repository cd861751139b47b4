#pragma once
// SZ3 and SZp as reference rows of `zcoll-bench codec --reference sz3,szp`, built from unmodified source
// folders when CMake is given them (ZCOLL_SZ3_DIR, ZCOLL_SZP_DIR; ZCOLL_BENCH_HAS_SZ3 / _SZP). Each lives
// in its own translation unit (sz_references.cpp), compiled with -ffp-contract=off: SZ3 built with FMA
// contraction broke its own bound (its compressor and decompressor contracted a*b+c differently). Both
// run on one thread, on an absolute bound in the data's units; the bench checks every value and shows a
// break without failing the run for it.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace zcoll_bench {

/// SZ3 (interpolation and Lorenzo predictors, Huffman, zstd: its default ALGO_INTERP_LORENZO) on the
/// data's shape, slowest extent first as --dims, at an absolute bound; the stream stays in the object.
template <class T>
class sz3_reference {
 public:
  sz3_reference(std::span<const std::size_t> shape, std::size_t count, double absolute_bound);
  std::string name() const { return "sz3"; }
  /// The compressed size of `values`.
  std::size_t compress(std::span<const T> values);
  /// The values of the stream `compress` wrote last.
  void decompress(std::span<T> out);

 private:
  std::vector<std::size_t> shape_;
  double bound_;
  std::vector<char> stream_;
  std::size_t written_ = 0;
};

/// SZp, the reference fZ-light (ZCCL's compressor: quantization, 1-D Lorenzo, bit-plane blocks of 128),
/// serial (its OpenMP team set to one thread for the call), at an absolute bound.
template <class T>
class szp_reference {
 public:
  explicit szp_reference(double absolute_bound) : bound_(absolute_bound) {}
  std::string name() const { return "szp"; }
  std::size_t compress(std::span<const T> values);
  void decompress(std::span<T> out);

 private:
  struct free_deleter {
    void operator()(void* p) const;
  };
  double bound_;
  std::unique_ptr<unsigned char, free_deleter> stream_;
  std::size_t written_ = 0;
  std::size_t count_ = 0;
};

}  // namespace zcoll_bench
