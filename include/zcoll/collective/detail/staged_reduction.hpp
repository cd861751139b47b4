#pragma once
/// staged_reduction_work: the reduction engine's work (detail/reduction.hpp) on values in a staging space
/// (collective/staging.hpp), for reduce_scatter, allreduce and reduce on device buffers. The values are
/// reduced in the space; a hop compresses the segments it sends there, all of them in one batch (one
/// launch for up to 64 segments on a GPU), copies their streams to the host for the transport, checks the
/// headers of the streams it receives on the host, copies those into the space, decodes them in a batch
/// and reduces them into the values there. The segments, bounds and headers are the host hops', so the
/// results and reports are the host call's, bit for bit. A hop waits for its batch before it sends (the
/// sizes must reach the host), so its own segments do not overlap each other's transfer as
/// pipelined_hop's do; the space is waited on once a hop, and once for a relative bound's extent.
///
/// Sums on compressed streams (collective_config::homomorphic, detail/homomorphic.hpp): the streams are
/// kept on the host, where the transport has them; the space compresses the own values a hop sends
/// (staged_piece_work, one batch a hop), adds streams (cuda::Staging: copies them to the device, adds
/// them there and copies the sum back, one add at a time) and finishes the pieces at the end (the others'
/// streams decoded in batches and added to the own values there). The hops, streams and bounds are the
/// host call's, so are the results, bit for bit.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "zcoll/codec/concepts.hpp"
#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/homomorphic.hpp"
#include "zcoll/collective/detail/reduction.hpp"
#include "zcoll/collective/detail/staged_batches.hpp"
#include "zcoll/collective/detail/staged_block_work.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/collective/staging.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"

