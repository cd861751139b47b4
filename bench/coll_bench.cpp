// zcoll-bench coll: a compressed collective beside the same schedule uncompressed and the native MPI call.
//
//   mpirun -np 4 zcoll-bench coll --op allreduce --schedule ring --rel 1e-4 --sizes 1M:256M --synthetic smooth
//   zcoll-bench coll --transport local:4 --op allgather --schedule ring --sizes 1M,4M --input FILE --csv out.csv
//
// One row per message size, nccl-tests style: size (bytes) and count (values) of the operation's large
// buffer, then time, algbw and busbw of each variant, the speed-ups of the compressed variant, its ratio,
// its max error and the bound its report states. The variants run one after the other on the same data in
// the same run: the uncompressed schedule (Compressed<S, Identity>), the native MPI call (under MPI only)
// and the compressed schedule (Compressed<S, Codec>).
//
// Timing: one warm-up call, then --repeat calls, each started after a barrier (a dissemination barrier
// over the same transport). A call's time is the longest of the ranks' own times for it, and the table
// reports the median of those over the repetitions. algbw = size / time; busbw = algbw × the nccl-tests
// factor of the operation (allreduce 2(n-1)/n; reduce_scatter, allgather, alltoall, alltoallv, scatter,
// gather (n-1)/n; bcast 1). Absolute CPU timings drift on a shared machine; the speed-ups, measured in the
// same run, hold better.
//
// alltoallv is the alltoall operation with block lengths that vary per (sender, receiver) pair
// (block_pattern); its size is the mean over the ranks of their actual input bytes (see combine).
//
// Error: data movement is compared with the exact values, rebuilt from the input generator (every rank
// knows every rank's input); a reduction is compared with the uncompressed schedule's result, which adds
// the same values in the same order. The max is over all elements of all ranks.

#include "coll_bench.hpp"
#include "bench_common.hpp"
#include "collective_model.hpp"
#include "collective_names.hpp"
#include "embedding_input.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#if ZCOLL_BENCH_HAS_CUDA
#include "cuda_coll_bench.hpp"
#endif
#include "zcoll/codec/add.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/collective/host_staging.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/local.hpp"
#include "zcoll/transport/throttled.hpp"
#include "zcoll/zcoll.hpp"

#if ZCOLL_BENCH_HAS_MPI
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "zcoll/transport/mpi.hpp"
#endif

