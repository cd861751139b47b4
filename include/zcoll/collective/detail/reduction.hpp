#pragma once
/// The reduction engine (reduce_scatter, allreduce, reduce): blocks change at every hop, so each hop
/// compresses the partial result it sends, and the receiver decompresses, reduces and compresses again
/// (decompress-reduce-compress); the error grows with the hops, and the report states the worst case and
/// ZCCL's statistical bound. Hops are pipelined (PIPE-fZ-light): segments are compressed, sent, received
/// and reduced while the next ones are compressed. A homomorphic hop (sums on compressed streams) is a
/// second kind of hop beside pipelined_hop and raw_hop.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/movement.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/reduce_op.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"

namespace zcoll::detail {

/// What a value has been through on its way here: a bound on its error, and how many compressions
/// contributed to it (for ZCCL's statistical bound).
struct hop_error {
  double bound = 0.0;
  double compressions = 0.0;

  hop_error after_compression(double eb) const { return {bound + eb, compressions + 1}; }
  /// The error of op(mine, theirs): errors add up for a sum; a min or max is off by at most the larger.
  template <class Op>
  hop_error combined(const hop_error& theirs) const {
    const double b = std::is_same_v<Op, op::sum_t> ? bound + theirs.bound : std::max(bound, theirs.bound);
    return {b, compressions + theirs.compressions};
  }
  /// The worse of two, field by field (values that took different paths).
  hop_error worst(const hop_error& other) const {
    return {std::max(bound, other.bound), std::max(compressions, other.compressions)};
  }
};

/// The report's bounds of a reduction whose values carry `e`.
inline void set_reduction_bound(call_context& call, const hop_error& e) {
  call.reduction = true;
  call.report.compressions_in_chain = call.compress_now ? static_cast<int>(e.compressions) : 0;
  call.report.error_bound = call.compress_now ? e.bound : 0.0;
  // ZCCL §3.2: k compression errors, each normal with sigma = eb/3, sum to within (2/3)·sqrt(k)·eb with
  // probability 95.44 %; never more than the worst case. eb is the mean bound of the k compressions
  // (each stream states its own: equal for FZLight at an absolute bound, per-row for Int4).
  const double mean_bound = e.compressions > 0 ? e.bound / e.compressions : 0.0;
  call.report.statistical_error_bound =
      call.compress_now ? std::min(e.bound, (2.0 / 3.0) * std::sqrt(e.compressions) * mean_bound) : 0.0;
}

/// The absolute bound of every hop: the codec's absolute bound, or a relative one times the range of
/// all ranks' inputs (finite, non-fill values; one exact allgather of 2 values per rank). `local_extent()`
/// finds this rank's extent (value_extent<double>), where the values are; it runs only for a relative
/// bound.
template <class LocalExtent>
task<double> hop_bound(call_context& call, const codec_config& codec, LocalExtent local_extent) {
  if (!call.compress_now) co_return 0.0;
  if (codec.error_bound.mode == bound_mode::absolute) co_return codec.error_bound.value;
  std::vector<value_extent<double>> extents(static_cast<std::size_t>(call.size()));
  extents[static_cast<std::size_t>(call.rank())] = local_extent();
  co_await call.exact_allgather(std::span<value_extent<double>>(extents));
  value_extent<double> all;
  for (const auto& e : extents) {
    if (e.empty()) continue;
    all.lowest = std::min(all.lowest, e.lowest);
    all.highest = std::max(all.highest, e.highest);
  }
  co_return absolute_bound(codec.error_bound, all.range());
}

/// The values [first, count) a schedule exchange of blocks covers, block b being range(b) = {first, count}
/// (consecutive blocks: from the first's first value to the last's end).
template <class Range>
auto exchange_values(Range range) {
  return [range](const schedule::exchange& e) {
    const auto [lo, first_count] = range(e.first_block);
    const auto [last_lo, last_count] = range(e.first_block + e.block_count - 1);
    return std::pair{lo, last_lo + last_count - lo};
  };
}

/// One segment of a pipelined hop: the values [lo, lo + count) of the work buffer, and its messages.
struct hop_segment {
  std::size_t lo = 0, count = 0;
  encoded_block stream{};          // sending: where its stream is in the arena
  std::size_t received_bytes = 0;  // receiving: the size its header announced (checked)
  transport::AnyTransport::request header, data;
};

/// The segments of the values [lo, lo + count): `length` each (rounded up to whole rows of a row-wise
/// codec), the last shorter; at least one, so that an empty block still sends its header.
inline std::vector<hop_segment> split_segments(std::size_t lo, std::size_t count, std::size_t pipeline_values,
                                               std::size_t row_length) {
  std::size_t length = pipeline_values == 0 ? std::max<std::size_t>(count, 1) : pipeline_values;
  if (row_length > 0) length = (length + row_length - 1) / row_length * row_length;
  std::vector<hop_segment> segments;
  for (std::size_t at = 0; at == 0 || at < count; at += length) {
    hop_segment& segment = segments.emplace_back();
    segment.lo = lo + at;
    segment.count = std::min(length, count - at);
  }
  return segments;
}

/// A segment's header has arrived: checks that the sender cut the hop as this rank did and the size it
/// announces (wire.hpp), and posts the receive of its bytes into into(k, bytes), `bytes` bytes of memory
/// the transport takes (post_segment_receive below: the call's scratch).
template <codec Codec, floating_value T, class Into>
void post_segment_receive_into(call_context& call, const block_codec<Codec>& coder, int peer, std::vector<hop_segment>& in,
                               std::size_t k, std::size_t hop_values, Into into) {
  call_scratch& s = call.scratch();
  const wire::hop_header& h = s.in_headers[k];
  // The bound and count the values carry go into the report's bound: a damaged one is refused.
  const bool plausible = std::isfinite(h.error_bound) && h.error_bound >= 0.0 && h.compressions >= 0.0 &&
                         h.compressions <= 4.0 * call.size() && h.compressions == std::floor(h.compressions);
  if (!plausible) {
    call.fail(format_error("rank " + std::to_string(peer) + " sends a segment that carries the bound " +
                           std::to_string(h.error_bound) + " after " + std::to_string(h.compressions) + " compressions"),
              peer);
    // The fault is held (verify mode), so the call raises it; carrying the bound on as 0 instead of an
    // infinite one keeps the ranks downstream from meeting faults of their own, which would hide the
    // sender (verify::first_fault picks a fault whose sender met none).
    s.in_headers[k].error_bound = 0.0;
    s.in_headers[k].compressions = 0.0;
  }
  if (h.segment_values != in[k].count || h.hop_values != hop_values) {
    call.fail(format_error("rank " + std::to_string(peer) + " sends a segment of " + std::to_string(h.segment_values) +
                           " of " + std::to_string(h.hop_values) + " values where this rank expects " +
                           std::to_string(in[k].count) + " of " + std::to_string(hop_values) +
                           " (were the ranks called with the same count and configuration?)"),
              peer);
  }
  const std::uint64_t bytes = coder.template peer_size<T>(call, h.size_bytes, in[k].count, peer);
  in[k].received_bytes = static_cast<std::size_t>(bytes);
  in[k].data = call.transport().irecv_async(peer, wire::data_tag, into(k, in[k].received_bytes));
}

/// post_segment_receive_into, the bytes received into s.in_bytes[k].
template <codec Codec, floating_value T>
void post_segment_receive(call_context& call, const block_codec<Codec>& coder, int peer, std::vector<hop_segment>& in,
                          std::size_t k, std::size_t hop_values) {
  call_scratch& s = call.scratch();
  post_segment_receive_into<Codec, T>(call, coder, peer, in, k, hop_values, [&s](std::size_t segment, std::size_t bytes) {
    s.in_bytes[segment].resize(bytes);
    return std::span<std::byte>(s.in_bytes[segment]);
  });
}

/// The receiving side of one pipelined hop, between and after the sends.
struct hop_receipt {
  std::vector<hop_segment> in;
  int peer = -1;
  bool reduce = false;
  std::size_t hop_values = 0;                // the values received in this hop
  std::size_t headers_in = 0, segments_in = 0;  // segments whose header, and whose values, have arrived
  std::size_t unsent_lo = 0, unsent_hi = 0;  // the values not yet compressed (not to be reduced into yet)
  hop_error received{};
};

/// Takes what has arrived: headers post the receives of their bytes; bytes are decoded and reduced into
/// `work` in order, once no unsent value is in their range. With `all`, until every segment is in.
template <codec Codec, floating_value T, class Op>
task<> take_arrivals(call_context& call, block_codec<Codec>& coder, const Codec& hops, hop_receipt& h, Op op,
                     std::span<T> work, bool all) {
  const auto start = clock::now();
  double busy = 0.0;  // decoding and reducing, counted apart from communication
  call_scratch& s = call.scratch();
  while (h.segments_in < h.in.size()) {
    while (h.headers_in < h.in.size() && call.test_held(h.in[h.headers_in].header, h.peer)) {
      post_segment_receive<Codec, T>(call, coder, h.peer, h.in, h.headers_in++, h.hop_values);
    }
    hop_segment& next = h.in[h.segments_in];
    const bool overlaps_unsent = next.lo < h.unsent_hi && h.unsent_lo < next.lo + next.count;
    bool ready = false;
    if (h.segments_in < h.headers_in && !overlaps_unsent) {
      if (all) {
        co_await call.until_complete(next.data, h.peer);
        ready = true;
      } else {
        ready = call.test_held(next.data, h.peer);
      }
    }
    if (ready) {
      const auto work_start = clock::now();
      const wire::hop_header& header = s.in_headers[h.segments_in];
      h.received = h.received.worst({header.error_bound, header.compressions});
      auto& incoming = s.incoming<T>();
      incoming.resize(next.count);
      coder.template decode<T>(call, hops, std::span<const std::byte>(s.in_bytes[h.segments_in]).first(next.received_bytes),
                               std::span<T>(incoming), h.peer);
      const auto reduce_start = clock::now();
      combine_into(work.data() + next.lo, incoming.data(), next.count, h.reduce, op);
      call.report.reduce_s += seconds_since(reduce_start);
      ++h.segments_in;
      busy += seconds_since(work_start);
    } else if (!all) {
      break;
    } else if (h.segments_in == h.headers_in) {
      co_await call.until_complete(h.in[h.headers_in].header, h.peer);
      post_segment_receive<Codec, T>(call, coder, h.peer, h.in, h.headers_in++, h.hop_values);
    }
  }
  call.report.communicate_s += seconds_since(start) - busy;
}

/// The segments a hop receives (none where st.recv is inactive), their header receives posted into the
/// call's scratch, and room for their bytes.
template <class Values>
std::vector<hop_segment> receive_segment_headers(call_context& call, std::size_t row_length, schedule::step st, Values values) {
  call_scratch& s = call.scratch();
  std::vector<hop_segment> in;
  if (st.recv.active()) {
    const auto [lo, count] = values(st.recv);
    in = split_segments(lo, count, call.config().pipeline_values, row_length);
  }
  s.in_headers.assign(in.size(), wire::hop_header{});
  s.in_bytes.resize(std::max(s.in_bytes.size(), in.size()));
  for (std::size_t k = 0; k < in.size(); ++k) {
    in[k].header = call.transport().irecv_async(st.recv.peer, wire::size_tag, std::as_writable_bytes(std::span(&s.in_headers[k], 1)));
  }
  return in;
}

/// The largest error the blocks an exchange sends carry.
inline hop_error carried_error(const std::vector<hop_error>& errors, const schedule::exchange& send) {
  hop_error carried{};
  for (int b = send.first_block; b < send.first_block + send.block_count; ++b) carried = carried.worst(errors[static_cast<std::size_t>(b)]);
  return carried;
}

/// The end of a compressed hop, once its received segments are in: waits for its sends, and gives the
/// blocks received the largest error their segments carried (`received`), combined with the blocks' own
/// where the hop reduced.
template <class Op>
task<> finish_hop(call_context& call, schedule::step st, std::vector<hop_segment>& out, hop_error received,
                  std::vector<hop_error>& errors) {
  const auto start = clock::now();
  for (auto& segment : out) {
    co_await call.until_complete(segment.header, st.send.peer);
    co_await call.until_complete(segment.data, st.send.peer);
  }
  call.report.communicate_s += seconds_since(start);
  for (int b = st.recv.first_block; st.recv.active() && b < st.recv.first_block + st.recv.block_count; ++b) {
    auto& e = errors[static_cast<std::size_t>(b)];
    e = st.recv.reduce ? e.template combined<Op>(received) : received;
  }
}

/// One compressed hop (PIPE-fZ-light): the receives of every segment's header are posted first; the
/// send side compresses segment after segment into the arena (sized up front, so that bytes in flight
/// never move) and sends each segment's header and bytes at once; between segments the receive side
/// takes what has arrived, decompressing and reducing each segment into `work` as soon as no unsent value
/// is in its range (recursive doubling sends and receives the same range). The blocks received get the
/// largest error any of their segments carried.
template <codec Codec, floating_value T, class Values, class Op>
task<> pipelined_hop(call_context& call, block_codec<Codec>& coder, schedule::collective_op kind, int round,
                     const Codec& hops, schedule::step st, Values values, Op op, std::span<T> work,
                     std::vector<hop_error>& errors) {
  call_scratch& s = call.scratch();
  const std::size_t pipeline_values = call.config().pipeline_values;
  hop_receipt h;
  h.peer = st.recv.peer;
  h.reduce = st.recv.reduce;
  h.hop_values = st.recv.active() ? values(st.recv).second : 0;
  h.in = receive_segment_headers(call, coder.row_length(), st, values);
  std::vector<hop_segment> out;
  hop_error carried{};
  if (st.send.active()) {
    const auto [lo, count] = values(st.send);
    out = split_segments(lo, count, pipeline_values, coder.row_length());
    std::size_t arena = 0;
    for (auto& segment : out) {
      segment.stream.offset = arena;
      arena += hops.template max_compressed_size<T>(segment.count);
    }
    s.arena.resize(std::max(s.arena.size(), arena));
    s.out_headers.assign(out.size(), wire::hop_header{});
    carried = carried_error(errors, st.send);
    std::tie(h.unsent_lo, h.unsent_hi) = std::pair{lo, lo + count};
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    hop_segment& segment = out[k];
    const state_key key = coder.segment_key(coder.hop_key(kind, round, st.send.first_block, values(st.send).second), k);
    const auto segment_values = std::span<const T>(work).subspan(segment.lo, segment.count);
    segment.stream = coder.template encode<T>(call, hops, segment_values, s.arena, segment.stream.offset, key);
    const hop_error sent_error = carried.after_compression(segment.stream.error_bound);
    s.out_headers[k] = {segment.stream.size, sent_error.bound, sent_error.compressions, segment.count, values(st.send).second};
    h.unsent_lo = segment.lo + segment.count;
    const auto start = clock::now();
    segment.header = call.transport().isend_async(st.send.peer, wire::size_tag, std::as_bytes(std::span(&s.out_headers[k], 1)));
    segment.data = call.transport().isend_async(
        st.send.peer, wire::data_tag, std::span<const std::byte>(s.arena).subspan(segment.stream.offset, segment.stream.size));
    call.report.bytes_sent += sizeof(wire::hop_header) + segment.stream.size;
    call.report.raw_bytes_sent += segment.count * sizeof(T);
    call.report.communicate_s += seconds_since(start);
    co_await take_arrivals<Codec, T>(call, coder, hops, h, op, work, false);
  }
  h.unsent_lo = h.unsent_hi = 0;
  co_await take_arrivals<Codec, T>(call, coder, hops, h, op, work, true);
  co_await finish_hop<Op>(call, st, out, h.received, errors);
}

/// One uncompressed hop: the values go from `work` as they are, arrive in a buffer of T and are reduced
/// (or copied) into `work` from there.
template <floating_value T, class Values, class Op>
task<> raw_hop(call_context& call, schedule::step st, Values values, Op op, std::span<T> work) {
  std::span<const std::byte> out;
  std::size_t out_raw = 0;
  if (st.send.active()) {
    const auto [lo, count] = values(st.send);
    out = std::as_bytes(work.subspan(lo, count));
    out_raw = out.size();
  }
  std::size_t lo = 0, count = 0;
  if (st.recv.active()) std::tie(lo, count) = values(st.recv);
  auto& incoming = call.scratch().incoming<T>();
  incoming.resize(count);
  co_await call.exchange(st.send, out, st.recv, std::as_writable_bytes(std::span<T>(incoming)), wire::data_tag, out_raw);
  if (!st.recv.active()) co_return;
  const auto start = clock::now();
  combine_into(work.data() + lo, incoming.data(), count, st.recv.reduce, op);
  call.report.reduce_s += seconds_since(start);
}

/// The rounds of S for `kind` over blocks range(b) = {first value, count}: each round's exchange is
/// hop(round, step, values, errors), `values` mapping an exchange to the values it covers. Returns each
/// block's error, so the report states exactly what the schedule did, whatever its shape.
template <class S, class Range, class Hop>
task<std::vector<hop_error>> reduce_rounds(call_context& call, schedule::collective_op kind, Range range, Hop hop) {
  const int p = call.size(), me = call.rank();
  std::vector<hop_error> errors(static_cast<std::size_t>(schedule::blocks_of<S>(kind, p)));
  const auto values = exchange_values(range);
  for (int r = 0; r < S::rounds(kind, p); ++r) co_await hop(r, S::at(kind, p, me, r, 0), values, errors);
  co_return errors;
}

/// Reduces `work` (this rank's values, reduced in place) along S's rounds for `kind`: pipelined hops, or
/// raw ones (sizes known, no error to carry, sent from and reduced in place).
template <class S, codec Codec, floating_value T, class Op, class Range>
task<std::vector<hop_error>> reduce_blocks(call_context& call, block_codec<Codec>& coder, schedule::collective_op kind,
                                           const Codec& hops, Op op, Range range, std::span<T> work) {
  co_return co_await reduce_rounds<S>(call, kind, range, [&](int r, schedule::step st, auto values, std::vector<hop_error>& errors) {
    return call.compress_now ? pipelined_hop<Codec, T>(call, coder, kind, r, hops, st, values, op, work, errors)
                             : raw_hop<T>(call, st, values, op, work);
  });
}

/// The reduction calls' work on host memory: the values reduced in the call's scratch, the hops above,
/// the data-movement phases (an allreduce's allgather, a reduce's gather) on host_block_work; sums may
/// run on compressed streams (detail/homomorphic.hpp). A staging space's is staged_reduction_work
/// (detail/staged_reduction.hpp).
template <codec Codec>
struct host_reduction_work {
  block_codec<Codec>& coder;

