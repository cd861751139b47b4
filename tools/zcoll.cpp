// zcoll: compress a raw file of f32 or f64 values to a zcoll stream and back, as the sz3 and zfp tools do,
// with any codec of the registry (zcoll/codec/registry.hpp).
//
//   zcoll compress -i field.f32 --dims 100,500,500 --rel 1e-4 [--codec highratio-2d] -o field.zc
//   zcoll decompress -i field.zc -o field.out.f32 [--compare field.f32]
//   zcoll info -i field.zc
//   zcoll list
//
// The report goes to stdout; errors to stderr with exit status 2 (a usage error) or 1 (a file that cannot
// be read or written, a stream that is not valid).

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "zcoll/codec/registry.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_range.hpp"

namespace {

constexpr const char* help_text = R"(zcoll: error-bounded lossy compression of raw f32/f64 files.

usage:
  zcoll compress -i IN --dims D0,D1,... | --count N  (--abs E | --rel R)  -o OUT  [options]
  zcoll decompress -i IN.zc -o OUT [--compare ORIGINAL]
  zcoll info -i IN.zc
  zcoll list

compress:
  -i FILE          raw values, native little-endian, no header (as sz3 -i and zfp -i read them)
  --type f32|f64   the values' type (default f32)
  --dims D0,D1,... the data's extents, slowest first (C order: 100,500,500 is nz, ny, nx); their product
                   must be the file's value count. --count N instead: a flat sequence of N values
  --abs E          absolute bound: every value within E
  --rel R          bound relative to the value range: E = R x (max - min)
  --codec NAME     a codec of the registry (default fzlight; 'zcoll list' prints them)
  --fill V         a fill value (missing data) stored exactly and left out of the range: the value of
                   the data's type nearest to V
  --chunk N        values per chunk (a multiple of 32 in [32, 65536]; default: the codec's)
  --tuning T       what HighRatio picks its predictor's settings for: ratio (the fewest bytes within the
                   bound, the default) or rate-distortion (the least error for the bytes)
  --threads N      compression threads (default 1)
  -o FILE          the stream
decompress:
  -i FILE          a zcoll stream (any registered codec: the header names it)
  -o FILE          the values, raw, in the stream's type
  --compare FILE   the original values: report the largest error and whether the stated bound held
)";

[[noreturn]] void usage_error(const std::string& message) {
  throw std::invalid_argument(message + "\n(run 'zcoll --help' for the options)");
}

/// A file the tool cannot read or write, or a stream it cannot decode: exit status 1.
struct file_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct options {
  std::string command;
  std::string input, output, compare;
  std::string type = "f32";
  std::vector<std::size_t> dims;
  std::optional<std::size_t> count;
  std::optional<zcoll::bound> error_bound;
  std::string codec = "fzlight";
  std::optional<double> fill;
  std::uint32_t chunk_values = 0;
  zcoll::tuning_target tuning = zcoll::tuning_target::ratio;
  unsigned threads = 1;
};

double parse_number(const std::string& text, std::string_view flag) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) usage_error(fmt::format("{}: '{}' is not a number", flag, text));
  return value;
}

std::uint64_t parse_whole(const std::string& text, std::string_view flag, std::uint64_t lowest, std::uint64_t highest) {
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  std::uint64_t value = 0;
  if (digits && text.size() <= 19) value = std::stoull(text);
  if (!digits || text.size() > 19 || value < lowest || value > highest) {
    usage_error(fmt::format("{}: '{}' is not a whole number in [{}, {}]", flag, text, lowest, highest));
  }
  return value;
}

std::vector<std::size_t> parse_dims(const std::string& text) {
  std::vector<std::size_t> dims;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    dims.push_back(parse_whole(text.substr(start, end - start), "--dims", 1, std::uint64_t{1} << 40));
    start = end + 1;
  }
  if (dims.size() > 3) usage_error(fmt::format("--dims: {} extents given; zcoll takes 1, 2 or 3", dims.size()));
  return dims;
}

