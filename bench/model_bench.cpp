// zcoll-bench model: the predicted time and speed-up of a compressed collective from its ratio, its codec
// speeds and the link (bench/collective_model.hpp), without running anything.
//
//   zcoll-bench model --ratio 3.5 --compress-gbps 2.4 --decompress-gbps 4.7 --link-gbps 10 --ranks 4
//                     --op allreduce --schedule ring --size 64M
#include "model_bench.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bench_common.hpp"
#include "collective_model.hpp"
#include "collective_names.hpp"

namespace zcoll_bench {

namespace {

using zcoll::schedule::collective_op;

struct model_options {
  codec_speed codec{.ratio = 0.0};
  double link_gbit = 0.0;
  double latency_us = 0.0;
  int ranks = 0;
  std::string op_name;
  collective_op op = collective_op::allreduce;
  std::string schedule;
  int group_size = 8;
  double size_bytes = 64.0 * 1024 * 1024;
  std::size_t pipeline_values = 262144;
  std::size_t value_bytes = 4;
};

constexpr std::string_view help = R"(zcoll-bench model: predicted time and speed-up of a compressed collective

  zcoll-bench model --ratio R --compress-gbps C --decompress-gbps D --link-gbps B --ranks N
                    --op OP --schedule S [--size BYTES] [--latency-us A] [--pipeline VALUES]
                    [--value-bytes 4|8] [--group-size 2|4|8]

  --ratio R              compression ratio of every block (raw / compressed bytes)
  --compress-gbps C      codec throughput on one core, GB/s of raw input (zcoll-bench codec measures it)
  --decompress-gbps D    likewise, GB/s of raw output
  --link-gbps B          link rate in Gbit/s (network units: 1, 2.5, 10, 100)
  --ranks N              ranks, one per link
  --op OP                allreduce | reduce_scatter | allgather | bcast | scatter | gather | alltoall
  --schedule S           ring | recursive_doubling | binomial_tree | scatter_allgather | chain | pairwise |
                         hierarchical (as zcoll-bench coll)
  --size BYTES           the operation's large buffer, K/M/G suffixes (default 64M)
  --latency-us A         per-message latency (default 0)
  --pipeline VALUES      segment of the pipelined reduction hops (default 262144; 0 = off)

Prints the wire time of the best algorithm (what a native call at full link speed would take), the time
of zcoll's schedule uncompressed and compressed (α–β over the schedule's own rounds at the ratio, plus
the codec at the given speeds), the speed-ups, and the DLRM paper's Eq. 2,
1 / (1/CR + B·(1/Tc + 1/Td)). A model: it assumes a non-blocking switch, one core per rank and that
every block compresses alike; `zcoll-bench coll --model-link` prints it next to measured times.
)";

[[noreturn]] void usage_error(const std::string& message) {
  throw std::invalid_argument(message + "\n(run 'zcoll-bench model --help' for the options)");
}

double positive(const std::string& value, const char* option) {
  const double v = parse_number(value, option);
  if (!(v > 0.0)) usage_error(fmt::format("{}: {} must be > 0", option, value));
  return v;
}

