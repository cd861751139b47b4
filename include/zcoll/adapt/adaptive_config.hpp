#pragma once
/// The DLRM compression paper's dual-level adaptation as one value (§III-C, Algorithms 1 and 2): each
/// table's bound from its homogenization index and class, its encoder from the speed-up model, and the
/// iteration-wise decay on top.
///
///     const auto config = zcoll::adapt::offline_analysis<float, zcoll::EmbeddingHuffman, zcoll::EmbeddingLZ>(
///         samples, classifier, schedule, {.link_bytes_per_second = 12.5e9});
///     const double eb = config.error_bound(table, iteration);   // table bound x schedule factor
///     config.save(file);  ...  auto same = zcoll::adapt::adaptive_config::load(file);
///
/// Saved form, a text file of lines of space-separated key=value fields, doubles as C hex floats so that
/// they load back bit for bit:
///
///     zcoll-adaptive-config 1
///     classifier global_bound=0x1.eb851eb851eb8p-6 alpha=0x1.aaaaaaaaaaaabp+0 beta=0x1.8p+1 large_below=... small_above=...
///     schedule shape=step initial_factor=0x1.8p+1 decay_iterations=3000 steps=3
///     tables 26
///     table id=0 index=0x1.3c3c3c3c3c3c4p-2 class=medium bound=0x1.eb851eb851eb8p-6 encoder=linear+none+huffman
///     ...
///
/// `encoder` is a codec's name(), or "-" when none was chosen. load() refuses anything else with a
/// format_error naming the line.

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <istream>
#include <limits>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "zcoll/adapt/error_bound_schedule.hpp"
#include "zcoll/adapt/homogenization.hpp"
#include "zcoll/codec/speedup_model.hpp"
#include "zcoll/adapt/table_classifier.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/exec.hpp"

namespace zcoll::adapt {

/// One table's configuration: what the offline analysis measured and chose.
struct table_setting {
  std::uint64_t table = 0;
  double homogenization_index = 0.0;
  bound_class bound_class_of_table = bound_class::medium;
  double error_bound = 0.0;  ///< absolute, the class's bound
  std::string encoder;       ///< the chosen codec's name(), empty when none was chosen

  friend bool operator==(const table_setting&, const table_setting&) = default;
};

struct adaptive_config {
  table_classifier classifier;
  error_bound_schedule schedule;
  std::vector<table_setting> tables;

  friend bool operator==(const adaptive_config&, const adaptive_config&) = default;

  /// The setting of table `id`, or null when the analysis did not see it.
  const table_setting* find(std::uint64_t id) const {
    for (const auto& t : tables) {
      if (t.table == id) return &t;
    }
    return nullptr;
  }
  bool has_table(std::uint64_t id) const { return find(id) != nullptr; }

  /// The setting of table `id`; argument_error when the analysis did not see it.
  const table_setting& table(std::uint64_t id) const {
    if (const table_setting* t = find(id)) return *t;
    throw argument_error("adaptive_config: no setting for table " + std::to_string(id));
  }

  /// The bound of table `id` at `iteration`: its class's bound times the schedule's factor.
  double error_bound(std::uint64_t id, std::uint64_t iteration) const {
    return table(id).error_bound * schedule.factor(iteration);
  }

