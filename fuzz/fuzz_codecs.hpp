#pragma once
// The fuzz targets of every codec of the registry (zcoll/codec/registry.hpp): registering a codec fuzzes it.
//
// decode: arbitrary bytes through the codec's convenience decoder, whose output is sized from the stream
// header (so a header that claims 2^40 values must be refused before anything is allocated). It must
// return values or raise zcoll::format_error.
// add (codecs whose streams add): arbitrary bytes added to a valid stream; the sum must decode, or add
// raise format_error or argument_error.
// round trip: arbitrary values compressed and decompressed; every element must keep the contract the
// stream states — finite values within the stream header's bound, NaN back as NaN, ±Inf back as itself
// (a codec may instead refuse the input with zcoll::argument_error, naming what it cannot take).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcoll/codec/registry.hpp"
#include "zcoll/zcoll.hpp"

namespace zcoll_fuzz {

/// The row length the row-based codecs get: short rows, so small inputs hold several.
inline constexpr std::size_t row_length = 16;

/// Registered codecs that work on rows (their configuration needs the row length).
template <class Entry>
inline constexpr bool takes_rows = Entry::traits.input == zcoll::codec_input::rows;

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

template <class Entry>
zcoll::codec_config config_for(double eb) {
  zcoll::codec_config config{.error_bound = zcoll::absolute(eb)};
  if constexpr (takes_rows<Entry>) config.shape = {row_length};
  return config;
}

template <class Entry>
void decode(std::span<const std::byte> stream) {
  const typename Entry::type codec{config_for<Entry>(0.0)};
  const zcoll::stream_header header = zcoll::read_stream_header(stream);
  if (header.type == zcoll::value_type::f64) {
    (void)codec.template decompress<double>(stream);
  } else {
    (void)codec.template decompress<float>(stream);
  }
}

/// add: the hostile bytes added to a valid stream made to match their header where it parses (count,
/// chunking, bound, fill value), so that most inputs reach the chunks. add must give a stream its decoder
/// takes, or raise format_error (damaged bytes) or argument_error (streams that differ in a setting).
template <class Entry, class T>
void add_to_valid(std::span<const std::byte> hostile, const zcoll::stream_header& h) {
  using Codec = typename Entry::type;
  const bool chunked = h.chunk_values >= 32 && h.chunk_values <= Codec::longest_chunk_values && h.chunk_values % 32 == 0;
  const bool bounded = std::isfinite(h.error_bound) && h.error_bound >= 0;
  zcoll::codec_config config = config_for<Entry>(bounded ? h.error_bound : 1.0 / 1024);
  if (chunked) config.chunk_values = h.chunk_values;
  if (h.has_fill_value) config.fill_value = static_cast<double>(zcoll::fill_value_of<T>(static_cast<zcoll::bits_of<T>>(h.fill_bits)));
  std::vector<T> values(h.count <= (1u << 16) ? static_cast<std::size_t>(h.count) : 1000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(std::sin(0.01 * static_cast<double>(i)));
  const Codec codec{config};
  const auto valid = codec.compress(values);
  const auto sum = zcoll::add(zcoll::exec::Host{}, codec, valid, hostile);
  try {
    (void)codec.template decompress<T>(sum);
  } catch (const zcoll::format_error& e) {
    std::fprintf(stderr, "zcoll-fuzz: add wrote a stream its decoder refuses: %s\n", e.what());
    std::abort();
  }
}

template <class Entry>
void add(std::span<const std::byte> hostile) {
  const zcoll::stream_header h = zcoll::read_stream_header(hostile);
  if (h.type == zcoll::value_type::f64) {
    add_to_valid<Entry, double>(hostile, h);
  } else {
    add_to_valid<Entry, float>(hostile, h);
  }
}

/// The add target of an entry, or none for a codec whose streams do not add.
template <class Entry>
constexpr void (*add_target())(std::span<const std::byte>) {
  if constexpr (zcoll::addable_codec<typename Entry::type>) {
    return &add<Entry>;
  } else {
    return nullptr;
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

template <class Entry, class T>
violation round_trip_tuned(std::span<const T> values, double eb, zcoll::tuning_target tuning) {
  using Codec = typename Entry::type;
  zcoll::codec_config config = config_for<Entry>(eb);
  config.tuning = tuning;
  const Codec codec{config};
  if constexpr (takes_rows<Entry>) values = values.first(values.size() / row_length * row_length);  // whole rows
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

/// The round trip of `values` at the absolute bound `eb`; a codec that picks its predictor's settings
/// also tuned for rate and distortion (other bin widths: another walk to check).
template <class Entry, class T>
violation round_trip(std::span<const T> values, double eb) {
  const violation v = round_trip_tuned<Entry, T>(values, eb, zcoll::tuning_target::ratio);
  if (v || !zcoll::uses_tuning<typename Entry::type>) return v;
  return round_trip_tuned<Entry, T>(values, eb, zcoll::tuning_target::rate_distortion);
}

/// A codec's targets, and the writer of its seed corpus (fuzz/seed_corpus.hpp).
struct fuzz_codec {
  std::string_view name;
  void (*decode)(std::span<const std::byte>);
  violation (*round_trip_f32)(std::span<const float>, double);
  violation (*round_trip_f64)(std::span<const double>, double);
  int (*write_seeds)(const std::filesystem::path& dir, const std::vector<std::filesystem::path>& fields);
  void (*add)(std::span<const std::byte>) = nullptr;  ///< codecs whose streams add (zcoll::addable_codec)
};

/// Runs the add target on `input`: whatever add raises but format_error and argument_error escapes.
inline void add_input(const fuzz_codec& codec, std::span<const std::byte> input) {
  try {
    codec.add(input);
  } catch (const zcoll::format_error&) {
    // a damaged stream
  } catch (const zcoll::argument_error&) {
    // a stream that differs from the valid one in a setting: not to be added
  }
}

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

}  // namespace zcoll_fuzz
