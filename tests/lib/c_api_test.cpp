// lib/c_api.cpp: zcoll.h's codec functions on every registered codec, and its error codes.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "zcoll.h"
#include "zcoll/codec/registry.hpp"

namespace {

/// A codec made through the C API, freed with it.
struct c_codec {
  zcoll_codec* handle = nullptr;
  c_codec(const char* name, const char* bound, std::vector<size_t> shape = {}) {
    const int code = zcoll_codec_create(name, bound, shape.empty() ? nullptr : shape.data(), shape.size(), &handle);
    INFO(name << ": " << zcoll_error_message());
    REQUIRE(code == ZCOLL_SUCCESS);
  }
  ~c_codec() { zcoll_codec_free(handle); }
  c_codec(const c_codec&) = delete;
  c_codec& operator=(const c_codec&) = delete;
};

template <class T>
std::vector<T> field(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(0.01 * static_cast<double>(i)) * 50.0 + 0.1 * static_cast<double>(i % 7));
  return v;
}

template <class T>
std::vector<unsigned char> compressed(const c_codec& codec, zcoll_type type, const std::vector<T>& values) {
  size_t capacity = 0, written = 0;
  REQUIRE(zcoll_compress_bound(codec.handle, type, values.size(), &capacity) == ZCOLL_SUCCESS);
  std::vector<unsigned char> stream(capacity);
  REQUIRE(zcoll_compress(codec.handle, type, values.data(), values.size(), stream.data(), capacity, &written) ==
          ZCOLL_SUCCESS);
  stream.resize(written);
  return stream;
}

}  // namespace

TEST_CASE("C API: every registered codec round-trips f32 and f64 within the bound its stream states, "
          "on lengths that are not a multiple of a block") {
  for (const auto name : zcoll::registered_codec_names()) {
    const std::string codec_name(name);
    const bool rows = zcoll::with_registered_codec(name, [&]<class Entry>() {
      return Entry::traits.input == zcoll::codec_input::rows;
    });
    // Rows of 4 values for the row codecs (their chunks hold whole rows: 4096 is a multiple of 4).
    for (std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{4099}}) {
      const std::size_t n = rows ? 4 * length : length;
      INFO(codec_name << " n=" << n);
      const c_codec codec(codec_name.c_str(), "rel:1e-3", rows ? std::vector<size_t>{length, 4} : std::vector<size_t>{});
      const auto check = [&]<class T>(zcoll_type type) {
        const auto values = field<T>(n);
        const auto stream = compressed(codec, type, values);
        zcoll_type stated_type{};
        size_t count = 0;
        double bound = -1;
        REQUIRE(zcoll_stream_info(stream.data(), stream.size(), &stated_type, &count, &bound) == ZCOLL_SUCCESS);
        REQUIRE(stated_type == type);
        REQUIRE(count == n);
        std::vector<T> restored(n);
        REQUIRE(zcoll_decompress(stream.data(), stream.size(), type, restored.data(), n) == ZCOLL_SUCCESS);
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(std::abs(static_cast<double>(restored[i]) - static_cast<double>(values[i])) <= bound);
        }
      };
      check.template operator()<float>(ZCOLL_FLOAT);
      check.template operator()<double>(ZCOLL_DOUBLE);
    }
  }
}

TEST_CASE("C API: NaN, infinities and a huge range come back as the codec keeps them") {
  const c_codec codec("fzlight", "abs:0.01");
  std::vector<float> values = field<float>(1000);
  values[3] = std::numeric_limits<float>::quiet_NaN();
  values[4] = std::numeric_limits<float>::infinity();
  values[5] = -std::numeric_limits<float>::infinity();
  values[6] = 3e38f;
  values[7] = std::numeric_limits<float>::denorm_min();
  const auto stream = compressed(codec, ZCOLL_FLOAT, values);
  std::vector<float> restored(values.size());
  REQUIRE(zcoll_decompress(stream.data(), stream.size(), ZCOLL_FLOAT, restored.data(), restored.size()) == ZCOLL_SUCCESS);
  REQUIRE(std::isnan(restored[3]));
  REQUIRE(restored[4] == values[4]);
  REQUIRE(restored[5] == values[5]);
  for (std::size_t i = 6; i < values.size(); ++i) REQUIRE(std::abs(static_cast<double>(restored[i]) - values[i]) <= 0.01);
}

