// zcoll-bench: measures codecs side by side with a memcpy reference, on real or synthetic data.
//
//   zcoll-bench codec --input FILE --dims 132,73,144 --type f32 --codec fzlight,identity --rel 1e-2,1e-3
//   zcoll-bench codec --synthetic smooth --count 4000000 --codec all --abs 0.01 --csv out.csv
//   zcoll-bench codec --synthetic embeddings:tables=26,dim=32,batch=2048 --codec fzlight --abs 0.01 --reference all
//
// Timings are medians of --repeat runs after one warm-up, timing only the codec call into buffers
// allocated beforehand. Absolute CPU timings drift on a shared machine; the ratios to the memcpy row,
// measured in the same run, hold.

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_common.hpp"
#include "byte_coders.hpp"
#include "coll_bench.hpp"
#include "model_bench.hpp"
#include "embedding_input.hpp"
#include "quantized_reference.hpp"
#include "reference_codecs.hpp"
#include "sz_references.hpp"
#include "cuda_codec_bench.hpp"  // declarations only; defined where nvcc builds cuda_codec_bench.cu
#include "zcoll/codec/add.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/zcoll.hpp"

namespace {

using zcoll_bench::median;
using zcoll_bench::parse_number;
using zcoll_bench::split;
using zcoll_bench::csv_field;
using zcoll_bench::json_number;
using zcoll_bench::json_string;
#if ZCOLL_BENCH_HAS_CUDA
using zcoll_bench::cuda_memcpy_seconds;
#endif

struct options {
  std::string input;
  std::string synthetic;
  std::optional<zcoll_bench::embedding_spec> embeddings;  ///< --synthetic embeddings[:keys], --lookups
  std::string lookups;
  std::vector<std::size_t> dims;
  std::string type = "f32";
  std::size_t count = 1 << 22;
  std::vector<std::string> codecs = {"fzlight"};
  std::vector<std::string> references;  ///< --reference: reference rows (none by default)
  std::vector<zcoll::bound> bounds;
  unsigned threads = 1;
  unsigned repeat = 5;
  std::uint32_t chunk_values = zcoll::codec_config{}.chunk_values;
  std::optional<double> fill_value;
  /// --tuning: the codec_config::tuning of each row of a codec that picks predictor settings.
  std::vector<zcoll::tuning_target> tunings = {zcoll::tuning_target::ratio};
  zcoll::tuning_target tuning = zcoll::tuning_target::ratio;  ///< the row being measured
  std::string csv;
  std::string json;
  std::string decompressed_out;
  std::string device = "host";
  std::size_t blocks = 0;  ///< --blocks: the multi-chunk (all-to-all) measurement on the device
  std::size_t tile = 1;    ///< --tile: the --input field repeated along its slowest extent
  bool add = false;        ///< --add: the homomorphic sum beside decompress-add-compress
  bool add_same_fill = false;  ///< --add-pair same-fill: the second operand keeps the data's fill lanes
};

struct row {
  std::string codec;
  std::string bound;
  double ratio = 1.0;
  double compress_gb_per_s = 0.0;
  double decompress_gb_per_s = 0.0;
  double compress_vs_memcpy = 1.0;
  double decompress_vs_memcpy = 1.0;
  double error_bound = 0.0;
  double max_abs_error = 0.0;
  bool bound_held = true;
  /// False for a reference that aims at its bound without promising it (ZFP's accuracy mode): a break
  /// shows as NO, with a note, but does not fail the run the way a zcoll codec breaking its bound does.
  bool bound_promised = true;
  double psnr_db = std::numeric_limits<double>::infinity();
  double nrmse = 0.0;
};

[[noreturn]] void usage_error(const std::string& message) {
  throw std::invalid_argument(message + "\n(run 'zcoll-bench --help' for the options)");
}



const char* const help_text = R"(zcoll-bench codec: ratio, speed and error of zcoll codecs, beside a memcpy of the same buffer.
(zcoll-bench coll: compressed collectives beside the uncompressed schedule and native MPI; see 'zcoll-bench coll --help'.
 zcoll-bench model: predicted time and speed-up of a compressed collective; see 'zcoll-bench model --help'.)

input (one of):
  --input FILE          raw little-endian values, C order
  --dims D0,D1,...      the data's shape, slowest first: checked against the file's size (or sets --count
                        for a --synthetic data set) and passed to the codecs as codec_config::shape
  --type f32|f64        value type of the data (default f32)
  --tile N              the --input field N times over, stacked along its slowest extent (--dims D0 reads
                        as N*D0): a large field from a small one, with the small one's statistics
  --synthetic NAME      smooth | random | constant | spiky | fill   (with --count N, default 4194304)
  --synthetic embeddings[:KEY=VALUE,...]
                        the DLRM embedding all-to-all payload: `tables` tables of `rows` vectors of `dim`
                        values N(0, sigma), each looked up `batch` times with a Zipf(alpha) row index (rank
                        1 most frequent, drawn exactly by inverse CDF); sent table-major, tables x batch
                        vectors, with shape = {tables * batch, dim}. Keys (defaults): tables=26, dim=32,
                        batch=2048, rows=100000, alpha=1.05, sigma=1/sqrt(dim), seed=42. A row's vector is
                        a function of (seed, table, row): a row looked up twice is the same vector.
  --lookups FILE        row indices from an interaction log instead of Zipf: a CSV with a header naming a
                        movieId (or itemId, item) column, e.g. MovieLens ratings.csv. Items are rows (dense
                        ids, one table row per distinct item); the interactions, in file order (key
                        order=time: by the timestamp column), form batches of `batch` lookups, and table t
                        takes batch t (the same item stream shifted by t batches; wraps past the end).
                        Takes tables, dim, batch, sigma, seed, order from --synthetic embeddings:...
                        (alone it means --synthetic embeddings with the defaults); rows and alpha come
                        from the log.
codecs and bounds:
  --codec A,B,...       codec names, 'all', or 'list' to print them (default fzlight)
  --abs E1,E2,...       absolute error bounds
  --rel R1,R2,...       bounds relative to the value range (default 1e-3 if no bound is given)
  --fill VALUE          declare a fill value: the value of the data type nearest to VALUE (-1e34 on f32 data
                        is -9.99999979e+33; a note says which), stored exactly, left out of the range
  --tuning T1,T2        codec_config::tuning of the codecs that pick their predictor's settings on a sample
                        (HighRatio): ratio (the default: the fewest bytes within the bound) and/or
                        rate-distortion (the least error for the bytes); a row each, the latter's codec
                        name ending in (rate-distortion); other codecs have one row
  --chunk N             values per chunk (multiple of 32; default: each codec's, 4096, 65536 for 2-D/3-D
                        Lorenzo and HighRatio, HighRatio-2d/3d whole planes of --dims up to 65536 or a
                        2-D field whole up to 2^20 values; HighRatio takes up to 2^20, the others 65536)
reference rows (off by default; one thread, whatever --threads):
  --reference A,B,...   'all', 'list' to print them, or groups and row names:
                          lz4        LZ4_compress_default on the raw value bytes (lossless)
                          zstd       zstd levels 1 and 3 on the raw value bytes (lossless)
                          blosc      'blosc-lz4': Blosc 1 on the raw value bytes, bit shuffle of the
                                     values then its lz4, clevel 5, one internal thread (lossless)
                          quant+lz4, quant+zstd, quant+blosc
                                     zcoll's linear quantizer at each bound (Linear::block_quantizer,
                                     bins of 2 eb), then the codes as they are ('linear+none+...', for
                                     embeddings) or as 1-D Lorenzo residuals ('linear+lorenzo1d+...', as
                                     SZ-style compressors), zigzagged, then LZ4, zstd-1/zstd-3 or Blosc
                                     (bit shuffle of 32-bit items) on the 32-bit words; unboundable and
                                     fill values go exactly in a side stream. Decompression includes
                                     dequantizing back to values, and every value is checked against
                                     the bound.
                          zfp        'zfp-accuracy-Nd': ZFP's fixed-accuracy mode at each bound
                                     (tolerance = the absolute bound), serial, on the --dims shape (x =
                                     the last, fastest extent; extents of 1 dropped; more than 4 folded
                                     into the slowest), 1-D without --dims. Every value is checked
                                     against the tolerance and a break shows as NO with a note; ZFP
                                     does not promise its tolerance, so unlike a zcoll row a break does
                                     not change the exit status.
                          sz3        'sz3': SZ3 (its default: interpolation or Lorenzo, Huffman, zstd)
                                     at each bound in the data's units, one thread, on the --dims shape
                          szp        'szp': SZp, the reference fZ-light, at each bound, one thread
                                     (SZ3 and SZp are built from their source folders, ZCOLL_SZ3_DIR and
                                     ZCOLL_SZP_DIR; every value is checked and a break of their bound is
                                     shown, not fatal)
                        Rows of a library the build did not find (liblz4, libzstd, libblosc, libzfp, SZ3,
                        SZp) are left out, with a note.