  void save(std::ostream& out) const;
  static adaptive_config load(std::istream& in);
};

/// A table's sampled batch: `vectors` holds vectors of `dim` values.
template <floating_value T>
struct table_sample {
  std::uint64_t table = 0;
  std::span<const T> vectors;
  std::size_t dim = 0;
};

struct analysis_options {
  /// The bound the homogenization index is measured at; 0 means the classifier's global bound.
  double index_bound = 0.0;
  /// B of the speed-up model for the encoder choice: 12.5e9 bytes/s is a 100 Gbit/s link.
  double link_bytes_per_second = 12.5e9;
  /// Threads for measuring the candidate encoders.
  exec::Host exec{};
};

/// Algorithm 1's OfflineAnalysis, with Algorithm 2's compressor selection when Codecs are given: for each
/// sample, the homogenization index at options.index_bound, the class and its bound, and (Codecs
/// non-empty) the candidate with the highest modelled speed-up, each measured on the sample at the
/// table's bound (codec_config::shape = {vectors, dim}).
template <floating_value T, class... Codecs>
adaptive_config offline_analysis(std::span<const table_sample<T>> samples, const table_classifier& classifier,
                                 const error_bound_schedule& schedule, const analysis_options& options = {}) {
  classifier.validate();
  schedule.validate();
  const double index_bound = options.index_bound == 0.0 ? classifier.global_bound : options.index_bound;
  adaptive_config config{classifier, schedule, {}};
  for (const auto& sample : samples) {
    if (config.has_table(sample.table)) {
      throw argument_error("offline_analysis: table " + std::to_string(sample.table) + " is sampled twice");
    }
    table_setting setting;
    setting.table = sample.table;
    setting.homogenization_index = homogenization_of(sample.vectors, sample.dim, index_bound).index();
    setting.bound_class_of_table = classifier.classify(setting.homogenization_index);
    setting.error_bound = classifier.bound_of(setting.bound_class_of_table);
    if constexpr (sizeof...(Codecs) > 0) {
      const codec_config at_bound{.error_bound = absolute(setting.error_bound),
                                  .shape = {sample.vectors.size() / sample.dim, sample.dim}};
      const std::vector<candidate_measurement> measured{
          measure_candidate(Codecs(at_bound), options.exec, sample.vectors)...};
      setting.encoder = measured[select_fastest(measured, options.link_bytes_per_second)].codec;
    }
    config.tables.push_back(std::move(setting));
  }
  return config;
}

namespace detail {

inline std::string hex_double(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

/// The fields of one line of a saved configuration, read in order.
class config_line {
 public:
  config_line(std::istream& in, std::size_t& number, const char* expected_head) : number_(++number) {
    std::string line;
    if (!std::getline(in, line)) fail(std::string("missing; expected a line starting '") + expected_head + "'");
    std::istringstream words(line);
    std::string head;
    words >> head;
    if (head != expected_head) fail("starts '" + head + "', expected '" + expected_head + "'");
    for (std::string word; words >> word;) words_.push_back(word);
  }

  /// The value of the next field, which must be `key`=value.
  std::string text(const std::string& key) {
    if (next_ >= words_.size()) fail("field " + key + " missing");
    const std::string& word = words_[next_++];
    if (word.compare(0, key.size() + 1, key + "=") != 0) fail("field '" + word + "' where " + key + "= was expected");
    return word.substr(key.size() + 1);
  }
  double number(const std::string& key) {
    const std::string value = text(key);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') fail(key + "=" + value + " is not a number");
    return v;
  }
  std::uint64_t integer(const std::string& key) { return unsigned_value(text(key), key); }
  /// The bare word after the head (the count of "tables N", the version of the first line).
  std::uint64_t bare_integer(const char* what) {
    if (next_ >= words_.size()) fail(std::string(what) + " missing");
    return unsigned_value(words_[next_++], what);
  }
  void finish() {
    if (next_ != words_.size()) fail("unexpected field '" + words_[next_] + "'");
  }
  std::uint64_t unsigned_value(const std::string& value, const std::string& what) const {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || value[0] == '-' || errno == ERANGE) {
      fail(what + " '" + value + "' is not an unsigned 64-bit integer");
    }
    return v;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw format_error("adaptive_config: line " + std::to_string(number_) + ": " + what);
  }

 private:
  std::size_t number_;
  std::vector<std::string> words_;
  std::size_t next_ = 0;
};

template <class Enum>
Enum enum_named(config_line& line, const std::string& key, std::initializer_list<Enum> values) {
  const std::string name = line.text(key);
  for (const Enum v : values) {
    if (name == to_string(v)) return v;
  }
  line.fail(key + "=" + name + " is not a known value");
}

}  // namespace detail

inline void adaptive_config::save(std::ostream& out) const {
  using detail::hex_double;
  out << "zcoll-adaptive-config 1\n";
  out << "classifier global_bound=" << hex_double(classifier.global_bound) << " alpha=" << hex_double(classifier.alpha)
      << " beta=" << hex_double(classifier.beta) << " large_below=" << hex_double(classifier.large_below)
      << " small_above=" << hex_double(classifier.small_above) << "\n";
  out << "schedule shape=" << to_string(schedule.shape) << " initial_factor=" << hex_double(schedule.initial_factor)
      << " decay_iterations=" << schedule.decay_iterations << " steps=" << schedule.steps << "\n";
  out << "tables " << tables.size() << "\n";
  for (const auto& t : tables) {
    if (t.encoder.find_first_of(" \t\n\r") != std::string::npos || t.encoder == "-") {
      throw argument_error("adaptive_config::save: encoder name '" + t.encoder + "' of table " +
                           std::to_string(t.table) + " has white space or is '-'");
    }
    out << "table id=" << t.table << " index=" << hex_double(t.homogenization_index)
        << " class=" << to_string(t.bound_class_of_table) << " bound=" << hex_double(t.error_bound)
        << " encoder=" << (t.encoder.empty() ? "-" : t.encoder) << "\n";
  }
  if (!out) throw error("adaptive_config::save: the stream failed");
}

inline adaptive_config adaptive_config::load(std::istream& in) {
  std::size_t number = 0;
  adaptive_config c;
  {
    detail::config_line line(in, number, "zcoll-adaptive-config");
    if (line.bare_integer("version") != 1) line.fail("version is not 1");
    line.finish();
  }
  {
    detail::config_line line(in, number, "classifier");
    c.classifier = {line.number("global_bound"), line.number("alpha"), line.number("beta"),
                    line.number("large_below"), line.number("small_above")};
    line.finish();
    try {
      c.classifier.validate();
    } catch (const argument_error& e) {
      line.fail(e.what());
    }
  }
  {
    detail::config_line line(in, number, "schedule");
    c.schedule.shape = detail::enum_named(line, "shape", {decay_shape::constant, decay_shape::step, decay_shape::logarithmic});
    c.schedule.initial_factor = line.number("initial_factor");
    c.schedule.decay_iterations = line.integer("decay_iterations");
    const std::uint64_t steps = line.integer("steps");
    if (steps > std::numeric_limits<unsigned>::max()) line.fail("steps=" + std::to_string(steps) + " is too large");
    c.schedule.steps = static_cast<unsigned>(steps);
    line.finish();
    try {
      c.schedule.validate();
    } catch (const argument_error& e) {
      line.fail(e.what());
    }
  }
  std::uint64_t count = 0;
  {
    detail::config_line line(in, number, "tables");
    count = line.bare_integer("table count");
    line.finish();
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    detail::config_line line(in, number, "table");
    table_setting t;
    t.table = line.integer("id");
    t.homogenization_index = line.number("index");
    t.bound_class_of_table = detail::enum_named(line, "class", {bound_class::large, bound_class::medium, bound_class::small});
    t.error_bound = line.number("bound");
    t.encoder = line.text("encoder");
    if (t.encoder == "-") t.encoder.clear();
    line.finish();
    if (!(t.homogenization_index >= 0.0 && t.homogenization_index <= 1.0)) line.fail("index is not in [0, 1]");
    if (!(t.error_bound >= 0.0) || !std::isfinite(t.error_bound)) line.fail("bound is not finite and >= 0");
    if (c.has_table(t.table)) line.fail("table " + std::to_string(t.table) + " is listed twice");
    c.tables.push_back(std::move(t));
  }
  std::string rest;
  if (std::getline(in, rest) && !rest.empty()) {
    throw format_error("adaptive_config: line " + std::to_string(number + 1) + ": text after the last table");
  }
  return c;
}

}  // namespace zcoll::adapt
