// read_interpose_settings: the environment of libzcoll-mpi.so, checked.

#include "interpose_settings.hpp"

#include "error_bound_text.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>

extern char** environ;

namespace zcoll::lib {
namespace {

// The ZCOLL_ variables other parts of zcoll read (the tests, CI's scripts): set beside the library, they
// are not misspellings of its own.
constexpr std::array<std::string_view, 2> other_zcoll_variables{"ZCOLL_SOAK_SECONDS", "ZCOLL_FUZZ_SECONDS"};

[[noreturn]] void bad_value(std::string_view variable, std::string_view value, std::string_view expected) {
  throw argument_error(std::string(variable) + "='" + std::string(value) + "' is not valid, expected " +
                       std::string(expected));
}

std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> items;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    items.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

/// "1048576", "64K", "1M", "2G" (binary multiples).
std::size_t parse_bytes(std::string_view value) {
  constexpr std::string_view expected = "a whole number of bytes, optionally with K, M or G (binary), e.g. 1M";
  std::string_view digits = value;
  std::size_t scale = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': scale = std::size_t{1} << 10; break;
      case 'M': scale = std::size_t{1} << 20; break;
      case 'G': scale = std::size_t{1} << 30; break;
      default: break;
    }
    if (scale != 1) digits.remove_suffix(1);
  }
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() ||
      n > std::numeric_limits<std::size_t>::max() / scale) {
    bad_value("ZCOLL_MIN_BYTES", value, expected);
  }
  return n * scale;
}

bool parse_switch(std::string_view variable, std::string_view value) {
  if (value == "1" || value == "on") return true;
  if (value == "0" || value == "off") return false;
  bad_value(variable, value, "0 or 1 (or off, on)");
}

reduce_schedule parse_reduce_schedule(std::string_view variable, std::string_view value) {
  if (value == "ring") return reduce_schedule::ring;
  if (value == "recursive_doubling") return reduce_schedule::recursive_doubling;
  bad_value(variable, value, "ring or recursive_doubling");
}

}  // namespace

