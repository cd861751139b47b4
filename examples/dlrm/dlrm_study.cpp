// zcoll-dlrm: trains the DLRM example (examples/dlrm/trainer.hpp) under communication configurations
// and prints, per configuration, test accuracy, AUC and log loss (deltas against FP32 of the same seed,
// averaged over seeds), bytes per iteration and the time split. docs/dlrm.md has the runs.
//
//   zcoll-dlrm [--task criteo|movielens] [--data FILE] [--ranks N] [--steps S] [--batch B]
//              [--seeds 1,2,3,4] [--configs fp32,int4-int2,...|all] [--global-eb X]
//              [--large-below X] [--small-above X] [--list]
//   mpirun -n 4 zcoll-dlrm --mpi ...        (one rank per process over transport::Mpi)
//   zcoll-dlrm --lookup [--ranks N] [--steps S] [--batch B] [--seeds 1]
//   zcoll-dlrm --dump FILE --task criteo [--seeds 1] [--train-samples N]
//
// --dump writes the task's samples for another trainer (examples/python/dlrm_torch.py): the first
// seed's training samples 0..N-1 (default 262144) and its test set, as a little-endian binary file:
// the header "ZDLRM1\0\0", then u64 dense features D, tables T, training samples N, test samples M,
// then T u64 table row counts, then per sample (training first) D f32 dense values, T u64 ids and an
// f32 label.
//
// --lookup compares FusedRec's fused lookup with per-category lookups (zcoll::embedding::FusedLookup,
// lookup_config::fuse true and false) on the Criteo-like ids, row-wise sharded: each rank looks up its
// B / N samples' ids of the 26 categories (one spec: one fused group), runs forward and backward, and
// checks that both give the same rows bit for bit at every step; it prints all-to-all rounds, bytes and
// message sizes, and the median time of plan + forward + backward of each, measured alternately.
//
// The table-wise configurations take their bounds from the offline analysis (Algorithm 1) of the FP32
// run of the same seed: each table's homogenization index on the rows it looks up for 1024 test samples
// at the end of that run, measured at the global bound; an index below --large-below (0.05) is a large
// bound (global x 5/3), above --small-above (0.5) a small one (global / 3), the paper's 0.05 / 0.03 / 0.01
// ratios; the decay adds a step decay from 2x over the first third of the steps in 3 stairs (the paper's
// Decay_2x).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef ZCOLL_DLRM_WITH_MPI
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include "zcoll/transport/mpi.hpp"
#endif

#include "configurations.hpp"
#include "zcoll/embedding/fused_lookup.hpp"
#include "trainer.hpp"
#include "zcoll/adapt/adaptive_config.hpp"
#include "zcoll/transport/local.hpp"

