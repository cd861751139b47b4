#pragma once
/// The data-movement engine (allgather, bcast, scatter, gather, alltoall, alltoallv): each block is
/// compressed once by its owner, the compressed sizes travel first (the same schedule over 8-byte size
/// words, wire.hpp), then the compressed bytes are forwarded unchanged and decompressed once at the end —
/// every element stays within eb however many hops it makes. A rank's own block is never compressed.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/collective/detail/block_codec.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"

namespace zcoll::detail {

/// What a data-movement call moves, block by block (b in [0, blocks_of<S>(op, ranks))): the values this
/// rank holds (`source`, where held(b)), where it keeps a block (`destination`, empty where it only
/// forwards), and each block's length, known on every rank (`values_of`).
template <class Sources, class Destinations, class Held, class ValuesOf>
struct block_plan {
  Sources source;
  Destinations destination;
  Held held;
  ValuesOf values_of;
};
template <class Sources, class Destinations, class Held, class ValuesOf>
block_plan(Sources, Destinations, Held, ValuesOf) -> block_plan<Sources, Destinations, Held, ValuesOf>;  // clang 14

/// The bytes of a received range of blocks.
inline std::size_t range_bytes(const call_scratch& s, const schedule::exchange& e) {
  std::size_t bytes = 0;
  for (int b = e.first_block; b < e.first_block + e.block_count; ++b) bytes += static_cast<std::size_t>(s.sizes[static_cast<std::size_t>(b)]);
  return bytes;
}

/// The size words of a range of blocks.
inline std::span<std::uint64_t> word_range(call_scratch& s, const schedule::exchange& e) {
  if (!e.active()) return {};
  return std::span<std::uint64_t>(s.sizes).subspan(static_cast<std::size_t>(e.first_block), static_cast<std::size_t>(e.block_count));
}

/// The destinations of a received range as one span, when they are adjacent in memory and each the
/// size of its block (then raw bytes land where they belong); else empty.
template <floating_value T, class Destinations>
std::span<std::byte> adjacent_destinations(const call_scratch& s, const schedule::exchange& e, const Destinations& destination) {
  std::byte* first = nullptr;
  std::size_t bytes = 0;
  for (int b = e.first_block; b < e.first_block + e.block_count; ++b) {
    const std::span<T> dest = destination(b);
    if (dest.size_bytes() != s.sizes[static_cast<std::size_t>(b)] || dest.empty()) return {};
    auto* at = reinterpret_cast<std::byte*>(dest.data());
    if (first == nullptr) first = at;
    if (at != first + bytes) return {};
    bytes += dest.size_bytes();
  }
  return {first, bytes};
}

/// The bytes blocks [first, first + count) take, and whether they lie back to back in memory.
struct block_range {
  std::size_t bytes = 0;
  bool adjacent = true;
};
inline block_range range_of_blocks(const call_scratch& s, int first, int count) {
  block_range range;
  for (int b = first; b < first + count; ++b) {
    const block_location at = s.blocks[static_cast<std::size_t>(b)];
    if (b > first) {
      const block_location before = s.blocks[static_cast<std::size_t>(b - 1)];
      range.adjacent = range.adjacent && at.data == before.data + before.size;
    }
    range.bytes += at.size;
  }
  return range;
}

/// The bytes of blocks [first, first + count) as one span: where they lie, when adjacent, else staged.
inline std::span<const std::byte> contiguous_or_staged(call_scratch& s, int first, int count) {
  const auto [total, adjacent] = range_of_blocks(s, first, count);
  if (adjacent) return {s.blocks[static_cast<std::size_t>(first)].data, total};
  s.staging.resize(total);
  std::size_t offset = 0;
  for (int b = first; b < first + count; ++b) {
    const block_location at = s.blocks[static_cast<std::size_t>(b)];
    if (at.size > 0) std::memcpy(s.staging.data() + offset, at.data, at.size);
    offset += at.size;
  }
  return std::span<const std::byte>(s.staging).first(total);
}

/// Where move_blocks' held blocks went (s.held_offsets, s.blocks[b].size and s.sizes when compressed):
/// the arena bytes they take, the largest bound of those compressed, and whether their bytes are in the
/// arena (else the raw ones are sent from where they are).
struct held_blocks {
  std::size_t end = 0;
  double bound = 0.0;
  bool in_arena = false;
};

/// move_blocks' work on the blocks on host memory: each held block compressed once by the collective's
/// block_codec (under error-feedback keys when `feedback` names an operation), raw ones sent from where
/// they are, raw received ones landing in their destinations where those are adjacent, each kept block
/// decoded. (A staging space's is staged_block_work, detail/staged_block_work.hpp.)
template <codec Codec>
struct host_block_work {
  block_codec<Codec>& coder;
  const Codec& codec;
  std::optional<schedule::collective_op> feedback;

