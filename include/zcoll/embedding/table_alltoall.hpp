#pragma once
/// TableWiseAlltoall: the DLRM compression paper's compressed embedding all-to-all (Feng et al., SC24,
/// §III-B and §III-E): every destination's block is made of one segment per table (the pooled embeddings
/// of the tables this rank owns, for the samples of that destination), and each segment is compressed on
/// its own, with its table's error bound and, for a Hybrid codec, its table's encoder (Algorithm 2). All
/// streams of a destination are written one after another into one send buffer (the paper's multi-chunk
/// compression into the send buffer), their sizes travel first, then each destination's bytes travel in one
/// message. A rank's own segments are copied, never compressed.
///
///     zcoll::embedding::TableWiseAlltoall<zcoll::EmbeddingHybrid> a2a{t, {.chunk_values = 4096, .shape = {dim}}};
///     a2a.exchange(in, send_segments, out, recv_segments, bounds);
///
/// A segment is {peer, table, values}: `in` holds the send segments one after another and `out` receives
/// the recv segments likewise, both in non-decreasing peer order. Rank b's send segments for this rank
/// must be this rank's recv segments from b, in the same order (a pair that disagrees is a transport or
/// format error). bounds[table] is the table's absolute bound, the same on every rank (codecs that take
/// no bound ignore it). Compressed<Pairwise, C>::alltoallv is the same exchange with one stream per
/// destination and one bound for all.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/transport/any.hpp"
#include "zcoll/transport/exchange.hpp"

namespace zcoll::embedding {

/// What the last exchange did on this rank.
struct table_alltoall_report {
  std::size_t bytes_sent = 0;      ///< streams and size words this rank put on the wire
  std::size_t raw_bytes_sent = 0;  ///< the values it sent, uncompressed
  double compress_s = 0, communicate_s = 0, decompress_s = 0;
  double ratio() const { return bytes_sent == 0 ? 1.0 : static_cast<double>(raw_bytes_sent) / static_cast<double>(bytes_sent); }
};

/// A run of values of one table, to or from one peer.
struct table_segment {
  int peer = 0;
  std::uint32_t table = 0;
  std::size_t values = 0;
};

template <codec Codec>
class TableWiseAlltoall {
 public:
  /// `base` is every table's codec configuration but for the bound (set per table); `threads` host threads.
  template <transport::byte_transport T>
  TableWiseAlltoall(T transport, codec_config base, unsigned threads = 1)
      : transport_(std::move(transport)), base_(std::move(base)), exec_{.threads = threads} {}

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  const table_alltoall_report& last_report() const { return report_; }

  void exchange(std::span<const float> in, std::span<const table_segment> send_segments, std::span<float> out,
                std::span<const table_segment> recv_segments, std::span<const double> bounds) {
    const auto p = static_cast<std::size_t>(size());
    const auto me = rank();
    check_segments("send_segments", send_segments, "in", in.size(), bounds.size());
    check_segments("recv_segments", recv_segments, "out", out.size(), bounds.size());
    report_ = {};
    using clock = std::chrono::steady_clock;
    const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };

    // Compress every other peer's segments into one buffer, peer after peer; keep this rank's own.
    auto start = clock::now();
    std::vector<std::uint64_t> stream_bytes;  // one per segment sent to another rank
    std::vector<std::size_t> sizes_to(p, 0), bytes_to(p, 0);
    std::vector<std::byte> send;
    std::vector<float> own;
    std::size_t at = 0;
    for (const table_segment& s : send_segments) {
      const auto values = in.subspan(at, s.values);
      at += s.values;
      if (s.peer == me) {
        own.insert(own.end(), values.begin(), values.end());
        continue;
      }
      std::size_t written = 0;
      if (s.values > 0) {
        const Codec& c = codec_for(bounds[s.table]);
        const std::size_t offset = send.size();
        send.resize(offset + c.template max_compressed_size<float>(s.values));
        written = compress(c, values, std::span<std::byte>(send).subspan(offset), s.table).size();
        send.resize(offset + written);
        report_.raw_bytes_sent += s.values * sizeof(float);
      }
      stream_bytes.push_back(written);
      ++sizes_to[static_cast<std::size_t>(s.peer)];
      bytes_to[static_cast<std::size_t>(s.peer)] += written;
    }
    report_.compress_s = since(start);