options parse(int argc, char** argv) {
  options o;
  if (argc < 2) usage_error("give a command: compress, decompress, info or list");
  o.command = argv[1];
  if (o.command == "--help" || o.command == "-h") return o;
  if (o.command != "compress" && o.command != "decompress" && o.command != "info" && o.command != "list") {
    usage_error(fmt::format("unknown command '{}' (compress, decompress, info, list)", o.command));
  }
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      o.command = "--help";
      return o;
    }
    if (i + 1 >= argc) usage_error(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "-i") {
      o.input = value;
    } else if (flag == "-o") {
      o.output = value;
    } else if (flag == "--compare" && o.command == "decompress") {
      o.compare = value;
    } else if (o.command != "compress") {
      usage_error(fmt::format("zcoll {}: unknown option '{}'", o.command, flag));
    } else if (flag == "--type") {
      if (value != "f32" && value != "f64") usage_error(fmt::format("--type: '{}' is neither f32 nor f64", value));
      o.type = value;
    } else if (flag == "--dims") {
      o.dims = parse_dims(value);
    } else if (flag == "--count") {
      o.count = parse_whole(value, "--count", 0, std::uint64_t{1} << 48);
    } else if (flag == "--abs" || flag == "--rel") {
      if (o.error_bound) usage_error("give one bound: --abs or --rel");
      const double eb = parse_number(value, flag);
      if (!std::isfinite(eb) || eb < 0) usage_error(fmt::format("{}: {} must be finite and >= 0", flag, value));
      o.error_bound = flag == "--abs" ? zcoll::absolute(eb) : zcoll::relative(eb);
    } else if (flag == "--codec") {
      o.codec = value;
    } else if (flag == "--fill") {
      o.fill = parse_number(value, "--fill");
    } else if (flag == "--chunk") {
      o.chunk_values = static_cast<std::uint32_t>(parse_whole(value, "--chunk", 32, 65536));
      if (o.chunk_values % 32 != 0) usage_error(fmt::format("--chunk: {} is not a multiple of 32", value));
    } else if (flag == "--tuning") {
      if (value != "ratio" && value != "rate-distortion") {
        usage_error(fmt::format("--tuning: '{}' is neither ratio nor rate-distortion", value));
      }
      o.tuning = value == "ratio" ? zcoll::tuning_target::ratio : zcoll::tuning_target::rate_distortion;
    } else if (flag == "--threads") {
      o.threads = static_cast<unsigned>(parse_whole(value, "--threads", 1, 1024));
    } else {
      usage_error(fmt::format("zcoll compress: unknown option '{}'", flag));
    }
  }
  const bool needs_output = o.command == "compress" || o.command == "decompress";
  if (o.command != "list" && o.input.empty()) usage_error(fmt::format("zcoll {}: give the input as -i FILE", o.command));
  if (needs_output && o.output.empty()) usage_error(fmt::format("zcoll {}: give the output as -o FILE", o.command));
  if (o.command == "compress") {
    if (!o.error_bound) usage_error("zcoll compress: give the bound as --abs E or --rel R");
    if (o.dims.empty() == !o.count.has_value()) usage_error("zcoll compress: give the shape as --dims or --count");
  }
  return o;
}

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(fmt::format("cannot open '{}' for reading", path));
  std::vector<std::byte> bytes(std::filesystem::file_size(path));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::size_t>(in.gcount()) != bytes.size()) throw file_error(fmt::format("cannot read '{}'", path));
  return bytes;
}

void write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw file_error(fmt::format("cannot write '{}'", path));
}