  static constexpr bool lands_in_place = true;

  template <floating_value T>
  void copy_values(std::span<T> to, std::span<const T> from) const {
    std::copy(from.begin(), from.end(), to.begin());
  }

  /// The call's arena with room for `bytes`: the held blocks' streams at its start, the received ranges
  /// behind them.
  static std::span<std::byte> arena(call_context& call, std::size_t bytes) {
    std::vector<std::byte>& arena = call.scratch().arena;
    arena.resize(std::max(arena.size(), bytes));
    return arena;
  }

  /// The bytes of blocks [first, first + count) as one message.
  static std::span<const std::byte> send_bytes(call_context& call, int first, int count) {
    return contiguous_or_staged(call.scratch(), first, count);
  }

  template <floating_value T>
  std::uint64_t peer_size(call_context& call, std::uint64_t bytes, std::size_t values, int peer) const {
    return coder.template peer_size<T>(call, bytes, values, peer);
  }

  template <floating_value T, class Plan>
  held_blocks encode_held(call_context& call, const Plan& plan, int blocks) {
    call_scratch& s = call.scratch();
    held_blocks held{.in_arena = call.compress_now};
    for (int b = 0; b < blocks; ++b) {
      if (!plan.held(b)) continue;
      const auto index = static_cast<std::size_t>(b);
      const std::span<const T> source = plan.source(b);
      if (call.compress_now) {
        const state_key key = feedback ? coder.hop_key(*feedback, 0, b, source.size()) : coder.no_feedback;
        const encoded_block written = coder.template encode<T>(call, codec, source, s.arena, held.end, key);
        held.bound = std::max(held.bound, written.error_bound);
        s.held_offsets[index] = written.offset;  // located once the arena stops growing
        s.blocks[index].size = written.size;
        s.sizes[index] = written.size;
        held.end += written.size;
      } else {
        s.blocks[index] = {reinterpret_cast<const std::byte*>(source.data()), source.size_bytes()};
      }
    }
    return held;
  }

