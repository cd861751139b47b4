#pragma once
/// FusedLookup: FusedRec's fused embedding lookup (Huang et al., AAAI 2026, §3 and Algorithm 1) over any
/// transport, with the embedding all-to-all optionally compressed by any codec.
///
///     zcoll::embedding::FusedLookup<zcoll::FZLight> lookup{t, specs, {.codec = {.error_bound = zcoll::absolute(1e-3)}}};
///     auto plan = lookup.plan({ids, offsets});     // once per batch: dedup, routing, the key all-to-all
///     lookup.forward(plan, rows);                  // rows: every token's row, category after category
///     ...                                          // the model computes the rows' gradients
///     lookup.backward(plan, row_gradients);        // accumulated, routed back, applied at the owners
///
/// Per fused group (categories of equal spec, embedding_spec.hpp), on every rank:
///  1. segment_unique removes the duplicates within each category (I_u);
///  2. rankwise_sort orders the unique keys by owner, the hash of the id (I_s);
///  3. the counts per (destination, category) and then the ids travel (exact all-to-alls): the owner knows
///     each id's category from the counts, no category travels per id, and no irreversible hash of
///     (category, id) is ever sent (FusedRec's deferred hashing);
///  4. the owner dedups the received keys by (category, id) across the requesting ranks (I_l) and finds or
///     creates their rows;
///  5. forward: the owner's rows go back in the order the keys came (Compressed<Pairwise, Codec>::alltoallv,
///     compressed sizes first), and each token's row is gathered through I_r = I_s ∘ I_u into the dense,
///     duplicated, per-category layout;
///  6. backward: each token's gradient is summed per unique key (through I_r, in token order), the sums go
///     back along the same plan, the owner sums them per (category, id) in rank order and applies the
///     category's optimizer once per row.
/// The plan (keys, indices, counts) is made once per batch and serves forward and backward. With
/// lookup_config::fuse false every category is its own group: the per-category lookup of the frameworks
/// FusedRec compares with, one set of all-to-alls per category; with an exact codec (Identity, the
/// default) the results are bit for bit the same (a lossy codec compresses blocks that span several
/// categories when fused, so its errors differ, each within the bound).
///
/// Every call is collective: every rank of the transport makes it, with its own batch. The
/// constructor splits the transport once per group (the all-to-alls of different groups cannot mix).
/// Damaged input from a peer (a count above lookup_config::max_keys_from_peer or that overflows, an id
/// this rank does not own) is a format_error on the rank that receives it; there is no verify mode
/// (collective_config::verify applies to the row all-to-alls only), so the other ranks learn of it
/// only when their next exchange with that rank fails (transport::Local aborts them at once).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/presets.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/embedding/embedding_shard.hpp"
#include "zcoll/embedding/embedding_spec.hpp"
#include "zcoll/embedding/routing.hpp"
#include "zcoll/embedding/segment_unique.hpp"
#include "zcoll/schedule/pairwise.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/exchange.hpp"

namespace zcoll::embedding {

/// One rank's batch, TorchRec's KeyedJaggedTensor without per-sample lengths: the ids of category c are
/// ids[offsets[c], offsets[c + 1]), in the order the model wants their rows.
struct sparse_batch {
  std::span<const std::uint64_t> ids;
  std::span<const std::size_t> offsets;  ///< one entry per category and one more
};

struct lookup_config {
  /// The codec of the rows and their gradients: its shape is set to {each group's dimension} (rows
  /// travel whole: row-wise codecs quantize them, EmbeddingLZ matches them).
  codec_config codec = {};
  /// How the row all-to-alls run (threads, verify mode, ...).
  collective_config collective = {};
  bool fuse = true;  ///< false: one group per category (the per-category baseline)
  /// The most keys a peer may announce for one group: a damaged count cannot make a rank allocate more.
  std::size_t max_keys_from_peer = std::size_t{1} << 30;
};

/// What the last plan, forward or backward did on this rank.
struct lookup_stats {
  std::size_t alltoalls = 0;             ///< all-to-all rounds: counts, ids, rows (or gradients)
  std::size_t key_bytes_sent = 0;        ///< counts and ids
  std::size_t value_bytes_sent = 0;      ///< rows or gradients, on the wire (compressed, sizes included)
  std::size_t raw_value_bytes_sent = 0;  ///< the same uncompressed
  double seconds = 0;                    ///< wall time of the call
  double compress_s = 0, communicate_s = 0, decompress_s = 0;  ///< of the value all-to-alls
};

/// A batch's routing, made by FusedLookup::plan and used by its forward and backward.
struct lookup_plan {
  struct group {
    std::size_t dim = 0;
    std::vector<std::size_t> categories;   ///< global category of each segment
    std::vector<std::size_t> token_offsets;  ///< segment s's tokens: [token_offsets[s], token_offsets[s + 1]) of the fused group
    std::vector<std::size_t> recover;      ///< I_r: token i's row is received row recover[i]
    std::vector<std::size_t> send_rows;    ///< keys sent to (rows received from) each rank
    std::vector<std::size_t> recv_rows;    ///< keys received from (rows sent to) each rank
    std::vector<std::size_t> lookup_of;    ///< I_l: received key j is lookup key lookup_of[j]
    std::vector<std::size_t> lookup_category;  ///< each lookup key's category ...
    std::vector<std::size_t> lookup_row;       ///< ... and its row in the owner's shard
  };
  std::vector<group> groups;
  std::vector<std::size_t> value_offsets;  ///< category c's rows: values [value_offsets[c], value_offsets[c + 1]) of forward's out
  int ranks = 0;
  std::uint64_t lookup = 0;  ///< which FusedLookup made it