namespace {

struct study_options {
  std::string task = "criteo";
  std::string data;  // the MovieLens ratings file
  int ranks = 4;
  std::vector<std::uint64_t> seeds{1, 2, 3, 4};
  std::vector<std::string> configs;  // empty: all
  double global_eb = 0.01;
  double large_below = 0.05, small_above = 0.5;
  bool mpi = false;
  bool lookup = false;
  std::string dump;                   // --dump FILE: write the samples instead of training
  std::uint64_t dump_train = 262144;  // --train-samples
  dlrm::train_options train;
  std::size_t analysis_samples = 1024;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::unique_ptr<dlrm::task> make_task(const study_options& o, std::uint64_t seed) {
  if (o.task == "criteo") return std::make_unique<dlrm::criteo_like>(dlrm::criteo_like::options{.seed = seed});
  if (o.task == "movielens") {
    if (o.data.empty()) throw std::invalid_argument("--task movielens needs --data FILE (ml-latest-small ratings.csv)");
    return std::make_unique<dlrm::movielens>(o.data, seed);
  }
  throw std::invalid_argument("--task " + o.task + ": expected criteo or movielens");
}

/// The bounds of the hybrid configurations from the FP32 run's tables: every rank's sampled rows go to
/// every rank, and each runs the same analysis (its bounds depend only on the rows).
void analyse(zcoll::transport::AnyTransport& t, dlrm::trainer& fp32, const study_options& o, std::size_t tables,
             dlrm::configuration_context& ctx) {
  const auto p = static_cast<std::size_t>(t.size());
  const std::size_t per_table = o.analysis_samples * o.train.dim;
  const std::vector<float> mine = fp32.owned_lookup_sample(o.analysis_samples);
  std::vector<float> out;
  std::vector<std::size_t> send(p, mine.size()), recv(p, 0);
  for (std::size_t r = 0; r < p; ++r) {
    out.insert(out.end(), mine.begin(), mine.end());
    for (std::size_t table = r; table < tables; table += p) recv[r] += per_table;
  }
  std::vector<float> all(tables * per_table);
  zcoll::transport::alltoallv_exact<float>(t, out, send, all, recv, 0x5d02);
  // all holds rank 0's tables (0, p, 2p, ...), then rank 1's, ...: table by table in that order.
  std::vector<zcoll::adapt::table_sample<float>> samples;
  std::size_t at = 0;
  for (std::size_t r = 0; r < p; ++r) {
    for (std::size_t table = r; table < tables; table += p, at += per_table) {
      samples.push_back({table, std::span<const float>(all).subspan(at, per_table), o.train.dim});
    }
  }
  const zcoll::adapt::table_classifier uniform{.global_bound = o.global_eb, .large_below = 0.0, .small_above = 1.0};
  const zcoll::adapt::table_classifier tablewise{
      .global_bound = o.global_eb, .alpha = 5.0 / 3.0, .beta = 3.0, .large_below = o.large_below, .small_above = o.small_above};
  const zcoll::adapt::error_bound_schedule none{};
  const zcoll::adapt::error_bound_schedule decay{.shape = zcoll::adapt::decay_shape::step,
                                                .initial_factor = 2.0,
                                                .decay_iterations = std::max<std::uint64_t>(1, o.train.steps / 3),
                                                .steps = 3};
  const std::span<const zcoll::adapt::table_sample<float>> view(samples);
  ctx.fixed = zcoll::adapt::offline_analysis<float>(view, uniform, none);
  ctx.tablewise = zcoll::adapt::offline_analysis<float>(view, tablewise, none);
  ctx.tablewise_decay = zcoll::adapt::offline_analysis<float>(view, tablewise, decay);
  if (t.rank() == 0) {
    fmt::print(stderr, "offline analysis (index thresholds {:g} / {:g}):", o.large_below, o.small_above);
    for (const auto& table : ctx.tablewise.tables) {
      fmt::print(stderr, " t{}={:.3f}:{}", table.table, table.homogenization_index,
                 zcoll::adapt::to_string(table.bound_class_of_table));
    }
    fmt::print(stderr, "\n");
  }
}

/// One run's numbers, as rank 0 reports them (traffic and times averaged over the ranks).
struct run_numbers {
  double accuracy = 0, auc = 0, log_loss = 0, final_loss = 0;
  double forward_bytes = 0, backward_bytes = 0, allreduce_bytes = 0;        // per iteration, per rank
  double forward_raw = 0, backward_raw = 0, allreduce_raw = 0;
  double step_s = 0, compress_s = 0, communicate_s = 0;                     // per iteration

