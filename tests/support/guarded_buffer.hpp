#pragma once
/// Buffers that end at an inaccessible page: reading or writing one byte past the end faults at once,
/// whatever instructions do it (masked vector loads and stores included, which the sanitizers do not
/// instrument). POSIX only; elsewhere `guarded_buffer::available` is false and tests skip.

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <span>

#if __has_include(<sys/mman.h>) && __has_include(<unistd.h>)
#include <sys/mman.h>
#include <unistd.h>
#define ZCOLL_TEST_HAS_GUARD_PAGES 1
#else
#define ZCOLL_TEST_HAS_GUARD_PAGES 0
#endif

namespace zcoll_test {

/// `size_bytes` bytes whose last byte is the last one before a PROT_NONE page.
template <class T = std::byte>
class guarded_buffer {
 public:
  static constexpr bool available = ZCOLL_TEST_HAS_GUARD_PAGES != 0;

  explicit guarded_buffer(std::size_t count) : count_(count) {
#if ZCOLL_TEST_HAS_GUARD_PAGES
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = count * sizeof(T);
    const std::size_t data_pages = (bytes + page - 1) / page + 1;
    mapped_bytes_ = (data_pages + 1) * page;
    void* base = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base != MAP_FAILED);
    base_ = static_cast<std::byte*>(base);
    REQUIRE(mprotect(base_ + data_pages * page, page, PROT_NONE) == 0);
    data_ = reinterpret_cast<T*>(base_ + data_pages * page - bytes);
#endif
  }
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;
  ~guarded_buffer() {
#if ZCOLL_TEST_HAS_GUARD_PAGES
    if (base_ != nullptr) munmap(base_, mapped_bytes_);
#endif
  }

  std::span<T> span() { return {data_, count_}; }

  /// A copy of `source` that ends at the guard page.
  static guarded_buffer copy_of(std::span<const T> source) {
    guarded_buffer b(source.size());
    if (!source.empty()) std::memcpy(b.data_, source.data(), source.size_bytes());
    return b;
  }
  guarded_buffer(guarded_buffer&& other) noexcept
      : count_(other.count_), mapped_bytes_(other.mapped_bytes_), base_(other.base_), data_(other.data_) {
    other.base_ = nullptr;
  }

 private:
  std::size_t count_ = 0;
  std::size_t mapped_bytes_ = 0;
  std::byte* base_ = nullptr;
  T* data_ = nullptr;
};

}  // namespace zcoll_test
