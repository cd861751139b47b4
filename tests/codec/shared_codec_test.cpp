// One codec object shared by threads that compress at once (each with its own state, where the codec keeps
// one) gives every thread the bytes one thread alone gets. Built into zcoll-collective-tests, so that the
// tsan preset runs it under ThreadSanitizer.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <thread>
#include <vector>

#include "support/test_support.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/zcoll.hpp"

namespace {

constexpr int threads = 4;
constexpr int steps = 6;
constexpr std::size_t rows = 512, dim = 32;

/// Thread t's input at step s: smooth rows with a thread- and step-dependent phase, some repeated rows.
std::vector<float> input(int t, int s) {
  std::vector<float> v(rows * dim);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::size_t row = (i / dim) % 37;  // rows repeat: vector-LZ has matches to find
    v[i] = static_cast<float>(std::sin(0.01 * static_cast<double>(row * dim + i % dim) + 0.3 * t + 0.1 * s));
  }
  return v;
}

/// The streams thread t writes over `steps` calls with its own state.
template <class Codec>
std::vector<std::vector<std::byte>> streams_of(const Codec& codec, int t) {
  zcoll::state_of<Codec> state;
  std::vector<std::vector<std::byte>> streams;
  for (int s = 0; s < steps; ++s) {
    const auto x = input(t, s);
    std::vector<std::byte> out(codec.template max_compressed_size<float>(x.size()));
    const auto written = zcoll::compress(zcoll::exec::Host{}, codec, state, x, std::span<std::byte>(out));
    streams.emplace_back(written.begin(), written.end());
  }
  return streams;
}

template <class Codec>
void check_shared(const Codec& codec) {
  // One thread alone, first: the expected bytes.
  std::vector<std::vector<std::vector<std::byte>>> alone(threads), shared(threads);
  for (int t = 0; t < threads; ++t) alone[t] = streams_of(codec, t);
  // Then every thread at once on the same codec object.
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { shared[t] = streams_of(codec, t); });
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t) {
    INFO("thread " << t);
    CHECK(shared[t] == alone[t]);
  }
}

}  // namespace

TEST_CASE("A codec shared by threads compressing at once gives the bytes one thread gives", "[codec][threads]") {
  const zcoll::codec_config bounded{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096, .shape = {rows, dim}};
  SECTION("FZLight") { check_shared(zcoll::FZLight{bounded}); }
  SECTION("HighRatio<2>") { check_shared(zcoll::HighRatio<2>{bounded}); }
  SECTION("Int4") { check_shared(zcoll::Int4{{.shape = {rows, dim}}}); }
  SECTION("TopK, a threshold living 3 calls") {
    check_shared(zcoll::TopK{{}, {.keep_fraction = 0.05, .threshold_life_span = 3}});
  }
  SECTION("ErrorFeedback<Int4>") { check_shared(zcoll::ErrorFeedback<zcoll::Int4>{{.shape = {rows, dim}}}); }
  SECTION("ErrorFeedback<TopK>") {
    check_shared(zcoll::ErrorFeedback<zcoll::TopK>{zcoll::TopK{{}, {.keep_fraction = 0.05, .threshold_life_span = 2}}});
  }
  SECTION("EmbeddingHybrid") { check_shared(zcoll::EmbeddingHybrid{bounded}); }
}
