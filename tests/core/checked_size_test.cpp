// Hostile sizes (core/checked_size.hpp and every entry point that multiplies caller counts): counts near
// SIZE_MAX / sizeof(T), stream headers that claim 2^40 values with a 100-byte body, per-rank counts whose
// sums wrap. Each must raise an error and allocate nothing unreasonable: this executable records the
// largest single allocation made during each hostile call (AddressSanitizer's allocation hook where it
// runs, a replaced global operator new elsewhere).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZCOLL_HAS_FEATURE_ASAN 1
#endif
#endif
#ifndef ZCOLL_HAS_FEATURE_ASAN
#define ZCOLL_HAS_FEATURE_ASAN 0
#endif

#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
#include "support/faulty_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "fuzz_codecs.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

namespace {
std::atomic<std::size_t> largest_allocation{0};

void record_allocation(std::size_t bytes) {
  std::size_t seen = largest_allocation.load(std::memory_order_relaxed);
  while (bytes > seen && !largest_allocation.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || ZCOLL_HAS_FEATURE_ASAN
// Under AddressSanitizer, which owns operator new and malloc, its allocation hook sees every allocation.
// (declared here: GCC ships no <sanitizer/allocator_interface.h>; both runtimes export the function)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void*, std::size_t),
                                                         void (*on_free)(const volatile void*));
namespace {
void on_malloc(const volatile void*, std::size_t bytes) { record_allocation(bytes); }
void on_free(const volatile void*) {}
const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}  // namespace
#else
// Elsewhere every operator new of the program goes through this one (the others forward to it).
void* operator new(std::size_t bytes) {
  record_allocation(bytes);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace {

constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();
constexpr std::size_t reasonable_bytes = std::size_t{1} << 20;  // what a hostile call may allocate at most

/// Runs `call`, which must throw E, and returns the largest allocation it made.
template <class E, class Fn>
std::size_t largest_allocation_of_failing(Fn&& call) {
  largest_allocation = 0;
  CHECK_THROWS_AS(call(), E);
  return largest_allocation.load();
}

/// A real stream of 160 values from the registered codec, for patching.
template <class Entry>
std::vector<std::byte> stream_of_160() {
  const typename Entry::type codec{zcoll_fuzz::config_for<Entry>(1e-3)};
  std::vector<float> values(160);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 17) * 0.25f;
  std::vector<std::byte> stream(codec.template max_compressed_size<float>(values.size()));
  const auto written = codec.compress(zcoll::exec::Host{}, std::span<const float>(values), std::span<std::byte>(stream));
  stream.resize(written.size());
  return stream;
}

template <class Entry>
void check_codec() {
  INFO("codec " << Entry::name);
  const typename Entry::type codec{zcoll_fuzz::config_for<Entry>(1e-3)};
  // Counts near SIZE_MAX / sizeof(T) (multiples of every row length the codecs take): an argument_error,
  // or a bound that did not wrap. Every codec's worst case spends at least a bit per value (a cast to
  // FP8 a byte, Int2 two bits, top-K's bitmap one), so a wrapped bound shows as one under count / 8.
  const auto no_wrap = [&]<class T>(T, std::size_t count) {
    INFO("count " << count << ", " << sizeof(T) << "-byte values");
    std::size_t bound = size_max;  // stays so when the codec refuses the count, with a message: fine
    try {
      bound = codec.template max_compressed_size<T>(count);
    } catch (const zcoll::argument_error&) {
    }
    CHECK(bound >= count / 8);
  };
  for (const std::size_t count : {size_max / 8 + 1, size_max / 4 + 1, size_max / 2, size_max - 15, std::size_t{1} << 40}) {
    no_wrap(0.0f, count);
    no_wrap(0.0, count);
  }

  // A header that claims 2^40 values (and 2^40 / 32 values, still far more than the body holds), with
  // the real body and with the body cut to 100 bytes: format_error, before anything large is allocated.
  const auto real = stream_of_160<Entry>();
  for (const std::uint64_t claimed : {std::uint64_t{1} << 40, std::uint64_t{1} << 35, ~std::uint64_t{0}}) {
    for (const std::size_t length : {real.size(), std::min<std::size_t>(real.size(), 100)}) {
      INFO("claimed count " << claimed << ", stream of " << length << " bytes");
      std::vector<std::byte> hostile(real.begin(), real.begin() + static_cast<std::ptrdiff_t>(length));
      std::memcpy(hostile.data() + 16, &claimed, sizeof claimed);  // stream_header::count (core/stream_header.hpp)
      CHECK(largest_allocation_of_failing<zcoll::format_error>([&] { zcoll_fuzz::decode<Entry>(hostile); }) <
            reasonable_bytes);
    }
  }
}

}  // namespace

TEST_CASE("The allocation probe sees what is allocated (the control of the measurements below)", "[core][checked_size]") {
  largest_allocation = 0;
  auto big = std::make_unique<std::vector<std::byte>>(2 * reasonable_bytes);
  CHECK(largest_allocation.load() >= 2 * reasonable_bytes);
}

TEST_CASE("checked_multiply and checked_add refuse to wrap and name the call", "[core][checked_size]") {
  CHECK(zcoll::checked_multiply(size_max / 4, 4, "f", "n") == size_max / 4 * 4);
  CHECK(zcoll::checked_add(size_max - 1, 1, "f", "n") == size_max);
  CHECK_THROWS_WITH(zcoll::checked_multiply(size_max / 4 + 1, 4, "max_compressed_size", "count"),
                    Catch::Contains("max_compressed_size: count 4611686018427387904 x 4 exceeds the addressable size"));
  CHECK_THROWS_AS(zcoll::checked_add(size_max, 1, "f", "n"), zcoll::argument_error);
  CHECK(zcoll::checked_multiply(0, size_max, "f", "n") == 0);
}

TEST_CASE("Every codec: counts near SIZE_MAX / sizeof(T) and headers that claim 2^40 values are errors, "
          "with no large allocation",
          "[codec][checked_size]") {
  zcoll::for_each_registered_codec([]<class Entry>() { check_codec<Entry>(); });
}

TEST_CASE("Collectives: per-rank counts whose product or sum wraps are argument errors on every rank, before "
          "any message",
          "[collective][checked_size]") {
  using zcoll::transport::Local;
  zcoll::transport::run_local(3, [](Local& t) {
    zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1e-3)}}};
    zcoll::Compressed<zcoll::BinomialTree, zcoll::FZLight> tree{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1e-3)}}};
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1e-3)}}};
    std::vector<float> small(8);
    // The error each call raises (never wrap a collective in a locked assertion: the lock would be held
    // while the other ranks need it).
    const auto error_of = [](auto&& call) { return zcoll_test::error_of<zcoll::argument_error>(call); };
    // mine.size() x 3 ranks wraps to 2 (2^64 / 3 rounded up, times 3, is 2^64 + 2): `all` of 2 values must
    // not pass for it. The spans are never read: the calls fail first, on every rank.
    const volatile std::size_t hidden = size_max / 3 + 1;  // volatile: the optimiser must not see a copy
    const std::size_t wraps = hidden;                     // of 2^64 / 3 values and warn about it
    const std::span<const float> huge_mine(small.data(), wraps);
    const std::span<float> two(small.data(), 2), huge_out(small.data(), wraps);
    const std::string wrapped = "exceeds the addressable size";
    const std::string errors[] = {
        error_of([&] { ring.allgather(huge_mine, two); }),
        error_of([&] { tree.scatter(std::span<const float>(two), huge_out, 0); }),
        error_of([&] { tree.gather(huge_mine, two, 0); }),
        error_of([&] { ring.reduce_scatter(std::span<const float>(two), huge_out, zcoll::op::sum); }),
    };
    for (const auto& e : errors) {
      if (e.find(wrapped) == std::string::npos) FAIL("rank " << t.rank() << ": " << e);
    }
    // Counts that add up to 8 modulo 2^64.
    const std::vector<std::size_t> wrapping = {size_max, 5, 4}, fine = {3, 3, 2};
    const std::string counts = error_of([&] {
      pairwise.alltoallv(std::span<const float>(small), std::span<const std::size_t>(wrapping), std::span<float>(small),
                         std::span<const std::size_t>(fine));
    });
    if (counts.find("send_counts") == std::string::npos || counts.find(wrapped) == std::string::npos) {
      FAIL("rank " << t.rank() << ": " << counts);
    }
  });
}