  std::size_t values() const { return value_offsets.back(); }
};

template <codec Codec = Identity>
class FusedLookup {
 public:
  // The class itself is ruled out before byte_transport is checked: asking whether a FusedLookup is a
  // transport asks whether it is movable, which would consider this constructor again (clang 14).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, FusedLookup> && transport::byte_transport<T>)
  FusedLookup(T transport, std::vector<embedding_spec> specs, lookup_config config = {})
      : keys_(std::move(transport)), shard_(specs), config_(config), id_(next_id()) {
    groups_ = config.fuse ? group_by_spec(specs) : one_group_per_category(specs);
    for (const auto& g : groups_) {
      codec_config c = config.codec;
      const std::size_t dim = specs[g.front()].dim;
      c.shape = {dim};
      values_.emplace_back(Compressed<Pairwise, Codec>(keys_.split(0, keys_.rank()), Codec{std::move(c)}, config.collective), dim);
    }
  }

  int rank() const { return keys_.rank(); }
  int size() const { return keys_.size(); }
  const std::vector<std::vector<std::size_t>>& groups() const { return groups_; }
  const embedding_shard& shard() const { return shard_; }
  const lookup_stats& last_stats() const { return stats_; }

  /// Steps 1–4 for every group. argument_error when the batch does not have one segment per category.
  lookup_plan plan(sparse_batch batch) {
    const auto start = clock::now();
    if (batch.offsets.size() != shard_.categories() + 1) {
      throw argument_error("FusedLookup::plan: batch.offsets has " + std::to_string(batch.offsets.size()) +
                           " entries, expected one per category plus one = " + std::to_string(shard_.categories() + 1));
    }
    check_segment_offsets("FusedLookup::plan (batch)", batch.offsets, batch.ids.size());
    stats_ = {};
    lookup_plan plan;
    plan.ranks = size();
    plan.lookup = id_;
    plan.value_offsets.assign(shard_.categories() + 1, 0);
    for (std::size_t c = 0; c < shard_.categories(); ++c) {
      plan.value_offsets[c + 1] = plan.value_offsets[c] + (batch.offsets[c + 1] - batch.offsets[c]) * shard_.spec(c).dim;
    }
    for (const auto& categories : groups_) plan.groups.push_back(plan_group(batch, categories));
    stats_.seconds = seconds_since(start);
    return plan;
  }