  /// this += weight x r, field by field (means over seeds).
  void add(const run_numbers& r, double weight) {
    static constexpr std::array fields{&run_numbers::accuracy,      &run_numbers::auc,            &run_numbers::log_loss,
                                       &run_numbers::final_loss,    &run_numbers::forward_bytes,  &run_numbers::backward_bytes,
                                       &run_numbers::allreduce_bytes, &run_numbers::forward_raw,  &run_numbers::backward_raw,
                                       &run_numbers::allreduce_raw, &run_numbers::step_s,         &run_numbers::compress_s,
                                       &run_numbers::communicate_s};
    for (auto field : fields) this->*field += weight * r.*field;
  }
};

run_numbers numbers_of(zcoll::transport::AnyTransport& t, const dlrm::train_result& r, std::size_t steps) {
  const auto n = static_cast<double>(steps);
  const std::vector<double> mine{static_cast<double>(r.forward.bytes), static_cast<double>(r.backward.bytes),
                                 static_cast<double>(r.allreduce.bytes), static_cast<double>(r.forward.raw_bytes),
                                 static_cast<double>(r.backward.raw_bytes), static_cast<double>(r.allreduce.raw_bytes),
                                 r.step_s, r.forward.compress_s + r.backward.compress_s + r.allreduce.compress_s,
                                 r.forward.communicate_s + r.backward.communicate_s + r.allreduce.communicate_s};
  const auto sum = dlrm::sum_over_ranks(t, mine, 0x5d01);
  const double ranks = t.size();
  run_numbers x;
  x.accuracy = r.test_accuracy;
  x.auc = r.test_auc;
  x.log_loss = r.test_log_loss;
  x.final_loss = r.losses.empty() ? 0.0 : r.losses.back();
  x.forward_bytes = sum[0] / ranks / n;
  x.backward_bytes = sum[1] / ranks / n;
  x.allreduce_bytes = sum[2] / ranks / n;
  x.forward_raw = sum[3] / ranks / n;
  x.backward_raw = sum[4] / ranks / n;
  x.allreduce_raw = sum[5] / ranks / n;
  x.step_s = sum[6] / ranks / n;
  x.compress_s = sum[7] / ranks / n;
  x.communicate_s = sum[8] / ranks / n;
  return x;
}

/// Runs every configuration for every seed on this rank; returns the numbers by configuration, per seed.
std::map<std::string, std::vector<run_numbers>> run_study(zcoll::transport::AnyTransport& t, const study_options& o,
                                                           const std::vector<dlrm::configuration>& chosen) {
  std::map<std::string, std::vector<run_numbers>> results;
  for (std::uint64_t seed : o.seeds) {
    auto data = make_task(o, seed);
    dlrm::configuration_context ctx;
    ctx.dim = o.train.dim;
    ctx.tables = data->table_rows().size();
    dlrm::train_options train = o.train;
    train.model_seed = 1000 + seed;
    for (const auto& config : chosen) {
      if (config.name.rfind("hybrid", 0) == 0 && ctx.fixed.tables.empty()) {
        throw std::logic_error("the hybrid configurations need fp32 first (the offline analysis runs on its tables)");
      }
      auto comm = config.make(t, ctx);
      dlrm::trainer trainer(t, *data, train, std::move(comm.exchange), std::move(comm.allreduce));
      const auto result = trainer.train();
      results[config.name].push_back(numbers_of(t, result, train.steps));
      if (config.name == "fp32") analyse(t, trainer, o, ctx.tables, ctx);
      if (t.rank() == 0) {
        fmt::print(stderr, "seed {} {:<24} loss {:.4f}  acc {:.4f}  auc {:.4f}  ({:.1f} s)\n", seed, config.name,
                   result.losses.empty() ? 0.0 : result.losses.back(), result.test_accuracy, result.test_auc,
                   result.step_s);
      }
    }
  }
  return results;
}

void print_table(const study_options& o, const std::vector<dlrm::configuration>& chosen,
                 const std::map<std::string, std::vector<run_numbers>>& results) {
  const auto& base = results.at("fp32");
  fmt::print("task {}, {} ranks, global batch {}, {} steps, seeds {}, global bound {:g}\n\n", o.task, o.ranks,
             o.train.global_batch, o.train.steps, fmt::join(o.seeds, " "), o.global_eb);
  fmt::print("| configuration | accuracy | Δ accuracy (pp) | AUC | Δ AUC | log loss | Δ log loss | fwd a2a ratio | bwd a2a ratio | allreduce ratio | bytes/iter/rank | total ratio | ms/iter | compress ms | communicate ms | compute ms |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& config : chosen) {
    const auto& runs = results.at(config.name);
    const double n = static_cast<double>(runs.size());
    run_numbers mean;
    double d_acc = 0, d_auc = 0, d_ll = 0, d_acc_min = 1e9, d_acc_max = -1e9;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      mean.add(r, 1.0 / n);
      const double d = r.accuracy - base[i].accuracy;
      d_acc += d / n;
      d_acc_min = std::min(d_acc_min, d);
      d_acc_max = std::max(d_acc_max, d);
      d_auc += (r.auc - base[i].auc) / n;
      d_ll += (r.log_loss - base[i].log_loss) / n;
    }
    const auto ratio = [](double raw, double wire) { return wire == 0.0 ? 1.0 : raw / wire; };
    const double wire = mean.forward_bytes + mean.backward_bytes + mean.allreduce_bytes;
    const double raw = mean.forward_raw + mean.backward_raw + mean.allreduce_raw;
    fmt::print("| {} | {:.4f} | {:+.3f} [{:+.3f}, {:+.3f}] | {:.4f} | {:+.4f} | {:.4f} | {:+.4f} | {:.2f} | {:.2f} | {:.2f} | {:.0f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n",
               config.name, mean.accuracy, 100 * d_acc, 100 * d_acc_min, 100 * d_acc_max, mean.auc, d_auc,
               mean.log_loss, d_ll, ratio(mean.forward_raw, mean.forward_bytes), ratio(mean.backward_raw, mean.backward_bytes),
               ratio(mean.allreduce_raw, mean.allreduce_bytes), wire, ratio(raw, wire), 1e3 * mean.step_s,
               1e3 * mean.compress_s, 1e3 * mean.communicate_s, 1e3 * (mean.step_s - mean.compress_s - mean.communicate_s));
  }
}

study_options parse(int argc, char** argv) {
  study_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--task") o.task = value();
    else if (a == "--data") o.data = value();
    else if (a == "--ranks") o.ranks = std::stoi(value());
    else if (a == "--steps") o.train.steps = std::stoul(value());
    else if (a == "--batch") o.train.global_batch = std::stoul(value());
    else if (a == "--seeds") {
      o.seeds.clear();
      for (const auto& s : split_list(value())) o.seeds.push_back(std::stoull(s));
    } else if (a == "--configs") {
      const std::string v = value();
      if (v != "all") o.configs = split_list(v);
    } else if (a == "--global-eb") o.global_eb = std::stod(value());
    else if (a == "--large-below") o.large_below = std::stod(value());
    else if (a == "--small-above") o.small_above = std::stod(value());
    else if (a == "--lr") o.train.dense_learning_rate = o.train.embedding_learning_rate = std::stod(value());
    else if (a == "--mpi") o.mpi = true;
    else if (a == "--lookup") o.lookup = true;
    else if (a == "--dump") o.dump = value();
    else if (a == "--train-samples") o.dump_train = std::stoull(value());
    else throw std::invalid_argument("unknown option " + a + " (zcoll-dlrm --help lists them)");
  }
  if (o.seeds.empty()) throw std::invalid_argument("--seeds: give at least one seed");
  if (o.train.steps == 0) throw std::invalid_argument("--steps: give at least 1");
  return o;
}