/// The file's values as T; a size that is not a whole number of values, or not the shape's, is an error.
template <class T>
std::vector<T> read_values(const std::string& path, std::size_t expected, std::string_view shape_flag) {
  const auto bytes = read_file(path);
  if (bytes.size() % sizeof(T) != 0) {
    throw file_error(fmt::format("'{}' has {} bytes, not a whole number of {}-byte values", path, bytes.size(), sizeof(T)));
  }
  if (bytes.size() / sizeof(T) != expected) {
    throw file_error(fmt::format("'{}' holds {} values of {} bytes; {} says {}", path, bytes.size() / sizeof(T),
                                 sizeof(T), shape_flag, expected));
  }
  std::vector<T> values(expected);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string join(const std::vector<std::size_t>& dims) {
  std::string text;
  for (const auto d : dims) {
    if (!text.empty()) text += 'x';
    text += std::to_string(d);
  }
  return text;
}

template <class T>
int compress(const options& o) {
  std::size_t count = o.count.value_or(1);
  if (!o.count) {
    for (const auto d : o.dims) count *= d;
  }
  const auto values = read_values<T>(o.input, count, o.count ? "--count" : "--dims");
  return zcoll::with_registered_codec(o.codec, [&]<class Entry>() {
    using Codec = typename Entry::type;
    if constexpr (Entry::traits.input == zcoll::codec_input::rows) {
      if (o.dims.size() < 2) usage_error(fmt::format("--codec {} works on rows: give --dims ROWS,ROW_LENGTH", o.codec));
    }
    const Codec codec({.error_bound = *o.error_bound, .chunk_values = o.chunk_values, .fill_value = o.fill,
                       .shape = o.dims, .tuning = o.tuning});
    std::vector<std::byte> stream(codec.template max_compressed_size<T>(values.size()));
    const auto start = std::chrono::steady_clock::now();
    const auto written = codec.compress(zcoll::exec::Host{.threads = o.threads}, std::span<const T>(values),
                                        std::span<std::byte>(stream));
    const double seconds = seconds_since(start);
    write_file(o.output, written);
    const auto header = zcoll::read_stream_header(written);
    const double input_bytes = static_cast<double>(values.size() * sizeof(T));
    fmt::print("zcoll: {} -> {}: {} values ({}, {}), codec {} ({})\n", o.input, o.output, values.size(), o.type,
               o.count ? "flat" : join(o.dims), o.codec, Codec::name());
    fmt::print("  bound: requested {}, stated {} (absolute){}\n", zcoll::to_string(*o.error_bound),
               header.error_bound, Codec::uses_error_bound ? "" : " - this codec sets its own bound");
    if (header.has_fill_value) {
      fmt::print("  fill value: {:.9g}\n", zcoll::fill_value_of<T>(static_cast<zcoll::bits_of<T>>(header.fill_bits)));
    }
    fmt::print("  {} -> {} bytes: ratio {:.3f}, {:.3f} s ({:.3f} GB/s)\n", values.size() * sizeof(T), written.size(),
               input_bytes / static_cast<double>(written.size()), seconds, input_bytes / seconds / 1e9);
    return 0;
  });
}

template <class T>
int decompress(const options& o, std::span<const std::byte> stream, const zcoll::stream_header& header) {
  return zcoll::with_registered_codec(header.codec, [&]<class Entry>() {
    // A decoder reads its settings from the stream (a row codec its row length); the row codecs'
    // constructors still ask for one, which decoding does not use.
    zcoll::codec_config settings;
    if constexpr (Entry::traits.input == zcoll::codec_input::rows) settings.shape = {1};
    const typename Entry::type codec{settings};
    std::vector<T> restored(header.count);
    const auto start = std::chrono::steady_clock::now();
    codec.decompress(zcoll::exec::Host{}, stream, std::span<T>(restored));
    const double seconds = seconds_since(start);
    write_file(o.output, std::as_bytes(std::span<const T>(restored)));
    const double output_bytes = static_cast<double>(restored.size() * sizeof(T));
    fmt::print("zcoll: {} -> {}: {} values ({}), codec {}, stated bound {}, {:.3f} s ({:.3f} GB/s)\n", o.input,
               o.output, restored.size(), zcoll::to_string(header.type), Entry::name, header.error_bound, seconds,
               output_bytes / seconds / 1e9);
    if (!o.compare.empty()) {
      const auto original = read_values<T>(o.compare, restored.size(), "the stream");
      std::optional<zcoll::bits_of<T>> fill;
      if (header.has_fill_value) fill = static_cast<zcoll::bits_of<T>>(header.fill_bits);
      const auto error = zcoll::measure_error<T>(original, restored, header.error_bound, fill);
      fmt::print("  against {}: max |error| {:.6g}, PSNR {:.2f} dB, NRMSE {:.3g}; stated bound {}\n", o.compare,
                 error.max_abs_error, error.psnr_db, error.nrmse, error.bound_held() ? "held" : "BROKEN");
      return error.bound_held() ? 0 : 1;
    }
    return 0;
  });
}

/// The codec the header names, by its registered name ("-" when no registered codec writes it).
std::string codec_name_of(const zcoll::codec_id& id) {
  std::string name = "-";
  zcoll::for_each_registered_codec([&]<class Entry>() {
    if (name == "-" && Entry::type::id == id) name = Entry::name;
  });
  return name;
}

int info(const options& o) {
  const auto stream = read_file(o.input);
  const auto h = zcoll::read_stream_header(stream);
  fmt::print("{}: zcoll stream, format version {}, {} bytes\n", o.input, zcoll::stream_format_version, stream.size());
  fmt::print("  codec: {} ({})\n", codec_name_of(h.codec), zcoll::to_string(h.codec));
  fmt::print("  values: {} {}, stated bound {}\n", h.count, zcoll::to_string(h.type), h.error_bound);
  if (h.has_fill_value) fmt::print("  fill value bits: {:#x}\n", h.fill_bits);
  if (h.chunk_values != 0) fmt::print("  chunks: {} of {} values\n", h.chunk_count, h.chunk_values);
  if (h.count > 0) {
    const std::size_t value_bytes = h.count * (h.type == zcoll::value_type::f32 ? 4 : 8);
    fmt::print("  ratio: {:.3f}\n", static_cast<double>(value_bytes) / static_cast<double>(stream.size()));
  }
  return 0;
}

int run(const options& o) {
  if (o.command == "--help") {
    std::fputs(help_text, stdout);
    return 0;
  }
  if (o.command == "list") {
    zcoll::for_each_registered_codec([]<class Entry>() {
      fmt::print("{:<20} {}{}\n", Entry::name, Entry::type::name(),
                 Entry::traits.input == zcoll::codec_input::rows ? " (rows: --dims ROWS,ROW_LENGTH)" : "");
    });
    return 0;
  }
  if (o.command == "info") return info(o);
  if (o.command == "compress") return o.type == "f64" ? compress<double>(o) : compress<float>(o);
  const auto stream = read_file(o.input);
  const auto header = zcoll::read_stream_header(stream);
  return header.type == zcoll::value_type::f64 ? decompress<double>(o, stream, header)
                                               : decompress<float>(o, stream, header);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument& e) {  // usage errors
    std::fprintf(stderr, "zcoll: %s\n", e.what());
    return 2;
  } catch (const zcoll::argument_error& e) {  // a setting the codec refuses (the message names it)
    std::fprintf(stderr, "zcoll: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // files, streams (zcoll::format_error)
    std::fprintf(stderr, "zcoll: %s\n", e.what());
    return 1;
  }
}