std::optional<model_options> parse(int argc, char** argv) {
  model_options o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::nullopt;
    if (i + 1 >= argc) usage_error(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--ratio") {
      o.codec.ratio = positive(value, "--ratio");
    } else if (flag == "--compress-gbps") {
      o.codec.compress_bytes_per_s = positive(value, "--compress-gbps") * 1e9;
    } else if (flag == "--decompress-gbps") {
      o.codec.decompress_bytes_per_s = positive(value, "--decompress-gbps") * 1e9;
    } else if (flag == "--link-gbps") {
      o.link_gbit = positive(value, "--link-gbps");
    } else if (flag == "--latency-us") {
      o.latency_us = parse_number(value, "--latency-us");
      if (!(o.latency_us >= 0.0)) usage_error(fmt::format("--latency-us: {} must be >= 0", value));
    } else if (flag == "--ranks") {
      const double n = positive(value, "--ranks");
      if (n != static_cast<int>(n) || n > 1 << 20) usage_error(fmt::format("--ranks: {} is not a whole number of ranks", value));
      o.ranks = static_cast<int>(n);
    } else if (flag == "--op") {
      o.op_name = value;
    } else if (flag == "--schedule") {
      o.schedule = value;
    } else if (flag == "--group-size") {
      o.group_size = static_cast<int>(positive(value, "--group-size"));
      if (o.group_size != 2 && o.group_size != 4 && o.group_size != 8) usage_error("--group-size: 2, 4 or 8");
    } else if (flag == "--size") {
      o.size_bytes = static_cast<double>(parse_size(value, "--size"));
    } else if (flag == "--pipeline") {
      const double v = parse_number(value, "--pipeline");
      if (!(v >= 0.0)) usage_error(fmt::format("--pipeline: {} must be >= 0", value));
      o.pipeline_values = static_cast<std::size_t>(v);
    } else if (flag == "--value-bytes") {
      if (value != "4" && value != "8") usage_error(fmt::format("--value-bytes: {} is neither 4 nor 8", value));
      o.value_bytes = value == "4" ? 4 : 8;
    } else {
      usage_error(fmt::format("unknown option '{}'", flag));
    }
  }
  if (o.codec.ratio == 0.0 || o.codec.compress_bytes_per_s == 0.0 || o.codec.decompress_bytes_per_s == 0.0 ||
      o.link_gbit == 0.0 || o.ranks == 0 || o.op_name.empty() || o.schedule.empty()) {
    usage_error("--ratio, --compress-gbps, --decompress-gbps, --link-gbps, --ranks, --op and --schedule are required");
  }
  const auto op = parse_op(o.op_name);
  if (!op) usage_error(fmt::format("--op: unknown operation '{}'", o.op_name));
  o.op = *op;
  const auto entry = std::find_if(schedule_table.begin(), schedule_table.end(),
                                  [&](const schedule_entry& e) { return o.schedule == e.name; });
  if (entry == schedule_table.end()) usage_error(fmt::format("--schedule: unknown schedule '{}'", o.schedule));
  if (!entry->serves(o.op)) usage_error(fmt::format("--schedule: {} has no {}", o.schedule, o.op_name));
  return o;
}

void print(const model_options& o) {
  const zcoll::schedule::link_cost link{.latency_s = o.latency_us * 1e-6, .bytes_per_s = o.link_gbit * 1e9 / 8};
  const model_times t = with_schedule(o.schedule, o.group_size, [&](auto tag) {
    return predict<typename decltype(tag)::type>(o.op, o.ranks, o.size_bytes, link, o.codec,
                                                 static_cast<double>(o.pipeline_values * o.value_bytes));
  });
  fmt::print("# zcoll-bench model: {} over {} on {} ranks, {:.0f} bytes; link {:g} Gbit/s, {:g} us a message\n",
             o.op_name, o.schedule, o.ranks, o.size_bytes, o.link_gbit, o.latency_us);
  fmt::print("# codec: ratio {:g}, compress {:g} GB/s, decompress {:g} GB/s (one core); a model, not a measurement\n",
             o.codec.ratio, o.codec.compress_bytes_per_s / 1e9, o.codec.decompress_bytes_per_s / 1e9);
  fmt::print("wire time of the best algorithm (native reference) {:>12.1f} us\n", t.lower_bound_s * 1e6);
  fmt::print("uncompressed schedule                              {:>12.1f} us\n", t.uncompressed_s * 1e6);
  fmt::print("compressed schedule                                {:>12.1f} us\n", t.compressed_s * 1e6);
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  fmt::print("speed-up over the native reference                 {:>12.2f} x\n", ratio(t.lower_bound_s, t.compressed_s));
  fmt::print("speed-up over the uncompressed schedule            {:>12.2f} x\n", ratio(t.uncompressed_s, t.compressed_s));
  fmt::print("DLRM paper Eq. 2, 1 / (1/CR + B(1/Tc + 1/Td))      {:>12.2f} x\n", eq2_speedup(o.codec, link.bytes_per_s));
}

}  // namespace

int model_main(int argc, char** argv) {
  try {
    const auto options = parse(argc, argv);
    if (!options) {
      fmt::print("{}", help);
      return 0;
    }
    print(*options);
    return 0;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "zcoll-bench model: {}\n", e.what());
    return 2;
  }
}

}  // namespace zcoll_bench