run:
  --device host|cuda    where the codecs run (default host). cuda: fzlight, int8/int4/int2, fp16, bf16,
                        fp8-e4m3, fp8-e5m2, topk, embedding-huffman (encoded on the host: its compression
                        column is the host's one thread plus the copy) on the first GPU, data and buffers in device memory, GB/s
                        from CUDA events, beside a device-to-device cudaMemcpy of the same buffer;
                        needs a zcoll-bench built with CUDA
  --blocks N            with --device cuda: also cut the data into N blocks (an all-to-all's
                        per-destination blocks) and time compressing them in one launch into one buffer
                        against one launch per block (not topk: it has no batch driver)
  --add on|off          also time zcoll::add (the homomorphic sum) beside decompress-add-compress on the same
                        two streams, for the chosen codecs whose streams add (default off)
  --add-pair rotated|same-fill
                        the second operand of --add: the data rotated by a third of its length (default),
                        or that with the fill value (--fill) exactly where the data has it, as two fields
                        of one grid have it (land in ocean data); without --fill the two are the same
  --threads N           host threads for compress and decompress (default 1)
  --repeat N            timed repetitions; the median is reported (default 5)
output:
  --csv FILE, --json FILE     the table for tools
  --decompressed-out FILE     the reconstruction (raw, same type); needs exactly one codec and one bound
)";

options parse(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    std::fputs(help_text, stdout);
    std::exit(argc < 2 ? 2 : 0);
  }
  if (std::string_view(argv[1]) != "codec") {
    usage_error(fmt::format("unknown command '{}': the commands are 'codec', 'coll' and 'model'", argv[1]));
  }
  options o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(help_text, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--input") {
      o.input = value;
    } else if (flag == "--dims") {
      for (const auto& d : split(value, ',')) o.dims.push_back(static_cast<std::size_t>(parse_number(d, "--dims")));
    } else if (flag == "--type") {
      if (value != "f32" && value != "f64") usage_error(fmt::format("--type: '{}' is neither f32 nor f64", value));
      o.type = value;
    } else if (flag == "--synthetic") {
      const auto colon = value.find(':');
      o.synthetic = value.substr(0, colon);
      if (o.synthetic == "embeddings") {
        o.embeddings = zcoll_bench::parse_embedding_spec(colon == std::string::npos ? "" : value.substr(colon + 1));
      } else if (colon != std::string::npos) {
        usage_error(fmt::format("--synthetic: '{}' takes no keys (only embeddings:KEY=VALUE,... does)", o.synthetic));
      }
    } else if (flag == "--lookups") {
      o.lookups = value;
    } else if (flag == "--count") {
      o.count = static_cast<std::size_t>(parse_number(value, "--count"));
    } else if (flag == "--codec") {
      o.codecs = split(value, ',');
    } else if (flag == "--reference") {
      o.references = split(value, ',');
    } else if (flag == "--abs") {
      for (const auto& b : split(value, ',')) o.bounds.push_back(zcoll::absolute(parse_number(b, "--abs")));
    } else if (flag == "--rel") {
      for (const auto& b : split(value, ',')) o.bounds.push_back(zcoll::relative(parse_number(b, "--rel")));
    } else if (flag == "--fill") {
      o.fill_value = parse_number(value, "--fill");
    } else if (flag == "--tuning") {
      o.tunings.clear();
      for (const auto& t : split(value, ',')) {
        if (t == "ratio") {
          o.tunings.push_back(zcoll::tuning_target::ratio);
        } else if (t == "rate-distortion") {
          o.tunings.push_back(zcoll::tuning_target::rate_distortion);
        } else {
          usage_error(fmt::format("--tuning: '{}' is neither ratio nor rate-distortion", t));
        }
      }
    } else if (flag == "--chunk") {
      o.chunk_values = static_cast<std::uint32_t>(parse_number(value, "--chunk"));
    } else if (flag == "--threads") {
      o.threads = static_cast<unsigned>(parse_number(value, "--threads"));
    } else if (flag == "--repeat") {
      o.repeat = static_cast<unsigned>(parse_number(value, "--repeat"));
    } else if (flag == "--csv") {
      o.csv = value;
    } else if (flag == "--json") {
      o.json = value;
    } else if (flag == "--decompressed-out") {
      o.decompressed_out = value;
    } else if (flag == "--device") {
      if (value != "host" && value != "cuda") usage_error(fmt::format("--device: '{}' is neither host nor cuda", value));
      o.device = value;
    } else if (flag == "--add") {
      if (value != "on" && value != "off") usage_error(fmt::format("--add: '{}' is neither on nor off", value));
      o.add = value == "on";
    } else if (flag == "--add-pair") {
      if (value != "rotated" && value != "same-fill") {
        usage_error(fmt::format("--add-pair: '{}' is neither rotated nor same-fill", value));
      }
      o.add_same_fill = value == "same-fill";
    } else if (flag == "--blocks") {
      o.blocks = static_cast<std::size_t>(parse_number(value, "--blocks"));
    } else if (flag == "--tile") {
      o.tile = static_cast<std::size_t>(parse_number(value, "--tile"));
      if (o.tile == 0) usage_error("--tile: 0 copies of the field; give 1 or more");
    } else {
      usage_error(fmt::format("unknown option '{}'", flag));
    }
  }
  if (o.bounds.empty()) o.bounds.push_back(zcoll::relative(1e-3));
  if (o.device == "cuda") {
#if !ZCOLL_BENCH_HAS_CUDA
    usage_error("--device cuda: this zcoll-bench was built without a CUDA compiler (configure with "
                "ZCOLL_ENABLE_CUDA=ON where nvcc and CCCL are installed)");
#endif
    if (!o.references.empty()) usage_error("--reference rows run on the host: leave them out with --device cuda");
  } else if (o.blocks > 0) {
    usage_error("--blocks measures the CUDA batch launch: use it with --device cuda");
  }
  if (o.repeat == 0) usage_error("--repeat must be at least 1");
  if (o.threads == 0) usage_error("--threads must be at least 1");
  if (!o.lookups.empty()) {
    if (o.synthetic.empty() && o.input.empty()) {
      o.synthetic = "embeddings";
      o.embeddings.emplace();
    }
    if (!o.embeddings) {
      usage_error("--lookups drives embedding lookups: use it with --synthetic embeddings[:...], not --input or "
                  "another data set");
    }
    if (o.embeddings->rows_given || o.embeddings->alpha_given) {
      usage_error("--lookups: the rows and their popularity come from the log; leave out the keys rows and alpha");
    }
  } else if (o.embeddings && o.embeddings->time_order) {
    usage_error("--synthetic embeddings: order=time applies to --lookups only");
  }
  if (o.embeddings && !o.dims.empty()) {
    usage_error("--dims: embeddings have the shape {tables * batch, dim}; set it with the keys");
  }
  const bool listing = o.codecs == std::vector<std::string>{"list"} || o.references == std::vector<std::string>{"list"};
  if (o.input.empty() == o.synthetic.empty() && !listing) {
    usage_error("give exactly one of --input FILE and --synthetic NAME");
  }
  if (o.tile > 1 && o.input.empty()) usage_error("--tile repeats an --input field; a --synthetic set takes --count");
  return o;
}