    // Sizes (one word per segment), then the streams.
    start = clock::now();
    std::vector<std::size_t> sizes_from(p, 0);
    for (const table_segment& s : recv_segments) {
      if (s.peer != me) ++sizes_from[static_cast<std::size_t>(s.peer)];
    }
    std::vector<std::uint64_t> recv_bytes(recv_segments.size() - count_from(recv_segments, me));
    transport::alltoallv_exact<std::uint64_t>(transport_, stream_bytes, sizes_to, recv_bytes, sizes_from, size_tag);
    std::vector<std::size_t> bytes_from(p, 0);
    std::size_t word = 0;
    for (const table_segment& s : recv_segments) {
      if (s.peer == me) continue;
      const std::uint64_t b = recv_bytes[word++];
      const std::size_t largest = s.values == 0 ? 0 : codec_for(bounds[s.table]).template max_compressed_size<float>(s.values);
      if (b > largest || (s.values > 0 && b == 0)) {
        throw format_error("TableWiseAlltoall: rank " + std::to_string(s.peer) + " announced " + std::to_string(b) +
                           " bytes for table " + std::to_string(s.table) + " (" + std::to_string(s.values) +
                           " values); its codec writes between 1 and " + std::to_string(largest));
      }
      bytes_from[static_cast<std::size_t>(s.peer)] += static_cast<std::size_t>(b);
    }
    std::vector<std::byte> received(total(bytes_from));
    transport::alltoallv_exact<std::byte>(transport_, send, bytes_to, received, bytes_from, data_tag);
    report_.communicate_s = since(start);
    report_.bytes_sent = send.size() + stream_bytes.size() * sizeof(std::uint64_t);

    // Decode every segment into place; this rank's own are copied.
    start = clock::now();
    std::size_t out_at = 0, byte_at = 0, own_at = 0;
    word = 0;
    for (const table_segment& s : recv_segments) {
      const auto target = out.subspan(out_at, s.values);
      out_at += s.values;
      if (s.peer == me) {
        if (own_at + s.values > own.size()) {
          throw argument_error("TableWiseAlltoall::exchange: this rank's recv_segments from itself hold more values than its "
                               "send_segments to itself (" + std::to_string(own.size()) + ")");
        }
        std::copy_n(own.begin() + static_cast<std::ptrdiff_t>(own_at), s.values, target.begin());
        own_at += s.values;
        continue;
      }
      const auto b = static_cast<std::size_t>(recv_bytes[word++]);
      if (s.values > 0) codec_for(bounds[s.table]).decompress(exec_, std::span<const std::byte>(received).subspan(byte_at, b), target);
      byte_at += b;
    }
    report_.decompress_s = since(start);
  }

 private:
  static constexpr int size_tag = 0x7e11;
  static constexpr int data_tag = 0x7e12;

  static std::size_t total(std::span<const std::size_t> counts) {
    std::size_t n = 0;
    for (std::size_t c : counts) n += c;
    return n;
  }

  static std::size_t count_from(std::span<const table_segment> segments, int peer) {
    std::size_t n = 0;
    for (const table_segment& s : segments) n += s.peer == peer ? 1 : 0;
    return n;
  }

  void check_segments(const char* name, std::span<const table_segment> segments, const char* buffer, std::size_t values,
                      std::size_t tables) const {
    std::size_t sum = 0;
    int previous = 0;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const table_segment& s = segments[i];
      const std::string where = std::string("TableWiseAlltoall::exchange: ") + name + "[" + std::to_string(i) + "]";
      if (s.peer < previous || s.peer >= size()) {
        throw argument_error(where + ".peer " + std::to_string(s.peer) + " must be in [" + std::to_string(previous) + ", " +
                             std::to_string(size()) + "): peers in non-decreasing order");
      }
      if (s.table >= tables) {
        throw argument_error(where + ".table " + std::to_string(s.table) + " has no bound (bounds has " +
                             std::to_string(tables) + " entries)");
      }
      previous = s.peer;
      sum += s.values;
    }
    if (sum != values) {
      throw argument_error(std::string("TableWiseAlltoall::exchange: ") + buffer + " has " + std::to_string(values) +
                           " values, " + name + " hold " + std::to_string(sum));
    }
  }

  /// One codec per distinct bound, kept: a Hybrid codec keeps its per-table choices while the bound holds
  /// (a new bound, as a decaying schedule gives, measures the tables again: the choice depends on it).
  const Codec& codec_for(double bound) {
    auto found = codecs_.find(bound);
    if (found == codecs_.end()) {
      codec_config c = base_;
      c.error_bound = absolute(bound);
      found = codecs_.emplace(bound, Codec(c)).first;
    }
    return found->second;
  }

  std::span<std::byte> compress(const Codec& c, std::span<const float> values, std::span<std::byte> out, std::uint64_t table) {
    if constexpr (requires { c.compress(exec_, values, out, table); }) {
      return c.compress(exec_, values, out, table);
    } else {
      return c.compress(exec_, values, out);
    }
  }

  transport::AnyTransport transport_;
  codec_config base_;
  exec::Host exec_;
  std::map<double, Codec> codecs_;
  table_alltoall_report report_;
};

}  // namespace zcoll::embedding