/// The --lookup comparison on this rank; prints from rank 0.
void run_lookup_study(zcoll::transport::AnyTransport& t, const study_options& o) {
  namespace emb = zcoll::embedding;
  const auto p = static_cast<std::size_t>(t.size());
  if (o.train.global_batch == 0 || o.train.global_batch % p != 0) {
    throw std::invalid_argument("--batch " + std::to_string(o.train.global_batch) + " must be a positive multiple of the " +
                                std::to_string(p) + " ranks");
  }
  const std::size_t local = o.train.global_batch / p;
  dlrm::criteo_like data({.seed = o.seeds.front()});
  const std::size_t categories = data.table_rows().size();
  const std::vector<emb::embedding_spec> specs(
      categories, {.dim = o.train.dim, .optimizer = {.learning_rate = 0.05}, .initializer = {.scale = 0.05, .seed = 3}});
  emb::FusedLookup<> fused{t.split(0, t.rank()), specs, {.fuse = true}};
  emb::FusedLookup<> separate{t.split(0, t.rank()), specs, {.fuse = false}};
  struct side {
    std::vector<double> seconds;
    emb::lookup_stats plan, forward, backward;
  } f, s;
  std::vector<float> dense(data.dense_features());
  std::vector<std::uint64_t> sample_ids(categories);
  std::size_t mismatches = 0;
  for (std::size_t step = 0; step < o.train.steps; ++step) {
    // This rank's ids, category after category.
    std::vector<std::vector<std::uint64_t>> per_category(categories);
    for (std::size_t i = 0; i < local; ++i) {
      data.train_sample(step * o.train.global_batch + static_cast<std::size_t>(t.rank()) * local + i, dense, sample_ids, nullptr);
      for (std::size_t c = 0; c < categories; ++c) per_category[c].push_back(sample_ids[c]);
    }
    std::vector<std::uint64_t> ids;
    std::vector<std::size_t> offsets{0};
    for (const auto& c : per_category) {
      ids.insert(ids.end(), c.begin(), c.end());
      offsets.push_back(ids.size());
    }
    std::vector<std::vector<float>> rows(2);
    for (int k = 0; k < 2; ++k) {
      const bool fused_first = step % 2 == 0;  // alternate which goes first
      const bool use_fused = (k == 0) == fused_first;
      auto& lookup = use_fused ? fused : separate;
      auto& record = use_fused ? f : s;
      const auto start = std::chrono::steady_clock::now();
      const auto plan = lookup.plan({ids, offsets});
      record.plan = lookup.last_stats();
      auto& out = rows[use_fused ? 0 : 1];
      out.resize(plan.values());
      lookup.forward(plan, out);
      record.forward = lookup.last_stats();
      std::vector<float> gradients(out.size());
      for (std::size_t v = 0; v < gradients.size(); ++v) gradients[v] = 0.01f * std::sin(static_cast<float>(v + step));
      lookup.backward(plan, gradients);
      record.backward = lookup.last_stats();
      record.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (rows[0] != rows[1]) ++mismatches;
  }
  const double mine_mismatches = static_cast<double>(mismatches);
  const auto total_mismatches = dlrm::sum_over_ranks(t, std::span<const double>(&mine_mismatches, 1), 0x5d01)[0];
  if (t.rank() != 0) return;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  fmt::print("fused vs per-category lookup: {} ranks, {} categories of dim {} (one spec), {} ids per category per rank, {} steps\n\n",
             p, categories, o.train.dim, local, o.train.steps);
  fmt::print("| lookup | all-to-alls per step | id bytes sent / step | row bytes sent (fwd + bwd) / step | mean row message (bytes) | median ms per step (plan + fwd + bwd) |\n|---|---|---|---|---|---|\n");
  for (const auto* x : {&f, &s}) {
    const std::size_t rounds = x->plan.alltoalls + x->forward.alltoalls + x->backward.alltoalls;
    const std::size_t rows_bytes = x->forward.value_bytes_sent + x->backward.value_bytes_sent;
    const double messages = static_cast<double>((x->forward.alltoalls + x->backward.alltoalls) * (p - 1));
    fmt::print("| {} | {} | {} | {} | {:.0f} | {:.3f} |\n", x == &f ? "fused" : "per-category", rounds,
               x->plan.key_bytes_sent, rows_bytes, messages > 0 ? static_cast<double>(rows_bytes) / messages : 0.0,
               1e3 * median(x->seconds));
  }
  fmt::print("\nrank 0's traffic; rows identical at every step on every rank: %s\n", total_mismatches == 0 ? "yes" : "NO");
  if (total_mismatches != 0) throw std::runtime_error("fused and per-category lookups gave different rows");
}

std::vector<dlrm::configuration> choose(const study_options& o) {
  auto all = dlrm::configurations();
  if (o.configs.empty()) return all;
  std::vector<dlrm::configuration> chosen{all.front()};  // fp32 first: the baseline and the analysis
  for (const auto& name : o.configs) {
    if (name == "fp32") continue;
    const auto found = std::find_if(all.begin(), all.end(), [&](const auto& c) { return c.name == name; });
    if (found == all.end()) throw std::invalid_argument("--configs: no configuration " + name + " (--list names them)");
    chosen.push_back(*found);
  }
  return chosen;
}

/// Runs body(transport) on every rank: this process's rank of MPI_COMM_WORLD with --mpi, else o.ranks
/// threads over transport::Local.
template <class Body>
void on_every_rank(study_options& o, int argc, char** argv, Body body) {
  if (o.mpi) {
#ifdef ZCOLL_DLRM_WITH_MPI
    boost::mpi::environment environment(argc, argv);
    boost::mpi::communicator world;
    o.ranks = world.size();
    zcoll::transport::AnyTransport t{zcoll::transport::Mpi{world}};
    body(t);
#else
    (void)argc;
    (void)argv;
    throw std::invalid_argument("--mpi: this build has no Boost.MPI");
#endif
    return;
  }
  zcoll::transport::run_local(o.ranks, [&](zcoll::transport::Local& local) {
    zcoll::transport::AnyTransport t{local};
    body(t);
  });
}

}  // namespace