namespace zcoll_bench {

namespace {

using zcoll::schedule::collective_op;

constexpr double not_measured = std::numeric_limits<double>::quiet_NaN();

/// --staging: where the compressed call runs.
enum class staging_kind { off, host, cuda };

#if ZCOLL_BENCH_HAS_CUDA
constexpr bool built_with_cuda = true;
#else
constexpr bool built_with_cuda = false;
#endif

struct coll_options {
  std::string transport;   // "mpi" or "local"
  int local_ranks = 0;     // for "local"
  std::optional<zcoll::transport::link_model> link;  // --link: local ranks talk through Throttled
  collective_op op = collective_op::allreduce;
  std::string op_name = "allreduce";
  bool variable_blocks = false;  // alltoallv: op is alltoall, with the block lengths of block_pattern
  std::string schedule = "ring";
  int group_size = 8;
  std::string codec = "fzlight";
  zcoll::bound error_bound = zcoll::relative(1e-4);
  std::vector<std::size_t> sizes_bytes;
  std::string input;
  std::string synthetic;
  std::string type = "f32";
  unsigned repeat = 5;
  unsigned threads = 1;
  std::uint32_t chunk_values = 4096;  // --chunk: the codec's chunk length
  std::size_t pipeline_values = zcoll::collective_config{}.pipeline_values;
  std::size_t row_length = 64;  // --row: Int8/Int4's row (one scale and bias per row)
  /// The link the model columns assume: --model-link, or --link's under local:N; none, no model.
  std::optional<zcoll::schedule::link_cost> model_link;
  int root = 0;
  bool overlap = false;  // --overlap: the compressed call started non-blocking beside a compute loop
  /// --homomorphic: collective_config::homomorphic of each pass over the sizes (on, off, or both in one run)
  std::vector<bool> homomorphic_passes = {false};
  bool homomorphic = false;  // this pass's
  /// --staging: where the compressed call of each pass runs: as it is, through zcoll::HostStaging, or on
  /// device buffers through zcoll::cuda::Staging
  std::vector<staging_kind> staging_passes = {staging_kind::off};
  staging_kind staging = staging_kind::off;  // this pass's
  std::string csv;
  std::string json;
};

/// The numbers of one variant at one size.
struct variant_timing {
  double time_us = not_measured;
  double algbw_gb_per_s = not_measured;
  double busbw_gb_per_s = not_measured;
};

/// One size: the three variants, the compressed one's ratio, error and bound.
struct coll_row {
  std::size_t size_bytes = 0;
  std::size_t count = 0;
  variant_timing native;
  variant_timing uncompressed;
  variant_timing compressed;
  double speedup_vs_native = not_measured;
  double speedup_vs_uncompressed = not_measured;
  double ratio = 1.0;  // raw / sent bytes of the compressed variant, all ranks together
  double max_abs_error = not_measured;
  double error_bound = 0.0;  // the report's worst case, the largest over the ranks
  double statistical_error_bound = 0.0;
  int compressions_in_chain = 0;
  bool bound_held = true;
  double native_max_abs_error = not_measured;
  double uncompressed_max_abs_error = not_measured;  // data movement only: a reduction's reference
  // Time split of the compressed variant's last call, the largest over the ranks.
  double compress_s = 0.0;
  double communicate_s = 0.0;
  double decompress_s = 0.0;
  double reduce_s = 0.0;
  // The model (collective_model.hpp) for the configured link: the wire time of the best algorithm, the
  // uncompressed schedule, the compressed one at this row's ratio and one core's codec speed.
  model_times model{};
  bool modelled = false;
  codec_speed one_core{};
  // --overlap: the compressed call alone, a compute loop as long as it alone, and both together (the call
  // started non-blocking, then the loop): polling request::test() from the loop, or with the progress
  // thread; medians, the slowest rank's.
  double overlap_call_us = not_measured;
  double overlap_compute_us = not_measured;
  double overlap_polling_us = not_measured;
  double overlap_thread_us = not_measured;
};

[[noreturn]] void usage_error(const std::string& message) {
  throw std::invalid_argument(message + "\n(run 'zcoll-bench coll --help' for the options)");
}



/// GBIT[,US]: a link of GBIT Gbit/s and US microseconds a message.
zcoll::schedule::link_cost parse_link(const std::string& value, const char* option) {
  const auto parts = split(value, ',');
  if (parts.empty() || parts.size() > 2) usage_error(fmt::format("{}: '{}' is not GBIT or GBIT,US", option, value));
  const double gbit = parse_number(parts[0], option);
  const double us = parts.size() == 2 ? parse_number(parts[1], option) : 0.0;
  if (!(gbit > 0.0) || !(us >= 0.0)) usage_error(fmt::format("{}: {} Gbit/s must be > 0 and {} us >= 0", option, gbit, us));
  return {.latency_s = us * 1e-6, .bytes_per_s = gbit * 1e9 / 8};
}

/// --synthetic embeddings[:keys]: the DLRM embedding all-to-all payload of `zcoll-bench codec`
/// (bench/embedding_input.hpp); its vectors are the rows of the row-based codecs.
embedding_spec embeddings_spec(const coll_options& o) {
  const auto colon = o.synthetic.find(':');
  try {
    return parse_embedding_spec(colon == std::string::npos ? std::string_view{} : std::string_view(o.synthetic).substr(colon + 1));
  } catch (const std::invalid_argument& e) {
    usage_error(fmt::format("--synthetic: {}", e.what()));
  }
}

/// A whole number in [low, high].
long long parse_integer(const std::string& text, const char* option, long long low, long long high) {
  long long value = 0;
  try {
    std::size_t used = 0;
    value = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    usage_error(fmt::format("{}: '{}' is not a whole number", option, text));
  }
  if (value < low || value > high) usage_error(fmt::format("{}: {} is outside [{}, {}]", option, value, low, high));
  return value;
}

/// "A:B": A, 2A, 4A, ... up to B; or "A,B,C".
std::vector<std::size_t> parse_sizes(const std::string& text) {
  std::vector<std::size_t> sizes;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const std::size_t first = parse_size(text.substr(0, colon), "--sizes");
    const std::size_t last = parse_size(text.substr(colon + 1), "--sizes");
    if (first > last) usage_error(fmt::format("--sizes: '{}' starts above its end", text));
    for (std::size_t s = first; s <= last; s *= 2) {
      sizes.push_back(s);
      if (s > last / 2) break;
    }
  } else {
    for (const auto& part : split(text, ',')) sizes.push_back(parse_size(part, "--sizes"));
  }
  if (sizes.empty()) usage_error("--sizes: no size given");
  return sizes;
}

/// A codec the registry (zcoll/codec/registry.hpp) marks for the collectives, as this benchmark uses it.
struct coll_codec {
  std::string name;
  std::string pipeline;           ///< Codec::name()
  zcoll::collective_use use = zcoll::collective_use::none;
  bool on_rows = false;           ///< works on rows (the codec's shape.back()): f32 only here
  bool uses_error_bound = false;  ///< false: a bound of its own (per row, or none: identity)
  bool adds_streams = false;      ///< zcoll::addable_codec: --homomorphic applies to its sums
  bool stateless = false;         ///< keeps no state between calls: --staging applies
};

const std::vector<coll_codec>& coll_codecs() {
  static const std::vector<coll_codec> codecs = [] {
    std::vector<coll_codec> list;
    zcoll::for_each_registered_codec([&]<class Entry>() {
      if constexpr (Entry::traits.collective != zcoll::collective_use::none) {
        list.push_back({std::string(Entry::name), Entry::type::name(), Entry::traits.collective,
                        Entry::traits.input == zcoll::codec_input::rows, Entry::type::uses_error_bound,
                        zcoll::addable_codec<typename Entry::type>, !zcoll::stateful_codec<typename Entry::type>});
      }
    });
    return list;
  }();
  return codecs;
}

/// The registered collective codec `name`; nullptr when there is none.
const coll_codec* find_coll_codec(const std::string& name) {
  for (const auto& c : coll_codecs()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string coll_codec_names() {
  std::string names;
  for (const auto& c : coll_codecs()) names += (names.empty() ? "" : ", ") + c.name;
  return names;
}

const coll_codec& codec_of(const std::string& name) { return *find_coll_codec(name); }  // parse() checked it

/// Row-wise quantizers: rows, and a bound each row's range sets.
bool is_rowwise(const std::string& codec) { return codec_of(codec).on_rows && !codec_of(codec).uses_error_bound; }

/// Codecs that work on rows (the codec's shape.back()): the row-wise quantizers, and the embedding
/// codecs, whose rows are the embedding vectors.
bool works_on_rows(const std::string& codec) { return codec_of(codec).on_rows; }

/// Codecs that move the values as they are (identity): no bound, no rows.
bool is_lossless(const std::string& codec) { return !codec_of(codec).on_rows && !codec_of(codec).uses_error_bound; }

bool is_reduction(collective_op op) { return op == collective_op::allreduce || op == collective_op::reduce_scatter; }

/// Whether collective_config::homomorphic changes what runs: a sum, with a codec whose streams add (the
/// library runs the decompress-reduce-compress chain for every other codec, whatever the setting).
bool homomorphic_applies(const coll_options& o) { return is_reduction(o.op) && codec_of(o.codec).adds_streams; }

/// The homomorphic column of --csv: this pass's setting where it applies, "-" where it does not.
std::string homomorphic_title(const coll_options& o) {
  if (!homomorphic_applies(o)) return "-";
  return o.homomorphic ? "on" : "off";
}

/// Operations whose large buffer is cut into one block per rank.
bool is_blocked(collective_op op) { return op != collective_op::allreduce && op != collective_op::bcast; }

bool is_rooted(collective_op op) {
  return op == collective_op::bcast || op == collective_op::scatter || op == collective_op::gather;
}

/// nccl-tests' busbw / algbw: what each rank must move over its link, as a multiple of the size.
double bus_factor(collective_op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case collective_op::allreduce:
      return 2.0 * (n - 1.0) / n;
    case collective_op::bcast:
      return 1.0;
    default:
      return (n - 1.0) / n;
  }
}

const char* const help_text = R"(zcoll-bench coll: a compressed collective beside the same schedule uncompressed and the native MPI
call, nccl-tests style: one row per size, with time, algbw and busbw of each variant, the speed-ups of the
compressed one, its ratio, its max error and the bound its report states.

  mpirun -np 4 zcoll-bench coll --op allreduce --schedule ring --codec fzlight --rel 1e-4 --sizes 1M:256M --synthetic smooth
  zcoll-bench coll --transport local:4 --op allgather --schedule ring --sizes 1M:8M --input FILE --type f32

transport:
  --transport mpi|local:N   mpi: the ranks of mpirun, with the native MPI row (the default when built with
                            MPI); local:N: N threads over transport::Local, no mpirun, no native row
                            (the default is local:4 when built without MPI)
  --link GBIT[,US]          local:N only: every rank's sends go through transport::Throttled, a link of
                            GBIT Gbit/s and US microseconds per message (default 0). A model: bandwidth
                            and latency per sender, no switch contention or incast; for real links use
                            ../shared/tools/netbed
collective:
  --op NAME             allreduce (sum) | reduce_scatter (sum) | allgather | bcast | scatter | gather | alltoall
                        | alltoallv (blocks of varying lengths, see below)
  --schedule NAME       ring (allgather, reduce_scatter, allreduce) | recursive_doubling (allreduce,
                        allgather) | binomial_tree (bcast, scatter, gather) | scatter_allgather (bcast of
                        large messages) | chain (bcast of large messages on few ranks: 32 segments
                        pipelined down a chain) | pairwise (alltoall, alltoallv) | hierarchical
                        (allreduce; binomial tree in groups, recursive doubling across)
  --group-size 2|4|8    ranks per group of the hierarchical schedule (default 8)
  --root R              root of bcast, scatter and gather (default 0)
codec:
  --codec NAME          a collective codec of zcoll/codec/registry.hpp (default fzlight; the list is
                        printed below); int8 and int4 are the
                        row-wise quantizers (FBGEMM's layout, one scale and bias per row), their bound
                        per row; embedding-hybrid (Huffman or vector-LZ per block, by the speed-up model)
                        codes embedding vectors of --row values (with --synthetic embeddings: its dim)
  --row N               int8/int4/embedding-hybrid: values per row (default 64); counts are rounded
                        down to whole rows per block
  --abs E | --rel R     one error bound, absolute or relative to the value range (default --rel 1e-4)
  --chunk N             values per codec chunk (multiple of 32, default 4096)
  --threads N           codec threads per rank (default 1)
  --model-link GBIT[,US]  add the performance model's times for a link of GBIT Gbit/s (US µs per
                        message) to every row: the wire time of the best algorithm (the native
                        reference), the uncompressed and the compressed schedule (codec speed measured
                        on one core, rank 0's input, in the run); --link implies it
  --pipeline N          values per segment of a reduction hop (PIPE-fZ-light: compression, transfer and
                        decompression of a hop overlap); 0 sends each hop as one stream (default 262144)
sizes and data:
  --sizes A:B | A,B,C   bytes of the operation's large buffer (allreduce, bcast: the buffer; allgather,
                        gather: the result; reduce_scatter, scatter, alltoall: the input; alltoallv: the
                        nominal input of each rank), K/M/G suffixes (binary); A:B is every power-of-two
                        multiple of A up to B (default 1M:16M). The count is rounded down to a multiple
                        of the ranks where the buffer is cut in blocks.
  --input FILE          raw little-endian values: each rank's data is the file rotated by rank/N of its
                        length, repeated or truncated to the size
  --type f32|f64        value type (default f32)
  --synthetic NAME      smooth | random, generated at each size, rotated per rank the same way;
                        embeddings[:tables=26,dim=32,batch=2048,rows=100000,alpha=1.05]: the DLRM
                        embedding payload of zcoll-bench codec (Zipf lookups, repeated vectors), rotated
                        by whole vectors
alltoallv blocks (skewed like the DLRM embedding all-to-all, the same on every run):
  rank i sends rank j round(C x w(i, j) / W(i)) values, C the nominal count of --sizes, w(i, j) in
  [0.25, 1.75) from a fixed integer hash (splitmix64) of (i, j), W(i) the sum of rank i's w over its
  non-empty blocks; pairs with (i + 2j) mod 7 = 3 send nothing. So a rank's send counts add up to C up
  to rounding (a few values), while what the ranks receive differs. size and count in the table are
  the mean over the ranks of their actual input (the sum of their send counts); algbw and busbw are
  computed on it.
run and output:
  --homomorphic on|off|on,off
                        collective_config::homomorphic: sums on compressed streams (on) or
                        decompress-reduce-compress hops (off, the default); on,off runs both, one table
                        each, in this run (from the second pass on, the --csv and --json file names get
                        .homomorphic-on or -off appended). It applies to the sums (allreduce,
                        reduce_scatter) of a codec whose streams add (fzlight): the last column of --csv,
                        homomorphic, says on or off there and - elsewhere
  --staging off|host|cuda[,...]
                        alltoall, alltoallv, allreduce and reduce_scatter: the compressed call as it
                        is (off), through zcoll::HostStaging (host: the steps of the call on device
                        buffers — blocks or a hop's segments compressed in batches, bytes staged in
                        buffers of the space, values reduced there — on host memory), or on device
                        buffers through zcoll::cuda::Staging (cuda: each rank a CUDA stream of its own
                        on the first GPU, the input copied there before each call, not timed; the
                        call timed to the end of its stream's work; a zcoll-bench built with CUDA,
                        --codec fzlight over ring, recursive_doubling or pairwise, int8/int4 over
                        pairwise). A list runs each, one table each, in this run (file names of the
                        later passes get .staging-host, -cuda or -off appended)
  --overlap             also time the compressed call started non-blocking (*_async) beside a compute
                        loop as long as the call: the pair polling request::test() from the loop, and the
                        pair with collective_config::progress_thread (under MPI: MPI_THREAD_MULTIPLE);
                        serial would take 2x the longer of the two, full overlap 1x
  --repeat N            timed calls after one warm-up; the median is reported (default 5)
  --csv FILE, --json FILE     the rows for tools (rank 0 writes them)

Exit status: 0; 2 for a wrong option; 3 when a compressed result broke its stated bound (or the
uncompressed schedule moved data inexactly); 1 for any other failure.
)";

/// nullopt: --help was given.
std::optional<coll_options> parse_coll(int argc, char** argv) {
  coll_options o;
#if ZCOLL_BENCH_HAS_MPI
  o.transport = "mpi";
#else
  o.transport = "local";
  o.local_ranks = 4;
#endif
  int bounds_given = 0;
  std::string sizes_text = "1M:16M";
  bool row_given = false;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::nullopt;
    if (flag.rfind("--", 0) != 0) usage_error(fmt::format("'{}' is not an option", flag));
    if (flag == "--overlap") {  // the one option without a value
      o.overlap = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--staging") {
      o.staging_passes.clear();
      for (const auto& setting : split(value, ',')) {
        if (setting != "off" && setting != "host" && setting != "cuda") {
          usage_error(fmt::format("--staging: '{}' is none of off, host and cuda", setting));
        }
        if (setting == "cuda" && !built_with_cuda) {
          usage_error("--staging cuda: this zcoll-bench was built without a CUDA compiler (ZCOLL_ENABLE_CUDA=ON and nvcc build it)");
        }
        o.staging_passes.push_back(setting == "off" ? staging_kind::off : setting == "host" ? staging_kind::host : staging_kind::cuda);
      }
      if (o.staging_passes.empty()) usage_error("--staging needs off, host, cuda or a list of them (off,cuda)");
    } else if (flag == "--homomorphic") {
      o.homomorphic_passes.clear();
      for (const auto& setting : split(value, ',')) {
        if (setting != "on" && setting != "off") usage_error(fmt::format("--homomorphic: '{}' is neither on nor off", setting));
        o.homomorphic_passes.push_back(setting == "on");
      }
      if (o.homomorphic_passes.empty()) usage_error("--homomorphic needs on, off or on,off");
    } else if (flag == "--transport") {
      if (value == "mpi") {
        o.transport = "mpi";
      } else if (value.rfind("local:", 0) == 0) {
        o.transport = "local";
        o.local_ranks = static_cast<int>(parse_integer(value.substr(6), "--transport local:N", 1, 1024));
      } else {
        usage_error(fmt::format("--transport: '{}' is neither 'mpi' nor 'local:N'", value));
      }
    } else if (flag == "--link") {
      const zcoll::schedule::link_cost link = parse_link(value, "--link");
      o.link = zcoll::transport::link_model{.latency_s = link.latency_s, .bandwidth_bytes_per_s = link.bytes_per_s};
      if (!o.model_link) o.model_link = link;
    } else if (flag == "--op") {
      const auto entry = std::find_if(op_table.begin(), op_table.end(), [&](const op_entry& e) { return value == e.name; });
      if (entry == op_table.end()) {
        usage_error(fmt::format("--op: unknown operation '{}' (allreduce, reduce_scatter, allgather, bcast, scatter, "
                                "gather, alltoall, alltoallv)",
                                value));
      }
      o.op = entry->op;
      o.op_name = entry->name;
      o.variable_blocks = entry->variable_blocks;
    } else if (flag == "--schedule") {
      o.schedule = value;
    } else if (flag == "--group-size") {
      o.group_size = static_cast<int>(parse_integer(value, "--group-size", 1, 1 << 20));
      if (o.group_size != 2 && o.group_size != 4 && o.group_size != 8) {
        usage_error(fmt::format("--group-size: {} is not 2, 4 or 8", value));
      }
    } else if (flag == "--root") {
      o.root = static_cast<int>(parse_integer(value, "--root", 0, 1 << 20));
    } else if (flag == "--codec") {
      if (find_coll_codec(value) == nullptr) {
        usage_error(fmt::format("--codec: '{}' is not a collective codec of the registry ({})", value, coll_codec_names()));
      }
      o.codec = value;
    } else if (flag == "--row") {
      o.row_length = static_cast<std::size_t>(parse_integer(value, "--row", 1, 1 << 20));
      row_given = true;
    } else if (flag == "--abs" || flag == "--rel") {
      const double eb = parse_number(value, flag.c_str());
      if (!std::isfinite(eb) || eb < 0) usage_error(fmt::format("{}: {} must be finite and >= 0", flag, value));
      o.error_bound = flag == "--abs" ? zcoll::absolute(eb) : zcoll::relative(eb);
      ++bounds_given;
    } else if (flag == "--chunk") {
      o.chunk_values = static_cast<std::uint32_t>(parse_integer(value, "--chunk", 32, 1 << 24));
      if (o.chunk_values % 32 != 0) usage_error(fmt::format("--chunk: {} is not a multiple of 32", value));
    } else if (flag == "--threads") {
      o.threads = static_cast<unsigned>(parse_integer(value, "--threads", 1, 1024));
    } else if (flag == "--model-link") {
      o.model_link = parse_link(value, "--model-link");
    } else if (flag == "--pipeline") {
      o.pipeline_values = static_cast<std::size_t>(parse_integer(value, "--pipeline", 0, std::int64_t{1} << 40));
    } else if (flag == "--sizes") {
      sizes_text = value;
    } else if (flag == "--input") {
      o.input = value;
    } else if (flag == "--type") {
      if (value != "f32" && value != "f64") usage_error(fmt::format("--type: '{}' is neither f32 nor f64", value));
      o.type = value;
    } else if (flag == "--synthetic") {
      if (value != "smooth" && value != "random" && value != "embeddings" && value.rfind("embeddings:", 0) != 0) {
        usage_error(fmt::format("--synthetic: unknown data set '{}' (smooth, random, embeddings[:keys])", value));
      }
      o.synthetic = value;
      if (value.rfind("embeddings", 0) == 0) embeddings_spec(o);  // the keys are checked here
    } else if (flag == "--repeat") {
      o.repeat = static_cast<unsigned>(parse_integer(value, "--repeat", 1, 1000000));
    } else if (flag == "--csv") {
      o.csv = value;
    } else if (flag == "--json") {
      o.json = value;
    } else {
      usage_error(fmt::format("unknown option '{}'", flag));
    }
  }
  o.sizes_bytes = parse_sizes(sizes_text);
  if (works_on_rows(o.codec) && o.type != "f32") usage_error(fmt::format("--codec {} runs on --type f32", o.codec));
  if (codec_of(o.codec).use == zcoll::collective_use::alltoall && o.schedule != "pairwise") {
    usage_error(fmt::format("--codec {} runs over --schedule pairwise (the embedding all-to-all)", o.codec));
  }
  if (o.synthetic.rfind("embeddings", 0) == 0) {
    // The embedding vectors are the rows.
    const std::size_t dim = embeddings_spec(o).dim;
    if (row_given && o.row_length != dim) {
      usage_error(fmt::format("--row: {} is not the embeddings' dim {}", o.row_length, dim));
    }
    o.row_length = dim;
  }
  const auto staged_in = [&](staging_kind kind) {
    return std::find(o.staging_passes.begin(), o.staging_passes.end(), kind) != o.staging_passes.end();
  };
  const bool any_staging = staged_in(staging_kind::host) || staged_in(staging_kind::cuda);
  if (any_staging && o.op != collective_op::alltoall && o.op != collective_op::allreduce && o.op != collective_op::reduce_scatter) {
    usage_error("--staging: the staged calls measured here are alltoall, alltoallv, allreduce and reduce_scatter");
  }
  if (any_staging && !codec_of(o.codec).stateless) {
    usage_error(fmt::format("--staging: --codec {} keeps state on the host; staged calls take codecs without state", o.codec));
  }
  if (staged_in(staging_kind::cuda)) {
    // What cuda_coll_bench.cu builds (cuda_staged_pair): nvcc compiles each pair once.
    const bool fzlight = o.codec == "fzlight" &&
                         (o.schedule == "ring" || o.schedule == "recursive_doubling" || o.schedule == "pairwise");
    const bool rowwise = (o.codec == "int8" || o.codec == "int4") && o.schedule == "pairwise" && o.type == "f32";
    if (!fzlight && !rowwise) {
      usage_error(fmt::format("--staging cuda: built for --codec fzlight over --schedule ring, recursive_doubling or "
                              "pairwise, and int8/int4 over pairwise on f32; not --codec {} over {}",
                              o.codec, o.schedule));
    }
    if (o.overlap) usage_error("--staging cuda: --overlap is measured on host buffers only");
  }
  if (bounds_given > 1) usage_error("give one error bound: --abs E or --rel R, once");
  if (o.input.empty() == o.synthetic.empty()) usage_error("give exactly one of --input FILE and --synthetic NAME");
  const auto schedule = std::find_if(schedule_table.begin(), schedule_table.end(),
                                     [&](const schedule_entry& e) { return o.schedule == e.name; });
  if (schedule == schedule_table.end()) {
    usage_error(fmt::format("--schedule: unknown schedule '{}' (ring, recursive_doubling, binomial_tree, "
                            "scatter_allgather, chain, pairwise, hierarchical)",
                            o.schedule));
  }
  if (!schedule->serves(o.op)) {
    std::string serving;
    for (const auto& e : schedule_table) {
      if (e.serves(o.op)) serving += std::string(serving.empty() ? "" : ", ") + e.name;
    }
    usage_error(fmt::format("--schedule {} cannot run {}; the schedules that can: {}", o.schedule, o.op_name, serving));
  }
#if !ZCOLL_BENCH_HAS_MPI
  if (o.transport == "mpi") usage_error("--transport mpi: this zcoll-bench was built without MPI; use --transport local:N");
#endif
  if (o.link && o.transport != "local") usage_error("--link models a link between local ranks: use --transport local:N");
  return o;
}