  /// Step 5: out[plan.value_offsets[c] + t * dim, + dim) = the row of token t of category c.
  void forward(const lookup_plan& plan, std::span<float> out) {
    const auto start = clock::now();
    check_plan("forward", plan, "out", out.size());
    stats_ = {};
    for (std::size_t g = 0; g < plan.groups.size(); ++g) {
      const auto& gp = plan.groups[g];
      const std::size_t dim = gp.dim;
      std::vector<float> rows(gp.lookup_of.size() * dim);  // the owner's rows, in the order the keys came
      for (std::size_t j = 0; j < gp.lookup_of.size(); ++j) {
        const std::size_t k = gp.lookup_of[j];
        const auto row = shard_.row(gp.lookup_category[k], gp.lookup_row[k]);
        std::copy(row.begin(), row.end(), rows.begin() + static_cast<std::ptrdiff_t>(j * dim));
      }
      std::vector<float> received(total(gp.send_rows) * dim);
      exchange_values(g, rows, gp.recv_rows, received, gp.send_rows);
      for (std::size_t s = 0; s < gp.categories.size(); ++s) {
        float* dest = out.data() + plan.value_offsets[gp.categories[s]];
        for (std::size_t i = gp.token_offsets[s]; i < gp.token_offsets[s + 1]; ++i, dest += dim) {
          std::copy_n(received.begin() + static_cast<std::ptrdiff_t>(gp.recover[i] * dim), dim, dest);
        }
      }
    }
    stats_.seconds = seconds_since(start);
  }

  /// Step 6: `gradients` in forward's layout; the owners' rows are updated.
  void backward(const lookup_plan& plan, std::span<const float> gradients) {
    const auto start = clock::now();
    check_plan("backward", plan, "gradients", gradients.size());
    stats_ = {};
    for (std::size_t g = 0; g < plan.groups.size(); ++g) {
      const auto& gp = plan.groups[g];
      const std::size_t dim = gp.dim;
      std::vector<float> sums(total(gp.send_rows) * dim, 0.0f);  // per unique key, in send order
      for (std::size_t s = 0; s < gp.categories.size(); ++s) {
        const float* from = gradients.data() + plan.value_offsets[gp.categories[s]];
        for (std::size_t i = gp.token_offsets[s]; i < gp.token_offsets[s + 1]; ++i, from += dim) {
          float* to = sums.data() + gp.recover[i] * dim;
          for (std::size_t j = 0; j < dim; ++j) to[j] += from[j];
        }
      }
      std::vector<float> received(gp.lookup_of.size() * dim);
      exchange_values(g, sums, gp.send_rows, received, gp.recv_rows);
      std::vector<float> per_key(gp.lookup_row.size() * dim, 0.0f);  // summed in rank order
      for (std::size_t j = 0; j < gp.lookup_of.size(); ++j) {
        float* to = per_key.data() + gp.lookup_of[j] * dim;
        for (std::size_t v = 0; v < dim; ++v) to[v] += received[j * dim + v];
      }
      for (std::size_t k = 0; k < gp.lookup_row.size(); ++k) {
        shard_.update(gp.lookup_category[k], gp.lookup_row[k], std::span<const float>(per_key).subspan(k * dim, dim));
      }
    }
    stats_.seconds = seconds_since(start);
  }

 private:
  using clock = std::chrono::steady_clock;
  static constexpr int count_tag = 0x7e01;
  static constexpr int id_tag = 0x7e02;