template <class T>
std::vector<T> read_values(const options& o) {
  std::ifstream file(o.input, std::ios::binary | std::ios::ate);
  if (!file) usage_error(fmt::format("--input: cannot open '{}'", o.input));
  const auto size_bytes = static_cast<std::size_t>(file.tellg());
  if (size_bytes % sizeof(T) != 0) {
    usage_error(fmt::format("--input: '{}' has {} bytes, not a whole number of {} values", o.input, size_bytes, o.type));
  }
  std::vector<T> values(size_bytes / sizeof(T));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(size_bytes));
  if (!o.dims.empty()) {
    std::size_t product = 1;
    for (auto d : o.dims) product *= d;
    if (product != values.size()) {
      usage_error(fmt::format("--dims: the shape holds {} values, '{}' holds {}", product, o.input, values.size()));
    }
  }
  return values;
}

template <class T>
std::vector<T> synthetic_values(const options& o) {
  std::vector<T> values(o.count);
  std::mt19937_64 random(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const double n = static_cast<double>(o.count);
  for (std::size_t i = 0; i < o.count; ++i) {
    const double t = static_cast<double>(i) / n;
    double v = 0.0;
    if (o.synthetic == "smooth") {
      v = std::sin(2 * std::numbers::pi * 7 * t) + 0.3 * std::sin(2 * std::numbers::pi * 131 * t) + 0.01 * uniform(random);
    } else if (o.synthetic == "random") {
      v = uniform(random);
    } else if (o.synthetic == "constant") {
      v = 3.25;
    } else if (o.synthetic == "spiky") {
      v = std::sin(2 * std::numbers::pi * 7 * t) + (random() % 97 == 0 ? 1e6 * uniform(random) : 0.0);
    } else if (o.synthetic == "fill") {
      v = (i / 1000) % 2 == 0 ? -1e10 : std::sin(2 * std::numbers::pi * 7 * t);
    } else {
      usage_error(fmt::format("--synthetic: unknown data set '{}' (smooth, random, constant, spiky, fill)", o.synthetic));
    }
    values[i] = static_cast<T>(v);
  }
  return values;
}

/// What the rows are measured on: the values, the shape the codecs are configured with, and how to
/// name the data in the title and the CSV.
template <class T>
struct dataset {
  std::vector<T> values;
  std::vector<std::size_t> shape;  ///< codec_config::shape: --dims, or {tables * batch, dim}
  std::string name;
  std::string note;  ///< a line under the title, or empty
};

std::size_t product_of(const std::vector<std::size_t>& extents) {
  std::size_t product = 1;
  for (auto e : extents) product *= e;
  return product;
}

template <class T>
dataset<T> embedding_dataset(const options& o) {
  const auto& spec = *o.embeddings;
  dataset<T> data;
  data.shape = {spec.tables * spec.batch, spec.dim};
  const std::string keys = fmt::format("tables={},dim={},batch={},sigma={:.4g},seed={}", spec.tables, spec.dim,
                                       spec.batch, spec.value_sigma(), spec.seed);
  zcoll_bench::embedding_payload<T> payload;
  if (o.lookups.empty()) {
    payload = zcoll_bench::synthetic_embeddings<T>(spec);
    data.name = fmt::format("synthetic:embeddings:{},rows={},alpha={}", keys, spec.rows, spec.alpha);
  } else {
    const auto log = zcoll_bench::read_interaction_log(o.lookups, spec.time_order);
    payload = zcoll_bench::logged_embeddings<T>(spec, log);
    data.name = fmt::format("lookups:{} ({},order={})", o.lookups, keys, spec.time_order ? "time" : "file");
    const std::size_t lookups = spec.tables * spec.batch;
    data.note = fmt::format("{} interactions, {} distinct items = rows per table; {} lookups{}. ", log.rows.size(),
                            log.distinct_rows, lookups,
                            lookups > log.rows.size() ? " (more than the log holds: the stream wraps around)" : "");
  }
  data.note += fmt::format("Distinct rows per table's batch: {:.1f}% of {} lookups (the rest repeat a vector)",
                           100.0 * payload.distinct_fraction, spec.batch);
  data.values = std::move(payload.values);
  return data;
}

/// `field` `copies` times over, one copy after another (C order: stacked along the slowest extent).
template <class T>
std::vector<T> tiled(std::vector<T> field, std::size_t copies) {
  if (copies == 1) return field;
  std::vector<T> out;
  out.reserve(field.size() * copies);
  for (std::size_t c = 0; c < copies; ++c) out.insert(out.end(), field.begin(), field.end());
  return out;
}

template <class T>
dataset<T> load_dataset(const options& o) {
  if (o.embeddings) return embedding_dataset<T>(o);
  dataset<T> data;
  data.shape = o.dims;
  if (!o.input.empty()) {
    data.values = tiled(read_values<T>(o), o.tile);
    data.name = o.input;
    if (o.tile > 1) {
      if (!data.shape.empty()) data.shape.front() *= o.tile;
      data.name += fmt::format(" tiled {} times", o.tile);
    }
  } else {
    options sized = o;
    if (!o.dims.empty()) sized.count = product_of(o.dims);
    data.values = synthetic_values<T>(sized);
    data.name = "synthetic:" + o.synthetic;
  }
  return data;
}

/// Median seconds of `repeat` runs of fn, after one warm-up run.
template <class Fn>
double median_seconds(unsigned repeat, Fn&& fn) {
  fn();
  std::vector<double> samples;
  for (unsigned r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(samples);
}

/// A table row from what was measured: sizes, median times and the error against `error_bound`.
row make_row(std::string name, std::string bound, std::size_t size_bytes, std::size_t compressed_bytes,
             double compress_s, double decompress_s, double memcpy_gb_per_s, double error_bound,
             const zcoll::error_stats& error) {
  const double gb = static_cast<double>(size_bytes) / 1e9;
  row r;
  r.codec = std::move(name);
  r.bound = std::move(bound);
  r.ratio = static_cast<double>(size_bytes) / static_cast<double>(compressed_bytes);
  r.compress_gb_per_s = gb / compress_s;
  r.decompress_gb_per_s = gb / decompress_s;
  r.compress_vs_memcpy = r.compress_gb_per_s / memcpy_gb_per_s;
  r.decompress_vs_memcpy = r.decompress_gb_per_s / memcpy_gb_per_s;
  r.error_bound = error_bound;
  r.max_abs_error = error.max_abs_error;
  r.bound_held = error.bound_held();
  r.psnr_db = error.psnr_db;
  r.nrmse = error.nrmse;
  return r;
}

/// One codec at one bound: timings, ratio and error on the data.
template <class Codec, class T>
row measure(const options& o, const dataset<T>& data, const zcoll::bound& bound, double memcpy_gb_per_s,
            std::vector<T>& restored) {
  const std::vector<T>& values = data.values;
  const Codec codec({.error_bound = bound, .chunk_values = o.chunk_values, .fill_value = o.fill_value,
                     .shape = data.shape, .tuning = o.tuning});
  const zcoll::exec::Host exec{.threads = o.threads};
  std::vector<std::byte> stream(codec.template max_compressed_size<T>(values.size()));
  std::span<std::byte> written;
  const double compress_s = median_seconds(o.repeat, [&] { written = codec.compress(exec, values, std::span(stream)); });
  restored.assign(values.size(), T(0));
  const double decompress_s = median_seconds(o.repeat, [&] { codec.decompress(exec, written, restored); });

  const auto header = zcoll::read_stream_header(written);
  std::optional<zcoll::bits_of<T>> fill;
  if (header.has_fill_value) fill = static_cast<zcoll::bits_of<T>>(header.fill_bits);
  const auto error = zcoll::measure_error<T>(values, restored, header.error_bound, fill);
  return make_row(Codec::name(), zcoll::to_string(bound), values.size() * sizeof(T), written.size(), compress_s,
                  decompress_s, memcpy_gb_per_s, header.error_bound, error);
}

/// A lossless coder on the raw value bytes: one row, exact reconstruction checked bit for bit.
template <class T>
row measure_lossless(const zcoll_bench::byte_coder& coder, const options& o, const dataset<T>& data,
                     double memcpy_gb_per_s, std::vector<T>& restored) {
  const auto in = std::as_bytes(std::span(data.values));
  std::vector<std::byte> stream(coder.max_compressed_bytes(in.size()));
  std::size_t written = 0;
  const double compress_s = median_seconds(o.repeat, [&] { written = coder.compress(in, stream); });
  restored.assign(data.values.size(), T(0));
  const auto out = std::as_writable_bytes(std::span(restored));
  const double decompress_s =
      median_seconds(o.repeat, [&] { coder.decompress(std::span(stream).first(written), out); });
  const auto error = zcoll::measure_error<T>(data.values, restored, 0.0, zcoll::fill_bits_of<T>(o.fill_value));
  return make_row("ref:" + coder.name, "-", in.size(), written, compress_s, decompress_s, memcpy_gb_per_s, 0.0, error);
}

/// Quantization + a lossless coder at one bound, every value checked against the bound it states.
template <class T>
row measure_quantized(const zcoll_bench::byte_coder& coder, zcoll_bench::code_prediction prediction,
                      const options& o, const dataset<T>& data, const zcoll::bound& bound, double memcpy_gb_per_s,
                      std::vector<T>& restored) {
  zcoll_bench::quantized_reference<T> reference(coder, prediction, data.values.size());
  std::vector<std::byte> stream(reference.max_compressed_bytes());
  std::span<std::byte> written;
  const double compress_s = median_seconds(
      o.repeat, [&] { written = reference.compress(data.values, bound, o.fill_value, std::span(stream)); });
  restored.assign(data.values.size(), T(0));
  const double decompress_s = median_seconds(o.repeat, [&] { reference.decompress(written, restored); });
  const double error_bound = zcoll_bench::quantized_reference<T>::error_bound_of(written);
  const auto error = zcoll::measure_error<T>(data.values, restored, error_bound, zcoll::fill_bits_of<T>(o.fill_value));
  return make_row("ref:" + reference.name(), zcoll::to_string(bound), data.values.size() * sizeof(T),
                  written.size(), compress_s, decompress_s, memcpy_gb_per_s, error_bound, error);
}

/// A lossy reference library (ZFP, SZ3, SZp) at one bound, the reference `make(eb)` builds for the bound
/// in the data's units (the fill value left out of a relative bound's range); every value checked against
/// it. A break is reported, never fatal: ZFP aims at its tolerance without promising it, and SZ3's and
/// SZp's breaks are theirs.
template <class T, class Make>
row measure_lossy_reference(const options& o, const dataset<T>& data, const zcoll::bound& bound, double memcpy_gb_per_s,
                            std::vector<T>& restored, const Make& make) {
  const double error_bound = zcoll_bench::reference_error_bound(bound, std::span<const T>(data.values), o.fill_value);
  auto reference = make(error_bound);
  std::size_t written = 0;
  const double compress_s = median_seconds(o.repeat, [&] { written = reference.compress(data.values); });
  restored.assign(data.values.size(), T(0));
  const double decompress_s = median_seconds(o.repeat, [&] { reference.decompress(restored); });
  const auto error = zcoll::measure_error<T>(data.values, restored, error_bound, zcoll::fill_bits_of<T>(o.fill_value));
  row r = make_row("ref:" + reference.name(), zcoll::to_string(bound), data.values.size() * sizeof(T), written,
                   compress_s, decompress_s, memcpy_gb_per_s, error_bound, error);
  r.bound_promised = false;
  return r;
}

/// A reference_table entry measuring the lossy reference `make(data, eb)` builds at each bound.
template <class T, class Make>
auto lossy_reference_row(Make make) {
  return [make](const options& o, const dataset<T>& data, const zcoll::bound& bound, double memcpy_gb_per_s,
                std::vector<T>& restored) {
    return measure_lossy_reference(o, data, bound, memcpy_gb_per_s, restored,
                                   [&](double eb) { return make(data, eb); });
  };
}

/// The codecs by their command-line names, in the order 'all' runs them: the registry's
/// (zcoll/codec/registry.hpp).
template <class T>
using measure_fn = row (*)(const options&, const dataset<T>&, const zcoll::bound&, double, std::vector<T>&);

template <class T>
struct codec_entry {
  measure_fn<T> measure;
  bool uses_error_bound;
  std::string pipeline;
  bool tunable;  ///< codec_config::tuning matters (zcoll::uses_tuning)
};

template <class T>
const std::vector<std::pair<std::string, codec_entry<T>>>& codec_table() {
  static const std::vector<std::pair<std::string, codec_entry<T>>> table = [] {
    std::vector<std::pair<std::string, codec_entry<T>>> entries;
    zcoll::for_each_registered_codec([&]<class Entry>() {
      using Codec = typename Entry::type;
      entries.emplace_back(std::string(Entry::name),
                           codec_entry<T>{&measure<Codec, T>, Codec::uses_error_bound, Codec::name(), zcoll::uses_tuning<Codec>});
    });
    return entries;
  }();
  return table;
}

/// A reference row by its name (without "ref:"), the --reference group it belongs to, and how to
/// measure it; `uses_error_bound` rows are measured at every bound, the others once.
template <class T>
struct reference_entry {
  std::string name;
  std::string group;
  bool uses_error_bound;
  std::function<row(const options&, const dataset<T>&, const zcoll::bound&, double, std::vector<T>&)> measure;
};

/// The reference rows this build has, in the order 'all' runs them: the coders on the raw bytes, then
/// quantization + each coder, without and with prediction, then ZFP.
template <class T>
std::vector<reference_entry<T>> reference_table() {
  using zcoll_bench::code_prediction;
  const auto coders = zcoll_bench::available_byte_coders(sizeof(T));
  const auto code_coders = zcoll_bench::available_byte_coders(sizeof(std::uint32_t));  // the codes are u32
  const auto family = [](const std::string& coder) { return coder.substr(0, coder.find('-')); };
  std::vector<reference_entry<T>> table;
  for (const auto& coder : coders) {
    table.push_back({coder.name, family(coder.name), false,
                     [coder](const options& o, const dataset<T>& data, const zcoll::bound&, double memcpy_gb_per_s,
                             std::vector<T>& restored) {
                       return measure_lossless(coder, o, data, memcpy_gb_per_s, restored);
                     }});
  }
  for (const auto& coder : code_coders) {
    for (const auto prediction : {code_prediction::none, code_prediction::lorenzo1d}) {
      table.push_back({zcoll_bench::quantized_reference<T>::name_of(coder, prediction), "quant+" + family(coder.name),
                       true,
                       [coder, prediction](const options& o, const dataset<T>& data, const zcoll::bound& bound,
                                           double memcpy_gb_per_s, std::vector<T>& restored) {
                         return measure_quantized(coder, prediction, o, data, bound, memcpy_gb_per_s, restored);
                       }});
    }
  }
#if ZCOLL_BENCH_HAS_ZFP
  table.push_back({"zfp-accuracy", "zfp", true, lossy_reference_row<T>([](const dataset<T>& data, double eb) {
                     return zcoll_bench::zfp_accuracy_reference<T>(data.shape, data.values.size(), eb);
                   })});
#endif
#if ZCOLL_BENCH_HAS_SZ3
  table.push_back({"sz3", "sz3", true, lossy_reference_row<T>([](const dataset<T>& data, double eb) {
                     return zcoll_bench::sz3_reference<T>(data.shape, data.values.size(), eb);
                   })});
#endif
#if ZCOLL_BENCH_HAS_SZP
  table.push_back({"szp", "szp", true, lossy_reference_row<T>([](const dataset<T>&, double eb) {
                     return zcoll_bench::szp_reference<T>(eb);
                   })});
#endif
  return table;
}

/// The entries --reference names, in table order; names of coders this build lacks add a note.
template <class T>
std::vector<reference_entry<T>> selected_references(const std::vector<std::string>& names,
                                                    std::vector<std::string>& notes) {
  const auto table = reference_table<T>();
  const bool all = std::find(names.begin(), names.end(), "all") != names.end();
  std::vector<reference_entry<T>> selected;
  for (const auto& entry : table) {
    const bool named = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
                         return n == entry.name || n == entry.group;
                       }) != names.end();
    if (all || named) selected.push_back(entry);
  }
  const auto missing = zcoll_bench::missing_references();
  std::vector<bool> noted(missing.size(), false);
  for (const auto& n : names) {
    if (n == "none") continue;
    const bool known = n == "all" || std::any_of(table.begin(), table.end(),
                                                 [&](const auto& e) { return n == e.name || n == e.group; });
    bool of_missing = false;
    for (std::size_t m = 0; m < missing.size(); ++m) {
      if (n == "all" || n.find(missing[m].family) != std::string::npos) noted[m] = of_missing = true;
    }
    if (!known && !of_missing) {
      usage_error(fmt::format("--reference: unknown reference '{}' (try --reference list)", n));
    }
  }
  for (std::size_t m = 0; m < missing.size(); ++m) {
    if (noted[m]) notes.push_back("reference rows left out: " + missing[m].note);
  }
  return selected;
}