/// The sizes of one operation at one size: the large buffer is `count` values, cut in blocks of `block`.
struct geometry {
  std::size_t count = 0;
  std::size_t block = 0;
  std::size_t data_values = 0;    // one rank's data set (where it has one): what the synthetic base is made for
  std::size_t input_values = 0;   // this rank's input
  std::size_t output_values = 0;  // this rank's result
};

/// `row` > 0: every block is whole rows of a row-wise codec (allreduce's reduce_scatter blocks too).
geometry geometry_of(collective_op op, std::size_t size_bytes, std::size_t value_bytes, int ranks, int rank, int root,
                     std::size_t row = 0) {
  const auto p = static_cast<std::size_t>(ranks);
  geometry g;
  g.count = size_bytes / value_bytes;
  const bool blocked = is_blocked(op) || (row > 0 && op == collective_op::allreduce);
  const std::size_t unit = (blocked ? p : 1) * std::max<std::size_t>(row, 1);
  g.count -= g.count % unit;
  g.block = g.count / p;
  const bool is_root = rank == root;
  switch (op) {
    case collective_op::allreduce:
    case collective_op::alltoall:
      g.data_values = g.input_values = g.output_values = g.count;
      break;
    case collective_op::reduce_scatter:
      g.data_values = g.input_values = g.count;
      g.output_values = g.block;
      break;
    case collective_op::allgather:
      g.data_values = g.input_values = g.block;
      g.output_values = g.count;
      break;
    case collective_op::bcast:
      g.data_values = g.output_values = g.count;
      g.input_values = is_root ? g.count : 0;
      break;
    case collective_op::scatter:
      g.data_values = g.count;
      g.input_values = is_root ? g.count : 0;
      g.output_values = g.block;
      break;
    case collective_op::gather:
      g.data_values = g.input_values = g.block;
      g.output_values = is_root ? g.count : 0;
      break;
    default:
      break;
  }
  return g;
}

/// What can only be checked once the number of ranks is known; the same answer on every rank.
void validate_for_ranks(const coll_options& o, int ranks, std::size_t value_bytes) {
  if (is_rooted(o.op) && o.root >= ranks) {
    usage_error(fmt::format("--root: {} is not a rank of the {} ranks", o.root, ranks));
  }
  for (const std::size_t size_bytes : o.sizes_bytes) {
    const std::size_t row = works_on_rows(o.codec) ? o.row_length : 0;
    const geometry g = geometry_of(o.op, size_bytes, value_bytes, ranks, 0, 0, row);
    if (g.count == 0) {
      usage_error(fmt::format("--sizes: {} bytes hold no {} value{}{}", size_bytes, value_bytes == 4 ? "f32" : "f64",
                              is_blocked(o.op) ? fmt::format(" per rank for {} ranks", ranks) : "",
                              row > 0 ? fmt::format(" in whole rows of {}", row) : ""));
    }
  }
}

/// alltoallv's block lengths, skewed like the DLRM embedding all-to-all over tables of different sizes:
/// rank i sends rank j round(C × w(i, j) / W(i)) values, w(i, j) in [0.25, 1.75) from a fixed hash of
/// (i, j), and nothing where (i + 2j) mod 7 == 3 (a rank with no table another needs); W(i) is the sum of
/// rank i's weights over its non-empty blocks. W(i) makes each rank's input C values up to the rounding
/// of its blocks: without it (C/p × w) the inputs came out 0.45 to 1.57 times C on 1 to 16 ranks, and
/// --sizes would not mean what it says. Receivers still get different totals. Each rank packs its blocks
/// in rank order. Every rank builds the whole matrix, so a receiver knows where its block sits in each
/// sender's input and can check it against rank_data.
class block_pattern {
 public:
  /// `nominal_values`: C, the count --sizes gives one rank's input.
  block_pattern(std::size_t nominal_values, int ranks)
      : ranks_(static_cast<std::size_t>(ranks)), values_(ranks_ * ranks_), first_(ranks_ * ranks_) {
    for (std::size_t i = 0; i < ranks_; ++i) {
      double total_weight = 0.0;  // W(i) > 0: blocks to j and j + 1 are never both empty, and 0 -> 0 is not
      for (std::size_t j = 0; j < ranks_; ++j) total_weight += empty(i, j) ? 0.0 : weight(i, j);
      std::size_t at = 0;
      for (std::size_t j = 0; j < ranks_; ++j) {
        const double share = empty(i, j) ? 0.0 : weight(i, j) / total_weight;
        const auto v = static_cast<std::size_t>(std::llround(static_cast<double>(nominal_values) * share));
        values_[i * ranks_ + j] = v;
        first_[i * ranks_ + j] = at;
        at += v;
      }
    }
  }