  static constexpr bool sums_streams = true;

  /// A copy of `in` to reduce in place.
  template <floating_value T>
  std::span<T> copy_of(call_context& call, std::span<const T> in) const {
    auto& work = call.scratch().work<T>();
    work.assign(in.begin(), in.end());
    return std::span<T>(work);
  }

  template <floating_value T>
  void copy_values(std::span<T> to, std::span<const T> from) const {
    std::copy(from.begin(), from.end(), to.begin());
  }

  template <floating_value T>
  task<double> hop_bound(call_context& call, const codec_config& codec, std::span<const T> input) const {
    co_return co_await detail::hop_bound(call, codec, [&call, input, fill = codec.fill_value] {
      const value_extent<T> local = find_value_extent(call.exec(), input, fill_bits_of<T>(fill));
      return value_extent<double>{local.lowest, local.highest};
    });
  }

  template <class S, floating_value T, class Op, class Range>
  task<std::vector<hop_error>> reduce_blocks(call_context& call, schedule::collective_op kind, const Codec& hops, Op op,
                                             Range range, std::span<T> work) const {
    co_return co_await detail::reduce_blocks<S, Codec, T>(call, coder, kind, hops, op, range, work);
  }

  /// The work of a data-movement phase with the hops' codec (under error-feedback keys for `feedback`).
  host_block_work<Codec> block_work(const Codec& hops, std::optional<schedule::collective_op> feedback) const {
    return {coder, hops, feedback};
  }
};

}  // namespace zcoll::detail