std::string number(double v, const char* format = "{:.4g}") {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format(fmt::runtime(format), v);
}

#if ZCOLL_BENCH_HAS_CUDA
/// One codec at one bound on the GPU (cuda_codec_bench.cu): timings, ratio and error on the data.
template <class T>
row measure_on_device(const std::string& name, const options& o, const dataset<T>& data, const zcoll::bound& bound,
                      double memcpy_gb_per_s, std::vector<T>& restored) {
  const zcoll::codec_config config{.error_bound = bound, .chunk_values = o.chunk_values, .fill_value = o.fill_value,
                                   .shape = data.shape};
  auto result = zcoll_bench::cuda_measure<T>(name, config, std::span<const T>(data.values), o.repeat);
  restored = std::move(result.restored);
  const auto error = zcoll::measure_error<T>(data.values, restored, result.error_bound, zcoll::fill_bits_of<T>(o.fill_value));
  return make_row(name + " (cuda)", zcoll::to_string(bound), data.values.size() * sizeof(T), result.compressed_bytes,
                  result.compress_s, result.decompress_s, memcpy_gb_per_s, result.error_bound, error);
}

/// The multi-chunk table: the data as --blocks blocks, compressed in one launch and in one launch each.
template <class T>
void print_batch_table(const std::vector<std::string>& names, const options& o, const dataset<T>& data) {
  fmt::print("\nmulti-chunk compression: {} blocks of {:.1f} KB each, one launch into one buffer vs one launch per block\n",
             o.blocks, static_cast<double>(data.values.size() * sizeof(T)) / 1e3 / static_cast<double>(o.blocks));
  fmt::print("{:<20} {:>12} {:>8} {:>14} {:>16} {:>9}\n", "codec", "bound", "ratio", "one launch GB/s",
             "per block GB/s", "speed-up");
  const double gb = static_cast<double>(data.values.size() * sizeof(T)) / 1e9;
  for (const auto& name : names) {
    for (const auto& bound : o.bounds) {
      const zcoll::codec_config config{.error_bound = bound, .chunk_values = o.chunk_values, .fill_value = o.fill_value,
                                       .shape = data.shape};
      const auto r = zcoll_bench::cuda_measure_batch<T>(name, config, std::span<const T>(data.values), o.blocks, o.repeat);
      fmt::print("{:<20} {:>12} {:>8.3f} {:>14.1f} {:>16.1f} {:>9.2f}\n", name, zcoll::to_string(bound),
                 gb * 1e9 / static_cast<double>(r.compressed_bytes), gb / r.one_launch_s, gb / r.launch_per_block_s,
                 r.launch_per_block_s / r.one_launch_s);
    }
  }
}
template <class T>
zcoll_bench::cuda_add_result measure_add_on_device(const std::string& name, const zcoll::codec_config& config,
                                                   std::span<const std::byte> a, std::span<const std::byte> b, std::size_t n,
                                                   unsigned repeat) {
  return zcoll_bench::cuda_measure_add<T>(name, config, a, b, n, repeat);
}
#else
double cuda_memcpy_seconds(std::size_t, unsigned, std::string&) { throw std::logic_error("built without CUDA"); }
template <class T>
zcoll_bench::cuda_add_result measure_add_on_device(const std::string&, const zcoll::codec_config&, std::span<const std::byte>,
                                                   std::span<const std::byte>, std::size_t, unsigned) {
  throw std::logic_error("built without CUDA");
}
template <class T>
row measure_on_device(const std::string&, const options&, const dataset<T>&, const zcoll::bound&, double, std::vector<T>&) {
  throw std::logic_error("built without CUDA");
}
template <class T>
void print_batch_table(const std::vector<std::string>&, const options&, const dataset<T>&) {
  throw std::logic_error("built without CUDA");
}
#endif