  /// Values rank `from` sends rank `to`.
  std::size_t values(int from, int to) const { return values_[index(from, to)]; }
  /// Where that block starts in rank `from`'s input.
  std::size_t first(int from, int to) const { return first_[index(from, to)]; }

  std::vector<std::size_t> send_counts(int from) const {
    std::vector<std::size_t> counts(ranks_);
    for (std::size_t j = 0; j < ranks_; ++j) counts[j] = values(from, static_cast<int>(j));
    return counts;
  }
  std::vector<std::size_t> recv_counts(int to) const {
    std::vector<std::size_t> counts(ranks_);
    for (std::size_t i = 0; i < ranks_; ++i) counts[i] = values(static_cast<int>(i), to);
    return counts;
  }

 private:
  static bool empty(std::size_t i, std::size_t j) { return (i + 2 * j) % 7 == 3; }

  /// splitmix64's finalizer: a fixed, well-mixed integer hash, so the pattern is the same everywhere.
  static double weight(std::size_t i, std::size_t j) {
    std::uint64_t h = (static_cast<std::uint64_t>(i) << 32 | static_cast<std::uint64_t>(j)) + 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return 0.25 + 1.5 * static_cast<double>(h >> 11) * 0x1p-53;  // the top 53 bits as a double in [0, 1)
  }

  std::size_t index(int from, int to) const { return static_cast<std::size_t>(from) * ranks_ + static_cast<std::size_t>(to); }

  std::size_t ranks_;
  std::vector<std::size_t> values_;  // [from * p + to]
  std::vector<std::size_t> first_;   // [from * p + to]
};

template <class T>
std::vector<T> read_values(const std::string& path, const std::string& type) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) usage_error(fmt::format("--input: cannot open '{}'", path));
  const auto size_bytes = static_cast<std::size_t>(file.tellg());
  if (size_bytes % sizeof(T) != 0 || size_bytes == 0) {
    usage_error(fmt::format("--input: '{}' has {} bytes, not a whole, positive number of {} values", path, size_bytes,
                            type));
  }
  std::vector<T> values(size_bytes / sizeof(T));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(size_bytes));
  if (!file) throw std::runtime_error(fmt::format("--input: cannot read '{}'", path));
  return values;
}

/// The synthetic data sets of `zcoll-bench codec`, with the same formulas and seed.
template <class T>
std::vector<T> synthetic_values(const std::string& name, std::size_t count) {
  std::vector<T> values(count);
  std::mt19937_64 random(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const double n = static_cast<double>(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double t = static_cast<double>(i) / n;
    const double v = name == "smooth"
                         ? std::sin(2 * std::numbers::pi * 7 * t) + 0.3 * std::sin(2 * std::numbers::pi * 131 * t) +
                               0.01 * uniform(random)
                         : uniform(random);
    values[i] = static_cast<T>(v);
  }
  return values;
}

/// |a - b|, with two NaNs equal and a NaN against a number infinitely wrong.
template <class T>
double difference(T a, T b) {
  if (a == b) return 0.0;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0.0 : std::numeric_limits<double>::infinity();
  return std::abs(static_cast<double>(a) - static_cast<double>(b));
}

template <class T>
double max_error(std::span<const T> got, std::span<const T> want) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, difference(got[i], want[i]));
  return worst;
}

/// Every rank's data: rank q's value i is base[(i + q·L/N) mod L], the base of L values rotated by q/N of
/// its length and repeated, so any rank can rebuild any other rank's input.
template <class T>
class rank_data {
 public:
  /// Rank q's data starts q/N of the way into `base`, rounded down to a multiple of `align` values (whole
  /// rows, so that an embedding vector stays one vector).
  rank_data(std::span<const T> base, int ranks, std::size_t align = 0)
      : base_(base), ranks_(static_cast<std::size_t>(ranks)), align_(std::max<std::size_t>(align, 1)) {}

  /// out = rank q's values first, first + 1, ...
  void fill(int q, std::size_t first, std::span<T> out) const {
    for_runs(q, first, out.size(), [&](std::size_t at, std::span<const T> run) {
      std::copy(run.begin(), run.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
    });
  }

  /// max |got - rank q's values first, first + 1, ...|.
  double max_error_against(int q, std::size_t first, std::span<const T> got) const {
    double worst = 0.0;
    for_runs(q, first, got.size(), [&](std::size_t at, std::span<const T> run) {
      worst = std::max(worst, max_error(got.subspan(at, run.size()), run));
    });
    return worst;
  }

 private:
  template <class Fn>
  void for_runs(int q, std::size_t first, std::size_t count, Fn&& fn) const {
    const std::size_t length = base_.size();
    const std::size_t shift = static_cast<std::size_t>(q) * length / ranks_ / align_ * align_;
    std::size_t position = (first + shift) % length;
    for (std::size_t done = 0; done < count;) {
      const std::size_t run = std::min(length - position, count - done);
      fn(done, base_.subspan(position, run));
      done += run;
      position = 0;
    }
  }

  std::span<const T> base_;
  std::size_t ranks_;
  std::size_t align_;
};

/// Barrier and reductions for the benchmark's own bookkeeping, over the benchmark's transport (tags
/// apart from Compressed's).
class control_channel {
 public:
  explicit control_channel(zcoll::transport::AnyTransport transport) : transport_(std::move(transport)) {}

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }

  /// Dissemination barrier: ceil(log2 p) rounds, one byte to rank + 2^k and from rank - 2^k.
  void barrier() {
    const int p = size(), me = rank();
    for (int distance = 1; distance < p; distance *= 2) {
      const std::byte out{1};
      std::byte in{};
      auto received = transport_.irecv_async((me - distance + p) % p, barrier_tag, std::span<std::byte>(&in, 1));
      auto sent = transport_.isend_async((me + distance) % p, barrier_tag, std::span<const std::byte>(&out, 1));
      transport_.wait(sent);
      transport_.wait(received);
    }
  }

  /// On rank 0, values becomes the element-wise combine of every rank's values; unchanged elsewhere.
  template <class Combine>
  void reduce_to_root(std::span<double> values, Combine combine) {
    if (rank() != 0) {
      auto sent = transport_.isend_async(0, reduce_tag, std::as_bytes(values));
      transport_.wait(sent);
      return;
    }
    std::vector<double> incoming(values.size());
    for (int q = 1; q < size(); ++q) {
      auto received = transport_.irecv_async(q, reduce_tag, std::as_writable_bytes(std::span(incoming)));
      transport_.wait(received);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = combine(values[i], incoming[i]);
    }
  }

 private:
  static constexpr int barrier_tag = 7301;
  static constexpr int reduce_tag = 7302;
  zcoll::transport::AnyTransport transport_;
};

/// What one rank runs the benchmark with.
template <class T>
struct rank_env {
  control_channel control;
  std::function<zcoll::transport::AnyTransport()> connect;  // a handle on the group, for one Compressed
  /// The native call (in, out, root); empty without MPI.
  std::function<void(collective_op, std::span<const T>, std::span<T>, int)> native;
  /// MPI_Alltoallv (in, send_counts, out, recv_counts); empty without MPI.
  std::function<void(std::span<const T>, std::span<const std::size_t>, std::span<T>, std::span<const std::size_t>)>
      native_alltoallv;
};

/// The non-blocking call of `op` (alltoallv when counts are given) on a Compressed whose schedule serves
/// it (only those are instantiated); the blocking call is this, waited on, as in Compressed itself.
template <class T, class S, class Codec>
zcoll::request invoke_async(zcoll::Compressed<S, Codec>& coll, collective_op op, std::span<const T> in, std::span<T> out,
                            int root, const std::vector<std::size_t>* send_counts = nullptr,
                            const std::vector<std::size_t>* recv_counts = nullptr, zcoll::HostStaging* staging = nullptr) {
  if constexpr (!zcoll::stateful_codec<Codec>) {
    if constexpr (S::supports(collective_op::alltoall)) {
      if (staging != nullptr && send_counts != nullptr) {
        return coll.template alltoallv_async<zcoll::HostStaging, T>(*staging, in, *send_counts, out, *recv_counts);
      }
      if (staging != nullptr && op == collective_op::alltoall) {
        return coll.template alltoall_async<zcoll::HostStaging, T>(*staging, in, out);
      }
    }
    if constexpr (serves<S>(collective_op::allreduce)) {
      if (staging != nullptr && op == collective_op::allreduce) {
        return coll.template allreduce_async<zcoll::HostStaging, T>(*staging, out, zcoll::op::sum);
      }
    }
    if constexpr (S::supports(collective_op::reduce_scatter)) {
      if (staging != nullptr && op == collective_op::reduce_scatter) {
        return coll.template reduce_scatter_async<zcoll::HostStaging, T>(*staging, in, out, zcoll::op::sum);
      }
    }
  }
  if (staging != nullptr) {
    throw std::logic_error("zcoll-bench coll: --staging host takes alltoall(v), allreduce and reduce_scatter with a codec without state");
  }
  if (send_counts) {
    if constexpr (S::supports(collective_op::alltoall)) {
      return coll.template alltoallv_async<T>(in, *send_counts, out, *recv_counts);
    }
  }
  switch (op) {
    case collective_op::allreduce:
      if constexpr (serves<S>(collective_op::allreduce)) return coll.template allreduce_async<T>(out, zcoll::op::sum);
      break;
    case collective_op::reduce_scatter:
      if constexpr (S::supports(collective_op::reduce_scatter)) return coll.template reduce_scatter_async<T>(in, out, zcoll::op::sum);
      break;
    case collective_op::allgather:
      if constexpr (S::supports(collective_op::allgather)) return coll.template allgather_async<T>(in, out);
      break;
    case collective_op::bcast:
      if constexpr (S::supports(collective_op::bcast)) return coll.template bcast_async<T>(out, root);
      break;
    case collective_op::scatter:
      if constexpr (S::supports(collective_op::scatter)) return coll.template scatter_async<T>(in, out, root);
      break;
    case collective_op::gather:
      if constexpr (S::supports(collective_op::gather)) return coll.template gather_async<T>(in, out, root);
      break;
    case collective_op::alltoall:
      if constexpr (S::supports(collective_op::alltoall)) return coll.template alltoall_async<T>(in, out);
      break;
    default:
      break;
  }
  throw std::logic_error(fmt::format("zcoll-bench coll: schedule {} has no such operation", S::name));
}

/// --overlap's compute: dependent floating-point steps on a small array that stays in L1 (it competes with
/// the call for a core, not for memory bandwidth), with poll() every `poll_every` steps.
template <class Poll>
double compute_steps(std::size_t steps, std::size_t poll_every, Poll&& poll) {
  std::array<double, 64> a{};
  a.fill(1.0);
  // Chunks of poll_every steps (all of them at once without polling): the inner loop is the same
  // arithmetic whether or not the caller polls, so the loop alone and the loop beside the call compare.
  const std::size_t chunk = poll_every > 0 ? poll_every : std::max<std::size_t>(steps, 1);
  for (std::size_t done = 0; done < steps; done += chunk) {
    const std::size_t end = std::min(steps, done + chunk);
    for (std::size_t i = done; i < end; ++i) {
      double& x = a[i % a.size()];  // a power of two: a mask
      x = x * 0.999999 + 1e-6;
    }
    if (poll_every > 0) poll();
  }
  return std::accumulate(a.begin(), a.end(), 0.0);
}

