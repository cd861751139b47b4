#pragma once
// How the DLRM example's three collectives travel: the forward all-to-all of pooled embeddings, the
// backward all-to-all of their gradients, and the allreduce of the dense gradients. Each is an object
// chosen at run time by configuration name (configurations.hpp); each wraps a zcoll collective whose schedule and
// codec are fixed at compile time, and records what it moved and how long it took.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "zcoll/adapt/adaptive_config.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/embedding/table_alltoall.hpp"
#include "zcoll/schedule/pairwise.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/exchange.hpp"

namespace dlrm {

using zcoll::embedding::table_segment;

/// Bytes and seconds of one kind of collective, summed over the calls of a run on one rank.
struct traffic {
  std::size_t calls = 0;
  std::size_t bytes = 0;      ///< on the wire, size words included
  std::size_t raw_bytes = 0;  ///< the same values uncompressed
  double compress_s = 0, communicate_s = 0, total_s = 0;  ///< compress_s includes decompression

  void add(std::size_t wire, std::size_t raw, double compress, double communicate, double total) {
    ++calls;
    bytes += wire;
    raw_bytes += raw;
    compress_s += compress;
    communicate_s += communicate;
    total_s += total;
  }
  void add(const zcoll::collective_report& r) {
    add(r.bytes_sent, r.raw_bytes_sent, r.compress_s + r.decompress_s, r.communicate_s, r.total_s);
  }
  double ratio() const { return bytes == 0 ? 1.0 : static_cast<double>(raw_bytes) / static_cast<double>(bytes); }
};

/// The embedding all-to-alls. Segments as TableWiseAlltoall's: {peer, table, values}, peers in order.
class embedding_exchange {
 public:
  virtual ~embedding_exchange() = default;
  virtual void forward(std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
                       std::span<const table_segment> recv, std::size_t step) = 0;
  virtual void backward(std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
                        std::span<const table_segment> recv, std::size_t step) = 0;
  traffic forward_traffic, backward_traffic;
};

/// The dense-gradient allreduce (a sum).
class gradient_allreduce {
 public:
  virtual ~gradient_allreduce() = default;
  virtual void allreduce(std::span<float> gradients) = 0;
  traffic allreduce_traffic;
};

/// Every rank's vector of doubles summed element-wise, in rank order (exact: losses, metrics, traffic).
inline std::vector<double> sum_over_ranks(zcoll::transport::AnyTransport& t, std::span<const double> mine, int tag) {
  const auto p = static_cast<std::size_t>(t.size());
  std::vector<double> all(mine.size() * p), sum(mine.size(), 0.0);
  zcoll::transport::allgather_exact<double>(t, mine, all, tag);
  for (std::size_t r = 0; r < p; ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) sum[i] += all[r * mine.size() + i];
  }
  return sum;
}

/// Values per peer of a segment list.
inline std::vector<std::size_t> per_peer(std::span<const table_segment> segments, int ranks) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), 0);
  for (const auto& s : segments) counts[static_cast<std::size_t>(s.peer)] += s.values;
  return counts;
}

/// Both all-to-alls through Compressed<Pairwise, C>::alltoallv, one stream per peer, rows of `dim`
/// values (row-wise codecs quantize each pooled embedding on its own).
template <zcoll::codec Forward, zcoll::codec Backward>
class pairwise_exchange final : public embedding_exchange {
 public:
  pairwise_exchange(zcoll::transport::AnyTransport& t, std::size_t dim)
      : forward_(t.split(0, t.rank()), Forward{{.shape = {dim}}}), backward_(t.split(0, t.rank()), Backward{{.shape = {dim}}}) {}

  void forward(std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
               std::span<const table_segment> recv, std::size_t) override {
    move(forward_, in, send, out, recv, forward_traffic);
  }
  void backward(std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
                std::span<const table_segment> recv, std::size_t) override {
    move(backward_, in, send, out, recv, backward_traffic);
  }

 private:
  template <class Collective>
  static void move(Collective& coll, std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
                   std::span<const table_segment> recv, traffic& record) {
    const auto send_counts = per_peer(send, coll.size()), recv_counts = per_peer(recv, coll.size());
    coll.alltoallv(in, std::span<const std::size_t>(send_counts), out, std::span<const std::size_t>(recv_counts));
    record.add(coll.last_report());
  }

  zcoll::Compressed<zcoll::Pairwise, Forward> forward_;
  zcoll::Compressed<zcoll::Pairwise, Backward> backward_;
};

/// The DLRM compression paper's forward all-to-all: TableWiseAlltoall<C> with each table's bound from
/// an adaptive configuration (table-wise bounds and the iteration-wise schedule); the backward all-to-all
/// exact, as in the paper, which compresses the embedding lookups.
template <zcoll::codec C>
class tablewise_exchange final : public embedding_exchange {
 public:
  tablewise_exchange(zcoll::transport::AnyTransport& t, std::size_t dim, zcoll::adapt::adaptive_config config, std::size_t tables)
      : forward_(t.split(0, t.rank()), zcoll::codec_config{.shape = {dim}}),
        backward_(t.split(0, t.rank())),
        config_(std::move(config)),
        tables_(tables) {}

  void forward(std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
               std::span<const table_segment> recv, std::size_t step) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> bounds(tables_);
    for (std::size_t t = 0; t < tables_; ++t) bounds[t] = config_.error_bound(t, step);
    forward_.exchange(in, send, out, recv, bounds);
    const auto& r = forward_.last_report();
    forward_traffic.add(r.bytes_sent, r.raw_bytes_sent, r.compress_s + r.decompress_s, r.communicate_s,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  void backward(std::span<const float> in, std::span<const table_segment> send, std::span<float> out,
                std::span<const table_segment> recv, std::size_t) override {
    const auto send_counts = per_peer(send, backward_.size()), recv_counts = per_peer(recv, backward_.size());
    backward_.alltoallv(in, std::span<const std::size_t>(send_counts), out, std::span<const std::size_t>(recv_counts));
    backward_traffic.add(backward_.last_report());
  }

 private:
  zcoll::embedding::TableWiseAlltoall<C> forward_;
  zcoll::Compressed<zcoll::Pairwise, zcoll::Identity> backward_;
  zcoll::adapt::adaptive_config config_;
  std::size_t tables_;
};

/// The dense gradients through Compressed<S, C>::allreduce.
template <zcoll::schedule::schedule S, zcoll::codec C>
class compressed_allreduce final : public gradient_allreduce {
 public:
  /// Over a codec value with every setting of its own (the row length of a row-wise codec, TopK's sparsity).
  compressed_allreduce(zcoll::transport::AnyTransport& t, C codec) : coll_(t.split(0, t.rank()), std::move(codec)) {}

  void allreduce(std::span<float> gradients) override {
    coll_.allreduce(gradients, zcoll::op::sum);
    allreduce_traffic.add(coll_.last_report());
  }

 private:
  zcoll::Compressed<S, C> coll_;
};

}  // namespace dlrm
