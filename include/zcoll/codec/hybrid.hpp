#pragma once
/// Hybrid<C...>: per table, the candidate codec the speed-up model of adapt/select.hpp prefers.
///
/// The DLRM compression paper (§III-D, Table V) finds that no one encoder wins on every embedding table:
/// Huffman on tables of concentrated values, vector-LZ on tables with few distinct vectors. Hybrid
/// measures every candidate on a sample of the first input it sees for a table id (a prefix of whole
/// rows), picks the one with the highest modelled speed-up for the configured link, records the choice
/// for that table and uses it from then on. The DLRM paper's hybrid is Hybrid<EmbeddingHuffman, EmbeddingLZ>.
///
/// A stream is the chosen candidate's own (its codec id in the header), so decompress needs no choice:
/// it dispatches on the id. Choices come from timings, which vary from run to run; a program that needs
/// the same bytes every run sets them with choose() (from a saved configuration, say).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zcoll/adapt/select.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll {

/// Names the table (or tensor) a choice is recorded for.
using table_id = std::uint64_t;

struct hybrid_config {
  /// B of the speed-up model, bytes per second: 12.5e9 is a 100 Gbit/s link.
  double link_bytes_per_second = 12.5e9;
  /// Values of a table's first input measured to choose (rounded down to whole rows, at least one row).
  std::size_t sample_values = std::size_t{1} << 16;
};

template <codec... C>
class Hybrid {
  static_assert(sizeof...(C) >= 1, "Hybrid: give at least one candidate codec");
  static constexpr std::array<codec_id, sizeof...(C)> candidate_ids{C::id...};
  static_assert(
      [] {
        for (std::size_t i = 0; i < candidate_ids.size(); ++i) {
          for (std::size_t j = i + 1; j < candidate_ids.size(); ++j) {
            if (candidate_ids[i] == candidate_ids[j]) return false;
          }
        }
        return true;
      }(),
      "Hybrid: candidates must have distinct codec ids (the stream's id says which one wrote it)");

 public:
  static constexpr codec_id id = own_layout_codec_id<codec_ids::hybrid>();
  static constexpr bool uses_error_bound = (C::uses_error_bound || ...);
  static constexpr std::size_t candidate_count = sizeof...(C);

  static std::string name() {
    std::string n = "hybrid(";
    ((n += C::name() + ","), ...);
    n.back() = ')';
    return n;
  }

  explicit Hybrid(codec_config config = {}, hybrid_config hybrid = {})
      : config_(config), hybrid_(hybrid), candidates_(C(config)...) {
    if (!(hybrid_.link_bytes_per_second > 0.0)) {
      throw argument_error("hybrid_config: link_bytes_per_second " + std::to_string(hybrid_.link_bytes_per_second) +
                           " must be > 0");
    }
    if (hybrid_.sample_values == 0) throw argument_error("hybrid_config: sample_values must be at least 1");
  }
  Hybrid(const Hybrid& other) : config_(other.config_), hybrid_(other.hybrid_), candidates_(other.candidates_) {
    const std::lock_guard lock(other.mutex_);
    choices_ = other.choices_;
  }

  const codec_config& config() const { return config_; }
  const hybrid_config& hybrid() const { return hybrid_; }

  template <floating_value T>
  std::size_t max_compressed_size(std::size_t count) const {
    return std::apply([&](const auto&... c) { return std::max({c.template max_compressed_size<T>(count)...}); },
                      candidates_);
  }