/// Steps of compute_steps that take `seconds` on this core (measured: 2^22 steps, scaled).
std::size_t steps_for(double seconds) {
  constexpr std::size_t probe = std::size_t{1} << 22;
  volatile double sink = 0.0;
  std::vector<double> probe_s;
  for (int k = 0; k < 3; ++k) {
    const auto start = std::chrono::steady_clock::now();
    sink = sink + compute_steps(probe, 0, [] {});
    probe_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(probe_s.begin(), probe_s.end());
  return static_cast<std::size_t>(static_cast<double>(probe) * seconds / probe_s[1]) + 1;
}



/// One warm-up call, then `repeat` timed calls; each call after prepare() (not timed) and a barrier.
/// Returns this rank's seconds per timed call.
template <class Prepare, class Call>
std::vector<double> time_calls(control_channel& control, unsigned repeat, Prepare&& prepare, Call&& call) {
  std::vector<double> seconds;
  for (unsigned r = 0; r <= repeat; ++r) {
    prepare();
    control.barrier();
    const auto start = std::chrono::steady_clock::now();
    call();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) seconds.push_back(elapsed);
  }
  return seconds;
}

/// --staging cuda: the compressed call on device buffers (cuda_coll_bench.hpp), the input copied to the
/// device after prepare() and before each call (not timed); the call is timed to the end of its stream's
/// work. `out` gets the last call's result, `report` its report.
template <class T, class S, class Codec, class Prepare>
std::vector<double> time_on_device([[maybe_unused]] control_channel& control, [[maybe_unused]] const coll_options& o,
                                   [[maybe_unused]] zcoll::Compressed<S, Codec>& coll, [[maybe_unused]] std::span<const T> in,
                                   [[maybe_unused]] std::span<T> out, [[maybe_unused]] Prepare&& prepare,
                                   [[maybe_unused]] const std::vector<std::size_t>* sends,
                                   [[maybe_unused]] const std::vector<std::size_t>* receives,
                                   [[maybe_unused]] zcoll::collective_report& report) {
#if ZCOLL_BENCH_HAS_CUDA
  if constexpr (zcoll_bench::cuda_staged_pair<T, S, Codec>) {
    zcoll_bench::cuda_staged_rank<T> device(in.size(), out.size());
    const auto seconds = time_calls(
        control, o.repeat, [&] {
          prepare();
          device.upload(in, out);
        },
        [&] { report = device.call(coll, o.op, sends, receives); });
    device.download(out);
    return seconds;
  }
#endif
  throw std::logic_error("zcoll-bench coll: --staging cuda was let through for a pair cuda_coll_bench.cu does not build");
}

/// This rank's measurements at one size, before they are combined over the ranks.
struct rank_numbers {
  std::vector<double> native_s, uncompressed_s, compressed_s;
  double native_error = -1.0, uncompressed_error = -1.0, compressed_error = -1.0;  // -1: not measured
  double reference_magnitude = 0.0;  // max |reference| of a reduction
  std::size_t input_values = 0;      // this rank's input (alltoallv's size is the mean over the ranks)
  zcoll::collective_report report;   // the compressed variant's last call
  std::vector<double> compute_s, polling_s, thread_s;  // --overlap: the loop alone, and beside the call
};

/// Combines every rank's numbers on rank 0 into the row (all ranks must call it).
coll_row combine(control_channel& control, const coll_options& o, std::size_t count, std::size_t value_bytes,
                 const rank_numbers& mine) {
  const std::size_t repeat = o.repeat;
  std::vector<double> maxima;
  const auto append = [&](const std::vector<double>& seconds) {
    if (seconds.empty()) {
      maxima.insert(maxima.end(), repeat, -1.0);
    } else {
      maxima.insert(maxima.end(), seconds.begin(), seconds.end());
    }
  };
  append(mine.native_s);
  append(mine.uncompressed_s);
  append(mine.compressed_s);
  const std::size_t scalars = maxima.size();
  maxima.insert(maxima.end(), {mine.native_error, mine.uncompressed_error, mine.compressed_error, mine.reference_magnitude,
                               mine.report.error_bound, mine.report.statistical_error_bound,
                               static_cast<double>(mine.report.compressions_in_chain), mine.report.compress_s,
                               mine.report.communicate_s, mine.report.decompress_s, mine.report.reduce_s});
  control.reduce_to_root(maxima, [](double a, double b) { return std::max(a, b); });
  std::array<double, 3> sums = {static_cast<double>(mine.report.raw_bytes_sent),
                                static_cast<double>(mine.report.bytes_sent), static_cast<double>(mine.input_values)};
  control.reduce_to_root(sums, [](double a, double b) { return a + b; });
  // --overlap: each rank's medians, the slowest rank's reported (every rank sends them, measured or not).
  const auto median_or = [](const std::vector<double>& v) { return v.empty() ? -1.0 : median(v); };
  std::array<double, 4> overlap = {median_or(mine.compressed_s), median_or(mine.compute_s), median_or(mine.polling_s),
                                   median_or(mine.thread_s)};
  control.reduce_to_root(overlap, [](double a, double b) { return std::max(a, b); });

  coll_row row;
  if (control.rank() != 0) return row;
  row.size_bytes = count * value_bytes;
  row.count = count;
  if (o.variable_blocks) {
    // alltoallv: the ranks' inputs differ. A rank's algbw is its own input bytes over the call's time
    // (the slowest rank's, as for every operation); the mean of those over the ranks is the mean input
    // over that time, so the row's size is the mean of the ranks' actual inputs, not the nominal --sizes.
    row.count = static_cast<std::size_t>(std::llround(sums[2] / control.size()));
    row.size_bytes = row.count * value_bytes;
  }
  const double factor = bus_factor(o.op, control.size());
  const auto timing = [&](std::size_t variant) {
    variant_timing t;
    if (maxima[variant * repeat] < 0) return t;
    const double seconds = median({maxima.begin() + static_cast<std::ptrdiff_t>(variant * repeat),
                                   maxima.begin() + static_cast<std::ptrdiff_t>((variant + 1) * repeat)});
    t.time_us = seconds * 1e6;
    t.algbw_gb_per_s = static_cast<double>(row.size_bytes) / 1e9 / seconds;
    t.busbw_gb_per_s = t.algbw_gb_per_s * factor;
    return t;
  };
  row.native = timing(0);
  row.uncompressed = timing(1);
  row.compressed = timing(2);
  row.speedup_vs_native = row.native.time_us / row.compressed.time_us;
  row.speedup_vs_uncompressed = row.uncompressed.time_us / row.compressed.time_us;
  const auto error = [](double e) { return e < 0 ? not_measured : e; };
  const double* s = maxima.data() + scalars;
  row.native_max_abs_error = error(s[0]);
  row.uncompressed_max_abs_error = error(s[1]);
  row.max_abs_error = error(s[2]);
  const double reference_magnitude = s[3];
  row.error_bound = s[4];
  row.statistical_error_bound = s[5];
  row.compressions_in_chain = static_cast<int>(s[6]);
  row.compress_s = s[7];
  row.communicate_s = s[8];
  row.decompress_s = s[9];
  row.reduce_s = s[10];
  row.ratio = sums[1] > 0 ? sums[0] / sums[1] : 1.0;
  if (overlap[1] >= 0) {
    row.overlap_call_us = overlap[0] * 1e6;
    row.overlap_compute_us = overlap[1] * 1e6;
    row.overlap_polling_us = overlap[2] * 1e6;
    row.overlap_thread_us = overlap[3] * 1e6;
  }
  // A reduction's result is compared with the uncompressed one, whose float additions round differently:
  // allow a few roundings of the largest result on top of the stated bound.
  const double epsilon = value_bytes == 4 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const double rounding = is_reduction(o.op) ? 2.0 * control.size() * epsilon * reference_magnitude : 0.0;
  row.bound_held = row.max_abs_error <= row.error_bound + rounding;
  return row;
}