constexpr const char* help_text = R"(zcoll-dlrm: trains the DLRM example under communication configurations and prints, per
configuration, test accuracy, AUC and log loss (deltas against FP32 of the same seed: their mean, and
the range of the accuracy's over the seeds), bytes per iteration and the time split (docs/dlrm.md).

  zcoll-dlrm [options]                 the ranks are threads over transport::Local
  mpirun -n N zcoll-dlrm --mpi [...]   one rank per process over transport::Mpi

task:
  --task criteo|movielens   the synthetic Criteo-like task (default) or MovieLens ml-latest-small
  --data FILE               the MovieLens ratings.csv (userId,movieId,rating,timestamp)
training:
  --ranks N                 ranks (default 4; with --mpi, mpirun's)
  --steps S                 training steps (default 1000)
  --batch B                 global batch (default 256; a multiple of the ranks)
  --lr X                    learning rate of the dense and embedding parameters (default 0.1)
  --seeds A,B,...           seeds; each configuration runs once per seed (default 1,2,3,4)
configurations:
  --configs A,B,...|all     which to run (default all); --list names and describes them
  --global-eb X             the global error bound of the error-bounded configurations (default 0.01)
  --large-below X           table-wise bounds: a homogenization index below X gets the large bound (0.05)
  --small-above X           ... above X the small one (0.5)
other studies:
  --lookup                  FusedRec's fused lookup against per-category lookups (same rows, time)
  --dump FILE               write the first seed's samples (--train-samples N, default 262144, and the
                            test set) for another trainer, e.g. examples/python/dlrm_torch.py; the
                            format is in the comment at the top of examples/dlrm/dlrm_study.cpp
  --list                    the configurations
  --help                    this text
)";