void print_table(const std::string& title, const std::vector<row>& rows) {
  fmt::print("{}\n", title);
  std::size_t codec_width = 32;  // the longest codec name, so that the columns line up
  for (const auto& r : rows) codec_width = std::max(codec_width, r.codec.size());
  fmt::print("{:<{}} {:>12} {:>8} {:>9} {:>9} {:>7} {:>7} {:>11} {:>11} {:>5} {:>8} {:>10}\n", "codec", codec_width,
             "bound", "ratio", "comp GB/s", "dec GB/s", "c/mcpy", "d/mcpy", "abs bound", "max error", "held", "PSNR dB",
             "NRMSE");
  for (const auto& r : rows) {
    fmt::print("{:<{}} {:>12} {:>8.3f} {:>9.3f} {:>9.3f} {:>7.3f} {:>7.3f} {:>11} {:>11} {:>5} {:>8} {:>10}\n",
               r.codec, codec_width, r.bound, r.ratio, r.compress_gb_per_s, r.decompress_gb_per_s, r.compress_vs_memcpy,
               r.decompress_vs_memcpy, number(r.error_bound), number(r.max_abs_error), r.bound_held ? "yes" : "NO",
               number(r.psnr_db, "{:.2f}"), number(r.nrmse, "{:.3e}"));
  }
}