  static double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }
  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
  }
  static std::size_t total(std::span<const std::size_t> counts) { return checked_sum(counts, "FusedLookup", "row counts"); }

  lookup_plan::group plan_group(sparse_batch batch, const std::vector<std::size_t>& categories) {
    const auto p = static_cast<std::size_t>(size());
    const std::size_t segments = categories.size();
    lookup_plan::group gp;
    gp.dim = shard_.spec(categories.front()).dim;
    gp.categories = categories;

    // Step 1: the fused group, category after category, and its unique keys per category.
    std::vector<std::uint64_t> fused;
    gp.token_offsets.assign(segments + 1, 0);
    for (std::size_t s = 0; s < segments; ++s) {
      const std::size_t c = categories[s];
      fused.insert(fused.end(), batch.ids.begin() + static_cast<std::ptrdiff_t>(batch.offsets[c]),
                   batch.ids.begin() + static_cast<std::ptrdiff_t>(batch.offsets[c + 1]));
      gp.token_offsets[s + 1] = fused.size();
    }
    const segment_unique_result unique = segment_unique(fused, gp.token_offsets);

    // Step 2: send order, and I_r = I_s ∘ I_u.
    const rankwise_route route = rankwise_sort(unique.keys, unique.key_offsets, size());
    gp.recover.resize(fused.size());
    for (std::size_t i = 0; i < fused.size(); ++i) gp.recover[i] = route.position[unique.inverse[i]];

    // Step 3: counts per (destination, segment), then the ids.
    const std::vector<std::size_t> recv_counts = transport::exchange_counts(keys_, route.counts, segments, count_tag);
    gp.send_rows.assign(p, 0);
    gp.recv_rows.assign(p, 0);
    for (std::size_t r = 0; r < p; ++r) {
      for (std::size_t s = 0; s < segments; ++s) {
        gp.send_rows[r] += route.counts[r * segments + s];
        const std::size_t n = recv_counts[r * segments + s];
        if (n > config_.max_keys_from_peer - gp.recv_rows[r]) {
          throw format_error("FusedLookup::plan: rank " + std::to_string(r) + " announced more than " +
                             std::to_string(config_.max_keys_from_peer) +
                             " keys for this rank (lookup_config::max_keys_from_peer)");
        }
        gp.recv_rows[r] += n;
      }
    }
    std::vector<std::uint64_t> received(total(gp.recv_rows));
    transport::alltoallv_exact<std::uint64_t>(keys_, route.sorted_ids, gp.send_rows, received, gp.recv_rows, id_tag);
    stats_.alltoalls += 2;
    stats_.key_bytes_sent += (p - 1) * segments * sizeof(std::uint64_t) +
                             (route.sorted_ids.size() - gp.send_rows[static_cast<std::size_t>(rank())]) * sizeof(std::uint64_t);

    // Step 4: the owner's dedup by (category, id) across the requesting ranks, and the rows.
    key_table lookup(received.size());
    gp.lookup_of.resize(received.size());
    std::size_t j = 0;
    for (std::size_t r = 0; r < p; ++r) {
      for (std::size_t s = 0; s < segments; ++s) {
        for (std::size_t n = 0; n < recv_counts[r * segments + s]; ++n, ++j) {
          if (owner_of(received[j], size()) != rank()) {
            throw format_error("FusedLookup::plan: rank " + std::to_string(r) + " sent id " + std::to_string(received[j]) +
                               " of category " + std::to_string(categories[s]) + ", which rank " +
                               std::to_string(owner_of(received[j], size())) + " owns, not this rank " +
                               std::to_string(rank()));
          }
          const auto [k, inserted] = lookup.insert(static_cast<std::uint32_t>(s), received[j]);
          if (inserted) {
            gp.lookup_category.push_back(categories[s]);
            gp.lookup_row.push_back(shard_.find_or_create(categories[s], received[j]));
          }
          gp.lookup_of[j] = k;
        }
      }
    }
    return gp;
  }

  void check_plan(const char* call, const lookup_plan& plan, const char* buffer, std::size_t size) const {
    if (plan.lookup != id_ || plan.ranks != this->size() || plan.groups.size() != groups_.size()) {
      throw argument_error(std::string("FusedLookup::") + call + ": the plan was not made by this lookup's plan()");
    }
    if (size != plan.values()) {
      throw argument_error(std::string("FusedLookup::") + call + ": " + buffer + " has " + std::to_string(size) +
                           " values, the plan's batch has " + std::to_string(plan.values()) +
                           " (every token's row, category after category)");
    }
  }

  /// One value all-to-all of group g: rows per rank in `send_rows`, into `out` with `recv_rows` per rank.
  void exchange_values(std::size_t g, std::span<const float> in, std::span<const std::size_t> send_rows,
                       std::span<float> out, std::span<const std::size_t> recv_rows) {
    const std::size_t dim = values_[g].second;
    std::vector<std::size_t> send_counts(send_rows.begin(), send_rows.end()), recv_counts(recv_rows.begin(), recv_rows.end());
    for (auto& n : send_counts) n *= dim;
    for (auto& n : recv_counts) n *= dim;
    auto& coll = values_[g].first;
    coll.alltoallv(in, std::span<const std::size_t>(send_counts), out, std::span<const std::size_t>(recv_counts));
    const collective_report& r = coll.last_report();
    stats_.alltoalls += 1;
    stats_.value_bytes_sent += r.bytes_sent;
    stats_.raw_value_bytes_sent += r.raw_bytes_sent;
    stats_.compress_s += r.compress_s;
    stats_.communicate_s += r.communicate_s;
    stats_.decompress_s += r.decompress_s;
  }

  transport::AnyTransport keys_;
  embedding_shard shard_;
  lookup_config config_;
  std::vector<std::vector<std::size_t>> groups_;
  std::vector<std::pair<Compressed<Pairwise, Codec>, std::size_t>> values_;  // per group, with its dim
  lookup_stats stats_;
  std::uint64_t id_;
};

}  // namespace zcoll::embedding