namespace zcoll::detail {

/// `values` of the space's memory as T (the areas start on 256 bytes).
template <floating_value T>
std::span<T> values_in(std::span<std::byte> area, std::size_t values) {
  return {reinterpret_cast<T*>(area.data()), values};
}

/// The counts of streams [run.first, run.first + run.count), stream k holding count_of(k) values.
template <class CountOf>
std::vector<std::size_t> run_counts(const batch_run& run, CountOf count_of) {
  std::vector<std::size_t> counts;
  for (int k = run.first; k < run.first + run.count; ++k) counts.push_back(count_of(static_cast<std::size_t>(k)));
  return counts;
}

/// The sending side of a staged hop: `out`'s segments of `work` compressed in the space in batches and
/// sent from the wire — their streams copied into the arena (host memory), or, on the device wire, sent
/// from where the batches wrote them, their headers copied out for the bounds — each with its header
/// (the bound the values carried before, `carried`, plus the stream's own); the sends are left in flight
/// in the segments.
template <codec Codec, floating_value T, staging_space Space>
void send_staged_segments(call_context& call, Space& space, staged_wire path, const Codec& hops, int peer,
                          std::vector<hop_segment>& out, std::size_t hop_values, hop_error carried, std::span<const T> work) {
  call_scratch& s = call.scratch();
  const auto start = clock::now();
  std::vector<batch_run> runs =
      batch_runs(static_cast<int>(out.size()), space.max_batch_streams(), [](int) { return true; }, [](int) { return true; });
  const auto counts_of = [&](const batch_run& run) { return run_counts(run, [&](std::size_t k) { return out[k].count; }); };
  const compressed_batches batches = compress_batches<T>(
      call, hops, space, runs,
      [&](const batch_run& run) { return work.subspan(out[static_cast<std::size_t>(run.first)].lo, run_values(counts_of(run))); },
      counts_of);
  std::span<const std::byte> sent_from;  // where the streams are sent from; out[k].stream.offset is in it
  if (path.on_device) {
    std::size_t k = 0;
    for (const batch_run& run : runs) {  // a batch's streams are packed from its out_at
      for (std::size_t at = run.out_at; k < static_cast<std::size_t>(run.first + run.count); ++k) {
        out[k].stream = {.offset = at, .size = static_cast<std::size_t>(batches.sizes[k])};
        at += out[k].stream.size;
      }
    }
    sent_from = batches.device_out;
  } else {
    std::size_t arena = 0;
    for (std::size_t k = 0; k < out.size(); ++k) {
      out[k].stream = {.offset = arena, .size = static_cast<std::size_t>(batches.sizes[k])};
      arena += out[k].stream.size;
    }
    s.arena.resize(std::max(s.arena.size(), arena));
    for (const batch_run& run : runs) {  // one copy a batch
      const hop_segment& first = out[static_cast<std::size_t>(run.first)];
      const hop_segment& last = out[static_cast<std::size_t>(run.first + run.count - 1)];
      const std::size_t bytes = last.stream.offset + last.stream.size - first.stream.offset;
      space.copy(std::span<std::byte>(s.arena).subspan(first.stream.offset, bytes), batches.device_out.subspan(run.out_at, bytes));
    }
    space.wait();
    sent_from = s.arena;
  }
  const auto stream_of = [&](std::size_t k) { return sent_from.subspan(out[k].stream.offset, out[k].stream.size); };
  const std::vector<std::span<const std::byte>> headers = headers_on_host(space, path.on_device, out.size(), stream_of);
  call.report.compress_s += seconds_since(start);
  const auto send_start = clock::now();
  s.out_headers.assign(out.size(), wire::hop_header{});
  for (std::size_t k = 0; k < out.size(); ++k) {
    hop_segment& segment = out[k];
    segment.stream.error_bound = headers[k].empty() ? 0.0 : read_stream_header(headers[k]).error_bound;  // empty: the codec refused
    const hop_error sent = carried.after_compression(segment.stream.error_bound);
    s.out_headers[k] = {segment.stream.size, sent.bound, sent.compressions, segment.count, hop_values};
    segment.header = call.transport().isend_async(peer, wire::size_tag, std::as_bytes(std::span(&s.out_headers[k], 1)));
    segment.data = call.transport().isend_async(peer, wire::data_tag, stream_of(k));
    call.report.bytes_sent += sizeof(wire::hop_header) + segment.stream.size;
    call.report.raw_bytes_sent += segment.count * sizeof(T);
  }
  call.report.communicate_s += seconds_since(send_start);
}

/// Streams decoded in the space: stream k (`stream_of(k)`, sent by rank `from_of(k)`, of `count_of(k)`
/// values) is checked on the host (check_received_streams: one of another length is a format_error naming
/// its sender, held in verify mode, and is not decoded) and decoded in batches of consecutive streams into
/// `incoming` at first_of(k). Streams in host memory are copied into the device_in area first; streams
/// already in the space lie in `in_space` (non-empty: the device wire area they were received into) and
/// are decoded where they are. Returns, stream by stream, whether its values decoded (a batch with a
/// stream that did not counts as not decoded: on a device its memory may hold anything, NaN included).
template <codec Codec, floating_value T, staging_space Space, class StreamOf, class CountOf, class FirstOf, class FromOf>
std::vector<char> decode_in_space(call_context& call, Space& space, const Codec& hops, std::size_t streams, StreamOf stream_of,
                                  CountOf count_of, FirstOf first_of, FromOf from_of, std::span<T> incoming,
                                  std::span<const std::byte> in_space = {}) {
  std::vector<char> decoded = check_received_streams(
      call, space, !in_space.empty(), streams, stream_of, count_of, [&](std::size_t k) { return from_of(static_cast<int>(k)); },
      [](std::size_t) { return true; });
  std::vector<std::uint64_t> offsets(streams, 0), sizes(streams, 0);
  std::span<const std::byte> device_in = in_space;
  if (in_space.empty()) {
    std::size_t in_bytes = 0;
    for (std::size_t k = 0; k < streams; ++k) {
      offsets[k] = in_bytes;
      sizes[k] = stream_of(k).size();
      in_bytes += decoded[k] ? sizes[k] : 0;
    }
    const std::span<std::byte> copied = space.area(staging_area::device_in, in_bytes);
    for (std::size_t k = 0; k < streams; ++k) {
      if (decoded[k]) space.copy(copied.subspan(offsets[k], sizes[k]), stream_of(k));
    }
    device_in = copied;
  } else {
    for (std::size_t k = 0; k < streams; ++k) {
      offsets[k] = static_cast<std::uint64_t>(stream_of(k).data() - in_space.data());
      sizes[k] = stream_of(k).size();
    }
  }
  std::vector<batch_run> runs = batch_runs(static_cast<int>(streams), space.max_batch_streams(),
                                           [&](int k) { return decoded[static_cast<std::size_t>(k)] != 0; }, [](int) { return true; });
  const auto counts_of = [&](const batch_run& run) { return run_counts(run, count_of); };
  const std::vector<char> faulted = decompress_batches<T>(
      call, hops, space, runs, device_in, offsets, sizes,
      [&](const batch_run& run) { return incoming.subspan(first_of(static_cast<std::size_t>(run.first)), run_values(counts_of(run))); },
      counts_of, from_of);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    for (int k = runs[r].first; faulted[r] && k < runs[r].first + runs[r].count; ++k) decoded[static_cast<std::size_t>(k)] = 0;
  }
  return decoded;
}

