// The CUDA TopK driver's algorithm (codec/detail/topk_tile.hpp) run on the host: every kernel's parts in
// loops, in the kernels' order, with std scans where the driver runs CUB's, and the digit choice split
// over 256 ranges of bins as the choosing block splits it. Its streams must be the host driver's bytes
// (both index forms, f32 and f64, adversarial inputs, reused thresholds), its residual the host's; its
// decoder must give the host decoder's values bit for bit and refuse exactly the streams the host
// decoder refuses (truncations, every byte damaged, hostile gap sections), within its buffers (ASan).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "support/topk_inputs.hpp"
#include "zcoll/codec/detail/topk_tile.hpp"
#include "zcoll/codec/topk.hpp"

namespace {

namespace detail = zcoll::detail;

/// The choosing block: 256 threads of 8 bins each, from the top down; exactly one settles the digit.
template <class T>
void choose_as_the_block(const std::vector<std::uint64_t>& histogram, unsigned d, detail::topk_select_state& state) {
  const unsigned bins = 1u << detail::topk_digit_of<T>(d).width;
  std::uint64_t above = 0;
  int choosers = 0;
  detail::topk_select_state settled = state;
  for (unsigned t = 0; t < 256; ++t) {
    const unsigned high = bins > 8 * t ? bins - 8 * t : 0, low = high > 8 ? high - 8 : 0;
    detail::topk_select_state mine = state;
    if (detail::topk_choose_in<T>(histogram.data(), d, low, high, above, mine)) {
      ++choosers;
      settled = mine;
    }
    for (unsigned b = low; b < high; ++b) above += histogram[b];
  }
  REQUIRE(choosers == 1);
  state = settled;
}

/// The tau key the device select finds: histogram passes split over `threads` grid threads.
template <class T>
std::uint64_t select_threshold_key(std::span<const T> x, std::uint64_t rank, std::uint64_t threads) {
  detail::topk_select_state state{0, rank};
  for (unsigned d = 0; d < detail::topk_digits<T>; ++d) {
    std::vector<std::uint64_t> histogram(detail::topk_histogram_bins, 0);
    for (std::uint64_t t = 0; t < threads; ++t) {
      detail::topk_histogram_part(x.data(), x.size(), d, state, t, threads, [&](std::uint32_t bin) { ++histogram[bin]; });
    }
    choose_as_the_block<T>(histogram, d, state);
  }
  return state.prefix;
}

template <class T>
struct device_compressed {
  std::vector<std::byte> stream;
  detail::topk_record record{};
};

/// compress(exec::Cuda, TopK, ...) kernel by kernel; `reused_key` is the threshold a reused tau keeps.
template <class T>
device_compressed<T> compress_as_the_device(const zcoll::TopK& codec, std::span<const T> x, T* residual,
                                            std::optional<std::uint64_t> reused_key = std::nullopt) {
  const std::uint64_t n = x.size(), words = detail::topk_words(n);
  device_compressed<T> result;
  result.stream.assign(zcoll::TopK::max_compressed_size<T>(n), std::byte{0xEE});
  detail::topk_record& record = result.record;
  record.threshold_key = reused_key.value_or(0);
  record.recomputed = reused_key ? 0 : 1;
  if (!reused_key && n > 0) {
    record.threshold_key = select_threshold_key(x, zcoll::sparsify::topk_count(n, codec.sparsity().keep_fraction), 7);
  }
  const auto floor = zcoll::sparsify::kept_key_floor(zcoll::sparsify::magnitude_of_key<T>(static_cast<zcoll::bits_of<T>>(record.threshold_key)));
  std::vector<std::uint32_t> masks(words);
  std::vector<std::uint64_t> kept(words), last(words), gaps(words);
  for (std::uint64_t w = 0; w < words; ++w) {
    const detail::topk_word word = detail::topk_classify_word(x.data() + w * 32, detail::topk_lanes_of_word(n, w), w, floor);
    masks[w] = word.mask;
    kept[w] = word.kept;
    last[w] = word.last_plus_one;
    record.max_dropped_key = std::max(record.max_dropped_key, word.max_dropped_key);
  }
  std::inclusive_scan(kept.begin(), kept.end(), kept.begin());
  std::inclusive_scan(last.begin(), last.end(), last.begin(), [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); });
  for (std::uint64_t w = 0; w < words; ++w) {
    gaps[w] = detail::topk_scatter_word(x.data(), w, masks[w], w == 0 ? 0 : kept[w - 1], w == 0 ? 0 : last[w - 1],
                                        result.stream.data() + detail::topk::values_offset);
  }
  // After every word's kept values are copied, as the kernel does (x may be the residual).
  for (std::uint64_t i = 0; residual != nullptr && i < n; ++i) {
    detail::topk_write_residual(x.data(), i, ((masks[i / 32] >> (i % 32)) & 1u) != 0, residual);
  }
  std::inclusive_scan(gaps.begin(), gaps.end(), gaps.begin());
  detail::topk_finish<T>(n, words == 0 ? 0 : kept.back(), words == 0 ? 0 : last.back(), words == 0 ? 0 : gaps.back(),
                         result.stream.data(), record);
  std::byte* index = result.stream.data() + detail::topk::values_offset + record.kept * sizeof(T);
  for (std::uint64_t w = 0; w < words; ++w) {
    detail::topk_index_word(n, w, masks[w], static_cast<detail::topk::index_form>(record.form), w == 0 ? 0 : last[w - 1],
                            w == 0 ? 0 : gaps[w - 1], index);
  }
  result.stream.resize(record.stream_bytes);
  return result;
}