  template <floating_value T, class Plan>
  void decode_kept(call_context& call, const Plan& plan, int blocks) {
    call_scratch& s = call.scratch();
    for (int b = 0; b < blocks; ++b) {
      const std::span<T> dest = plan.destination(b);
      const block_location located = s.blocks[static_cast<std::size_t>(b)];
      if (plan.held(b) || dest.empty() || located.data == reinterpret_cast<const std::byte*>(dest.data())) continue;
      coder.template decode<T>(call, codec, std::span<const std::byte>(located.data, located.size), dest, located.from);
    }
  }
};

/// Moves the blocks of `plan` along S's rounds for `op` (rooted at `root`): the held blocks encoded once
/// by `work`, sizes then bytes, every block this rank keeps decoded once by `work` at the end. Returns
/// the largest bound of the blocks it compressed.
template <class S, floating_value T, class Work, class Plan>
task<double> move_blocks_with(call_context& call, Work& work, schedule::collective_op op, int root, Plan plan) {
  call_scratch& s = call.scratch();
  const int p = call.size(), me = call.rank();
  const int blocks = schedule::blocks_of<S>(op, p);
  const int rounds = S::rounds(op, p);
  const auto index = [](int b) { return static_cast<std::size_t>(b); };
  s.blocks.assign(index(blocks), block_location{});
  s.sizes.assign(index(blocks), 0);
  s.held_offsets.assign(index(blocks), 0);
  // Held blocks: compressed once, back to back at the start of the arena.
  const held_blocks held = work.template encode_held<T>(call, plan, blocks);
  std::size_t end = held.end;
  // Sizes: uncompressed, every rank knows them; compressed, they travel first, over the same schedule
  // with one 8-byte word per block.
  if (call.compress_now) {
    for (int r = 0; r < rounds; ++r) {
      const schedule::step st = S::at(op, p, me, r, root);
      co_await call.exchange(st.send, std::as_bytes(word_range(s, st.send)), st.recv,
                             std::as_writable_bytes(word_range(s, st.recv)), wire::size_tag, 0);
      // Checked before the arena is sized by them (a hostile word must not allocate).
      for (int b = st.recv.first_block; st.recv.active() && b < st.recv.first_block + st.recv.block_count; ++b) {
        s.sizes[index(b)] = work.template peer_size<T>(call, s.sizes[index(b)], plan.values_of(b), st.recv.peer);
      }
    }
  } else {
    for (int b = 0; b < blocks; ++b) s.sizes[index(b)] = plan.values_of(b) * sizeof(T);
  }
  // Where each received message goes: straight into the destinations when they are adjacent in memory
  // and the bytes need no decoding, else behind the held blocks in the arena, which is sized once here
  // so that the locations stay valid.
  s.direct.assign(static_cast<std::size_t>(rounds), std::span<std::byte>{});
  std::size_t arena_bytes = end;
  for (int r = 0; r < rounds; ++r) {
    const schedule::step st = S::at(op, p, me, r, root);
    if (!st.recv.active()) continue;
    if (!call.compress_now && Work::lands_in_place) {
      s.direct[static_cast<std::size_t>(r)] = adjacent_destinations<T>(s, st.recv, plan.destination);
    }
    if (s.direct[static_cast<std::size_t>(r)].empty()) arena_bytes += range_bytes(s, st.recv);
  }
  const std::span<std::byte> arena = work.arena(call, arena_bytes);
  for (int b = 0; held.in_arena && b < blocks; ++b) {
    if (plan.held(b)) s.blocks[index(b)].data = arena.data() + s.held_offsets[index(b)];
  }
  // Then the bytes; a send of blocks not adjacent in memory is staged into one buffer.
  for (int r = 0; r < rounds; ++r) {
    const schedule::step st = S::at(op, p, me, r, root);
    std::span<std::byte> in;
    if (st.recv.active()) {
      in = s.direct[static_cast<std::size_t>(r)];
      if (in.empty()) {
        in = arena.subspan(end, range_bytes(s, st.recv));
        end += in.size();
      }
      std::size_t at = 0;
      for (int b = st.recv.first_block; b < st.recv.first_block + st.recv.block_count; ++b) {
        s.blocks[index(b)] = {in.data() + at, static_cast<std::size_t>(s.sizes[index(b)]), st.recv.peer};
        at += static_cast<std::size_t>(s.sizes[index(b)]);
      }
    }
    std::span<const std::byte> out;
    std::size_t raw = 0;
    if (st.send.active()) {
      out = work.send_bytes(call, st.send.first_block, st.send.block_count);
      for (int b = st.send.first_block; b < st.send.first_block + st.send.block_count; ++b) raw += plan.values_of(b) * sizeof(T);
    }
    co_await call.exchange(st.send, out, st.recv, in, wire::data_tag, raw);
  }
  work.template decode_kept<T>(call, plan, blocks);
  co_return held.bound;
}

/// move_blocks_with on host memory through the collective's block_codec (with error feedback under
/// `feedback`'s keys).
template <class S, codec Codec, floating_value T, class Plan>
task<double> move_blocks(call_context& call, block_codec<Codec>& coder, const Codec& codec, schedule::collective_op op, int root,
                         Plan plan, std::optional<schedule::collective_op> feedback = std::nullopt) {
  host_block_work<Codec> work{coder, codec, feedback};
  co_return co_await move_blocks_with<S, T>(call, work, op, root, std::move(plan));
}

/// alltoall: block b of `in` goes to rank b, each compressed once, its size word first; `n` values a
/// block. This rank's own block is copied.
template <class S, codec Codec, floating_value T>
task<> alltoall_blocks(call_context& call, block_codec<Codec>& coder, std::span<const T> in, std::span<T> out, std::size_t n) {
  call_scratch& s = call.scratch();
  const int p = call.size(), me = call.rank();
  std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)), n,
              out.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(me)));
  const int rounds = S::rounds(schedule::collective_op::alltoall, p);
  for (int r = 0; r < rounds; ++r) {
    const schedule::step st = S::at(schedule::collective_op::alltoall, p, me, r, 0);
    const auto block_in = [&](const schedule::exchange& e) {
      return e.active() ? in.subspan(n * static_cast<std::size_t>(e.first_block), n) : std::span<const T>{};
    };
    const auto block_out = [&](const schedule::exchange& e) {
      return e.active() ? out.subspan(n * static_cast<std::size_t>(e.first_block), n) : std::span<T>{};
    };
    if (!call.compress_now) {  // raw: from the caller's input straight into its output
      co_await call.exchange(st.send, std::as_bytes(block_in(st.send)), st.recv, std::as_writable_bytes(block_out(st.recv)),
                             wire::data_tag, st.send.active() ? n * sizeof(T) : 0);
      continue;
    }
    std::uint64_t out_size = 0, in_size = 0;
    encoded_block sent{};
    if (st.send.active()) {
      sent = coder.template encode<T>(call, coder.codec(), block_in(st.send), s.arena, 0);
      out_size = sent.size;
    }
    co_await call.exchange(st.send, std::as_bytes(std::span(&out_size, st.send.active() ? 1 : 0)), st.recv,
                           std::as_writable_bytes(std::span(&in_size, st.recv.active() ? 1 : 0)), wire::size_tag, 0);
    if (st.recv.active()) in_size = coder.template peer_size<T>(call, in_size, n, st.recv.peer);
    s.staging.resize(static_cast<std::size_t>(in_size));
    co_await call.exchange(st.send, std::span<const std::byte>(s.arena).first(sent.size), st.recv,
                           std::span<std::byte>(s.staging).first(static_cast<std::size_t>(in_size)), wire::data_tag,
                           n * sizeof(T));
    if (st.recv.active()) {
      coder.template decode<T>(call, coder.codec(), std::span<const std::byte>(s.staging).first(static_cast<std::size_t>(in_size)),
                               block_out(st.recv), st.recv.peer);
    }
  }
}