  /// Compresses `in` with the candidate chosen for `table` (choosing it on this input if none is yet).
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out, table_id table) const {
    using T = std::ranges::range_value_t<R>;
    const std::span<const T> values(std::ranges::data(in), std::ranges::size(in));
    const auto recorded = choice(table);
    const std::size_t chosen = recorded ? *recorded : choose_on(exec, values, table);
    std::span<std::byte> written;
    visit(chosen, [&](const auto& codec) { written = codec.compress(exec, values, out); });
    return written;
  }

  /// The codec interface: table 0.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out) const {
    return compress(exec, in, out, table_id{0});
  }

  /// Decodes a stream of any candidate, found by the codec id in its header.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  void decompress(const exec::Host& exec, std::span<const std::byte> in, R&& out) const {
    visit(candidate_of(in), [&](const auto& codec) { codec.decompress(exec, in, std::forward<R>(out)); });
  }

  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::vector<std::byte> compress(const R& in, table_id table = 0) const {
    return compress_to_vector(*this, in, table);
  }

  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    std::vector<T> values;
    visit(candidate_of(in), [&](const auto& codec) { values = codec.template decompress<T>(in); });
    return values;
  }

  /// The candidate recorded for `table`, if any.
  std::optional<std::size_t> choice(table_id table) const {
    const std::lock_guard lock(mutex_);
    const auto found = choices_.find(table);
    return found == choices_.end() ? std::nullopt : std::optional<std::size_t>(found->second);
  }

  /// Records `candidate` for `table` (a saved choice, or a caller's own policy).
  void choose(table_id table, std::size_t candidate) const {
    if (candidate >= candidate_count) {
      throw argument_error("Hybrid::choose: candidate " + std::to_string(candidate) + " of " +
                           std::to_string(candidate_count) + " (0-based)");
    }
    const std::lock_guard lock(mutex_);
    choices_[table] = candidate;
  }

  /// Forgets the choice for `table`: its next input is measured again.
  void forget(table_id table) const {
    const std::lock_guard lock(mutex_);
    choices_.erase(table);
  }

  /// Measures every candidate on `sample`, as compress does on a table's first input.
  template <floating_value T>
  std::vector<adapt::candidate_measurement> measure(const exec::Host& exec, std::span<const T> sample) const {
    std::vector<adapt::candidate_measurement> measured;
    std::apply([&](const auto&... c) { (measured.push_back(adapt::measure_candidate(c, exec, sample)), ...); },
               candidates_);
    return measured;
  }

  /// The candidate's name, for reports.
  static std::string candidate_name(std::size_t candidate) {
    const std::array<std::string, candidate_count> names{C::name()...};
    if (candidate >= candidate_count) {
      throw argument_error("Hybrid::candidate_name: candidate " + std::to_string(candidate) + " of " +
                           std::to_string(candidate_count) + " (0-based)");
    }
    return names[candidate];
  }

 private:
  template <floating_value T>
  std::size_t choose_on(const exec::Host& exec, std::span<const T> values, table_id table) const {
    if (values.empty()) return 0;  // nothing to measure; the choice waits for data
    const std::size_t row = std::max<std::size_t>(1, row_length(config_));
    const std::size_t whole_rows = std::max(row, hybrid_.sample_values / row * row);
    const auto sample = values.first(std::min(values.size(), whole_rows));
    const auto measured = measure(exec, sample);
    const std::size_t best = adapt::select_fastest(measured, hybrid_.link_bytes_per_second);
    choose(table, best);
    return best;
  }

  /// The candidate whose id the stream's header names.
  std::size_t candidate_of(std::span<const std::byte> stream) const {
    const codec_id stream_id = read_stream_header(stream).codec;
    const auto found = std::find(candidate_ids.begin(), candidate_ids.end(), stream_id);
    if (found == candidate_ids.end()) {
      throw format_error("stream was written by codec " + to_string(stream_id) + ", which is not a candidate of " +
                         name());
    }
    return static_cast<std::size_t>(found - candidate_ids.begin());
  }

  /// Calls fn(candidate `index`).
  template <class Fn>
  void visit(std::size_t index, Fn&& fn) const {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((I == index ? (fn(std::get<I>(candidates_)), 0) : 0), ...);
    }(std::index_sequence_for<C...>{});
  }

  codec_config config_;
  hybrid_config hybrid_;
  std::tuple<C...> candidates_;
  mutable std::mutex mutex_;
  mutable std::map<table_id, std::size_t> choices_;
};

}  // namespace zcoll