/// The second operand of --add: the data rotated by a third of its length (a second field of the same
/// range); with --add-pair same-fill, holding the fill value exactly where the data does (and the data's
/// own value where the rotation brings a fill value elsewhere).
template <class T>
std::vector<T> second_operand(const options& o, std::span<const T> x) {
  const std::size_t n = x.size();
  std::vector<T> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = x[(i + n / 3) % n];
  if (!o.add_same_fill || !o.fill_value) return y;
  const auto is_fill = [fill = zcoll::fill_bits_of<T>(*o.fill_value)](T v) {
    return std::bit_cast<zcoll::bits_of<T>>(v) == fill;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (is_fill(x[i]) || is_fill(y[i])) y[i] = x[i];
  }
  return y;
}

/// One codec's homomorphic sum beside decompress-add-compress (DOC) on the same pair of streams (the data
/// and second_operand's), both compressed at the bound the data's stream states.
struct add_row {
  std::string codec, bound;
  double add_s = 0, doc_s = 0, decompress_s = 0;
  double add_ratio = 0, doc_ratio = 0;
  double stated = 0, max_error = 0;
  bool held = true;
};

template <class Codec, class T>
add_row measure_add(const options& o, const std::string& registry_name, const dataset<T>& data, const zcoll::bound& bound) {
  const std::vector<T>& x = data.values;
  const std::size_t n = x.size();
  const std::vector<T> y = second_operand<T>(o, x);
  const zcoll::exec::Host exec{.threads = o.threads};
  const zcoll::codec_config first{.error_bound = bound, .chunk_values = o.chunk_values, .fill_value = o.fill_value,
                                  .shape = data.shape};
  const double eb = zcoll::read_stream_header(Codec(first).compress(x)).error_bound;
  zcoll::codec_config config = first;
  config.error_bound = zcoll::absolute(eb);  // one bin width for both streams, as the collectives agree on
  const Codec codec(config);
  const auto a = codec.compress(x), b = codec.compress(y);
  std::vector<std::byte> sum(codec.template max_compressed_size<T>(n));
  std::span<std::byte> sum_written;
  add_row r{.codec = Codec::name(), .bound = zcoll::to_string(bound), .stated = 2 * eb};
  if (o.device == "cuda") {  // timed on the device; its sum must be the host's bytes
    const auto device = measure_add_on_device<T>(registry_name, config, a, b, n, o.repeat);
    sum_written = zcoll::add(exec, codec, a, b, std::span(sum));
    r.codec += " (cuda)";
    r.add_s = device.add_s;
    r.doc_s = device.doc_s;
    r.decompress_s = device.decompress_s;
    r.held = std::ranges::equal(device.sum, sum_written);
    r.doc_ratio = static_cast<double>(2 * n * sizeof(T)) / static_cast<double>(device.doc_bytes);
  } else {
    std::vector<T> da(n), db(n);
    std::vector<std::byte> doc(sum.size());
    std::span<std::byte> doc_written;
    r.add_s = median_seconds(o.repeat, [&] { sum_written = zcoll::add(exec, codec, a, b, std::span(sum)); });
    r.doc_s = median_seconds(o.repeat, [&] {
      codec.decompress(exec, a, da);
      codec.decompress(exec, b, db);
      for (std::size_t i = 0; i < n; ++i) da[i] += db[i];
      doc_written = codec.compress(exec, da, std::span(doc));
    });
    r.decompress_s = median_seconds(o.repeat, [&] { codec.decompress(exec, a, da); });
    r.doc_ratio = static_cast<double>(2 * n * sizeof(T)) / static_cast<double>(doc_written.size());
  }
  r.add_ratio = static_cast<double>(2 * n * sizeof(T)) / static_cast<double>(sum_written.size());
  // Against the exact x + y on the lanes coded in both (finite, non-fill): the two streams' bounds, plus
  // the one rounding of float(qa + qb) · 2eb.
  std::vector<T> restored(n);
  codec.decompress(exec, sum_written, restored);
  const auto fill = zcoll::fill_bits_of<T>(o.fill_value);
  for (std::size_t i = 0; i < n; ++i) {
    const bool exact_lane = !std::isfinite(x[i]) || !std::isfinite(y[i]) ||
                            (fill && (std::bit_cast<zcoll::bits_of<T>>(x[i]) == *fill || std::bit_cast<zcoll::bits_of<T>>(y[i]) == *fill));
    if (exact_lane) continue;
    const double exact = static_cast<double>(x[i]) + static_cast<double>(y[i]);
    const double error = std::abs(static_cast<double>(restored[i]) - exact);
    r.max_error = std::max(r.max_error, error);
    r.held = r.held && error <= r.stated + std::abs(exact) * std::numeric_limits<T>::epsilon();
  }
  return r;
}

