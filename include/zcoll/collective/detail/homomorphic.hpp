#pragma once
/// Homomorphic reduction (hZCCL): sums on compressed streams. Each rank compresses each piece of its
/// input once, when it first sends it; a hop that reduces adds the incoming stream to the one it holds
/// (zcoll::add, no decompression), a hop that replaces keeps the incoming stream as it is, and every rank
/// decompresses each piece once at the end. A piece is a pipeline segment of a schedule block (the
/// segments of PIPE-fZ-light), so the same schedules, segments and wire format serve both engines.
///
/// A rank keeps its own values exact beside the stream of the others' contributions, and sends
/// own ⊕ others: its own values are never quantized in its own result, as in the decompress-reduce-compress
/// chain, so the bound is never worse than that chain's for the same schedule (docs/collectives.md):
/// every other contribution in a result was quantized exactly once.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/add.hpp"
#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/reduction.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/core/reduce_op.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"

namespace zcoll::detail {

/// One piece of a homomorphic reduction: the values [lo, lo + count) of the call's buffer as this rank
/// holds them, its own values (exact, while `own`) plus the stream of the other contributions.
struct stream_piece {
  std::size_t lo = 0, count = 0;
  bool own = true;             // this rank's own values count, exactly, beside `others`
  bool own_compressed = false;  // own_stream holds them compressed (once, when first sent)
  stream_buffer own_stream;
  hop_error own_error{};       // what that compression carries
  stream_buffer others;        // the sum of the other contributions received (empty: none yet)
  hop_error error{};           // what `others` carries
  int from = -1;               // the rank `others` last came from (named by a decoding error)
  bool finished = false;       // its result is written already (decoded on arrival: see homomorphic_hop)
};

/// Schedule block b is table block b (a reduce_scatter, an allgather, a direct allreduce).
struct same_block {
  int operator()(int b) const { return b; }
};

/// Block k of a gather rooted at `root` is rank (root + k) mod ranks's block.
struct rooted_block {
  int root = 0, ranks = 1;
  int operator()(int k) const { return (root + k) % ranks; }
};

/// The values of the pieces `which`.
inline std::size_t values_of(const std::vector<stream_piece>& pieces, const std::vector<std::size_t>& which) {
  std::size_t total = 0;
  for (const std::size_t k : which) total += pieces[k].count;
  return total;
}

/// The pieces of a call, block by block: block b of the table (a range of the call's values) is cut into
/// pipeline segments, each a piece. (Named function objects here and below, not lambdas: a coroutine
/// frame holding a lambda's type trips GCC's -Wsubobject-linkage in files with anonymous namespaces.)
struct piece_table {
  std::vector<stream_piece> pieces;
  std::vector<std::vector<std::size_t>> of_block;

  /// `blocks` blocks, block b holding the values range(b) = {first, count}.
  template <class Range>
  piece_table(int blocks, const Range& range, std::size_t pipeline_values, std::size_t row_length)
      : of_block(static_cast<std::size_t>(blocks)) {
    for (int b = 0; b < blocks; ++b) {
      const auto [lo, count] = range(b);
      for (const hop_segment& segment : split_segments(lo, count, pipeline_values, row_length)) {
        of_block[static_cast<std::size_t>(b)].push_back(pieces.size());
        stream_piece& piece = pieces.emplace_back();
        piece.lo = segment.lo;
        piece.count = segment.count;
      }
    }
  }