/// The received segments `in` decoded in the space into the device_incoming area, in order
/// (decode_in_space): their bytes are in the call's scratch, or, on the device wire, at slots[k] of
/// `wire_in`. Returns the decoded values, and for each segment whether its values decoded (the others are
/// to be left out of the reduction).
template <codec Codec, floating_value T, staging_space Space>
std::pair<std::span<T>, std::vector<char>> decode_staged_segments(call_context& call, Space& space, const Codec& hops, int peer,
                                                                  const std::vector<hop_segment>& in, std::size_t hop_values,
                                                                  std::span<const std::byte> wire_in,
                                                                  const std::vector<std::size_t>& slots) {
  const call_scratch& s = call.scratch();
  const auto start = clock::now();
  const std::span<T> incoming = values_in<T>(space.area(staging_area::device_incoming, hop_values * sizeof(T)), hop_values);
  const std::size_t hop_lo = in.empty() ? 0 : in.front().lo;
  const auto stream_of = [&](std::size_t k) {
    return wire_in.empty() ? std::span<const std::byte>(s.in_bytes[k]).first(in[k].received_bytes)
                           : wire_in.subspan(slots[k], in[k].received_bytes);
  };
  std::vector<char> decoded = decode_in_space<Codec, T>(
      call, space, hops, in.size(), stream_of, [&](std::size_t k) { return in[k].count; },
      [&](std::size_t k) { return in[k].lo - hop_lo; }, [peer](int) { return peer; }, incoming, wire_in);
  call.report.decompress_s += seconds_since(start);
  return {incoming, std::move(decoded)};
}

/// Where each received segment's bytes land in the device wire area: a slot of the most its codec may
/// write (what post_segment_receive lets a sender announce) each, so the receives can be posted as the
/// headers arrive. Returns the slots and the area.
template <floating_value T, codec Codec, staging_space Space>
std::pair<std::vector<std::size_t>, std::span<std::byte>> segment_slots(call_context& call, const block_codec<Codec>& coder,
                                                                        Space& space, const std::vector<hop_segment>& in) {
  std::vector<std::size_t> slots;
  std::size_t bytes = 0;
  for (const hop_segment& segment : in) {
    std::size_t most = 0;  // 0 where the codec refuses the length: the announced size is refused then too
    call.guarded(-1, [&] { most = coder.codec().template max_compressed_size<T>(segment.count); });
    slots.push_back(bytes);
    bytes += device_slice(most);
  }
  return {std::move(slots), space.area(staging_area::device_wire_in, bytes)};
}

/// Reduces (or copies) the decoded segments' values into `work`, one combine a run of consecutive
/// decoded segments (all of them, one combine, unless a stream was damaged).
template <floating_value T, staging_space Space, class Op>
void combine_segments(Space& space, Op op, const std::vector<hop_segment>& in, const std::vector<char>& decoded,
                      std::span<const T> incoming, bool reduce, std::span<T> work) {
  const std::size_t hop_lo = in.front().lo;
  for (std::size_t k = 0; k < in.size();) {
    if (!decoded[k]) {
      ++k;
      continue;
    }
    const std::size_t lo = in[k].lo;
    std::size_t count = 0;
    for (; k < in.size() && decoded[k]; ++k) count += in[k].count;
    space.combine(op, work.subspan(lo, count), incoming.subspan(lo - hop_lo, count), reduce);
  }
}

