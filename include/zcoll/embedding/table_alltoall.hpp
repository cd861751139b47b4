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
/// must be this rank's recv segments from b, in the same order: each segment's table and stream size
/// travel first, and a pair that disagrees (another count, another table, a size the codec cannot
/// write) is a format_error on the receiving rank, raised after the exchange completes so that no rank
/// is left waiting. bounds[table] is the table's absolute bound, finite and >= 0, the same on every rank
/// (codecs that take no bound ignore it). A codec is kept per distinct bound while some table has it. Compressed<Pairwise, C>::alltoallv is the same exchange with one stream per
/// destination and one bound for all.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/core/checked_size.hpp"
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
  // The class itself is ruled out before byte_transport is checked: asking whether a TableWiseAlltoall is a
  // transport asks whether it is movable, which would consider this constructor again (clang 14).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, TableWiseAlltoall> && transport::byte_transport<T>)
  TableWiseAlltoall(T transport, codec_config base, unsigned threads = 1)
      : transport_(std::move(transport)), base_(std::move(base)), exec_{.threads = threads} {}

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  const table_alltoall_report& last_report() const { return report_; }

  void exchange(std::span<const float> in, std::span<const table_segment> send_segments, std::span<float> out,
                std::span<const table_segment> recv_segments, std::span<const double> bounds) {
    const auto p = static_cast<std::size_t>(size());
    const auto me = rank();
    check_bounds(bounds);
    check_segments("send_segments", send_segments, "in", in.size(), bounds.size());
    check_segments("recv_segments", recv_segments, "out", out.size(), bounds.size());
    check_own(send_segments, recv_segments);
    report_ = {};
    using clock = std::chrono::steady_clock;
    const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };

    // Compress every other peer's segments into one buffer, peer after peer; keep this rank's own.
    auto start = clock::now();
    std::vector<std::uint64_t> words;  // per segment sent to another rank: its table, its stream's bytes
    std::vector<std::size_t> segments_to(p, 0), words_to(p, 0), bytes_to(p, 0);
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
        bound_codec& c = codec_for(bounds[s.table]);
        const std::size_t offset = send.size();
        send.resize(offset + c.codec.template max_compressed_size<float>(s.values));
        written = zcoll::compress(exec_, c.codec, c.tables.at(s.table), values,
                                      std::span<std::byte>(send).subspan(offset))
                      .size();
        send.resize(offset + written);
        report_.raw_bytes_sent += s.values * sizeof(float);
      }
      words.insert(words.end(), {std::uint64_t{s.table}, std::uint64_t{written}});
      const auto peer = static_cast<std::size_t>(s.peer);
      ++segments_to[peer];
      words_to[peer] += 2;
      bytes_to[peer] += written;
    }
    report_.compress_s = since(start);

    // Segment counts (one word to every peer, always), then the words the peers announced, then the
    // streams. Every receive follows what the peer said it sends, so the messages always match; what
    // disagrees with this rank's recv_segments is held and raised after the exchange, so that no peer
    // waits for a message this rank never posts.
    start = clock::now();
    const std::vector<std::size_t> announced = transport::exchange_counts(transport_, segments_to, 1, count_tag);
    std::vector<std::size_t> words_from(p, 0);
    for (std::size_t r = 0; r < p; ++r) {
      if (r != static_cast<std::size_t>(me)) words_from[r] = checked_add(announced[r], announced[r], "TableWiseAlltoall", "segment words");
    }
    std::vector<std::uint64_t> received_words(total(words_from));
    transport::alltoallv_exact<std::uint64_t>(transport_, words, words_to, received_words, words_from, size_tag);
    std::string fault;
    const std::vector<std::size_t> bytes_from = check_announced(recv_segments, bounds, announced, received_words, fault);
    std::vector<std::byte> received(total(bytes_from));
    transport::alltoallv_exact<std::byte>(transport_, send, bytes_to, received, bytes_from, data_tag);
    report_.communicate_s = since(start);
    report_.bytes_sent = send.size() + (words.size() + p - 1) * sizeof(std::uint64_t);
    if (!fault.empty()) throw format_error("TableWiseAlltoall: " + fault);

    // Decode every segment into place; this rank's own are copied.
    start = clock::now();
    std::size_t out_at = 0, byte_at = 0, own_at = 0;
    std::vector<std::size_t> segment_of(p, 0), word_at(p, 0);
    for (std::size_t r = 0, w = 0; r < p; ++r) {
      word_at[r] = w;
      w += words_from[r];
    }
    for (const table_segment& s : recv_segments) {
      const auto target = out.subspan(out_at, s.values);
      out_at += s.values;
      if (s.peer == me) {
        std::copy_n(own.begin() + static_cast<std::ptrdiff_t>(own_at), s.values, target.begin());
        own_at += s.values;
        continue;
      }
      const auto r = static_cast<std::size_t>(s.peer);
      const std::size_t i = segment_of[r]++;
      const auto b = static_cast<std::size_t>(received_words[word_at[r] + 2 * i + 1]);
      const auto stream = std::span<const std::byte>(received).subspan(byte_at, b);
      byte_at += b;
      if (s.values == 0) continue;
      // A stream of another length than recv_segments says is the pair disagreeing, as above: a
      // format_error, not the decoder's argument_error about the size of `out`.
      const std::uint64_t held = read_stream_header(stream).count;
      if (held != s.values) {
        throw format_error("TableWiseAlltoall: rank " + std::to_string(r) + " sent " + std::to_string(held) + " values as its segment " +
                           std::to_string(i) + " for this rank (table " + std::to_string(s.table) + "), which expects " +
                           std::to_string(s.values));
      }
      codec_for(bounds[s.table]).codec.decompress(exec_, stream, target);
    }
    report_.decompress_s = since(start);
    forget_codecs_except(bounds);
  }

 private:
  static constexpr int count_tag = 0x7e10;
  static constexpr int size_tag = 0x7e11;
  static constexpr int data_tag = 0x7e12;

  static std::size_t total(std::span<const std::size_t> counts) { return checked_sum(counts, "TableWiseAlltoall", "total"); }

  /// The stream bytes to receive from each peer, from what it announced (segment counts, then a table
  /// and a size per segment). Each announced size is checked against this rank's recv_segments: the same
  /// count, the same tables, at most the codec's largest stream for the values. A peer that disagrees
  /// sets `fault` (the first is kept); its bytes are then received up to the largest it could
  /// legitimately send, so a damaged size cannot make this rank allocate more than that (a receive of
  /// another length than the message fails in the transport, on this rank).
  std::vector<std::size_t> check_announced(std::span<const table_segment> recv_segments, std::span<const double> bounds,
                                           std::span<const std::size_t> announced, std::span<const std::uint64_t> words,
                                           std::string& fault) {
    const auto p = static_cast<std::size_t>(size());
    const auto me = static_cast<std::size_t>(rank());
    std::vector<std::size_t> expected(p, 0), bytes_from(p, 0), largest_from(p, 0), word_at(p, 0);
    for (std::size_t r = 0, w = 0; r < p; ++r) {
      word_at[r] = w;
      if (r != me) w += 2 * announced[r];
    }
    const auto hold = [&](const std::string& what) {
      if (fault.empty()) fault = what;
    };
    for (const table_segment& s : recv_segments) {
      const auto r = static_cast<std::size_t>(s.peer);
      if (r == me) continue;
      const std::size_t i = expected[r]++;
      const std::size_t largest = s.values == 0 ? 0 : codec_for(bounds[s.table]).codec.template max_compressed_size<float>(s.values);
      largest_from[r] += largest;
      if (i >= announced[r]) continue;  // the count differs: reported below
      const std::uint64_t table = words[word_at[r] + 2 * i], bytes = words[word_at[r] + 2 * i + 1];
      if (table != s.table || bytes > largest || (s.values > 0 && bytes == 0)) {
        hold("rank " + std::to_string(r) + " announced table " + std::to_string(table) + " with " + std::to_string(bytes) +
             " bytes as its segment " + std::to_string(i) + " for this rank, which expects table " + std::to_string(s.table) +
             " (" + std::to_string(s.values) + " values, between 1 and " + std::to_string(largest) + " bytes)");
      }
      bytes_from[r] += static_cast<std::size_t>(std::min<std::uint64_t>(bytes, largest));
    }
    for (std::size_t r = 0; r < p; ++r) {
      if (r == me || announced[r] == expected[r]) continue;
      hold("rank " + std::to_string(r) + " announced " + std::to_string(announced[r]) + " segments for this rank, which expects " +
           std::to_string(expected[r]));
      // Its words cannot be matched to segments: take the bytes it announced, up to the largest legitimate.
      std::uint64_t bytes = 0;
      for (std::size_t i = 0; i < announced[r]; ++i) {
        bytes = std::min<std::uint64_t>(bytes + std::min<std::uint64_t>(words[word_at[r] + 2 * i + 1], largest_from[r]),
                                        largest_from[r]);
      }
      bytes_from[r] = static_cast<std::size_t>(bytes);
    }
    return bytes_from;
  }

  void check_bounds(std::span<const double> bounds) const {
    for (std::size_t t = 0; t < bounds.size(); ++t) {
      if (!(bounds[t] >= 0.0 && std::isfinite(bounds[t]))) {
        throw argument_error("TableWiseAlltoall::exchange: bounds[" + std::to_string(t) + "] = " + std::to_string(bounds[t]) +
                             " must be finite and >= 0");
      }
    }
  }

  /// This rank's segments to itself and from itself must be the same list (tables and lengths, in order).
  void check_own(std::span<const table_segment> send_segments, std::span<const table_segment> recv_segments) const {
    std::vector<std::pair<std::uint32_t, std::size_t>> sent, kept;
    for (const table_segment& s : send_segments) {
      if (s.peer == rank()) sent.emplace_back(s.table, s.values);
    }
    for (const table_segment& s : recv_segments) {
      if (s.peer == rank()) kept.emplace_back(s.table, s.values);
    }
    if (sent != kept) {
      throw argument_error("TableWiseAlltoall::exchange: the send_segments to this rank itself (" + std::to_string(sent.size()) +
                           ") and its recv_segments from itself (" + std::to_string(kept.size()) +
                           ") must name the same tables with the same lengths, in the same order");
    }
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
      sum = checked_add(sum, s.values, "TableWiseAlltoall::exchange", name);
    }
    if (sum != values) {
      throw argument_error(std::string("TableWiseAlltoall::exchange: ") + buffer + " has " + std::to_string(values) +
                           " values, " + name + " hold " + std::to_string(sum));
    }
  }

  /// A codec at one bound and its state per table (a Hybrid's choices).
  struct bound_codec {
    Codec codec;
    codec_state<Codec> tables;
  };

  /// One codec per distinct bound, kept with its tables' state while the bound holds (a new bound, as a
  /// decaying schedule gives, chooses for the tables again: the choice depends on it).
  bound_codec& codec_for(double bound) {
    auto found = codecs_.find(bound);
    if (found == codecs_.end()) {
      codec_config c = base_;
      c.error_bound = absolute(bound);
      found = codecs_.emplace(bound, bound_codec{Codec(c), {}}).first;
    }
    return found->second;
  }

  /// Drops the codecs of bounds no table has any more (a decaying schedule makes new ones every stair).
  void forget_codecs_except(std::span<const double> bounds) {
    for (auto it = codecs_.begin(); it != codecs_.end();) {
      it = std::find(bounds.begin(), bounds.end(), it->first) == bounds.end() ? codecs_.erase(it) : std::next(it);
    }
  }

  transport::AnyTransport transport_;
  codec_config base_;
  exec::Host exec_;
  std::map<double, bound_codec> codecs_;
  table_alltoall_report report_;
};

}  // namespace zcoll::embedding