  /// The pieces of an exchange's blocks, schedule block b being table block block_of(b), in the order
  /// both sides send and receive them.
  template <class BlockOf>
  std::vector<std::size_t> pieces_of(const schedule::exchange& x, const BlockOf& block_of) const {
    std::vector<std::size_t> which;
    for (int b = x.first_block; b < x.first_block + x.block_count; ++b) {
      const auto& block = of_block[static_cast<std::size_t>(block_of(b))];
      which.insert(which.end(), block.begin(), block.end());
    }
    return which;
  }
};

/// Compresses piece `p`'s own values into p.own_stream. A codec that refuses them (argument_error) is
/// a fault held in verify mode: an empty stream goes out, which its receivers find damaged.
template <codec Codec, floating_value T>
void compress_own(call_context& call, const Codec& hops, stream_piece& p, std::span<const T> values) {
  const auto start = clock::now();
  p.own_stream = call.scratch().take_stream(hops.template max_compressed_size<T>(p.count));
  const bool compressed = call.guarded(-1, [&] {
    p.own_stream.resize(hops.template max_compressed_size<T>(p.count));
    const auto written = hops.compress(call.exec(), values.subspan(p.lo, p.count), std::span<std::byte>(p.own_stream));
    p.own_stream.resize(written.size());
  });
  if (!compressed) p.own_stream.clear();
  p.own_error = hop_error{}.after_compression(compressed ? read_stream_header(p.own_stream).error_bound : 0.0);
  p.own_compressed = true;
  call.report.compress_s += seconds_since(start);
}

/// The sum of streams a and b of `count` values, made by `pieces_work`, into `sum`. Streams that do not
/// add (argument_error or format_error, whatever add calls them) are the fault of `from`, the rank one of
/// them came from: a format_error naming it (held in verify mode, when `sum` gets `fallback` and the
/// schedule goes on). Any other error (a device's) is this rank's own and goes on up as it is.
template <codec Codec, floating_value T, class PieceWork>
void add_streams(call_context& call, PieceWork& pieces_work, const Codec& hops, std::span<const std::byte> a,
                 std::span<const std::byte> b, std::size_t count, int from, stream_buffer& sum, std::span<const std::byte> fallback) {
  try {
    sum.resize(hops.template max_compressed_size<T>(count));
    sum.resize(pieces_work.template add<T>(call, hops, a, b, std::span<std::byte>(sum), count).size());
  } catch (const error& e) {
    if (dynamic_cast<const argument_error*>(&e) == nullptr && dynamic_cast<const format_error*>(&e) == nullptr) throw;
    call.fail(format_error("block from rank " + std::to_string(from) + ": " + call_context::without_prefix(e.what())), from);
    sum.assign(fallback.begin(), fallback.end());
  }
}

/// The stream piece `p` sends: its own values ⊕ the others' (own compressed first if not yet), or the
/// others' stream when it no longer holds own values; `scratch` holds a sum made for the send, by
/// `pieces_work` (host_piece_work: zcoll::add on the host; a staging space's: in the space).
template <codec Codec, floating_value T, class PieceWork>
std::span<const std::byte> outgoing_stream(call_context& call, PieceWork& pieces_work, const Codec& hops, stream_piece& p,
                                           std::span<const T> values, stream_buffer& scratch, hop_error& carried) {
  if (!p.own) {
    carried = p.error;
    return p.others;
  }
  if (!p.own_compressed) compress_own<Codec, T>(call, hops, p, values);
  if (p.others.empty()) {
    carried = p.own_error;
    return p.own_stream;
  }
  carried = p.error.template combined<op::sum_t>(p.own_error);
  const auto start = clock::now();
  add_streams<Codec, T>(call, pieces_work, hops, p.own_stream, p.others, p.count, p.from, scratch, p.own_stream);  // `others` came from p.from
  call.report.reduce_s += seconds_since(start);
  return scratch;
}

/// A stream from `peer` kept without adding (the first contribution, or a finished sum) must be one this
/// rank can add to and decompress: the collective's codec, T, `count` values (format_error otherwise,
/// held in verify mode). Its chunks are checked where they are added or decoded.
template <codec Codec, floating_value T>
void check_incoming(call_context& call, std::span<const std::byte> stream, std::size_t count, int peer) {
  call.guarded(peer, [&] {
    try {
      const stream_header h = read_stream_header(stream);
      if (!(h.codec == Codec::id) || h.type != value_type_of<T> || h.count != count) {
        throw format_error("a stream of " + std::to_string(h.count) + " " + to_string(h.type) + " values by codec " +
                           to_string(h.codec) + ", where " + std::to_string(count) + " " + to_string(value_type_of<T>) +
                           " values by " + Codec::name() + " were expected");
      }
    } catch (const error& e) {
      throw format_error("block from rank " + std::to_string(peer) + ": " + call_context::without_prefix(e.what()));
    }
  });
}

/// One hop of a homomorphic reduction: every piece of the send range goes out as a stream (hop headers
/// and bytes as reduction.hpp's pipelined_hop sends them), every piece of the receive range is added to
/// the one held (or replaces it); what was sent changes only after its send has completed. The streams
/// and their sums are on the host; `pieces_work` (host_piece_work, or a staging space's) compresses the
/// own values a hop sends where they are, and adds the streams.
///
/// A stream that replaces the one held holds every contribution: it is the piece's result, decoded into
/// `result` (the call's output, value 0 at its start; empty on a rank that keeps no result, or that
/// finishes every piece at the end) as soon as it arrives, while the rest of the hop is still on the
/// wire, and forwarded unchanged in later hops.
template <codec Codec, floating_value T, class PieceWork, class BlockOf>
task<> homomorphic_hop(call_context& call, block_codec<Codec>& coder, PieceWork& pieces_work, const Codec& hops,
                       schedule::step st, piece_table& table, BlockOf block_of, std::span<const T> values, std::span<T> result) {
  call_scratch& s = call.scratch();
  std::vector<stream_piece>& pieces = table.pieces;
  const std::vector<std::size_t> in = st.recv.active() ? table.pieces_of(st.recv, block_of) : std::vector<std::size_t>{};
  const std::vector<std::size_t> out = st.send.active() ? table.pieces_of(st.send, block_of) : std::vector<std::size_t>{};
  std::vector<hop_segment> incoming(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) incoming[k].count = pieces[in[k]].count;
  s.in_headers.assign(in.size(), wire::hop_header{});
  s.in_bytes.resize(std::max(s.in_bytes.size(), in.size()));
  // A stream that is kept, not reduced, is forwarded by swapping its receive buffer into the piece:
  // each receive buffer gets a pool buffer's room, so that buffers move between the two without growing.
  for (std::size_t k = 0; k < in.size(); ++k) s.in_bytes[k].reserve(hops.template max_compressed_size<T>(pieces[in[k]].count));
  auto start = clock::now();
  for (std::size_t k = 0; k < in.size(); ++k) {
    incoming[k].header = call.transport().irecv_async(st.recv.peer, wire::size_tag, std::as_writable_bytes(std::span(&s.in_headers[k], 1)));
  }
  call.report.communicate_s += seconds_since(start);

  const std::size_t in_values = values_of(pieces, in);
  std::size_t posted = 0;  // incoming segments whose bytes' receive is posted
  std::vector<stream_buffer> sums(out.size());  // sums made for sending, alive while in flight
  for (std::size_t k = 0; k < out.size(); ++k) sums[k] = s.take_stream(hops.template max_compressed_size<T>(pieces[out[k]].count));
  std::vector<hop_segment> sent(out.size());
  s.out_headers.assign(out.size(), wire::hop_header{});
  const std::size_t out_values = values_of(pieces, out);
  pieces_work.template compress_own_pieces<T>(call, hops, pieces, out, values);
  for (std::size_t k = 0; k < out.size(); ++k) {
    stream_piece& p = pieces[out[k]];
    hop_error carried{};
    const std::span<const std::byte> stream = outgoing_stream<Codec, T>(call, pieces_work, hops, p, values, sums[k], carried);
    s.out_headers[k] = {stream.size(), carried.bound, carried.compressions, p.count, out_values};
    start = clock::now();
    sent[k].header = call.transport().isend_async(st.send.peer, wire::size_tag, std::as_bytes(std::span(&s.out_headers[k], 1)));
    sent[k].data = call.transport().isend_async(st.send.peer, wire::data_tag, stream);
    call.report.bytes_sent += sizeof(wire::hop_header) + stream.size();
    call.report.raw_bytes_sent += p.count * sizeof(T);
    posted = post_arrived<Codec, T>(call, coder, st.recv.peer, incoming, posted, in_values);
    call.report.communicate_s += seconds_since(start);
  }

  // Received pieces, reduced or kept, wait in `next` until the sends have completed.
  std::vector<stream_buffer> next(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) next[k] = s.take_stream(hops.template max_compressed_size<T>(pieces[in[k]].count));
  std::vector<hop_error> next_error(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    start = clock::now();
    posted = post_arrived<Codec, T>(call, coder, st.recv.peer, incoming, posted, in_values);
    if (posted == k) {
      co_await call.until_complete(incoming[k].header, st.recv.peer);
      post_segment_receive<Codec, T>(call, coder, st.recv.peer, incoming, posted++, in_values);
    }
    co_await call.until_complete(incoming[k].data, st.recv.peer);
    posted = post_arrived<Codec, T>(call, coder, st.recv.peer, incoming, posted, in_values);
    call.report.communicate_s += seconds_since(start);
    const wire::hop_header& h = s.in_headers[k];
    const hop_error theirs{h.error_bound, h.compressions};
    const auto bytes = std::span<const std::byte>(s.in_bytes[k]).first(incoming[k].received_bytes);
    stream_piece& p = pieces[in[k]];
    if (!st.recv.reduce || p.others.empty()) {
      check_incoming<Codec, T>(call, bytes, p.count, st.recv.peer);
      next[k].swap(s.in_bytes[k]);  // the received buffer itself, not a copy; `bytes` still views it
      next_error[k] = theirs;
      if (!st.recv.reduce && !result.empty()) {  // finished: its own values are no longer read
        coder.template decode<T>(call, hops, bytes, result.subspan(p.lo, p.count), st.recv.peer);
        p.finished = true;
      }
      continue;
    }
    start = clock::now();
    next_error[k] = p.error.template combined<op::sum_t>(theirs);
    add_streams<Codec, T>(call, pieces_work, hops, p.others, bytes, p.count, st.recv.peer, next[k], p.others);
    call.report.reduce_s += seconds_since(start);
  }
  start = clock::now();
  for (std::size_t k = 0; k < out.size(); ++k) {
    co_await call.until_complete(sent[k].header, st.send.peer);
    co_await call.until_complete(sent[k].data, st.send.peer);
  }
  call.report.communicate_s += seconds_since(start);
  for (auto& sum : sums) s.give_back(std::move(sum));
  for (std::size_t k = 0; k < in.size(); ++k) {
    stream_piece& p = pieces[in[k]];
    p.others.swap(next[k]);
    s.give_back(std::move(next[k]));
    p.error = next_error[k];
    p.from = st.recv.peer;
    if (!st.recv.reduce) p.own = false;  // the incoming stream holds every contribution, this rank's too
  }
}

/// Posts the receive of every segment's bytes whose header has arrived, from `posted` on; returns how
/// many are posted. Posting early lets a peer's bytes flow while this rank adds (MPI moves a large message
/// only once its receive is posted).
template <codec Codec, floating_value T>
std::size_t post_arrived(call_context& call, block_codec<Codec>& coder, int peer, std::vector<hop_segment>& incoming,
                         std::size_t posted, std::size_t hop_values) {
  while (posted < incoming.size() && call.test_held(incoming[posted].header, peer)) {
    post_segment_receive<Codec, T>(call, coder, peer, incoming, posted++, hop_values);
  }
  return posted;
}

/// Runs S's rounds of `kind` over the table's pieces, schedule block b being table block block_of(b).
/// Finished pieces are decoded into `result` on arrival (homomorphic_hop).
template <class S, codec Codec, floating_value T, class PieceWork, class BlockOf = same_block>
task<> homomorphic_rounds(call_context& call, block_codec<Codec>& coder, PieceWork& pieces_work, schedule::collective_op kind,
                          const Codec& hops, piece_table& table, std::span<const T> values, std::span<T> result,
                          BlockOf block_of = {}, int root = 0) {
  for (int r = 0; r < S::rounds(kind, call.size()); ++r) {
    const schedule::step st = S::at(kind, call.size(), call.rank(), r, root);
    co_await homomorphic_hop<Codec, T>(call, coder, pieces_work, hops, st, table, block_of, values, result);
  }
}

/// Gives every piece's stream buffers back to the call's scratch, for the next call to reuse.
inline void recycle_pieces(call_context& call, piece_table& table) {
  for (stream_piece& p : table.pieces) {
    call.scratch().give_back(std::move(p.own_stream));
    call.scratch().give_back(std::move(p.others));
  }
}

/// Writes piece `p`'s result (its own values exact plus the others' decompressed, or the others' alone)
/// into `out`, whose first value is value `base` of the call's buffer; returns the error it carries.
template <codec Codec, floating_value T>
hop_error finish_piece(call_context& call, block_codec<Codec>& coder, const Codec& hops, const stream_piece& p,
                       std::span<const T> values, std::span<T> out, std::size_t base = 0) {
  if (p.finished) return p.error;  // decoded on arrival
  const std::span<T> target = out.subspan(p.lo - base, p.count);
  if (p.others.empty()) {
    if (target.data() != values.data() + p.lo) std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(p.lo), p.count, target.begin());
    return {};
  }
  if (!p.own) {
    coder.template decode<T>(call, hops, p.others, target, p.from);
    return p.error;
  }
  auto& decoded = call.scratch().incoming<T>();
  decoded.resize(p.count);
  coder.template decode<T>(call, hops, p.others, std::span<T>(decoded), p.from);
  const auto start = clock::now();
  for (std::size_t i = 0; i < p.count; ++i) target[i] = values[p.lo + i] + decoded[i];
  call.report.reduce_s += seconds_since(start);
  return p.error;
}

