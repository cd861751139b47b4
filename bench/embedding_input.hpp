#pragma once
// The DLRM embedding all-to-all payload as a benchmark input: `tables` embedding tables, each looked up
// `batch` times, the looked-up vectors sent table by table (a table's lookups together, as the
// model-parallel all-to-all sends them). Row indices come from a Zipf(alpha) law (synthetic) or from a
// real interaction log (--lookups: MovieLens ratings, items as rows).
//
// Tables are never materialised: a row's vector is a pure function of (seed, table, row), drawn
// N(0, sigma) with sigma = 1/sqrt(dim) by default (the scale of a trained or Xavier-initialised
// embedding; DLRM's own uniform(±1/sqrt(rows)) init is far below any useful bound for 10^5-row tables).
// A row looked up twice is the same vector, which is what vector-matching codecs exploit.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "bench_common.hpp"

namespace zcoll_bench {

/// The keys of `--synthetic embeddings:tables=26,dim=32,...`; every key is optional.
struct embedding_spec {
  std::size_t tables = 26;
  std::size_t dim = 32;
  std::size_t batch = 2048;
  std::size_t rows = 100000;  ///< rows per table (synthetic only; a log has its distinct items)
  double alpha = 1.05;        ///< Zipf exponent of the row popularity (synthetic only)
  std::optional<double> sigma;  ///< standard deviation of the values; 1/sqrt(dim) when unset
  std::uint64_t seed = 42;
  bool time_order = false;      ///< --lookups: replay the log by timestamp instead of file order
  bool rows_given = false, alpha_given = false;

  double value_sigma() const { return sigma.value_or(1.0 / std::sqrt(static_cast<double>(dim))); }
};

/// "tables=26,dim=32,batch=2048,alpha=1.05,rows=100000,sigma=0.1,seed=42,order=file|time".
inline embedding_spec parse_embedding_spec(std::string_view keys) {
  embedding_spec spec;
  const auto whole = [](const std::string& value, const std::string& key, double low) {
    const double v = parse_number(value, ("--synthetic embeddings: " + key).c_str());
    if (!(v >= low) || v != std::floor(v) || v > 1e15) {
      throw std::invalid_argument("--synthetic embeddings: " + key + "=" + value + " must be a whole number >= " +
                                  std::to_string(static_cast<long long>(low)));
    }
    return static_cast<std::size_t>(v);
  };
  for (const auto& item : split(keys, ',')) {
    const auto equals = item.find('=');
    if (equals == std::string::npos) {
      throw std::invalid_argument("--synthetic embeddings: '" + item + "' is not KEY=VALUE");
    }
    const std::string key = item.substr(0, equals), value = item.substr(equals + 1);
    if (key == "tables") {
      spec.tables = whole(value, key, 1);
    } else if (key == "dim") {
      spec.dim = whole(value, key, 1);
    } else if (key == "batch") {
      spec.batch = whole(value, key, 1);
    } else if (key == "rows") {
      spec.rows = whole(value, key, 1);
      spec.rows_given = true;
    } else if (key == "seed") {
      spec.seed = whole(value, key, 0);
    } else if (key == "alpha") {
      spec.alpha = parse_number(value, "--synthetic embeddings: alpha");
      if (!(spec.alpha >= 0.0) || !std::isfinite(spec.alpha)) {
        throw std::invalid_argument("--synthetic embeddings: alpha=" + value + " must be finite and >= 0");
      }
      spec.alpha_given = true;
    } else if (key == "sigma") {
      spec.sigma = parse_number(value, "--synthetic embeddings: sigma");
      if (!(*spec.sigma > 0.0) || !std::isfinite(*spec.sigma)) {
        throw std::invalid_argument("--synthetic embeddings: sigma=" + value + " must be finite and > 0");
      }
    } else if (key == "order") {
      if (value != "file" && value != "time") {
        throw std::invalid_argument("--synthetic embeddings: order=" + value + " is neither file nor time");
      }
      spec.time_order = value == "time";
    } else {
      throw std::invalid_argument("--synthetic embeddings: unknown key '" + key +
                                  "' (tables, dim, batch, rows, alpha, sigma, seed, order)");
    }
  }
  return spec;
}

/// SplitMix64: a tiny, well-mixed generator whose state is one word, so each (table, row) can own a
/// stream without a generator object per row; the same numbers on every platform and standard library.
struct split_mix64 {
  std::uint64_t state;

  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t operator()() { return mix(state += 0x9E3779B97F4A7C15ull); }
  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
};

/// The generator of stream `kind` (0: row values, 1: lookups) of table `table`, element `index`.
inline split_mix64 stream_of(std::uint64_t seed, std::uint64_t kind, std::uint64_t table, std::uint64_t index) {
  constexpr std::uint64_t odd = 0x9E3779B97F4A7C15ull;
  const std::uint64_t h = split_mix64::mix(split_mix64::mix(seed + odd * (kind + 1)) + odd * (table + 1));
  return {split_mix64::mix(h + odd * (index + 1))};
}

/// Row `row` of table `table`: dim values N(0, sigma) (Box–Muller), written to `out`.
template <class T>
void embedding_row(const embedding_spec& spec, std::size_t table, std::uint64_t row, T* out) {
  split_mix64 random = stream_of(spec.seed, 0, table, row);
  const double sigma = spec.value_sigma();
  for (std::size_t d = 0; d < spec.dim; d += 2) {
    const double radius = sigma * std::sqrt(-2.0 * std::log(1.0 - random.uniform()));  // 1 - u in (0, 1]
    const double angle = 2.0 * std::numbers::pi * random.uniform();
    out[d] = static_cast<T>(radius * std::cos(angle));
    if (d + 1 < spec.dim) out[d + 1] = static_cast<T>(radius * std::sin(angle));
  }
}

/// Exact Zipf(alpha) draws over ranks 1..rows (P(k) ∝ k^-alpha; rank 1 most frequent), by inverse CDF:
/// the cumulative weights once (one double per row), then a binary search per draw.
class zipf_sampler {
 public:
  zipf_sampler(std::size_t rows, double alpha) : cumulative_(rows) {
    double total = 0.0;
    for (std::size_t k = 0; k < rows; ++k) {
      total += std::pow(static_cast<double>(k + 1), -alpha);
      cumulative_[k] = total;
    }
  }