/// --dump: the samples of the task of the first seed, in the format of the header comment.
void dump_task(const study_options& o) {
  auto task = make_task(o, o.seeds.front());
  const std::uint64_t dense = task->dense_features(), tables = task->table_rows().size();
  const std::uint64_t train = o.dump_train, test = task->test_size();
  std::FILE* f = std::fopen(o.dump.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("--dump: cannot write " + o.dump);
  const auto put = [&](const void* p, std::size_t bytes) {
    if (std::fwrite(p, 1, bytes, f) != bytes) throw std::runtime_error("--dump: writing " + o.dump + " failed");
  };
  put("ZDLRM1\0\0", 8);
  for (const std::uint64_t v : {dense, tables, train, test}) put(&v, sizeof v);
  for (const std::size_t rows : task->table_rows()) {
    const std::uint64_t r = rows;
    put(&r, sizeof r);
  }
  std::vector<float> values(dense);
  std::vector<std::uint64_t> ids(tables);
  float label = 0.0f;
  for (std::uint64_t i = 0; i < train + test; ++i) {
    if (i < train) task->train_sample(i, values, ids, &label);
    else task->test_sample(i - train, values, ids, &label);
    put(values.data(), values.size() * sizeof(float));
    put(ids.data(), ids.size() * sizeof(std::uint64_t));
    put(&label, sizeof label);
  }
  if (std::fclose(f) != 0) throw std::runtime_error("--dump: writing " + o.dump + " failed");
  fmt::print("zcoll-dlrm: {} training and {} test samples of --task {} (seed {}) written to {}\n", train, test,
             o.task, o.seeds.front(), o.dump);
}

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
        fmt::print("{}", help_text);
        return 0;
      }
      if (std::string(argv[i]) == "--list") {
        for (const auto& c : dlrm::configurations()) fmt::print("{:<24} {}\n", c.name, c.description);
        return 0;
      }
    }
    study_options o = parse(argc, argv);
    if (!o.dump.empty()) {
      dump_task(o);
      return 0;
    }
    if (o.lookup) {
      on_every_rank(o, argc, argv, [&](zcoll::transport::AnyTransport& t) { run_lookup_study(t, o); });
      return 0;
    }
    const auto chosen = choose(o);
    std::map<std::string, std::vector<run_numbers>> results;
    bool printer = false;  // rank 0 (of MPI, or the process running the Local ranks) prints
    on_every_rank(o, argc, argv, [&](zcoll::transport::AnyTransport& t) {
      auto mine = run_study(t, o, chosen);
      if (t.rank() == 0) {
        results = std::move(mine);
        printer = true;
      }
    });
    if (!printer) return 0;
    print_table(o, chosen, results);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "zcoll-dlrm: {}\n", e.what());
    return 1;
  }
}
