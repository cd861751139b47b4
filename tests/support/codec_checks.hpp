#pragma once
/// The checks every codec round trip makes: header fields, the stated bound, and the bound on every element.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/zcoll.hpp"

namespace zcoll_test {

/// The absolute bound the header must state for `b` over `data`: the configured value for an absolute
/// bound, fraction * range (of the finite non-fill values, from a plain loop) rounded down for a relative
/// one; 0 when the quantizer cannot honour it in T.
template <class T>
double expected_header_bound(const zcoll::bound& b, std::span<const T> data,
                             std::optional<zcoll::bits_of<T>> fill = std::nullopt) {
  const double eb = zcoll::absolute_bound(b, reference_range(data, fill));
  return zcoll::quantize::Linear::block_quantizer<T>(eb).usable() ? eb : 0.0;
}

/// One round trip with every check the contract makes.
template <class Codec, class T>
round_trip_result<T> check_round_trip(const Codec& codec, std::span<const T> data,
                                      std::optional<zcoll::bits_of<T>> fill = std::nullopt,
                                      zcoll::exec::Host compress_exec = {}, zcoll::exec::Host decompress_exec = {}) {
  auto r = round_trip(codec, data, compress_exec, decompress_exec);
  const auto& h = r.header;
  REQUIRE(h.codec == Codec::id);
  REQUIRE(h.type == zcoll::value_type_of<T>);
  REQUIRE(h.count == data.size());
  REQUIRE(h.chunk_values == codec.config().chunk_values);
  REQUIRE(h.chunk_count == zcoll::chunk_count_for(data.size(), codec.config().chunk_values));
  REQUIRE(h.has_fill_value == fill.has_value());
  if (fill) REQUIRE(h.fill_bits == *fill);

  const double stated = codec.config().error_bound.value;
  if (codec.config().error_bound.mode == zcoll::bound_mode::absolute) {
    REQUIRE(h.error_bound <= stated);
  } else {
    // The stated bound is at most fraction * range, exactly.
    REQUIRE_FALSE(std::signbit(std::fma(stated, reference_range(data, fill), -h.error_bound)));
  }
  if (h.error_bound == 0.0) {
    require_bit_identical(data, std::span<const T>(r.restored));
  } else {
    require_bound_on_every_element(data, std::span<const T>(r.restored), h.error_bound, fill);
    // Values beyond the code range of Linear come back bit for bit (stored exactly as outliers).
    if constexpr (std::is_same_v<typename Codec::quantizer_type, zcoll::quantize::Linear>) {
      const double code_limit = zcoll::quantize::Linear::block_quantizer<T>::max_code + 1.0;
      for (std::size_t i = 0; i < data.size(); ++i) {
        if (std::isfinite(data[i]) && std::abs(static_cast<double>(data[i])) / (2 * h.error_bound) > code_limit) {
          INFO("element " << i << " = " << data[i] << " is beyond the code range of bound " << h.error_bound);
          REQUIRE(same_bits(data[i], r.restored[i]));
        }
      }
    }
  }
  return r;
}

/// The stream of `data` is the same on 1, 2 and 3 threads; every truncation of it is a format_error;
/// random bit flips decode or raise format_error (and some do raise it).
template <class Codec, class T>
void check_threads_and_damage(const Codec& codec, const std::vector<T>& data, int flips) {
  const auto stream = codec.compress(data);
  for (unsigned threads : {2u, 3u}) {
    std::vector<std::byte> other(codec.template max_compressed_size<T>(data.size()));
    const auto written = codec.compress(zcoll::exec::Host{.threads = threads}, data, std::span<std::byte>(other));
    CHECK(std::equal(written.begin(), written.end(), stream.begin(), stream.end()));
  }
  std::vector<T> out(data.size());
  for (std::size_t n = 0; n < stream.size(); ++n) {
    INFO("truncated to " << n);
    CHECK_THROWS_AS(codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(stream).first(n), out),
                    zcoll::format_error);
  }
  std::mt19937_64 rng(seed);
  std::size_t rejected = 0;
  for (int trial = 0; trial < flips; ++trial) {
    auto damaged = stream;
    damaged[rng() % damaged.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    try {
      (void)codec.template decompress<T>(damaged);
    } catch (const zcoll::format_error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 0);
}

}  // namespace zcoll_test
