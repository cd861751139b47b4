#pragma once
/// Hybrid<C...>: per table, the candidate codec the speed-up model of codec/speedup_model.hpp prefers.
///
/// The DLRM compression paper (§III-D, Table V) finds that no one encoder wins on every embedding table:
/// Huffman on tables of concentrated values, vector-LZ on tables with few distinct vectors. Hybrid
/// compresses a sample of a table's first input (a prefix of whole rows) with every candidate, models
/// each one's speed-up for the configured link from that ratio and the candidate's speeds, records the
/// best in the table's state and uses it from then on. The DLRM paper's hybrid is
/// Hybrid<EmbeddingHuffman, EmbeddingLZ>.
///
///     const zcoll::EmbeddingHybrid hybrid{{.error_bound = zcoll::absolute(1e-3), .shape = {rows, dim}}};
///     zcoll::codec_state<zcoll::EmbeddingHybrid> tables;      // the caller's: one entry per table
///     auto written = hybrid.compress(zcoll::exec::Host{}, tables.at(table), rows_of_table, out);
///
/// The choice is deterministic: the ratios come from the data and the speeds are configured
/// (hybrid_config::speeds: measured once with measure_speeds() on the program's own data, saved, or sent
/// from one rank to all), never timed on the hot path, so every run and rank chooses alike. Without
/// speeds the ratio decides (the model's answer when the candidates are equally fast). A stream is the
/// chosen candidate's own (its codec id in the header), so decompress needs no choice: it dispatches on
/// the id.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/codec/speedup_model.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll {

struct hybrid_config {
  /// B of the speed-up model, bytes per second: 12.5e9 is a 100 Gbit/s link.
  double link_bytes_per_second = 12.5e9;
  /// Values of a table's first input compressed to choose (rounded down to whole rows, at least one row).
  std::size_t sample_values = std::size_t{1} << 16;
  /// The candidates' speeds, in their order (Hybrid::measure_speeds measures them once). Empty: the
  /// ratio alone decides, as the model does when the candidates are equally fast.
  std::vector<codec_speed> speeds = {};
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

  /// What a table carries: the candidate chosen for it (none before its first non-empty input).
  struct state {
    std::optional<std::size_t> choice;
  };

  static std::string name() {
    std::string n = "hybrid(";
    ((n += C::name() + ","), ...);
    n.back() = ')';
    return n;
  }

  explicit Hybrid(codec_config config = {}, hybrid_config hybrid = {})
      : config_(config), hybrid_(std::move(hybrid)), candidates_(C(config)...) {
    if (!(hybrid_.link_bytes_per_second > 0.0)) {
      throw argument_error("hybrid_config: link_bytes_per_second " + std::to_string(hybrid_.link_bytes_per_second) +
                           " must be > 0");
    }
    if (hybrid_.sample_values == 0) throw argument_error("hybrid_config: sample_values must be at least 1");
    if (!hybrid_.speeds.empty() && hybrid_.speeds.size() != candidate_count) {
      throw argument_error("hybrid_config: speeds has " + std::to_string(hybrid_.speeds.size()) + " entries, " +
                           name() + " has " + std::to_string(candidate_count) + " candidates (or none)");
    }
    for (const codec_speed& speed : hybrid_.speeds) {
      if (!(speed.compress_bytes_per_second > 0.0) || !(speed.decompress_bytes_per_second > 0.0)) {
        throw argument_error("hybrid_config: every speed must be > 0 bytes per second");
      }
    }
  }

  const codec_config& config() const { return config_; }
  /// This codec with another error bound, every other setting kept (what a reduction hop needs).
  Hybrid with_error_bound(const bound& error_bound) const {
    codec_config config = config_;
    config.error_bound = error_bound;
    return Hybrid(std::move(config), hybrid_);
  }
  const hybrid_config& hybrid() const { return hybrid_; }

  template <floating_value T>
  std::size_t max_compressed_size(std::size_t count) const {
    return std::apply([&](const auto&... c) { return std::max({c.template max_compressed_size<T>(count)...}); },
                      candidates_);
  }

