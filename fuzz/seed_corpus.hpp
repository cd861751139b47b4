#pragma once
// The seed corpora of the fuzz targets: for every registered codec, real streams (slices of the
// bundled fields and the adversarial inputs of the codec tests, at several bounds) for the decoder, and
// the same inputs in the round-trip target's format (byte 0: type and bound, then the values).
//
//   zcoll-fuzz --write-seeds=OUT_DIR [FIELD.f32...]   -> OUT_DIR/<codec>/decode/*, OUT_DIR/<codec>/round-trip/*
//                                                        and, for codecs whose streams add, OUT_DIR/<codec>/add/*
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_codecs.hpp"

namespace zcoll_fuzz {

namespace seeds {

namespace fs = std::filesystem;

template <class T>
struct seed_input {
  std::string name;
  std::vector<T> values;
};

/// The adversarial inputs every codec test uses, in small sizes (a fuzzer mutates small inputs fastest).
template <class T>
std::vector<seed_input<T>> adversarial_inputs() {
  using lim = std::numeric_limits<T>;
  std::vector<seed_input<T>> inputs;
  inputs.push_back({"empty", {}});
  inputs.push_back({"one", {T(1.5)}});
  inputs.push_back({"constant", std::vector<T>(64, T(3.25))});
  std::vector<T> smooth(160), mixed(96), huge(48);
  for (std::size_t i = 0; i < smooth.size(); ++i) smooth[i] = static_cast<T>(std::sin(0.05 * static_cast<double>(i)));
  for (std::size_t i = 0; i < mixed.size(); ++i) {
    const T specials[] = {lim::quiet_NaN(), lim::infinity(), -lim::infinity(), lim::denorm_min(), -T(0), lim::max()};
    mixed[i] = i % 5 == 0 ? specials[(i / 5) % 6] : static_cast<T>(static_cast<double>(i) - 40.0);
  }
  for (std::size_t i = 0; i < huge.size(); ++i) huge[i] = static_cast<T>((i % 2 ? -1.0 : 1.0) * std::ldexp(1.0, static_cast<int>(i) * 2));
  inputs.push_back({"smooth", smooth});
  inputs.push_back({"mixed", mixed});
  inputs.push_back({"huge-range", huge});
  return inputs;
}

inline void write(const fs::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// The round-trip target's byte 0 for this type and the bound 2^(e - 24).
template <class T>
std::byte round_trip_header(int exponent) {
  return std::byte(static_cast<std::uint8_t>(((exponent + 24) << 1) | (sizeof(T) == 8 ? 1 : 0)));
}

/// The decode seed of `values` by `codec` as dir/decode/stem (and dir/add/stem, for a codec whose streams
/// add); the files written (none for an input the codec refuses).
template <class Entry, class T>
int write_stream_seed(const fs::path& dir, const typename Entry::type& codec, std::span<const T> values,
                      const std::string& stem) {
  try {
    std::vector<std::byte> stream(codec.template max_compressed_size<T>(values.size()));
    const auto written = codec.compress(zcoll::exec::Host{}, values, std::span<std::byte>(stream));
    write(dir / "decode" / stem, written);
    if constexpr (zcoll::addable_codec<typename Entry::type>) {  // the add target starts from valid streams too
      write(dir / "add" / stem, written);
      return 2;
    }
    return 1;
  } catch (const zcoll::argument_error&) {
    return 0;  // an input this codec refuses: a round-trip seed only
  }
}

template <class Entry, class T>
int write_seeds(const fs::path& dir, const std::vector<seed_input<T>>& inputs) {
  int files = 0;
  for (const int exponent : {-20, -10, -4, 0}) {
    zcoll::codec_config config = config_for<Entry>(std::ldexp(1.0, exponent));
    const typename Entry::type codec{config};
    config.tuning = zcoll::tuning_target::rate_distortion;  // other bin widths in the stream
    const typename Entry::type tuned{config};
    for (const auto& input : inputs) {
      std::span<const T> values(input.values);
      if constexpr (takes_rows<Entry>) values = values.first(values.size() / row_length * row_length);
      const std::string stem = input.name + "-" + (sizeof(T) == 8 ? "f64" : "f32") + "-e" + std::to_string(exponent);
      std::vector<std::byte> round_trip{round_trip_header<T>(exponent)};
      const auto raw = std::as_bytes(values);
      round_trip.insert(round_trip.end(), raw.begin(), raw.end());
      write(dir / "round-trip" / stem, round_trip);
      ++files;
      files += write_stream_seed<Entry, T>(dir, codec, values, stem);
      if constexpr (zcoll::uses_tuning<typename Entry::type>) files += write_stream_seed<Entry, T>(dir, tuned, values, stem + "-rd");
    }
  }
  return files;
}

inline std::vector<float> read_field(const fs::path& path, std::size_t values) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> field(values);
  in.read(reinterpret_cast<char*>(field.data()), static_cast<std::streamsize>(values * sizeof(float)));
  field.resize(static_cast<std::size_t>(in.gcount()) / sizeof(float));
  return field;
}

template <class Entry>
int seeds_for(const fs::path& dir, const std::vector<fs::path>& fields) {
  fs::create_directories(dir / "decode");
  fs::create_directories(dir / "round-trip");
  if constexpr (zcoll::addable_codec<typename Entry::type>) fs::create_directories(dir / "add");
  auto floats = adversarial_inputs<float>();
  for (const auto& field : fields) floats.push_back({field.stem().string(), read_field(field, 4096)});
  return write_seeds<Entry, float>(dir, floats) + write_seeds<Entry, double>(dir, adversarial_inputs<double>());
}

}  // namespace seeds

/// Writes the seeds of every codec of `codecs` under `out`; returns the number of files written.
inline int write_seed_corpora(const std::vector<fuzz_codec>& codecs, const std::filesystem::path& out,
                              const std::vector<std::filesystem::path>& fields) {
  int files = 0;
  for (const auto& codec : codecs) files += codec.write_seeds(out / codec.name, fields);
  return files;
}

/// The targets and seed writers of every Parts-th registered codec from Part, instantiated where this is
/// called: the fuzz binary splits them between two translation units (fuzz/instances_*.cpp) so that it
/// builds on two cores.
template <std::size_t Parts = 1, std::size_t Part = 0>
std::vector<fuzz_codec> registered_fuzz_codecs() {
  std::vector<fuzz_codec> codecs;
  zcoll::for_each_registered_codec<Parts, Part>([&]<class Entry>() {
    codecs.push_back({Entry::name, &decode<Entry>, &round_trip<Entry, float>, &round_trip<Entry, double>,
                      &seeds::seeds_for<Entry>, add_target<Entry>()});
  });
  return codecs;
}

}  // namespace zcoll_fuzz