/// A homomorphic reduction's work on values in host memory: each piece's own values are compressed when
/// the piece is first sent (outgoing_stream: compressing one overlaps the sends before it), finished
/// streams are decoded into the result on arrival, and the other pieces finished at the end, one by one.
template <codec Codec>
struct host_piece_work {
  block_codec<Codec>& coder;

  static constexpr bool decodes_on_arrival = true;

  template <floating_value T>
  void compress_own_pieces(call_context&, const Codec&, std::vector<stream_piece>&, const std::vector<std::size_t>&,
                           std::span<const T>) const {}

  /// The stream of a + b of `count` values into `out`.
  template <floating_value T>
  std::span<std::byte> add(call_context& call, const Codec& hops, std::span<const std::byte> a, std::span<const std::byte> b,
                           std::span<std::byte> out, std::size_t) const {
    return zcoll::add(call.exec(), hops, a, b, out);
  }

  /// finish_piece for the pieces `which`; returns the worst error they carry.
  template <floating_value T>
  hop_error finish_pieces(call_context& call, const Codec& hops, const piece_table& table, const std::vector<std::size_t>& which,
                          std::span<const T> values, std::span<T> out, std::size_t base = 0) const {
    hop_error worst{};
    for (const std::size_t k : which) worst = worst.worst(finish_piece<Codec, T>(call, coder, hops, table.pieces[k], values, out, base));
    return worst;
  }
};

template <codec Codec>
host_piece_work<Codec> piece_work_of(const host_reduction_work<Codec>& work) {
  return {work.coder};
}

/// Every piece of the table, in order.
inline std::vector<std::size_t> all_pieces(const piece_table& table) {
  std::vector<std::size_t> which(table.pieces.size());
  for (std::size_t k = 0; k < which.size(); ++k) which[k] = k;
  return which;
}

}  // namespace zcoll::detail