/// Compression and decompression speed of the codec on one core: rank 0 times its `input` (median of
/// `repeat`) while the other ranks wait at a barrier, so no other rank competes for the cores.
template <class T, class Codec>
codec_speed measure_codec_speed(control_channel& control, const zcoll::codec_config& settings,
                                std::span<const T> input, unsigned repeat) {
  codec_speed speed;
  control.barrier();
  if (control.rank() == 0 && !input.empty()) {
    const Codec codec{settings};
    std::vector<std::byte> stream(codec.template max_compressed_size<T>(input.size()));
    std::vector<T> restored(input.size());
    std::size_t written = 0;
    std::vector<double> compress_s, decompress_s;
    for (unsigned i = 0; i < std::max(repeat, 1u); ++i) {
      auto start = std::chrono::steady_clock::now();
      written = codec.compress(zcoll::exec::Host{}, input, std::span<std::byte>(stream)).size();
      compress_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      start = std::chrono::steady_clock::now();
      codec.decompress(zcoll::exec::Host{}, std::span<const std::byte>(stream).first(written), std::span<T>(restored));
      decompress_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const double bytes = static_cast<double>(input.size_bytes());
    speed = {.ratio = bytes / static_cast<double>(written),
             .compress_bytes_per_s = bytes / median(compress_s),
             .decompress_bytes_per_s = bytes / median(decompress_s)};
  }
  control.barrier();
  return speed;
}

/// Every size, for one schedule and codec, on this rank; the rows on rank 0 (empty elsewhere).
template <class T, class S, class Codec>
std::vector<coll_row> run_sizes(const coll_options& o, std::span<const T> file_values, rank_env<T>& env) {
  const int me = env.control.rank(), p = env.control.size();
  const std::size_t row_length = works_on_rows(o.codec) ? o.row_length : 0;
  zcoll::codec_config settings{.error_bound = o.error_bound, .chunk_values = o.chunk_values};
  if (row_length > 0) settings.shape = {row_length};
  const zcoll::collective_config config{.threads = o.threads, .pipeline_values = o.pipeline_values, .homomorphic = o.homomorphic};
  const collective_op op = o.op;
  const bool reduction = is_reduction(op);
  std::vector<coll_row> rows;
  for (const std::size_t size_bytes : o.sizes_bytes) {
    geometry g = geometry_of(op, size_bytes, sizeof(T), p, me, o.root, row_length);
    // alltoallv: the alltoall geometry (its count is the nominal one, the synthetic base's length), with
    // this rank's own input and output lengths.
    const block_pattern blocks(g.count, p);
    const std::vector<std::size_t> send_counts = blocks.send_counts(me), recv_counts = blocks.recv_counts(me);
    if (o.variable_blocks) {
      g.input_values = std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
      g.output_values = std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
    }
    std::vector<T> generated;
    std::span<const T> base = file_values;
    if (base.empty()) {
      generated = o.synthetic.rfind("embeddings", 0) == 0 ? synthetic_embeddings<T>(embeddings_spec(o)).values
                                                          : synthetic_values<T>(o.synthetic, g.data_values);
      base = generated;
    }
    const rank_data<T> data(base, p, row_length);
    std::vector<T> input(g.input_values), output(g.output_values), reference;
    // bcast and scatter send the root's data; every other operation sends each rank's own.
    const bool from_root = op == collective_op::bcast || op == collective_op::scatter;
    data.fill(from_root ? o.root : me, 0, input);
    const std::span<const T> in(input);
    const std::span<T> out(output);

    // In-place operations start from the input again at every call; the others overwrite out.
    const auto prepare = [&] {
      if (op == collective_op::allreduce || (op == collective_op::bcast && me == o.root)) {
        std::copy(input.begin(), input.end(), output.begin());
      }
    };
    const std::size_t n = g.block;
    // alltoallv: block b of the result is the block rank b's input holds for this rank, at blocks.first.
    const auto variable_error_of = [&](std::span<const T> result) {
      double worst = 0.0;
      std::size_t at = 0;
      for (int b = 0; b < p; ++b) {
        const std::size_t length = blocks.values(b, me);
        worst = std::max(worst, data.max_error_against(b, blocks.first(b, me), result.subspan(at, length)));
        at += length;
      }
      return worst;
    };
    const auto error_of = [&](std::span<const T> result) {
      if (reduction) return max_error<T>(result, reference);
      if (o.variable_blocks) return variable_error_of(result);
      double worst = 0.0;
      switch (op) {
        case collective_op::allgather:
          for (int b = 0; b < p; ++b) worst = std::max(worst, data.max_error_against(b, 0, result.subspan(b * n, n)));
          break;
        case collective_op::bcast:
          worst = data.max_error_against(o.root, 0, result);
          break;
        case collective_op::scatter:
          worst = data.max_error_against(o.root, static_cast<std::size_t>(me) * n, result);
          break;
        case collective_op::gather:
          for (int b = 0; b < p && me == o.root; ++b) {
            worst = std::max(worst, data.max_error_against(b, 0, result.subspan(b * n, n)));
          }
          break;
        case collective_op::alltoall:
          for (int b = 0; b < p; ++b) {
            worst = std::max(worst, data.max_error_against(b, static_cast<std::size_t>(me) * n, result.subspan(b * n, n)));
          }
          break;
        default:
          break;
      }
      return worst;
    };

    const std::vector<std::size_t>* sends = o.variable_blocks ? &send_counts : nullptr;
    const std::vector<std::size_t>* receives = o.variable_blocks ? &recv_counts : nullptr;
    rank_numbers numbers;  // the report is the last call's: the compressed variant's, which runs last
    // One blocking call: started and waited on; its report is kept.
    zcoll::HostStaging staging{zcoll::exec::Host{.threads = o.threads}};
    const auto call = [&](auto& coll, zcoll::HostStaging* through = nullptr) {
      zcoll::request r = invoke_async<T>(coll, op, in, out, o.root, sends, receives, through);
      r.wait();
      numbers.report = r.report();
    };
    const auto call_native = [&] {
      if (o.variable_blocks) return env.native_alltoallv(in, send_counts, out, recv_counts);
      env.native(op, in, out, o.root);
    };

    numbers.input_values = g.input_values;
    // The uncompressed schedule first: its result is the reference of a reduction. Each Compressed lives
    // for one size only, so that its scratch is freed before the next variant.
    {
      zcoll::Compressed<S, zcoll::Identity> plain{env.connect(), zcoll::Identity{}, config};
      std::fill(output.begin(), output.end(), T(0));
      numbers.uncompressed_s = time_calls(env.control, o.repeat, prepare, [&] { call(plain); });
      if (reduction) {
        reference = output;
        for (const T v : reference) {
          if (!std::isfinite(v)) continue;
          numbers.reference_magnitude = std::max(numbers.reference_magnitude, std::abs(static_cast<double>(v)));
        }
      } else {
        numbers.uncompressed_error = error_of(out);
      }
    }
    if (env.native) {
      std::fill(output.begin(), output.end(), T(0));
      numbers.native_s = time_calls(env.control, o.repeat, prepare, call_native);
      numbers.native_error = error_of(out);
    }
    {
      zcoll::Compressed<S, Codec> packed{env.connect(), Codec{settings}, config};
      std::fill(output.begin(), output.end(), T(0));
      if (o.staging == staging_kind::cuda) {
        numbers.compressed_s = time_on_device<T>(env.control, o, packed, in, out, prepare, sends, receives, numbers.report);
      } else {
        numbers.compressed_s = time_calls(env.control, o.repeat, prepare,
                                          [&] { call(packed, o.staging == staging_kind::host ? &staging : nullptr); });
      }
      numbers.compressed_error = error_of(out);
    }
    if (o.overlap) {
      // A compute loop as long as this rank's call alone, then the pair: the call started non-blocking,
      // the loop, wait(). Polling: the loop calls test() every 1/256 of its steps; thread: no calls at all.
      const std::size_t steps = steps_for(median(numbers.compressed_s));
      volatile double sink = 0.0;
      numbers.compute_s = time_calls(env.control, o.repeat, prepare, [&] { sink = sink + compute_steps(steps, 0, [] {}); });
      {
        zcoll::Compressed<S, Codec> packed{env.connect(), Codec{settings}, config};
        numbers.polling_s = time_calls(env.control, o.repeat, prepare, [&] {
          zcoll::request r = invoke_async<T>(packed, op, in, out, o.root, sends, receives,
                                                   o.staging == staging_kind::host ? &staging : nullptr);
          sink = sink + compute_steps(steps, steps / 256 + 1, [&] { r.test(); });
          r.wait();
        });
      }
      {
        zcoll::collective_config threaded = config;
        threaded.progress_thread = true;
        zcoll::Compressed<S, Codec> packed{env.connect(), Codec{settings}, threaded};
        numbers.thread_s = time_calls(env.control, o.repeat, prepare, [&] {
          zcoll::request r = invoke_async<T>(packed, op, in, out, o.root, sends, receives,
                                                   o.staging == staging_kind::host ? &staging : nullptr);
          sink = sink + compute_steps(steps, 0, [] {});
          r.wait();
        });
      }
    }
    coll_row row = combine(env.control, o, g.count, sizeof(T), numbers);
    if (o.model_link) {
      // One core's codec speed on rank 0's input while the others wait: what the model assumes.
      std::optional<codec_speed> speed;
      if constexpr (!std::is_same_v<Codec, zcoll::Identity>) {
        speed = measure_codec_speed<T, Codec>(env.control, settings, in, o.repeat);
      }
      if (me == 0) {
        if (speed) {
          speed->ratio = row.ratio;
          row.one_core = *speed;
        }
        row.model = predict<S>(op, p, static_cast<double>(row.size_bytes), *o.model_link, speed,
                               static_cast<double>(o.pipeline_values * sizeof(T)));
        row.modelled = true;
      }
    }
    rows.push_back(row);
  }
  if (me != 0) rows.clear();
  return rows;
}

/// Every (value type, schedule, codec) is a template instantiation of the whole benchmark: the registry's
/// collective codecs only, those on rows on f32 (their DLRM use), the all-to-all ones over Pairwise only,
/// which keeps this file's compile time in bounds (parse() says so to the user).
template <class T, class S>
std::vector<coll_row> run_codec(const coll_options& o, std::span<const T> file_values, rank_env<T>& env) {
  return zcoll::with_registered_codec(o.codec, [&]<class Entry>() -> std::vector<coll_row> {
    constexpr zcoll::codec_traits traits = Entry::traits;
    constexpr bool type_fits = traits.input == zcoll::codec_input::values || std::is_same_v<T, float>;
    constexpr bool schedule_fits = traits.collective == zcoll::collective_use::every ||
                                   (traits.collective == zcoll::collective_use::alltoall && std::is_same_v<S, zcoll::Pairwise>);
    if constexpr (type_fits && schedule_fits) {
      return run_sizes<T, S, typename Entry::type>(o, file_values, env);
    } else {
      throw std::logic_error("zcoll-bench coll: codec " + o.codec + " was let through for this type or schedule");
    }
  });
}

template <class T>
std::vector<coll_row> run_schedule(const coll_options& o, std::span<const T> file_values, rank_env<T>& env) {
  return with_schedule(o.schedule, o.group_size, [&](auto tag) {
    return run_codec<T, typename decltype(tag)::type>(o, file_values, env);
  });
}

// ---- output --------------------------------------------------------------------------------------------

std::string cell(double v, const char* format) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format(fmt::runtime(format), v);
}

std::string codec_title(const coll_options& o) {
  const coll_codec& codec = codec_of(o.codec);
  if (is_lossless(o.codec)) return o.codec;
  if (is_rowwise(o.codec)) return fmt::format("{} (rows of {}: the bound is per row, from its range)", o.codec, o.row_length);
  if (codec.on_rows) {
    return fmt::format("{} ({}, {}, vectors of {})", o.codec, codec.pipeline, zcoll::to_string(o.error_bound), o.row_length);
  }
  const std::string sums = homomorphic_applies(o) ? fmt::format(", homomorphic {}", homomorphic_title(o)) : "";
  const std::string staged = o.staging == staging_kind::host   ? ", staged on the host"
                             : o.staging == staging_kind::cuda ? ", device buffers through cuda::Staging"
                                                               : "";
  return fmt::format("{} ({}, {}{}{})", o.codec, codec.pipeline, zcoll::to_string(o.error_bound), sums, staged);
}

/// Runs `pass(options)` once per --homomorphic and --staging setting, in the order given; with more than
/// one, the --csv and --json files of the later passes get ".homomorphic-on"/"-off" and ".staging-host"/
/// "-off" appended. Returns the worst exit status.
template <class Pass>
int for_each_pass(const coll_options& o, Pass pass) {
  int status = 0;
  for (std::size_t k = 0; k < o.homomorphic_passes.size(); ++k) {
    for (std::size_t j = 0; j < o.staging_passes.size(); ++j) {
      coll_options p = o;
      p.homomorphic = o.homomorphic_passes[k];
      p.staging = o.staging_passes[j];
      std::string suffix;
      if (k > 0) suffix += p.homomorphic ? ".homomorphic-on" : ".homomorphic-off";
      if (j > 0) suffix += p.staging == staging_kind::host ? ".staging-host" : p.staging == staging_kind::cuda ? ".staging-cuda" : ".staging-off";
      if (!p.csv.empty()) p.csv += suffix;
      if (!p.json.empty()) p.json += suffix;
      status = std::max(status, pass(p));
    }
  }
  return status;
}