interpose_settings read_interpose_settings(const std::function<const char*(const char*)>& lookup,
                                           const std::vector<std::string>& names) {
  constexpr std::array<std::string_view, 16> known{
      "ZCOLL_ERROR_BOUND",         "ZCOLL_CODEC",
      "ZCOLL_OPS",                 "ZCOLL_MIN_BYTES",
      "ZCOLL_SCHEDULE_ALLREDUCE",  "ZCOLL_SCHEDULE_REDUCE",
      "ZCOLL_SCHEDULE_ALLGATHER",  "ZCOLL_SCHEDULE_BCAST",
      "ZCOLL_SCHEDULE_REDUCE_SCATTER_BLOCK", "ZCOLL_SCHEDULE_SCATTER",
      "ZCOLL_SCHEDULE_GATHER",     "ZCOLL_SCHEDULE_ALLTOALL",
      "ZCOLL_THREADS",             "ZCOLL_VERIFY",
      "ZCOLL_HOMOMORPHIC",         "ZCOLL_EXCLUDE_COMMS"};
  for (const std::string& name : names) {
    const bool ours = std::find(known.begin(), known.end(), name) != known.end() || name == "ZCOLL_REPORT" ||
                      std::find(other_zcoll_variables.begin(), other_zcoll_variables.end(), name) !=
                          other_zcoll_variables.end();
    if (!ours) {
      std::string list = "ZCOLL_REPORT";
      for (const auto k : known) list += ", " + std::string(k);
      throw argument_error(name + " is not a variable zcoll reads (a misspelling?); libzcoll-mpi reads " + list);
    }
  }

  interpose_settings s;
  const auto get = [&](const char* name) -> std::optional<std::string_view> {
    const char* value = lookup(name);
    if (value == nullptr) return std::nullopt;
    return std::string_view(value);
  };
  if (const auto v = get("ZCOLL_ERROR_BOUND")) s.error_bound = parse_error_bound("ZCOLL_ERROR_BOUND", *v);
  if (const auto v = get("ZCOLL_CODEC")) {
    if (*v != supported_collective_codecs()) bad_value("ZCOLL_CODEC", *v, supported_collective_codecs());
    s.collectives.codec = std::string(*v);
  }
  if (const auto v = get("ZCOLL_OPS")) {
    s.operations = operation_set::none();
    std::string expected = "a comma-separated list of";
    for (const auto name : operation_names) {
      expected += ' ';
      expected += name;
    }
    if (v->empty()) bad_value("ZCOLL_OPS", *v, expected);
    for (const auto item : split_list(*v)) {
      const auto op = parse_operation(item);
      if (!op) bad_value("ZCOLL_OPS", *v, expected);
      s.operations.add(*op);
    }
  }
  if (const auto v = get("ZCOLL_MIN_BYTES")) s.min_bytes = parse_bytes(*v);
  if (const auto v = get("ZCOLL_SCHEDULE_ALLREDUCE")) {
    s.collectives.allreduce = parse_reduce_schedule("ZCOLL_SCHEDULE_ALLREDUCE", *v);
  }
  if (const auto v = get("ZCOLL_SCHEDULE_REDUCE")) s.collectives.reduce = parse_reduce_schedule("ZCOLL_SCHEDULE_REDUCE", *v);
  if (const auto v = get("ZCOLL_SCHEDULE_ALLGATHER")) {
    s.collectives.allgather = parse_reduce_schedule("ZCOLL_SCHEDULE_ALLGATHER", *v);
  }
  if (const auto v = get("ZCOLL_SCHEDULE_BCAST")) {
    if (*v == "binomial_tree") {
      s.collectives.bcast = bcast_schedule::binomial_tree;
    } else if (*v == "scatter_allgather") {
      s.collectives.bcast = bcast_schedule::scatter_allgather;
    } else if (*v == "chain") {
      s.collectives.bcast = bcast_schedule::chain;
    } else {
      bad_value("ZCOLL_SCHEDULE_BCAST", *v, "binomial_tree, scatter_allgather or chain");
    }
  }
  // The operations with one schedule: naming it is allowed, naming another is an error.
  for (const auto& [variable, only] : {std::pair{"ZCOLL_SCHEDULE_REDUCE_SCATTER_BLOCK", "ring"},
                                       std::pair{"ZCOLL_SCHEDULE_SCATTER", "binomial_tree"},
                                       std::pair{"ZCOLL_SCHEDULE_GATHER", "binomial_tree"},
                                       std::pair{"ZCOLL_SCHEDULE_ALLTOALL", "pairwise"}}) {
    if (const auto v = get(variable); v && *v != only) bad_value(variable, *v, std::string(only) + " (its only schedule)");
  }
  if (const auto v = get("ZCOLL_THREADS")) {
    unsigned n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (v->empty() || ec != std::errc{} || end != v->data() + v->size() || n < 1 || n > 1024) {
      bad_value("ZCOLL_THREADS", *v, "a whole number from 1 to 1024");
    }
    s.collectives.threads = n;
  }
  if (const auto v = get("ZCOLL_VERIFY")) s.collectives.verify = parse_switch("ZCOLL_VERIFY", *v);
  if (const auto v = get("ZCOLL_HOMOMORPHIC")) s.collectives.homomorphic = parse_switch("ZCOLL_HOMOMORPHIC", *v);
  if (const auto v = get("ZCOLL_EXCLUDE_COMMS")) {
    for (const auto item : split_list(*v)) {
      if (item.empty()) bad_value("ZCOLL_EXCLUDE_COMMS", *v, "a comma-separated list of communicator names");
      s.excluded_comms.emplace_back(item);
    }
  }
  if (const auto v = get("ZCOLL_REPORT")) {
    if (v->empty()) bad_value("ZCOLL_REPORT", *v, "stderr, none or a file name");
    s.report = std::string(*v);
  }
  return s;
}

interpose_settings read_interpose_settings_from_environment() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.starts_with("ZCOLL_")) names.emplace_back(text.substr(0, text.find('=')));
  }
  return read_interpose_settings([](const char* name) { return std::getenv(name); }, names);
}

}  // namespace zcoll::lib