/// The add table (--add): every chosen codec whose streams add (zcoll::addable_codec), at every bound.
template <class T>
bool print_add_table(const std::vector<std::string>& names, const options& o, const dataset<T>& data) {
  std::vector<add_row> rows;
  zcoll::for_each_registered_codec([&]<class Entry>() {
    using Codec = typename Entry::type;
    if constexpr (zcoll::addable_codec<Codec>) {
      if (std::find(names.begin(), names.end(), std::string(Entry::name)) == names.end()) return;
      for (const auto& bound : o.bounds) rows.push_back(measure_add<Codec, T>(o, std::string(Entry::name), data, bound));
    }
  });
  if (rows.empty()) {
    fmt::print("\nnote: --add: none of the chosen codecs adds streams (zcoll::addable_codec: fzlight does)\n");
    return true;
  }
  const double gb = static_cast<double>(data.values.size() * sizeof(T)) / 1e9;
  fmt::print("\nhomomorphic sum (zcoll::add) beside decompress-add-compress (DOC) on the same two streams (the data and the "
             "data rotated by n/3{}); GB/s of one operand's values\n",
             o.add_same_fill && o.fill_value ? ", holding the fill value where the data does" : "");
  fmt::print("{:<28} {:>12} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>11} {:>11} {:>5}\n", "codec", "bound", "add GB/s",
             "DOC GB/s", "dec GB/s", "add/DOC", "add/dec", "add ratio", "DOC ratio", "sum bound", "max error", "held");
  bool held = true;
  for (const auto& r : rows) {
    fmt::print("{:<28} {:>12} {:>9.3f} {:>9.3f} {:>9.3f} {:>8.2f} {:>8.2f} {:>9.3f} {:>9.3f} {:>11} {:>11} {:>5}\n", r.codec,
               r.bound, gb / r.add_s, gb / r.doc_s, gb / r.decompress_s, r.doc_s / r.add_s, r.decompress_s / r.add_s,
               r.add_ratio, r.doc_ratio, number(r.stated), number(r.max_error), r.held ? "yes" : "NO");
    held = held && r.held;
  }
  return held;
}

void write_csv(const std::string& path, const std::string& data, const std::vector<row>& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("--csv: cannot write '{}'", path));
  fmt::print(f, "data,codec,bound,ratio,compress_gb_per_s,decompress_gb_per_s,compress_vs_memcpy,"
                "decompress_vs_memcpy,abs_error_bound,max_abs_error,bound_held,psnr_db,nrmse\n");
  for (const auto& r : rows) {
    fmt::print(f, "{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.9g},{:.9g},{},{:.6g},{:.6g}\n", csv_field(data),
               csv_field(r.codec), csv_field(r.bound), r.ratio, r.compress_gb_per_s, r.decompress_gb_per_s, r.compress_vs_memcpy,
               r.decompress_vs_memcpy, r.error_bound, r.max_abs_error, r.bound_held ? "yes" : "no", r.psnr_db, r.nrmse);
  }
  std::fclose(f);
}

void write_json(const std::string& path, const std::string& data, const options& o, const std::vector<row>& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("--json: cannot write '{}'", path));
  fmt::print(f, "{{\n  \"data\": {},\n  \"threads\": {},\n  \"repeat\": {},\n  \"chunk_values\": {},\n  \"rows\": [\n",
             json_string(data), o.threads, o.repeat, o.chunk_values);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    fmt::print(f,
               "    {{\"codec\": {}, \"bound\": {}, \"ratio\": {}, \"compress_gb_per_s\": {}, "
               "\"decompress_gb_per_s\": {}, \"compress_vs_memcpy\": {}, \"decompress_vs_memcpy\": {}, "
               "\"abs_error_bound\": {}, \"max_abs_error\": {}, \"bound_held\": {}, \"psnr_db\": {}, \"nrmse\": {}}}{}\n",
               json_string(r.codec), json_string(r.bound), json_number(r.ratio), json_number(r.compress_gb_per_s),
               json_number(r.decompress_gb_per_s), json_number(r.compress_vs_memcpy),
               json_number(r.decompress_vs_memcpy), json_number(r.error_bound), json_number(r.max_abs_error),
               r.bound_held ? "true" : "false", json_number(r.psnr_db), json_number(r.nrmse),
               i + 1 < rows.size() ? "," : "");
  }
  fmt::print(f, "  ]\n}}\n");
  std::fclose(f);
}

