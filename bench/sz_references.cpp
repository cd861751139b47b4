// The SZ3 and SZp reference rows (sz_references.hpp). Each half compiles only when CMake found the
// source folder it needs.
#include "sz_references.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if ZCOLL_BENCH_HAS_SZ3
#include <SZ3/api/sz.hpp>
#endif
#if ZCOLL_BENCH_HAS_SZP
#include <omp.h>
#include <szp.h>
#include <szp_defines.h>
#endif

namespace zcoll_bench {

#if ZCOLL_BENCH_HAS_SZ3
template <class T>
sz3_reference<T>::sz3_reference(std::span<const std::size_t> shape, std::size_t count, double absolute_bound)
    : shape_(shape.begin(), shape.end()), bound_(absolute_bound) {
  if (shape_.empty()) shape_.push_back(count);
  std::size_t product = 1;
  for (const auto extent : shape_) product *= extent;
  if (product != count) throw std::invalid_argument("sz3: the shape does not hold the data's values");
}

template <class T>
std::size_t sz3_reference<T>::compress(std::span<const T> values) {
  SZ3::Config config;
  config.setDims(shape_.begin(), shape_.end());
  config.errorBoundMode = SZ3::EB_ABS;
  config.absErrorBound = bound_;
  stream_.resize(SZ_compress_size_bound<T>(config));
  written_ = SZ_compress(config, values.data(), stream_.data(), stream_.size());
  return written_;
}

template <class T>
void sz3_reference<T>::decompress(std::span<T> out) {
  SZ3::Config config;
  T* data = out.data();
  SZ_decompress<T>(config, stream_.data(), written_, data);
  if (config.num != out.size()) throw std::runtime_error("sz3: the stream holds another number of values");
}

template class sz3_reference<float>;
template class sz3_reference<double>;
#endif

#if ZCOLL_BENCH_HAS_SZP
template <class T>
void szp_reference<T>::free_deleter::operator()(void* p) const {
  std::free(p);
}

namespace {
/// SZp's OpenMP team set to one thread for the lifetime of the object.
class one_omp_thread {
 public:
  one_omp_thread() : before_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~one_omp_thread() { omp_set_num_threads(before_); }
  one_omp_thread(const one_omp_thread&) = delete;
  one_omp_thread& operator=(const one_omp_thread&) = delete;

 private:
  int before_;
};
constexpr int szp_block_size = 128;
}  // namespace

template <class T>
std::size_t szp_reference<T>::compress(std::span<const T> values) {
  const one_omp_thread serial;
  constexpr int type = sizeof(T) == 4 ? SZ_FLOAT : SZ_DOUBLE;
  std::size_t size = 0;
  // SZp reads, never writes, the data it compresses; its interface has no const pointer.
  unsigned char* bytes = szp_compress(SZP_NONRANDOMACCESS, type, const_cast<T*>(values.data()), &size, ABS, bound_, 0.0,
                                      values.size(), szp_block_size);
  if (bytes == nullptr) throw std::runtime_error("szp: szp_compress failed");
  stream_.reset(bytes);
  written_ = size;
  count_ = values.size();
  return size;
}

template <class T>
void szp_reference<T>::decompress(std::span<T> out) {
  const one_omp_thread serial;
  constexpr int type = sizeof(T) == 4 ? SZ_FLOAT : SZ_DOUBLE;
  if (out.size() != count_) throw std::invalid_argument("szp: out holds another number of values");
  void* data = szp_decompress(SZP_NONRANDOMACCESS, type, stream_.get(), written_, out.size(), szp_block_size);
  if (data == nullptr) throw std::runtime_error("szp: szp_decompress failed");
  std::memcpy(out.data(), data, out.size_bytes());
  std::free(data);
}

template class szp_reference<float>;
template class szp_reference<double>;
#endif

}  // namespace zcoll_bench