/// The bound column: the configured bound, "-" for identity, the row length for a row-wise codec.
std::string bound_title(const coll_options& o) {
  if (is_lossless(o.codec)) return "-";
  if (is_rowwise(o.codec)) return fmt::format("per row of {}", o.row_length);
  return zcoll::to_string(o.error_bound);
}

std::string schedule_title(const coll_options& o) {
  if (o.schedule != "hierarchical") return o.schedule;
  return fmt::format("hierarchical (binomial_tree in groups of {}, recursive_doubling)", o.group_size);
}

/// Measured against modelled time, per row: how close to the wire each run was.
void print_model(const coll_options& o, bool native, const std::vector<coll_row>& rows) {
  if (!o.model_link || rows.empty()) return;
  fmt::print("#\n# model (bench/collective_model.hpp) for a link of {:g} Gbit/s, {:g} us a message: wire = the best "
             "algorithm's bytes over the link (the native reference); schedules = their own rounds, compressed at "
             "the row's ratio with one core's codec speed\n",
             o.model_link->bytes_per_s * 8 / 1e9, o.model_link->latency_s * 1e6);
  fmt::print("# {:>10} {:>10} {:>8} {:>11} {:>8} {:>11} {:>8} {:>9} {:>9} {:>7}\n", "size", "wire", "native", "uncomp.",
             "uncomp.", "compressed", "comp.", "compress", "decomp.", "Eq. 2");
  fmt::print("# {:>10} {:>10} {:>8} {:>11} {:>8} {:>11} {:>8} {:>9} {:>9} {:>7}\n", "(B)", "(us)", "/wire", "model (us)",
             "/model", "model (us)", "/model", "(GB/s)", "(GB/s)", "x");
  for (const auto& r : rows) {
    const auto over = [](double measured_us, double model_s) {
      return model_s > 0 ? measured_us / (model_s * 1e6) : not_measured;
    };
    const bool codec = r.one_core.compress_bytes_per_s > 0;
    fmt::print("  {:>10} {:>10} {:>8} {:>11} {:>8} {:>11} {:>8} {:>9} {:>9} {:>7}\n", r.size_bytes,
               cell(r.model.lower_bound_s * 1e6, "{:.1f}"),
               cell(native ? over(r.native.time_us, r.model.lower_bound_s) : not_measured, "{:.2f}"),
               cell(r.model.uncompressed_s * 1e6, "{:.1f}"), cell(over(r.uncompressed.time_us, r.model.uncompressed_s), "{:.2f}"),
               cell(codec ? r.model.compressed_s * 1e6 : not_measured, "{:.1f}"),
               cell(codec ? over(r.compressed.time_us, r.model.compressed_s) : not_measured, "{:.2f}"),
               cell(codec ? r.one_core.compress_bytes_per_s / 1e9 : not_measured, "{:.2f}"),
               cell(codec ? r.one_core.decompress_bytes_per_s / 1e9 : not_measured, "{:.2f}"),
               cell(codec ? eq2_speedup(r.one_core, o.model_link->bytes_per_s) : not_measured, "{:.2f}"));
  }
}

void print_table(const coll_options& o, const std::string& data, const std::string& transport, int ranks, bool native,
                 const std::vector<coll_row>& rows) {
  fmt::print("# zcoll-bench coll: {}{}, schedule {}, codec {}\n", o.op_name,
             is_reduction(o.op) ? " (sum)" : (is_rooted(o.op) ? fmt::format(" (root {})", o.root) : ""), schedule_title(o),
             codec_title(o));
  fmt::print("# transport {}, {} ranks; data {}, {}; {} codec thread(s) per rank, chunk {}, pipeline segment {}\n",
             transport, ranks, data, o.type, o.threads, o.chunk_values,
             o.pipeline_values == 0 ? std::string("off") : std::to_string(o.pipeline_values));
  fmt::print("# time: median of {} calls after 1 warm-up, each the slowest rank's, started after a barrier; "
             "busbw = algbw x {:.4g}\n",
             o.repeat, bus_factor(o.op, ranks));
  if (o.variable_blocks) {
    fmt::print("# alltoallv: rank i sends rank j round(C x w(i, j) / W(i)) values (C: the nominal count), w in "
               "[0.25, 1.75) hashed from (i, j), W(i) = sum of rank i's w, none where (i + 2j) mod 7 = 3;\n# size, count: the mean over the ranks of their "
               "actual input; the nominal sizes: {} bytes\n",
               fmt::join(o.sizes_bytes, ", "));
  }
  fmt::print("# ratio: raw / compressed bytes sent by all ranks; max error against the {}; bound: the report's worst "
             "case\n#\n",
             is_reduction(o.op) ? "uncompressed schedule's result" : "input");
  const std::string group = "{:^26}";
  std::string line = fmt::format("# {:>10} {:>12}", "", "");
  if (native) line += " " + fmt::format(fmt::runtime(group), "native MPI");
  line += " " + fmt::format(fmt::runtime(group), "uncompressed schedule");
  line += " " + fmt::format(fmt::runtime(group), "compressed schedule");
  fmt::print("{}\n", line);
  line = fmt::format("# {:>10} {:>12}", "size", "count");
  std::string units = fmt::format("# {:>10} {:>12}", "(B)", "(values)");
  for (int v = native ? 0 : 1; v < 3; ++v) {
    line += fmt::format(" {:>10} {:>7} {:>7}", "time", "algbw", "busbw");
    units += fmt::format(" {:>10} {:>7} {:>7}", "(us)", "(GB/s)", "(GB/s)");
  }
  if (native) {
    line += fmt::format(" {:>8}", "x native");
    units += fmt::format(" {:>8}", "");
  }
  line += fmt::format(" {:>8} {:>8} {:>10} {:>10} {:>4}", "x uncomp", "ratio", "max error", "bound", "held");
  fmt::print("{}\n{}\n", line, units);
  for (const auto& r : rows) {
    line = fmt::format("  {:>10} {:>12}", r.size_bytes, r.count);
    const auto variant = [&](const variant_timing& t) {
      return fmt::format(" {:>10} {:>7} {:>7}", cell(t.time_us, "{:.1f}"), cell(t.algbw_gb_per_s, "{:.2f}"),
                         cell(t.busbw_gb_per_s, "{:.2f}"));
    };
    if (native) line += variant(r.native);
    line += variant(r.uncompressed);
    line += variant(r.compressed);
    if (native) line += fmt::format(" {:>8}", cell(r.speedup_vs_native, "{:.2f}"));
    line += fmt::format(" {:>8} {:>8} {:>10} {:>10} {:>4}", cell(r.speedup_vs_uncompressed, "{:.2f}"), cell(r.ratio, "{:.2f}"),
                        cell(r.max_abs_error, "{:.3e}"), cell(r.error_bound, "{:.3e}"), r.bound_held ? "yes" : "NO");
    fmt::print("{}\n", line);
  }
  for (const auto& r : rows) {
    if (!is_reduction(o.op) && r.uncompressed_max_abs_error != 0.0) {
      fmt::print("# WARNING: the uncompressed schedule's result at {} bytes is off by {} (it should be exact)\n",
                 r.size_bytes, cell(r.uncompressed_max_abs_error, "{:.3e}"));
    }
    if (!is_reduction(o.op) && native && r.native_max_abs_error != 0.0) {
      fmt::print("# WARNING: the native result at {} bytes is off by {} (it should be exact)\n", r.size_bytes,
                 cell(r.native_max_abs_error, "{:.3e}"));
    }
  }
  print_model(o, native, rows);
  if (o.overlap) {
    fmt::print("# overlap (--overlap): the compressed call alone, a compute loop as long as it, and both together (the call\n"
               "# started non-blocking, then the loop, then wait()): polling test() from the loop, or with the progress\n"
               "# thread; pair / longer: 1 = full overlap, 2 = serial. Medians, the slowest rank's.\n");
    fmt::print("# {:>12} {:>10} {:>10} {:>12} {:>8} {:>12} {:>8}\n", "size", "call ms", "loop ms", "polling ms", "/longer",
               "thread ms", "/longer");
    for (const auto& r : rows) {
      const double longer = std::max(r.overlap_call_us, r.overlap_compute_us);
      fmt::print("  {:>12} {:>10} {:>10} {:>12} {:>8} {:>12} {:>8}\n", r.size_bytes, cell(r.overlap_call_us / 1e3, "{:.2f}"),
                 cell(r.overlap_compute_us / 1e3, "{:.2f}"), cell(r.overlap_polling_us / 1e3, "{:.2f}"),
                 cell(r.overlap_polling_us / longer, "{:.2f}"), cell(r.overlap_thread_us / 1e3, "{:.2f}"),
                 cell(r.overlap_thread_us / longer, "{:.2f}"));
    }
  }
  const bool held = std::all_of(rows.begin(), rows.end(), [](const coll_row& r) { return r.bound_held; });
  fmt::print("# compressed result within the stated bound at every size: {}\n", held ? "yes" : "NO");
}

std::string csv_number(double v) { return std::isnan(v) ? std::string() : fmt::format("{:.9g}", v); }

void write_csv(const coll_options& o, const std::string& data, const std::string& transport, int ranks,
               const std::vector<coll_row>& rows) {
  std::FILE* f = std::fopen(o.csv.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("--csv: cannot write '{}'", o.csv));
  fmt::print(f,
             "op,schedule,codec,bound,transport,ranks,type,data,threads,repeat,size_bytes,count,"
             "native_time_us,native_algbw_gb_per_s,native_busbw_gb_per_s,"
             "uncompressed_time_us,uncompressed_algbw_gb_per_s,uncompressed_busbw_gb_per_s,"
             "compressed_time_us,compressed_algbw_gb_per_s,compressed_busbw_gb_per_s,"
             "speedup_vs_native,speedup_vs_uncompressed,ratio,max_abs_error,error_bound,statistical_error_bound,"
             "compressions_in_chain,bound_held,native_max_abs_error,uncompressed_max_abs_error,"
             "compress_s,communicate_s,decompress_s,reduce_s,"
             "model_link_gbit,model_native_us,model_uncompressed_us,model_us,one_core_compress_gb_per_s,"
             "one_core_decompress_gb_per_s,homomorphic\n");
  const std::string schedule = o.schedule == "hierarchical" ? fmt::format("hierarchical:{}", o.group_size) : o.schedule;
  for (const auto& r : rows) {
    fmt::print(f, "{},{},{},{},{},{},{},{},{},{},{},{}", o.op_name, schedule, o.codec,
               csv_field(bound_title(o)), csv_field(transport), ranks, o.type,
               csv_field(data), o.threads,
               o.repeat, r.size_bytes, r.count);
    for (const auto* t : {&r.native, &r.uncompressed, &r.compressed}) {
      fmt::print(f, ",{},{},{}", csv_number(t->time_us), csv_number(t->algbw_gb_per_s), csv_number(t->busbw_gb_per_s));
    }
    fmt::print(f, ",{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_number(r.speedup_vs_native),
               csv_number(r.speedup_vs_uncompressed), csv_number(r.ratio), csv_number(r.max_abs_error),
               csv_number(r.error_bound), csv_number(r.statistical_error_bound), r.compressions_in_chain,
               r.bound_held ? "yes" : "no", csv_number(r.native_max_abs_error), csv_number(r.uncompressed_max_abs_error),
               csv_number(r.compress_s), csv_number(r.communicate_s), csv_number(r.decompress_s), csv_number(r.reduce_s));
    const bool codec = r.one_core.compress_bytes_per_s > 0;
    const auto modelled = [&](double v, bool have) { return csv_number(r.modelled && have ? v : not_measured); };
    fmt::print(f, ",{},{},{},{},{},{}", modelled(o.model_link ? o.model_link->bytes_per_s * 8 / 1e9 : 0.0, true),
               modelled(r.model.lower_bound_s * 1e6, true), modelled(r.model.uncompressed_s * 1e6, true),
               modelled(r.model.compressed_s * 1e6, codec), modelled(r.one_core.compress_bytes_per_s / 1e9, codec),
               modelled(r.one_core.decompress_bytes_per_s / 1e9, codec));
    // Last, so that readers of the columns before it by position keep working.
    fmt::print(f, ",{}\n", homomorphic_title(o));
  }
  std::fclose(f);
}