/// The bytes to receive for an alltoallv block whose words say {values, bytes}, where this rank expects
/// `expected` values: a block of another length is a format_error naming the sender (held in verify
/// mode, and the bytes are received all the same, bounded by what the expected block may take: a
/// compressed one what the codec may write, a raw one its values).
template <codec Codec, floating_value T>
std::uint64_t alltoallv_block_size(call_context& call, const block_codec<Codec>& coder, wire::block_words words,
                                   std::size_t expected, bool compressed, int peer) {
  if (words.values != expected) {
    call.fail(format_error("rank " + std::to_string(peer) + " sends a block of " + std::to_string(words.values) +
                           " values where this rank expects " + std::to_string(expected) +
                           " (its send_counts and this rank's recv_counts disagree)"),
              peer);
  }
  if (compressed) return coder.template peer_size<T>(call, words.size_bytes, expected, peer);
  const std::uint64_t raw = expected * sizeof(T);
  if (words.size_bytes != raw) {
    call.fail(format_error("rank " + std::to_string(peer) + " announced " + std::to_string(words.size_bytes) +
                           " raw bytes for " + std::to_string(expected) + " values"),
              peer);
  }
  return std::min(words.size_bytes, raw);
}

/// alltoallv with packed displacements: block b of `in` (send_first[b] .. send_first[b + 1]) goes to
/// rank b, block b of `out` comes from it. Each direction sends its block's length and byte size first,
/// and whether it is compressed follows from the sender's length (at least min_compressed_bytes): ranks
/// whose counts disagree still exchange the same messages (the receiver raises format_error naming the
/// sender) and leave none behind.
template <class S, codec Codec, floating_value T>
task<> alltoallv_blocks(call_context& call, block_codec<Codec>& coder, std::span<const T> in,
                        std::vector<std::size_t> send_first, std::span<T> out, std::vector<std::size_t> recv_first,
                        bool identity_codec) {
  call_scratch& s = call.scratch();
  const auto me = static_cast<std::size_t>(call.rank());
  std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(send_first[me]), send_first[me + 1] - send_first[me],
              out.begin() + static_cast<std::ptrdiff_t>(recv_first[me]));
  const auto compresses = [&](std::size_t values) {
    return !identity_codec && values > 0 && values * sizeof(T) >= call.config().min_compressed_bytes;
  };
  bool any_compressed = false;
  for (int r = 0; r < S::rounds(schedule::collective_op::alltoall, call.size()); ++r) {
    const schedule::step st = S::at(schedule::collective_op::alltoall, call.size(), call.rank(), r, 0);
    const auto to = static_cast<std::size_t>(st.send.peer), from = static_cast<std::size_t>(st.recv.peer);
    const auto sent_values = st.send.active() ? in.subspan(send_first[to], send_first[to + 1] - send_first[to]) : std::span<const T>{};
    const auto received_values = st.recv.active() ? out.subspan(recv_first[from], recv_first[from + 1] - recv_first[from]) : std::span<T>{};
    const bool send_compressed = compresses(sent_values.size());
    call.compress_now = send_compressed;
    const encoded_block sent = coder.template encode<T>(call, coder.codec(), sent_values, s.arena, 0);
    wire::block_words out_words{sent_values.size(), sent.size}, in_words{};
    co_await call.exchange(st.send, std::as_bytes(std::span(&out_words, 1)), st.recv,
                           std::as_writable_bytes(std::span(&in_words, 1)), wire::size_tag, 0);
    const bool recv_compressed = compresses(static_cast<std::size_t>(in_words.values));
    any_compressed = any_compressed || send_compressed || recv_compressed;
    std::uint64_t in_size = 0;
    if (st.recv.active()) {
      in_size = alltoallv_block_size<Codec, T>(call, coder, in_words, received_values.size(), recv_compressed, st.recv.peer);
    }
    s.staging.resize(static_cast<std::size_t>(in_size));
    co_await call.exchange(st.send, std::span<const std::byte>(s.arena).first(sent.size), st.recv,
                           std::span<std::byte>(s.staging).first(static_cast<std::size_t>(in_size)), wire::data_tag,
                           sent_values.size_bytes());
    call.compress_now = recv_compressed;
    coder.template decode<T>(call, coder.codec(), std::span<const std::byte>(s.staging).first(static_cast<std::size_t>(in_size)),
                             received_values, st.recv.peer);
  }
  call.compress_now = any_compressed;
  call.report.compressed = any_compressed;
}

}  // namespace zcoll::detail