  /// The 0-based row (rank - 1) for a uniform u in [0, 1).
  std::size_t operator()(double u) const {
    const auto above = std::upper_bound(cumulative_.begin(), cumulative_.end(), u * cumulative_.back());
    return std::min(static_cast<std::size_t>(above - cumulative_.begin()), cumulative_.size() - 1);
  }

 private:
  std::vector<double> cumulative_;
};

/// An interaction log as a lookup stream: the item of each interaction as a dense row id (ids in order
/// of first appearance in the file).
struct interaction_log {
  std::vector<std::uint32_t> rows;
  std::size_t distinct_rows = 0;
};

/// Reads a CSV with a header naming an item column (movieId, itemId or item) and, for time order, a
/// timestamp column; other columns are ignored. MovieLens ratings.csv: userId,movieId,rating,timestamp.
inline interaction_log read_interaction_log(const std::string& path, bool time_order) {
  std::ifstream file(path);
  if (!file) throw std::invalid_argument("--lookups: cannot open '" + path + "'");
  std::string line;
  if (!std::getline(file, line)) throw std::invalid_argument("--lookups: '" + path + "' is empty");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const auto header = split(line, ',');
  const auto column = [&](std::initializer_list<std::string_view> names) -> std::optional<std::size_t> {
    for (std::size_t c = 0; c < header.size(); ++c) {
      if (std::find(names.begin(), names.end(), header[c]) != names.end()) return c;
    }
    return std::nullopt;
  };
  const auto item_column = column({"movieId", "itemId", "item"});
  const auto time_column = column({"timestamp"});
  if (!item_column) throw std::invalid_argument("--lookups: '" + path + "' has no movieId, itemId or item column");
  if (time_order && !time_column) throw std::invalid_argument("--lookups: order=time needs a timestamp column");

  struct interaction {
    std::int64_t time;
    std::uint32_t row;
  };
  std::vector<interaction> interactions;
  std::unordered_map<std::uint64_t, std::uint32_t> row_of_item;
  std::size_t line_number = 1;
  const auto number_at = [&](const std::vector<std::string_view>& fields, std::size_t c, auto& value) {
    const std::string_view field = c < fields.size() ? fields[c] : std::string_view{};
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (error != std::errc{} || end != field.data() + field.size()) {
      throw std::invalid_argument("--lookups: '" + path + "' line " + std::to_string(line_number) + ": column " +
                                  header[c] + " is '" + std::string(field) + "', not a whole number");
    }
  };
  std::vector<std::string_view> fields;
  while (std::getline(file, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    fields.clear();
    for (std::size_t start = 0;;) {
      const std::size_t end = std::min(line.find(',', start), line.size());
      fields.emplace_back(line.data() + start, end - start);
      if (end == line.size()) break;
      start = end + 1;
    }
    std::uint64_t item = 0;
    number_at(fields, *item_column, item);
    std::int64_t time = 0;
    if (time_order) number_at(fields, *time_column, time);
    const auto [it, added] = row_of_item.try_emplace(item, static_cast<std::uint32_t>(row_of_item.size()));
    interactions.push_back({time, it->second});
  }
  if (interactions.empty()) throw std::invalid_argument("--lookups: '" + path + "' has no interactions");
  if (time_order) {
    std::stable_sort(interactions.begin(), interactions.end(),
                     [](const interaction& a, const interaction& b) { return a.time < b.time; });
  }
  interaction_log log;
  log.rows.reserve(interactions.size());
  for (const auto& i : interactions) log.rows.push_back(i.row);
  log.distinct_rows = row_of_item.size();
  return log;
}

/// The payload and how it was drawn.
template <class T>
struct embedding_payload {
  std::vector<T> values;           ///< tables × batch vectors of dim values, table-major
  std::size_t rows_per_table = 0;  ///< rows each table has
  double distinct_fraction = 0.0;  ///< distinct rows per table's batch / batch, averaged over tables
};

/// Gathers the looked-up rows: row_of(t, b) is the row table t looks up for batch element b.
template <class T, class RowOf>
embedding_payload<T> gather_rows(const embedding_spec& spec, std::size_t rows_per_table, RowOf&& row_of) {
  embedding_payload<T> payload;
  payload.rows_per_table = rows_per_table;
  payload.values.resize(spec.tables * spec.batch * spec.dim);
  std::vector<std::uint64_t> batch_rows(spec.batch);
  double distinct = 0.0;
  for (std::size_t t = 0; t < spec.tables; ++t) {
    for (std::size_t b = 0; b < spec.batch; ++b) {
      batch_rows[b] = row_of(t, b);
      embedding_row(spec, t, batch_rows[b], payload.values.data() + (t * spec.batch + b) * spec.dim);
    }
    std::sort(batch_rows.begin(), batch_rows.end());
    distinct += static_cast<double>(std::unique(batch_rows.begin(), batch_rows.end()) - batch_rows.begin());
  }
  payload.distinct_fraction = distinct / static_cast<double>(spec.tables * spec.batch);
  return payload;
}

/// Synthetic lookups: each table draws its batch from Zipf(alpha) over its `rows` rows.
template <class T>
embedding_payload<T> synthetic_embeddings(const embedding_spec& spec) {
  const zipf_sampler zipf(spec.rows, spec.alpha);
  std::vector<split_mix64> lookups;
  for (std::size_t t = 0; t < spec.tables; ++t) lookups.push_back(stream_of(spec.seed, 1, t, 0));
  return gather_rows<T>(spec, spec.rows, [&](std::size_t t, std::size_t) { return zipf(lookups[t].uniform()); });
}

/// Lookups replayed from a log: every table has one row per distinct item and table t looks up the
/// t-th batch of the stream (interactions t·batch .. (t+1)·batch - 1, wrapping past the end), so the
/// tables see the same item stream shifted by a batch each; their values differ (seeded per table).
template <class T>
embedding_payload<T> logged_embeddings(const embedding_spec& spec, const interaction_log& log) {
  const std::size_t n = log.rows.size();
  return gather_rows<T>(spec, log.distinct_rows,
                        [&](std::size_t t, std::size_t b) { return log.rows[(t * spec.batch + b) % n]; });
}

}  // namespace zcoll_bench