/// One compressed hop on values in the space: the receives of every segment's header are posted first,
/// the segments sent (send_staged_segments), the received ones decoded and reduced (or copied) into
/// `work`. The blocks received get the largest error any of their segments carried. On the device wire
/// the segments' bytes are received into the space's device_wire_in area (segment_slots).
template <codec Codec, floating_value T, staging_space Space, class Values, class Op>
task<> staged_hop(call_context& call, const block_codec<Codec>& coder, Space& space, staged_wire path, const Codec& hops,
                  schedule::step st, Values values, Op op, std::span<T> work, std::vector<hop_error>& errors) {
  call_scratch& s = call.scratch();
  const std::size_t received_values = st.recv.active() ? values(st.recv).second : 0;
  std::vector<hop_segment> in = receive_segment_headers(call, coder.row_length(), st, values), out;
  std::vector<std::size_t> slots;
  std::span<std::byte> wire_in;
  if (path.on_device && !in.empty()) std::tie(slots, wire_in) = segment_slots<T>(call, coder, space, in);
  if (st.send.active()) {
    const auto [lo, count] = values(st.send);
    out = split_segments(lo, count, call.config().pipeline_values, coder.row_length());
    send_staged_segments<Codec, T>(call, space, path, hops, st.send.peer, out, count, carried_error(errors, st.send),
                                   std::span<const T>(work));
  }
  const auto start = clock::now();
  hop_error received{};
  for (std::size_t k = 0; k < in.size(); ++k) {
    co_await call.until_complete(in[k].header, st.recv.peer);
    if (wire_in.empty()) {
      post_segment_receive<Codec, T>(call, coder, st.recv.peer, in, k, received_values);
    } else {
      post_segment_receive_into<Codec, T>(call, coder, st.recv.peer, in, k, received_values,
                                          [&](std::size_t segment, std::size_t bytes) { return wire_in.subspan(slots[segment], bytes); });
    }
    received = received.worst({s.in_headers[k].error_bound, s.in_headers[k].compressions});
  }
  for (hop_segment& segment : in) co_await call.until_complete(segment.data, st.recv.peer);
  call.report.communicate_s += seconds_since(start);
  if (st.recv.active()) {
    const auto [incoming, decoded] =
        decode_staged_segments<Codec, T>(call, space, hops, st.recv.peer, in, received_values, wire_in, slots);
    const auto reduce_start = clock::now();
    combine_segments<T>(space, op, in, decoded, std::span<const T>(incoming), st.recv.reduce, work);
    call.report.reduce_s += seconds_since(reduce_start);
  }
  co_await finish_hop<Op>(call, st, out, received, errors);
}

/// One uncompressed hop on values in the space: the values sent are copied to the outgoing wire area, the
/// received ones, in the incoming wire area, reduced (or copied) into `work` — from the host wire through
/// the device_incoming area.
template <floating_value T, staging_space Space, class Values, class Op>
task<> staged_raw_hop(call_context& call, Space& space, staged_wire path, schedule::step st, Values values, Op op,
                      std::span<T> work) {
  std::span<const std::byte> out;
  if (st.send.active()) {
    const auto [lo, count] = values(st.send);
    const std::span<std::byte> wire_out = space.area(path.out(), count * sizeof(T));
    space.copy(wire_out, std::as_bytes(work.subspan(lo, count)));
    space.wait();
    out = wire_out;
  }
  std::size_t lo = 0, count = 0;
  if (st.recv.active()) std::tie(lo, count) = values(st.recv);
  const std::span<std::byte> wire_in = space.area(path.in(), count * sizeof(T));
  co_await call.exchange(st.send, out, st.recv, wire_in, wire::data_tag, out.size());
  if (!st.recv.active()) co_return;
  std::span<std::byte> incoming = wire_in;
  if (!path.on_device) {
    incoming = space.area(staging_area::device_incoming, wire_in.size());
    space.copy(incoming, std::span<const std::byte>(wire_in));
  }
  space.combine(op, work.subspan(lo, count), std::span<const T>(values_in<T>(incoming, count)), st.recv.reduce);
  // The wire area must be read before the next hop's exchange writes into it (a hop that only receives
  // would not wait otherwise).
  space.wait();
}