TEST_CASE("C API: every truncated or corrupted stream is ZCOLL_ERR_FORMAT or a result within the bound, "
          "never a crash") {
  const c_codec codec("fzlight", "abs:0.001");
  const auto values = field<float>(3000);
  const auto stream = compressed(codec, ZCOLL_FLOAT, values);
  std::vector<float> restored(values.size());
  for (std::size_t cut = 0; cut < stream.size(); cut += 7) {
    REQUIRE(zcoll_decompress(stream.data(), cut, ZCOLL_FLOAT, restored.data(), restored.size()) == ZCOLL_ERR_FORMAT);
    REQUIRE(std::string(zcoll_error_message()).find("zcoll_decompress") == 0);
  }
  for (std::size_t at = 0; at < stream.size(); at += 5) {
    auto damaged = stream;
    damaged[at] ^= 0x5a;
    const int code = zcoll_decompress(damaged.data(), damaged.size(), ZCOLL_FLOAT, restored.data(), restored.size());
    REQUIRE((code == ZCOLL_SUCCESS || code == ZCOLL_ERR_FORMAT || code == ZCOLL_ERR_ARGUMENT));
  }
}

TEST_CASE("C API: bad arguments are ZCOLL_ERR_ARGUMENT with a message that names them; nothing is written") {
  zcoll_codec* codec = reinterpret_cast<zcoll_codec*>(0x1);
  REQUIRE(zcoll_codec_create("sz9", "rel:1e-4", nullptr, 0, &codec) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(codec == nullptr);
  REQUIRE(std::string(zcoll_error_message()).find("'sz9' is not registered") != std::string::npos);
  REQUIRE(zcoll_codec_create(nullptr, "rel:1e-4", nullptr, 0, &codec) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(std::string(zcoll_error_message()).find("name is NULL") != std::string::npos);
  for (const char* bad : {"1e-4", "rel:", "rel:2", "abs:-1", "abs:nan"}) {
    REQUIRE(zcoll_codec_create("fzlight", bad, nullptr, 0, &codec) == ZCOLL_ERR_ARGUMENT);
    REQUIRE(std::string(zcoll_error_message()).find(std::string("error_bound='") + bad + "'") != std::string::npos);
  }
  REQUIRE(zcoll_codec_create("fzlight", "rel:1e-4", nullptr, 2, &codec) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(zcoll_codec_create("fzlight", "rel:1e-4", nullptr, 0, nullptr) == ZCOLL_ERR_ARGUMENT);

  const c_codec fz("fzlight", "rel:1e-4");
  const auto values = field<float>(100);
  size_t capacity = 0, written = 0;
  REQUIRE(zcoll_compress_bound(fz.handle, static_cast<zcoll_type>(7), 100, &capacity) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(std::string(zcoll_error_message()).find("type 7") != std::string::npos);
  REQUIRE(zcoll_compress_bound(fz.handle, ZCOLL_FLOAT, 100, &capacity) == ZCOLL_SUCCESS);
  std::vector<unsigned char> stream(capacity);
  REQUIRE(zcoll_compress(fz.handle, ZCOLL_FLOAT, nullptr, 100, stream.data(), capacity, &written) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(zcoll_compress(fz.handle, ZCOLL_FLOAT, values.data(), 100, stream.data(), 10, &written) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(zcoll_compress(fz.handle, ZCOLL_FLOAT, values.data(), 100, stream.data(), capacity, &written) == ZCOLL_SUCCESS);
  std::vector<float> restored(100);
  REQUIRE(zcoll_decompress(stream.data(), written, ZCOLL_FLOAT, restored.data(), 99) != ZCOLL_SUCCESS);
  REQUIRE(zcoll_decompress(stream.data(), written, ZCOLL_DOUBLE, restored.data(), 50) != ZCOLL_SUCCESS);
  REQUIRE(zcoll_decompress(nullptr, written, ZCOLL_FLOAT, restored.data(), 100) == ZCOLL_ERR_ARGUMENT);
  REQUIRE(zcoll_stream_info(stream.data(), 3, nullptr, nullptr, nullptr) == ZCOLL_ERR_FORMAT);
}