  /// Compresses `in` with the candidate chosen for the table of `st` (choosing it on this input, and
  /// recording it in `st`, when none is yet).
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, state& st, const R& in, std::span<std::byte> out) const {
    using T = std::ranges::range_value_t<R>;
    const std::span<const T> values(std::ranges::data(in), std::ranges::size(in));
    if (!st.choice && !values.empty()) st.choice = choose(exec, values);
    if (st.choice && *st.choice >= candidate_count) {
      throw argument_error("Hybrid::compress: the state's choice " + std::to_string(*st.choice) + " is not below " +
                           std::to_string(candidate_count) + " (the candidates, 0-based)");
    }
    std::span<std::byte> written;
    visit(st.choice.value_or(0), [&](const auto& codec) { written = codec.compress(exec, values, out); });
    return written;
  }

  /// The codec interface: a call with a fresh state (the choice made on this input).
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::span<std::byte> compress(const exec::Host& exec, const R& in, std::span<std::byte> out) const {
    state fresh;
    return compress(exec, fresh, in, out);
  }

  /// Decodes a stream of any candidate, found by the codec id in its header.
  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  void decompress(const exec::Host& exec, std::span<const std::byte> in, R&& out) const {
    visit(candidate_of(in), [&](const auto& codec) { codec.decompress(exec, in, std::forward<R>(out)); });
  }

  template <std::ranges::contiguous_range R>
    requires floating_value<std::ranges::range_value_t<R>>
  std::vector<std::byte> compress(const R& in) const {
    return compress_to_vector(*this, in);
  }

  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    std::vector<T> values;
    visit(candidate_of(in), [&](const auto& codec) { values = codec.template decompress<T>(in); });
    return values;
  }

  /// The candidate the model prefers for `values` (a prefix of whole rows of sample_values is compressed
  /// with each; the speeds are the configured ones): what compress records for a table's first input.
  template <floating_value T>
  std::size_t choose(const exec::Host& exec, std::span<const T> values) const {
    const auto measured = model_inputs(exec, sample_of(values));
    if (!hybrid_.speeds.empty()) return select_fastest(measured, hybrid_.link_bytes_per_second);
    std::size_t best = 0;  // no speeds: the highest ratio, the first of equals
    for (std::size_t i = 1; i < measured.size(); ++i) best = measured[i].ratio > measured[best].ratio ? i : best;
    return best;
  }

  /// Times every candidate on a prefix of whole rows of `values` (the fastest of three runs after a
  /// warm-up): speeds to configure (hybrid_config::speeds), measured once, not on the hot path.
  template <floating_value T>
  std::vector<codec_speed> measure_speeds(const exec::Host& exec, std::span<const T> values) const {
    const auto sample = sample_of(values);
    std::vector<codec_speed> speeds;
    std::apply(
        [&](const auto&... c) {
          const auto one = [&](const auto& codec) {
            const candidate_measurement m = measure_candidate(codec, exec, sample);
            speeds.push_back({m.compress_bytes_per_second, m.decompress_bytes_per_second});
          };
          (one(c), ...);
        },
        candidates_);
    return speeds;
  }

  /// What the model sees for each candidate on `values`: its ratio there, and its speeds.
  template <floating_value T>
  std::vector<candidate_measurement> model_inputs(const exec::Host& exec, std::span<const T> values) const {
    std::vector<candidate_measurement> measured;
    std::vector<std::byte> stream;
    std::size_t index = 0;
    std::apply(
        [&](const auto&... c) {
          const auto one = [&](const auto& codec) {
            stream.resize(codec.template max_compressed_size<T>(values.size()));
            const std::size_t bytes = codec.compress(exec, values, std::span<std::byte>(stream)).size();
            const codec_speed speed = hybrid_.speeds.empty() ? codec_speed{1.0, 1.0} : hybrid_.speeds[index];
            ++index;
            measured.push_back({codec.name(), static_cast<double>(values.size_bytes()) / static_cast<double>(bytes),
                                speed.compress_bytes_per_second, speed.decompress_bytes_per_second});
          };
          (one(c), ...);
        },
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
  /// The first whole rows of `values`, sample_values of them (at least one row).
  template <floating_value T>
  std::span<const T> sample_of(std::span<const T> values) const {
    const std::size_t row = std::max<std::size_t>(1, row_length(config_));
    const std::size_t whole_rows = std::max(row, hybrid_.sample_values / row * row);
    return values.first(std::min(values.size(), whole_rows));
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
};

}  // namespace zcoll