template <class T>
int run(const options& o) {
  const auto& table = codec_table<T>();
  std::vector<std::string> names = o.codecs;
  if (names == std::vector<std::string>{"all"}) {
    names.clear();
    for (const auto& entry : table) names.push_back(entry.first);
#if ZCOLL_BENCH_HAS_CUDA
    if (o.device == "cuda") names = zcoll_bench::cuda_codec_names();
#endif
  }
  if (!o.decompressed_out.empty() && (names.size() != 1 || o.bounds.size() != 1)) {
    usage_error("--decompressed-out needs exactly one codec and one bound");
  }
  std::vector<std::string> notes;
  const auto references = selected_references<T>(o.references, notes);
  if (!references.empty() && o.threads > 1) notes.push_back("reference rows run on one thread");
  const dataset<T> input = load_dataset<T>(o);
  const std::vector<T>& values = input.values;
  const std::string& data = input.name;
  if (const auto fill = zcoll::fill_bits_of<T>(o.fill_value)) {
    // The decimal given and the value of T the codecs use (core/fill_value.hpp): -1e34 on f32 data is
    // -9.99999979e+33, which is what NetCDF files that say -1e34 hold.
    notes.push_back(fmt::format("--fill {}: {} data uses {:.{}g}, the {} nearest to it", *o.fill_value, o.type,
                                zcoll::fill_value_of<T>(*fill), std::numeric_limits<T>::max_digits10, o.type));
  }

  // The reference row: memcpy of the same buffer, in the same run (device to device on the GPU).
  const bool on_device = o.device == "cuda";
  std::string device_name = "host";
  double memcpy_s = 0.0;
  if (on_device) {
    memcpy_s = cuda_memcpy_seconds(values.size() * sizeof(T), o.repeat, device_name);
  } else {
    std::vector<T> copy(values.size());
    memcpy_s = median_seconds(o.repeat, [&] { std::memcpy(copy.data(), values.data(), values.size() * sizeof(T)); });
  }
  const double memcpy_gb_per_s = static_cast<double>(values.size() * sizeof(T)) / 1e9 / memcpy_s;
  std::vector<row> rows;
  row reference;
  reference.codec = on_device ? "cudaMemcpy D2D (reference)" : "memcpy (reference)";
  reference.bound.assign(1, '-');
  reference.compress_gb_per_s = reference.decompress_gb_per_s = memcpy_gb_per_s;
  rows.push_back(reference);

  std::vector<T> restored;
  for (const auto& name : names) {
    const auto entry = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == name; });
    if (entry == table.end()) usage_error(fmt::format("--codec: unknown codec '{}' (try --codec list)", name));
    // A codec that picks no predictor settings has one row a bound, whatever the tunings.
    const std::size_t tunings = entry->second.tunable && !on_device ? o.tunings.size() : 1;
    for (std::size_t t = 0; t < tunings; ++t) {
      options tuned = o;
      tuned.tuning = entry->second.tunable ? o.tunings[t] : zcoll::tuning_target::ratio;
      for (const auto& bound : o.bounds) {
        try {
          rows.push_back(on_device ? measure_on_device(name, tuned, input, bound, memcpy_gb_per_s, restored)
                                   : entry->second.measure(tuned, input, bound, memcpy_gb_per_s, restored));
        } catch (const zcoll::argument_error& e) {  // a row codec on flat data, say: the other rows still run
          fmt::print("note: {} skipped: {}\n", name, e.what());
          break;
        }
        if (tuned.tuning == zcoll::tuning_target::rate_distortion) rows.back().codec += " (rate-distortion)";
        if (!entry->second.uses_error_bound) {
          rows.back().bound.assign(1, '-');  // lossless: one row, whatever the bounds
          break;
        }
      }
    }
  }
  std::vector<T> reference_restored;  // apart, so that --decompressed-out writes the codec's reconstruction
  for (const auto& entry : references) {
    for (const auto& bound : o.bounds) {
      rows.push_back(entry.measure(o, input, bound, memcpy_gb_per_s, reference_restored));
      if (!entry.uses_error_bound) break;
    }
  }
  const std::string title =
      fmt::format("zcoll-bench codec: {} ({} {} values, {:.2f} MB), {}, median of {}, chunk {}", data,
                  values.size(), o.type, static_cast<double>(values.size() * sizeof(T)) / 1e6,
                  on_device ? "CUDA on " + device_name : fmt::format("{} thread(s)", o.threads), o.repeat,
                  o.chunk_values == 0 ? std::string("per codec (4096; 65536 with 2-D/3-D Lorenzo and HighRatio, or its planes or 2-D field)")
                                      : std::to_string(o.chunk_values));
  print_table(input.note.empty() ? title : title + "\n" + input.note, rows);
  for (const auto& r : rows) {
    if (r.bound_held || r.bound_promised) continue;
    notes.push_back(fmt::format("{} at {} did not hold its tolerance {} (max error {} over the finite, non-fill "
                                "values; the others must come back bit for bit). It aims at the tolerance without "
                                "promising it, so this row does not change the exit status",
                                r.codec, r.bound, number(r.error_bound), number(r.max_abs_error)));
  }
  if (on_device && o.blocks > 0) print_batch_table(names, o, input);
  const bool sums_held = !o.add || print_add_table(names, o, input);
  for (const auto& note : notes) fmt::print("note: {}\n", note);
  if (!o.csv.empty()) write_csv(o.csv, data, rows);
  if (!o.json.empty()) write_json(o.json, data, o, rows);
  if (!o.decompressed_out.empty()) {
    std::ofstream out(o.decompressed_out, std::ios::binary);
    out.write(reinterpret_cast<const char*>(restored.data()), static_cast<std::streamsize>(restored.size() * sizeof(T)));
    if (!out) throw std::runtime_error(fmt::format("--decompressed-out: cannot write '{}'", o.decompressed_out));
  }
  // Exit status 3 is for zcoll's guarantees (and lossless references' exactness), not ZFP's target.
  const bool all_held =
      std::all_of(rows.begin(), rows.end(), [](const row& r) { return r.bound_held || !r.bound_promised; });
  return all_held && sums_held ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "coll") return zcoll_bench::coll_main(argc, argv);
  if (argc >= 2 && std::string_view(argv[1]) == "model") return zcoll_bench::model_main(argc, argv);
  try {
    const options o = parse(argc, argv);
    if (o.codecs == std::vector<std::string>{"list"}) {
      for (const auto& [name, entry] : codec_table<float>()) fmt::print("{:<20} {}\n", name, entry.pipeline);
      return 0;
    }
    if (o.references == std::vector<std::string>{"list"}) {
      for (const auto& entry : reference_table<float>()) fmt::print("{:<32} {}\n", entry.name, entry.group);
      for (const auto& missing : zcoll_bench::missing_references()) fmt::print("(left out: {})\n", missing.note);
      return 0;
    }
    return o.type == "f64" ? run<double>(o) : run<float>(o);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "zcoll-bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "zcoll-bench: {}\n", e.what());
    return 1;
  }
}