void write_json(const coll_options& o, const std::string& data, const std::string& transport, int ranks,
                const std::vector<coll_row>& rows) {
  std::FILE* f = std::fopen(o.json.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("--json: cannot write '{}'", o.json));
  fmt::print(f,
             "{{\n  \"op\": {},\n  \"schedule\": {},\n  \"group_size\": {},\n  \"codec\": {},\n"
             "  \"bound\": {},\n  \"transport\": {},\n  \"ranks\": {},\n  \"type\": {},\n  \"data\": {},\n"
             "  \"root\": {},\n  \"threads\": {},\n  \"repeat\": {},\n  \"chunk_values\": {},\n  \"pipeline_values\": {},\n"
             "  \"homomorphic\": {},\n  \"rows\": [\n",
             json_string(o.op_name), json_string(o.schedule), o.group_size, json_string(o.codec),
             json_string(bound_title(o)), json_string(transport), ranks, json_string(o.type), json_string(data),
             o.root, o.threads, o.repeat, o.chunk_values, o.pipeline_values,
             homomorphic_applies(o) ? (o.homomorphic ? "true" : "false") : "null");
  const auto timing = [](const variant_timing& t) {
    if (std::isnan(t.time_us)) return std::string("null");
    return fmt::format("{{\"time_us\": {}, \"algbw_gb_per_s\": {}, \"busbw_gb_per_s\": {}}}", json_number(t.time_us),
                       json_number(t.algbw_gb_per_s), json_number(t.busbw_gb_per_s));
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    fmt::print(f,
               "    {{\"size_bytes\": {}, \"count\": {}, \"native\": {}, \"uncompressed\": {}, \"compressed\": {}, "
               "\"speedup_vs_native\": {}, \"speedup_vs_uncompressed\": {}, \"ratio\": {}, \"max_abs_error\": {}, "
               "\"error_bound\": {}, \"statistical_error_bound\": {}, \"compressions_in_chain\": {}, \"bound_held\": {}, "
               "\"native_max_abs_error\": {}, \"uncompressed_max_abs_error\": {}, \"compress_s\": {}, "
               "\"communicate_s\": {}, \"decompress_s\": {}, \"reduce_s\": {}}}{}\n",
               r.size_bytes, r.count, timing(r.native), timing(r.uncompressed), timing(r.compressed),
               json_number(r.speedup_vs_native), json_number(r.speedup_vs_uncompressed), json_number(r.ratio),
               json_number(r.max_abs_error), json_number(r.error_bound), json_number(r.statistical_error_bound),
               r.compressions_in_chain, r.bound_held ? "true" : "false", json_number(r.native_max_abs_error),
               json_number(r.uncompressed_max_abs_error), json_number(r.compress_s), json_number(r.communicate_s),
               json_number(r.decompress_s), json_number(r.reduce_s), i + 1 < rows.size() ? "," : "");
  }
  fmt::print(f, "  ]\n}}\n");
  std::fclose(f);
}

/// Rank 0: the table and the files; returns the exit status.
int report(const coll_options& o, const std::string& transport, int ranks, bool native,
           const std::vector<coll_row>& rows) {
  const std::string data = o.input.empty() ? "synthetic:" + o.synthetic : o.input;
  print_table(o, data, transport, ranks, native, rows);
  std::fflush(stdout);
  if (!o.csv.empty()) write_csv(o, data, transport, ranks, rows);
  if (!o.json.empty()) write_json(o, data, transport, ranks, rows);
  const bool held = std::all_of(rows.begin(), rows.end(), [&](const coll_row& r) {
    const bool exact = is_reduction(o.op) || (r.uncompressed_max_abs_error == 0.0 &&
                                              (std::isnan(r.native_max_abs_error) || r.native_max_abs_error == 0.0));
    return r.bound_held && exact;
  });
  return held ? 0 : 3;
}

// ---- transports ----------------------------------------------------------------------------------------

template <class T>
int run_local_bench(const coll_options& o, std::span<const T> file_values) {
  validate_for_ranks(o, o.local_ranks, sizeof(T));
  std::vector<coll_row> rows;
  zcoll::transport::run_local(o.local_ranks, [&](zcoll::transport::Local& t) {
    // The barrier between calls stays unthrottled: only the measured collectives pay for the link.
    const auto connect = [t, link = o.link] {
      if (link) return zcoll::transport::AnyTransport(zcoll::transport::Throttled(t, *link));
      return zcoll::transport::AnyTransport(t);
    };
    rank_env<T> env{.control = control_channel(zcoll::transport::AnyTransport(t)),
                    .connect = connect,
                    .native = {},
                    .native_alltoallv = {}};
    auto mine = run_schedule<T>(o, file_values, env);
    if (t.rank() == 0) rows = std::move(mine);
  });
  const std::string transport =
      o.link ? fmt::format("local:{} through a modelled link of {:g} Gbit/s, {:g} us a message", o.local_ranks,
                           o.link->bandwidth_bytes_per_s * 8 / 1e9, o.link->latency_s * 1e6)
             : fmt::format("local:{}", o.local_ranks);
  return report(o, transport, o.local_ranks, false, rows);
}

#if ZCOLL_BENCH_HAS_MPI
/// MPI's own call for `op`, through transport::Mpi's baselines.
template <class T>
void native_call(zcoll::transport::Mpi& mpi, collective_op op, std::span<const T> in, std::span<T> out, int root) {
  switch (op) {
    case collective_op::allreduce:
      return mpi.allreduce<T>(out, zcoll::op::sum);
    case collective_op::reduce_scatter:
      return mpi.reduce_scatter_block<T>(in, out, zcoll::op::sum);
    case collective_op::allgather:
      return mpi.allgather<T>(in, out);
    case collective_op::bcast:
      return mpi.bcast<T>(out, root);
    case collective_op::scatter:
      return mpi.scatter<T>(in, out, root);
    case collective_op::gather:
      return mpi.gather<T>(in, out, root);
    case collective_op::alltoall:
      return mpi.alltoall<T>(in, out);
    default:
      throw std::logic_error("zcoll-bench coll: no native call for this operation");
  }
}

template <class T>
int run_mpi_bench(const coll_options& o, std::span<const T> file_values, int argc, char** argv) {
  // --overlap's progress thread calls MPI beside the main thread: that needs MPI_THREAD_MULTIPLE.
  boost::mpi::environment environment(argc, argv, o.overlap ? boost::mpi::threading::multiple : boost::mpi::threading::single);
  const boost::mpi::communicator world;
  const int me = world.rank();
  try {
    const zcoll::transport::Mpi mpi{world};
    validate_for_ranks(o, mpi.size(), sizeof(T));
    rank_env<T> env{.control = control_channel(zcoll::transport::AnyTransport(mpi)),
                    .connect = [mpi] { return zcoll::transport::AnyTransport(mpi); },
                    .native = [native = mpi](collective_op op, std::span<const T> in, std::span<T> out, int root) mutable {
                      native_call<T>(native, op, in, out, root);
                    },
                    .native_alltoallv = [native = mpi](std::span<const T> in, std::span<const std::size_t> send_counts,
                                                       std::span<T> out,
                                                       std::span<const std::size_t> recv_counts) mutable {
                      native.alltoallv<T>(in, send_counts, out, recv_counts);
                    }};
    return for_each_pass(o, [&](const coll_options& p) {
      const auto rows = run_schedule<T>(p, file_values, env);
      return me == 0 ? report(p, "mpi", mpi.size(), true, rows) : 0;
    });
  } catch (const std::invalid_argument& e) {  // the same on every rank: options checked against the size
    if (me == 0) fmt::print(stderr, "zcoll-bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // possibly on this rank only: the others would wait forever
    fmt::print(stderr, "zcoll-bench: rank {}: {}\n", me, e.what());
    std::fflush(stderr);
    boost::mpi::environment::abort(1);
  }
  return 1;
}
#endif

template <class T>
int run_typed(const coll_options& o, int argc, char** argv) {
  const std::vector<T> file_values = o.input.empty() ? std::vector<T>{} : read_values<T>(o.input, o.type);
  if (o.transport == "local") return for_each_pass(o, [&](const coll_options& p) { return run_local_bench<T>(p, file_values); });
#if ZCOLL_BENCH_HAS_MPI
  return run_mpi_bench<T>(o, file_values, argc, argv);
#else
  (void)argc;
  (void)argv;
  usage_error("--transport mpi: this zcoll-bench was built without MPI");
#endif
}

/// This process's rank as the MPI launcher says (before MPI is initialized), so that only rank 0 prints
/// an option error; 0 outside a launcher.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

/// Parses the options and runs `run(options)`, with the exit codes of coll_main.
template <class Run>
int with_options(int argc, char** argv, Run run) {
  const bool speaks = launcher_rank() == 0;
  try {
    const std::optional<coll_options> o = parse_coll(argc, argv);
    if (!o) {
      if (speaks) fmt::print("{}\ncollective codecs of the registry: {}\n", help_text, coll_codec_names());
      return 0;
    }
    return run(*o);
  } catch (const std::invalid_argument& e) {
    if (speaks) fmt::print(stderr, "zcoll-bench: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    if (speaks) fmt::print(stderr, "zcoll-bench: {}\n", e.what());
    return 1;
  }
}

}  // namespace

#ifdef ZCOLL_COLL_BENCH_F64
int coll_main_f64(int argc, char** argv) {
  return with_options(argc, argv, [&](const coll_options& o) { return run_typed<double>(o, argc, argv); });
}
#else
int coll_main(int argc, char** argv) {
  return with_options(argc, argv, [&](const coll_options& o) {
    return o.type == "f64" ? coll_main_f64(argc, argv) : run_typed<float>(o, argc, argv);
  });
}
#endif

}  // namespace zcoll_bench