/// reduce_blocks (detail/reduction.hpp) on values in the space: the same rounds, blocks and errors, with
/// staged hops; returns once the values are reduced.
template <class S, codec Codec, floating_value T, staging_space Space, class Op, class Range>
task<std::vector<hop_error>> staged_reduce_blocks(call_context& call, const block_codec<Codec>& coder, Space& space,
                                                  schedule::collective_op kind, const Codec& hops, Op op, Range range,
                                                  std::span<T> work) {
  const staged_wire path = wire_of(call, space);
  auto errors = co_await reduce_rounds<S>(call, kind, range, [&](int, schedule::step st, auto values, std::vector<hop_error>& errors) {
    return call.compress_now ? staged_hop<Codec, T>(call, coder, space, path, hops, st, values, op, work, errors)
                             : staged_raw_hop<T>(call, space, path, st, values, op, work);
  });
  space.wait();
  co_return errors;
}

/// The reduction calls' work on values in a staging space (host_reduction_work's counterpart): a copy of
/// the input reduced in the device_values area, the extent for a relative bound found in the space, the
/// staged hops above, and the data-movement phases on staged_block_work.
template <codec Codec, staging_space Space>
struct staged_reduction_work {
  const block_codec<Codec>& coder;
  Space& space;

  static constexpr bool sums_streams = true;

  template <floating_value T>
  std::span<T> copy_of(call_context&, std::span<const T> in) {
    const std::span<std::byte> area = space.area(staging_area::device_values, in.size_bytes());
    space.copy(area, std::as_bytes(in));
    return values_in<T>(area, in.size());
  }

  /// Copies and waits: the values are in place when the call completes.
  template <floating_value T>
  void copy_values(std::span<T> to, std::span<const T> from) {
    space.copy(std::as_writable_bytes(to), std::as_bytes(from));
    space.wait();
  }

  template <floating_value T>
  task<double> hop_bound(call_context& call, const codec_config& codec, std::span<const T> input) {
    co_return co_await detail::hop_bound(call, codec,
                                         [this, input, fill = codec.fill_value] { return space.extent(input, fill_bits_of<T>(fill)); });
  }

  template <class S, floating_value T, class Op, class Range>
  task<std::vector<hop_error>> reduce_blocks(call_context& call, schedule::collective_op kind, const Codec& hops, Op op,
                                             Range range, std::span<T> work) {
    co_return co_await staged_reduce_blocks<S, Codec, T>(call, coder, space, kind, hops, op, range, work);
  }

  /// A staged call takes a codec without state: no error-feedback keys.
  staged_block_work<Codec, Space> block_work(const Codec& hops, std::optional<schedule::collective_op>) const {
    return {coder, hops, space};
  }
};

/// A homomorphic reduction's work on values in a staging space (host_piece_work's counterpart): the own
/// values a hop sends are compressed in the space before its sends, in batches, their streams copied to
/// the host; no stream is decoded on arrival; the pieces are finished in the space at the end.
template <codec Codec, staging_space Space>
struct staged_piece_work {
  Space& space;

  static constexpr bool decodes_on_arrival = false;

  /// The pieces `out` that hold own values not compressed yet, compressed from `values` (the space's
  /// memory) into their own_stream, as compress_own does on the host; a batch the codec refuses leaves
  /// its pieces' streams empty (verify mode holds the fault; receivers find them damaged).
  template <floating_value T>
  void compress_own_pieces(call_context& call, const Codec& hops, std::vector<stream_piece>& pieces,
                           const std::vector<std::size_t>& out, std::span<const T> values) {
    std::vector<std::size_t> todo;
    for (const std::size_t k : out) {
      if (pieces[k].own && !pieces[k].own_compressed) todo.push_back(k);
    }
    if (todo.empty()) return;
    const auto start = clock::now();
    const auto piece_at = [&](int j) -> stream_piece& { return pieces[todo[static_cast<std::size_t>(j)]]; };
    std::vector<batch_run> runs = batch_runs(static_cast<int>(todo.size()), space.max_batch_streams(), [](int) { return true; },
                                             [&](int j) { return piece_at(j - 1).lo + piece_at(j - 1).count == piece_at(j).lo; });
    const auto counts_of = [&](const batch_run& run) {
      return run_counts(run, [&](std::size_t j) { return piece_at(static_cast<int>(j)).count; });
    };
    const compressed_batches batches = compress_batches<T>(
        call, hops, space, runs, [&](const batch_run& run) { return values.subspan(piece_at(run.first).lo, run_values(counts_of(run))); },
        counts_of);
    for (const batch_run& run : runs) {  // a batch's streams are packed from its out_at
      std::size_t at = run.out_at;
      for (int j = run.first; j < run.first + run.count; ++j) {
        stream_piece& p = piece_at(j);
        const auto size = static_cast<std::size_t>(batches.sizes[static_cast<std::size_t>(j)]);
        p.own_stream = call.scratch().take_stream(size);
        p.own_stream.resize(size);
        space.copy(std::span<std::byte>(p.own_stream), batches.device_out.subspan(at, size));
        at += size;
      }
    }
    space.wait();
    for (const std::size_t k : todo) {
      stream_piece& p = pieces[k];
      p.own_error = hop_error{}.after_compression(p.own_stream.empty() ? 0.0 : read_stream_header(p.own_stream).error_bound);
      p.own_compressed = true;
    }
    call.report.compress_s += seconds_since(start);
  }

