#pragma once
// The codecs the fuzz targets cover, by name: covering a new codec is one line in ZCOLL_FUZZ_CODECS below.
//
// decode: arbitrary bytes through the codec's convenience decoder, whose output is sized from the stream
// header (so a header that claims 2^40 values must be refused before anything is allocated). It must
// return values or raise zcoll::format_error.
// round trip: arbitrary values compressed and decompressed; every element must keep the contract the
// stream states — finite values within the stream header's bound, NaN back as NaN, ±Inf back as itself
// (a codec may instead refuse the input with zcoll::argument_error, naming what it cannot take).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcoll/zcoll.hpp"

namespace zcoll_fuzz {

/// The row length the row-based codecs get: short rows, so small inputs hold several.
inline constexpr std::size_t row_length = 16;

/// Codecs that work on rows (their configuration needs the row length).
template <class Codec>
inline constexpr bool takes_rows = false;
template <>
inline constexpr bool takes_rows<zcoll::Int8> = true;
template <>
inline constexpr bool takes_rows<zcoll::Int4> = true;
template <>
inline constexpr bool takes_rows<zcoll::Int2> = true;
template <>
inline constexpr bool takes_rows<zcoll::EmbeddingLZ> = true;
template <>
inline constexpr bool takes_rows<zcoll::EmbeddingHybrid> = true;

/// Codecs that promise the configured error bound state it (the others state a bound of their own:
/// row-wise quantizers per row, casts half an ulp, top-K none).
template <class Codec>
inline constexpr bool takes_error_bound = Codec::uses_error_bound;

/// Codecs whose format has no infinities give ±Inf back as NaN of the same sign (OCP E4M3FN): the casts
/// say so through their format.
template <class Codec>
constexpr bool keeps_infinities_of() {
  if constexpr (requires { Codec::format_type::has_infinity; }) {
    return Codec::format_type::has_infinity;
  } else {
    return true;
  }
}
template <class Codec>
inline constexpr bool keeps_infinities = keeps_infinities_of<Codec>();

template <class Codec>
zcoll::codec_config config_for(double eb) {
  zcoll::codec_config config{.error_bound = zcoll::absolute(eb)};
  if constexpr (takes_rows<Codec>) config.shape = {row_length};
  return config;
}

template <class Codec>
void decode(std::span<const std::byte> stream) {
  const Codec codec{config_for<Codec>(0.0)};
  const zcoll::stream_header header = zcoll::read_stream_header(stream);
  if (header.type == zcoll::value_type::f64) {
    (void)codec.template decompress<double>(stream);
  } else {
    (void)codec.template decompress<float>(stream);
  }
}

/// What a round trip found: nothing (element -1), a stream that states a looser bound than the codec was
/// asked for (element -1, stated > requested), or the first element that breaks the stated bound.
struct violation {
  std::ptrdiff_t element = -1;
  double value = 0.0;  ///< the original of that element
  double stated = 0.0;
  double requested = 0.0;
  explicit operator bool() const { return element >= 0 || stated > requested; }
};

/// The first element that breaks the contract the stream states, or -1.
template <class Codec, class T>
std::ptrdiff_t first_violation(std::span<const T> in, std::span<const T> out, double stated) {
  if (in.size() != out.size()) return 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const T x = in[i], y = out[i];
    const bool infinity_kept = keeps_infinities<Codec> ? y == x : std::isnan(y) && std::signbit(y) == std::signbit(x);
    const bool kept = std::isnan(x) ? std::isnan(y) : std::isinf(x) ? infinity_kept : zcoll::exactly_within(x, y, stated);
    if (!kept) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

template <class Codec, class T>
violation round_trip(std::span<const T> values, double eb) {
  const Codec codec{config_for<Codec>(eb)};
  if constexpr (takes_rows<Codec>) values = values.first(values.size() / row_length * row_length);  // whole rows
  std::vector<std::byte> stream(codec.template max_compressed_size<T>(values.size()));
  std::span<const std::byte> written;
  try {
    written = codec.compress(zcoll::exec::Host{}, values, std::span<std::byte>(stream));
  } catch (const zcoll::argument_error&) {
    return {};  // input the codec refuses, with a message: allowed
  }
  std::vector<T> restored(values.size());
  codec.decompress(zcoll::exec::Host{}, written, std::span<T>(restored));
  const double stated = zcoll::read_stream_header(written).error_bound;
  const double requested = takes_error_bound<Codec> ? eb : stated;
  const std::ptrdiff_t bad = first_violation<Codec, T>(values, restored, stated);
  const double value = bad >= 0 && values.size() == restored.size() ? static_cast<double>(values[static_cast<std::size_t>(bad)]) : 0.0;
  return {bad, value, stated, requested};
}

struct fuzz_codec {
  std::string_view name;
  void (*decode)(std::span<const std::byte>);
  violation (*round_trip_f32)(std::span<const float>, double);
  violation (*round_trip_f64)(std::span<const double>, double);
};

template <class Codec>
constexpr fuzz_codec entry(std::string_view name) {
  return {name, &decode<Codec>, &round_trip<Codec, float>, &round_trip<Codec, double>};
}

/// Every codec the targets cover, as X(type, "name"): covering a new codec is one line in either half.
/// Two halves of about equal compile time: the fuzz binary instantiates each half's targets in a
/// translation unit of its own (fuzz/instances_*.cpp), so that it builds on two cores.
#define ZCOLL_FUZZ_CODECS_FIRST_HALF(X)            \
  X(zcoll::FZLight, "fzlight")                    \
  X(zcoll::HighRatio<1>, "highratio-1d")          \
  X(zcoll::EmbeddingHybrid, "embedding-hybrid")   \
  X(zcoll::Int8, "int8")                          \
  X(zcoll::FP16, "fp16")                          \
  X(zcoll::BF16, "bf16")                          \
  X(zcoll::Identity, "identity")
#define ZCOLL_FUZZ_CODECS_SECOND_HALF(X)           \
  X(zcoll::EmbeddingHuffman, "embedding-huffman") \
  X(zcoll::EmbeddingLZ, "embedding-lz")           \
  X(zcoll::Int4, "int4")                          \
  X(zcoll::Int2, "int2")                          \
  X(zcoll::FP8E4M3, "fp8-e4m3")                   \
  X(zcoll::FP8E5M2, "fp8-e5m2")                   \
  X(zcoll::TopK, "topk")
#define ZCOLL_FUZZ_CODECS(X) ZCOLL_FUZZ_CODECS_FIRST_HALF(X) ZCOLL_FUZZ_CODECS_SECOND_HALF(X)

/// The round-trip target's input: byte 0 picks the value type (bit 0: f64) and the absolute bound
/// 2^(e - 24), e = byte 0 >> 1 (2^-24 .. 2^103); the other bytes are the values, raw.
inline violation round_trip_input(const fuzz_codec& codec, std::span<const std::uint8_t> input) {
  if (input.empty()) return {};
  const double eb = std::ldexp(1.0, (input[0] >> 1) - 24);
  const auto raw = input.subspan(1);
  const auto values = [&]<class T>(T) {
    std::vector<T> v(raw.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), raw.data(), v.size() * sizeof(T));
    return v;
  };
  if (input[0] & 1) return codec.round_trip_f64(values(0.0), eb);
  return codec.round_trip_f32(values(0.0f), eb);
}

/// A violation in words, naming the codec.
inline std::string describe(const violation& v, std::string_view codec) {
  std::string text(codec);
  char line[200];
  if (v.element >= 0) {
    std::snprintf(line, sizeof line, " broke its stated bound %g at element %td (value %.17g)", v.stated, v.element, v.value);
  } else {
    std::snprintf(line, sizeof line, " states the bound %g, looser than the %g it was asked for", v.stated, v.requested);
  }
  return text + line;
}

inline const std::vector<fuzz_codec>& fuzz_codecs() {
#define ZCOLL_FUZZ_ENTRY(type, name) entry<type>(name),
  static const std::vector<fuzz_codec> codecs = {ZCOLL_FUZZ_CODECS(ZCOLL_FUZZ_ENTRY)};
#undef ZCOLL_FUZZ_ENTRY
  return codecs;
}

}  // namespace zcoll_fuzz
