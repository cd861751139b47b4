#pragma once
/// Helpers shared by the zcoll tests: seeded random data, bit-exact comparison, the element-wise bound
/// check, stream-header pokes, and a round trip that guards the caller's buffers with canaries.

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "zcoll/zcoll.hpp"

namespace zcoll_test {

/// Every random test draws from this seed (or a fixed offset of it), so a failure reproduces.
inline constexpr std::uint64_t seed = 0x5A43'4F4C'2024'0001ull;

template <zcoll::floating_value T>
zcoll::bits_of<T> bits(T x) {
  return std::bit_cast<zcoll::bits_of<T>>(x);
}

template <zcoll::floating_value T>
bool same_bits(T a, T b) {
  return bits(a) == bits(b);
}

template <zcoll::floating_value T>
const char* type_name() {
  return std::is_same_v<T, float> ? "float" : "double";
}

/// Byte offsets of the stream-header fields (core/stream_header.hpp).
namespace offset {
inline constexpr std::size_t magic = 0, version = 4, codec_kind = 5, value_type = 6, flags = 7, quantizer = 8,
                             predictor = 9, encoder = 10, backend = 11, reserved = 12, count = 16, error_bound = 24,
                             fill = 32, chunk_values = 40, chunk_count = 44, index = 48;
}

template <class V>
void poke(std::span<std::byte> bytes, std::size_t at, V value) {
  REQUIRE(at + sizeof(V) <= bytes.size());
  std::memcpy(bytes.data() + at, &value, sizeof(V));
}

template <class V>
V peek(std::span<const std::byte> bytes, std::size_t at) {
  REQUIRE(at + sizeof(V) <= bytes.size());
  V value;
  std::memcpy(&value, bytes.data() + at, sizeof(V));
  return value;
}

/// The bytes of `h` as write_stream_header writes them, followed by `tail_bytes` zero bytes.
inline std::vector<std::byte> header_bytes(const zcoll::stream_header& h, std::size_t tail_bytes = 0) {
  std::vector<std::byte> bytes(zcoll::stream_header_size_bytes + tail_bytes);
  zcoll::byte_writer out(bytes);
  zcoll::write_stream_header(out, h);
  REQUIRE(out.offset() == zcoll::stream_header_size_bytes);
  return bytes;
}

/// max - min of the finite values that are not `fill`, in double rounded toward zero (the range a
/// relative bound may use without exceeding fraction * (max - min)); 0 when there is none. A plain loop
/// and the FPU's own directed rounding, independent of zcoll::find_value_extent and its TwoSum.
template <zcoll::floating_value T>
double reference_range(std::span<const T> values, std::optional<zcoll::bits_of<T>> fill = std::nullopt) {
  bool any = false;
  T lo = 0, hi = 0;
  for (const T x : values) {
    if (!std::isfinite(x) || (fill && bits(x) == *fill)) continue;
    if (!any || x < lo) lo = x;
    if (!any || x > hi) hi = x;
    any = true;
  }
  if (!any) return 0.0;
  const int mode = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  // volatile operands and result: the subtraction happens at run time, under the mode just set, and
  // cannot be moved past the restore below.
  volatile double high = hi, low = lo;
  volatile double range = high - low;
  std::fesetround(mode);
  return range;
}

/// The first element that breaks the contract, if any: finite non-fill values must be within `bound`
/// exactly; NaN, ±Inf and fill values must come back bit for bit.
template <zcoll::floating_value T>
std::optional<std::size_t> first_violation(std::span<const T> original, std::span<const T> restored, double bound,
                                           std::optional<zcoll::bits_of<T>> fill = std::nullopt) {
  REQUIRE(original.size() == restored.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    const T x = original[i], y = restored[i];
    if (!std::isfinite(x) || (fill && bits(x) == *fill)) {
      if (!same_bits(x, y)) return i;
    } else if (!zcoll::exactly_within(x, y, bound)) {
      return i;
    }
  }
  return std::nullopt;
}

/// Fails the test with the offending element when first_violation finds one.
template <zcoll::floating_value T>
void require_bound_on_every_element(std::span<const T> original, std::span<const T> restored, double bound,
                                    std::optional<zcoll::bits_of<T>> fill = std::nullopt) {
  const auto bad = first_violation(original, restored, bound, fill);
  if (bad) {
    INFO("element " << *bad << ": original " << original[*bad] << " (bits " << std::hex << bits(original[*bad])
                    << "), restored " << restored[*bad] << " (bits " << bits(restored[*bad]) << std::dec
                    << "), bound " << bound);
    FAIL("the error bound does not hold on every element");
  }
}

template <zcoll::floating_value T>
void require_bit_identical(std::span<const T> original, std::span<const T> restored) {
  REQUIRE(original.size() == restored.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    if (!same_bits(original[i], restored[i])) {
      INFO("element " << i << ": original bits " << std::hex << bits(original[i]) << ", restored bits "
                      << bits(restored[i]));
      FAIL("lossless round trip is not bit-identical");
    }
  }
}

inline constexpr std::byte canary{0xA5};
inline constexpr std::size_t canary_bytes = 64;

/// A stream and its decompressed values, produced by compress/decompress into exactly-sized spans that
/// sit inside larger buffers whose canary bytes must survive.
template <zcoll::floating_value T>
struct round_trip_result {
  std::vector<std::byte> stream;
  std::vector<T> restored;
  zcoll::stream_header header;
};

template <class Codec, zcoll::floating_value T>
round_trip_result<T> round_trip(const Codec& codec, std::span<const T> in, zcoll::exec::Host compress_exec = {},
                                zcoll::exec::Host decompress_exec = {}) {
  const std::size_t max_bytes = codec.template max_compressed_size<T>(in.size());
  std::vector<std::byte> buffer(max_bytes + 2 * canary_bytes, canary);
  const std::span<std::byte> out(buffer.data() + canary_bytes, max_bytes);
  const auto written = codec.compress(compress_exec, in, out);
  REQUIRE(written.data() == out.data());
  REQUIRE(written.size() <= max_bytes);
  for (std::size_t i = 0; i < canary_bytes; ++i) {
    REQUIRE(buffer[i] == canary);
    REQUIRE(buffer[canary_bytes + max_bytes + i] == canary);
  }
  round_trip_result<T> r;
  r.stream.assign(written.begin(), written.end());
  r.header = zcoll::read_stream_header(r.stream);

  // Decompress into a span inside a larger buffer whose guard values must stay untouched.
  constexpr std::size_t guard = 16;
  const T guard_value = std::bit_cast<T>(static_cast<zcoll::bits_of<T>>(0x7FF4'1234'7FA5'4321ull));  // a NaN
  std::vector<T> values(in.size() + 2 * guard, guard_value);
  codec.decompress(decompress_exec, std::span<const std::byte>(r.stream), std::span<T>(values.data() + guard, in.size()));
  for (std::size_t i = 0; i < guard; ++i) {
    REQUIRE(same_bits(values[i], guard_value));
    REQUIRE(same_bits(values[guard + in.size() + i], guard_value));
  }
  r.restored.assign(values.begin() + guard, values.begin() + static_cast<std::ptrdiff_t>(guard + in.size()));
  return r;
}

/// Smooth data with every kind of exception a stream can hold: fill runs (block-aligned, spanning chunk
/// boundaries, partial), isolated fill points, NaN and ±Inf outliers, values beyond the code range, and a
/// stretch of random huge values, infinities and NaN payloads (the last fifth) whose chunks are stored
/// verbatim at small absolute bounds. With `extremes` false there are no 1e30 values and no random bit patterns, so
/// the range of the finite non-fill values stays near 46 and relative bounds mean something.
template <zcoll::floating_value T>
std::vector<T> mixed_input(std::size_t n, T fill, bool extremes = true, std::uint64_t seed_offset = 0) {
  std::mt19937_64 rng(seed + seed_offset);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    v[i] = static_cast<T>(20.0 * std::sin(0.013 * t) + 3.0 * std::cos(0.11 * t) + 1e-3 * static_cast<double>(rng() % 1000));
  }
  auto fill_range = [&](std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < std::min(n, first + count); ++i) v[i] = fill;
  };
  fill_range(64, 256);          // whole blocks
  fill_range(1000, 77);         // partial blocks at both ends
  fill_range(n / 2 - 300, 600); // across a chunk boundary for chunk lengths up to n / 2
  for (std::size_t i = 5; i < n; i += 211) v[i] = fill;  // isolated points
  for (std::size_t i = 17; i < n; i += 389) v[i] = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t i = 29; i < n; i += 503) v[i] = (i % 2 ? 1 : -1) * std::numeric_limits<T>::infinity();
  if (!extremes) return v;
  for (std::size_t i = 41; i < n; i += 997) v[i] = static_cast<T>(1e30);
  // Random bit patterns with a large exponent: huge values, ±Inf and NaN of any payload, all of them
  // outliers at any small absolute bound, so their chunks cost more coded than verbatim.
  using bits = zcoll::bits_of<T>;
  constexpr int mantissa_bits = std::numeric_limits<T>::digits - 1;
  constexpr bits exponent_mask = std::bit_cast<bits>(std::numeric_limits<T>::infinity());
  constexpr bits top_exponent = exponent_mask >> mantissa_bits;
  const std::size_t noise_first = n - std::min(n, n / 5);
  for (std::size_t i = noise_first; i < n; ++i) {
    const auto exponent = static_cast<bits>(top_exponent - rng() % (top_exponent / 4));
    v[i] = std::bit_cast<T>(static_cast<bits>((static_cast<bits>(rng()) & ~exponent_mask) | (exponent << mantissa_bits)));
  }
  return v;
}

/// The folder of real data sets, or nothing (with a warning) when it is absent.
inline std::optional<std::filesystem::path> data_dir() {
#ifdef ZCOLL_TEST_DATA_DIR
  const std::filesystem::path dir(ZCOLL_TEST_DATA_DIR);
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return dir;
  WARN("real-data folder " << dir.string() << " is absent: data tests skipped");
#else
  WARN("ZCOLL_TEST_DATA_DIR is not defined for this source (tests/CMakeLists.txt): data tests skipped");
#endif
  return std::nullopt;
}

template <zcoll::floating_value T>
std::vector<T> read_raw(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  REQUIRE(file.good());
  const auto size_bytes = static_cast<std::size_t>(std::filesystem::file_size(path));
  REQUIRE(size_bytes % sizeof(T) == 0);
  std::vector<T> values(size_bytes / sizeof(T));
  file.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(size_bytes));
  REQUIRE(file.good());
  return values;
}

}  // namespace zcoll_test