  /// The stream of a + b of `count` values (host memory) into `out`, added by the space (cuda::Staging:
  /// on the device); waits.
  template <floating_value T>
  std::span<std::byte> add(call_context&, const Codec& hops, std::span<const std::byte> a, std::span<const std::byte> b,
                           std::span<std::byte> out, std::size_t count) {
    return space.template add<T>(hops, a, b, out, count);
  }

  /// finish_piece for the pieces `which` in the space: each piece's own values (when it holds them) are
  /// copied to `out` (value `base` of the call's buffer at out[0]), the others' streams checked on the
  /// host, copied into the space, decoded in batches and added to them (or written, without own values).
  /// A stream that does not decode is a format_error naming the rank it came from (held in verify mode);
  /// the pieces of its batch then keep what was written before the decode (their own values, or what
  /// `out` held) — the call raises. Waits; returns the worst error the pieces carry.
  template <floating_value T>
  hop_error finish_pieces(call_context& call, const Codec& hops, const piece_table& table, const std::vector<std::size_t>& which,
                          std::span<const T> values, std::span<T> out, std::size_t base = 0) {
    const auto start = clock::now();
    const auto piece_at = [&](std::size_t j) -> const stream_piece& { return table.pieces[which[j]]; };
    const auto target = [&](const stream_piece& p) { return out.subspan(p.lo - base, p.count); };
    // The pieces with others' streams, their place in the device_incoming area, their own values in `out`.
    std::vector<std::size_t> with_others, first_value;
    std::size_t total_values = 0;
    hop_error worst{};
    for (std::size_t j = 0; j < which.size(); ++j) {
      const stream_piece& p = piece_at(j);
      if (p.own && target(p).data() != values.data() + p.lo) {
        space.copy(std::as_writable_bytes(target(p)), std::as_bytes(values.subspan(p.lo, p.count)));
      }
      if (p.others.empty()) continue;
      worst = worst.worst(p.error);
      with_others.push_back(which[j]);
      first_value.push_back(total_values);
      total_values += p.count;
    }
    const auto others_at = [&](std::size_t k) -> const stream_piece& { return table.pieces[with_others[k]]; };
    const std::span<T> incoming = values_in<T>(space.area(staging_area::device_incoming, total_values * sizeof(T)), total_values);
    const std::vector<char> decoded = decode_in_space<Codec, T>(
        call, space, hops, with_others.size(), [&](std::size_t k) { return std::span<const std::byte>(others_at(k).others); },
        [&](std::size_t k) { return others_at(k).count; }, [&](std::size_t k) { return first_value[k]; },
        [&](int k) { return others_at(static_cast<std::size_t>(k)).from; }, incoming);
    call.report.decompress_s += seconds_since(start);
    const auto reduce_start = clock::now();
    for (std::size_t k = 0; k < with_others.size(); ++k) {
      if (!decoded[k]) continue;
      const stream_piece& p = others_at(k);
      space.combine(op::sum, target(p), std::span<const T>(incoming.subspan(first_value[k], p.count)), p.own);
    }
    space.wait();
    call.report.reduce_s += seconds_since(reduce_start);
    return worst;
  }
};

template <codec Codec, staging_space Space>
staged_piece_work<Codec, Space> piece_work_of(const staged_reduction_work<Codec, Space>& work) {
  return {work.space};
}

}  // namespace zcoll::detail