/// decompress(exec::Cuda, TopK, ...) kernel by kernel: the values, or the fault.
template <class T>
std::optional<std::vector<T>> decompress_as_the_device(std::span<const std::byte> stream, std::uint64_t count,
                                                       detail::decode_fault& fault) {
  fault = {};
  detail::topk_plan plan{};
  fault = detail::topk_plan_of<T>(stream.data(), stream.size(), count, plan);
  if (fault.code != 0) return std::nullopt;
  const auto report = [&](detail::topk_index_fault f) {
    if (fault.code == 0) fault = {static_cast<std::uint32_t>(detail::decode_fault_code::bad_sparse_index), 0, 0, static_cast<std::uint64_t>(f)};
  };
  const std::byte* index = stream.data() + plan.index_at;
  std::vector<T> out(count, T(-7));  // what the device buffer held before
  const std::uint64_t words = detail::topk_words(count);
  const std::uint64_t index_words = (plan.index_bytes + detail::topk_index_word_bytes - 1) / detail::topk_index_word_bytes;
  std::vector<std::uint64_t> selected(words, 0), ends(index_words, 0), advance(index_words, 0);
  const bool bitmap = plan.form == static_cast<std::uint32_t>(detail::topk::index_form::bitmap);
  if (bitmap) {
    for (std::uint64_t w = 0; w < words; ++w) {
      std::uint32_t bits = 0;
      if (!detail::topk_bitmap_word(index, count, w, bits)) report(detail::topk_index_fault::bitmap_padding);
      selected[w] = static_cast<std::uint64_t>(std::popcount(bits));
    }
  } else {
    std::fill(out.begin(), out.end(), T(0));
    for (std::uint64_t v = 0; v < index_words; ++v) {
      detail::topk_gap_word word{};
      const auto f = detail::topk_gap_word_of(index, plan.index_bytes, count, v, word);
      if (f != detail::topk_index_fault{}) report(f);
      ends[v] = word.ends;
      advance[v] = word.advance;
    }
  }
  std::inclusive_scan(selected.begin(), selected.end(), selected.begin());
  std::inclusive_scan(ends.begin(), ends.end(), ends.begin());
  std::inclusive_scan(advance.begin(), advance.end(), advance.begin(), detail::topk_saturating_add{});
  if (fault.code == 0) {
    const auto f = detail::topk_verify(plan, count, words == 0 ? 0 : selected.back(), index_words == 0 ? 0 : ends.back(),
                                       index_words == 0 ? 0 : advance.back());
    if (f != detail::topk_index_fault{}) report(f);
  }
  if (fault.code != 0) return std::nullopt;
  if (bitmap) {
    for (std::uint64_t w = 0; w < words; ++w) {
      std::uint32_t bits = 0;
      detail::topk_bitmap_word(index, count, w, bits);
      detail::topk_bitmap_scatter_word(stream.data() + plan.values_at, count, w, bits,
                                       selected[w] - static_cast<std::uint64_t>(std::popcount(bits)), out.data());
    }
  } else {
    for (std::uint64_t v = 0; v < index_words; ++v) {
      detail::topk_gap_scatter_word(index, plan.index_bytes, stream.data() + plan.values_at, plan.kept, count, v,
                                    v == 0 ? 0 : ends[v - 1], v == 0 ? 0 : advance[v - 1], out.data());
    }
  }
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("The device TopK algorithm writes the host driver's streams and residuals", "[codec][topk][cuda-tile]",
                   float, double) {
  using T = TestType;
  int bitmaps = 0, gap_forms = 0;
  for (const double fraction : {0.001, 0.01, 0.1, 0.3, 1.0}) {
    const zcoll::TopK codec{{}, {.keep_fraction = fraction}};
    for (const auto& x : zcoll_test::topk_inputs<T>()) {
      INFO("keep " << fraction << ", n = " << x.size());
      zcoll::TopK::state host_state;
      std::vector<T> host_residual(x.size());
      std::vector<std::byte> host(zcoll::TopK::max_compressed_size<T>(x.size()));
      const auto written = codec.compress_with_residual(zcoll::exec::Host{}, host_state, x, host, std::span<T>(host_residual));
      std::vector<T> residual(x.size(), T(-9));
      const auto device = compress_as_the_device<T>(codec, x, residual.data());
      REQUIRE(device.stream == std::vector<std::byte>(written.begin(), written.end()));
      REQUIRE(same_bits(residual, host_residual));
      CHECK(device.record.kept == host_state.last.kept_count);
      CHECK(static_cast<double>(zcoll::sparsify::magnitude_of_key<T>(static_cast<zcoll::bits_of<T>>(device.record.threshold_key))) ==
            host_state.last.threshold);
      (device.record.form == 0 ? gap_forms : bitmaps) += 1;

      std::vector<T> in_place = x;  // residual = x itself, as the host allows
      const auto again = compress_as_the_device<T>(codec, in_place, in_place.data());
      REQUIRE(again.stream == device.stream);
      REQUIRE(same_bits(in_place, host_residual));
    }
  }
  CHECK(bitmaps > 10);
  CHECK(gap_forms > 10);
}

TEMPLATE_TEST_CASE("The device select finds the host's exact threshold on every thread split", "[codec][topk][cuda-tile]",
                   float, double) {
  using T = TestType;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> magnitude(0.0, 3.0);
  std::vector<T> x(70000);
  for (auto& v : x) v = static_cast<T>((rng() & 1 ? -1.0 : 1.0) * magnitude(rng));
  for (std::size_t i = 0; i < x.size(); i += 1000) x[i] = x[i + 1];  // ties
  for (const double fraction : {1e-5, 0.01, 0.5, 0.9999}) {
    const std::uint64_t k = zcoll::sparsify::topk_count(x.size(), fraction);
    const T host = zcoll::sparsify::topk_threshold(std::span<const T>(x), fraction);
    for (const std::uint64_t threads : {1, 3, 256, 100000}) {
      CHECK(zcoll::sparsify::magnitude_of_key<T>(static_cast<zcoll::bits_of<T>>(select_threshold_key<T>(x, k, threads))) == host);
    }
  }
}

TEMPLATE_TEST_CASE("A reused threshold gives the host's stream of a life span", "[codec][topk][cuda-tile]", float, double) {
  using T = TestType;
  const zcoll::TopK codec{{}, {.keep_fraction = 0.05, .threshold_life_span = 3}};
  zcoll::TopK::state host_state;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::optional<std::uint64_t> tau;
  for (int call = 0; call < 7; ++call) {
    std::vector<T> x(4099);
    for (auto& v : x) v = static_cast<T>(normal(rng) * (1.0 + call));
    std::vector<std::byte> host_stream(zcoll::TopK::max_compressed_size<T>(x.size()));
    const auto written = codec.compress(zcoll::exec::Host{}, host_state, x, host_stream);
    const bool recompute = call % 3 == 0;
    REQUIRE(host_state.last.threshold_recomputed == recompute);
    const auto device = compress_as_the_device<T>(codec, x, nullptr, recompute ? std::nullopt : tau);
    if (recompute) tau = device.record.threshold_key;
    REQUIRE(device.stream == std::vector<std::byte>(written.begin(), written.end()));
  }
}

TEMPLATE_TEST_CASE("The device TopK decoder decodes what the host decodes and refuses what it refuses",
                   "[codec][topk][cuda-tile][corruption]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(11);
  int refused = 0, decoded = 0;
  for (const double fraction : {0.002, 0.3}) {
    const zcoll::TopK codec{{}, {.keep_fraction = fraction}};
    for (const auto& x : zcoll_test::topk_inputs<T>()) {
      if (x.size() > 6000) continue;  // every byte of every stream is damaged below
      const std::vector<std::byte> stream = codec.compress(x);
      const auto agree = [&](std::span<const std::byte> s) {
        std::optional<std::vector<T>> host;
        try {
          host = codec.decompress<T>(s);
          if (host->size() != x.size()) host.reset();  // another count: the device's wrong_count
        } catch (const zcoll::format_error&) {
        }
        detail::decode_fault fault{};
        const auto device = decompress_as_the_device<T>(s, x.size(), fault);
        REQUIRE(host.has_value() == device.has_value());
        REQUIRE((fault.code == 0) == device.has_value());
        if (host) REQUIRE(same_bits(*host, *device));
        (host ? decoded : refused) += 1;
      };
      agree(stream);
      for (std::size_t cut = 0; cut < stream.size(); cut += 1 + stream.size() / 64) agree(std::span(stream).first(cut));
      for (std::size_t i = 0; i < stream.size(); ++i) {
        auto damaged = stream;
        damaged[i] ^= static_cast<std::byte>(1u << (rng() % 8));
        agree(damaged);
        damaged[i] = static_cast<std::byte>(rng() & 0xFF);
        agree(damaged);
      }
      auto longer = stream;
      longer.push_back(std::byte{0});
      agree(longer);
    }
  }
  CHECK(refused > 1000);
  CHECK(decoded > 1000);
}

TEST_CASE("Hostile TopK gap sections are refused by the device decoder", "[codec][topk][cuda-tile][corruption]") {
  using T = float;
  const std::uint64_t count = 1000;
  const auto stream_of = [&](std::uint64_t kept, std::vector<std::uint8_t> index) {
    zcoll::stream_header h;
    h.codec = zcoll::TopK::id;
    h.type = zcoll::value_type::f32;
    h.count = count;
    std::vector<std::byte> s(detail::topk::values_offset + kept * sizeof(T));
    zcoll::store_stream_header(h, s.data());
    s[detail::topk::form_offset] = std::byte{0};
    std::memcpy(s.data() + detail::topk::kept_count_offset, &kept, 8);
    for (const auto b : index) s.push_back(static_cast<std::byte>(b));
    return s;
  };
  const auto refused_for = [&](const std::vector<std::byte>& s) {
    CHECK_THROWS_AS(zcoll::TopK().decompress<T>(s), zcoll::format_error);
    detail::decode_fault fault{};
    CHECK_FALSE(decompress_as_the_device<T>(s, count, fault).has_value());
    return static_cast<detail::topk_index_fault>(fault.detail);
  };
  // Valid: one kept entry at index 5, tail 994 (0xE2 0x07).
  const auto valid = stream_of(1, {5, 0xE2, 0x07});
  detail::decode_fault fault{};
  REQUIRE(decompress_as_the_device<T>(valid, count, fault).has_value());
  REQUIRE_NOTHROW(zcoll::TopK().decompress<T>(valid));
  CHECK(refused_for(stream_of(1, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0xE2, 0x07})) ==
        detail::topk_index_fault::varint_overflow);
  CHECK(refused_for(stream_of(1, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0xE2, 0x07})) ==
        detail::topk_index_fault::varint_overflow);
  CHECK(refused_for(stream_of(1, {0x85, 0x00, 0xE2, 0x07})) == detail::topk_index_fault::varint_not_minimal);
  CHECK(refused_for(stream_of(1, {5, 0xE2})) == detail::topk_index_fault::varint_truncated);
  CHECK(refused_for(stream_of(1, {})) == detail::topk_index_fault::varint_truncated);
  CHECK(refused_for(stream_of(1, {0xE9, 0x07, 0})) == detail::topk_index_fault::gap_past_count);  // gap 1001
  CHECK(refused_for(stream_of(1, {5, 0xE2, 0x07, 0})) == detail::topk_index_fault::gap_count);
  CHECK(refused_for(stream_of(1, {5})) == detail::topk_index_fault::gap_count);
  CHECK(refused_for(stream_of(1, {5, 0xE1, 0x07})) == detail::topk_index_fault::gap_sum);
  // Gaps of the largest values that fit: their sum saturates instead of wrapping to count + 1.
  std::vector<std::uint8_t> huge;
  for (int g = 0; g < 3; ++g) huge.insert(huge.end(), {0xE8, 0x07});  // three gaps of 1000 = count
  CHECK(refused_for(stream_of(2, huge)) == detail::topk_index_fault::gap_sum);
}
