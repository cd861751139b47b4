#pragma once
/// block_codec<Codec>: how a collective compresses and decompresses its blocks — the codec value, the
/// codec of the reduction hops (its bound made absolute), and the state the codec learns from call to
/// call (error-feedback residuals per hop, TopK's threshold, Hybrid's choice). It lives as long as the
/// collective; the calls lend it their context for timing and faults.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/keyed_state.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/schedule/concepts.hpp"

namespace zcoll::detail {

/// A compressed (or raw) block written into a buffer: where, how long, and the bound its values got.
struct encoded_block {
  std::size_t offset = 0;
  std::size_t size = 0;
  double error_bound = 0.0;
};

template <codec Codec>
class block_codec {
 public:
  /// Error feedback per hop: the codec carries each hop's residual to the same hop of the next call.
  static constexpr bool carries_feedback = stateful_codec<Codec> && requires(const Codec& c) { c.inner(); };
  /// Compression without error feedback (no hop_key is all ones: the operation's bits are small).
  static constexpr state_key no_feedback = ~state_key{0};

  explicit block_codec(Codec codec) : codec_(std::move(codec)) {}

  const Codec& codec() const { return codec_; }
  /// The row length of a row-wise codec (its shape's last extent), 0 for the others: every block a
  /// call compresses must be a whole number of rows.
  std::size_t row_length() const { return zcoll::row_length(codec_.config()); }

  /// The codec every hop of a reduction uses, with the one absolute bound `eb`. Kept from call to call
  /// while eb does not change; the residuals of error feedback restart when it changes, as the global
  /// range of a relative bound can make it do; a codec that takes no error bound (row-wise, top-K) is
  /// the collective's own.
  const Codec& hop_codec(double eb) {
    if constexpr (!Codec::uses_error_bound) {
      return codec_;
    } else {
      if (!hop_codec_ || hop_codec_bound_ != eb) {
        hop_codec_.emplace(codec_.with_error_bound(absolute(eb)));
        hop_codec_bound_ = eb;
        if constexpr (carries_feedback) state_.clear();
      }
      return *hop_codec_;
    }
  }

  /// Compresses `values` (raw bytes when the call travels uncompressed) at `at` in `buffer` (grown as
  /// needed). A codec that refuses this rank's values (argument_error): in verify mode the fault is held
  /// and an empty block goes out, which its receivers find damaged, so the schedule still completes.
  template <floating_value T>
  encoded_block encode(call_context& call, const Codec& codec, std::span<const T> values, std::vector<std::byte>& buffer,
                       std::size_t at, state_key key = no_feedback) {
    const auto start = clock::now();
    encoded_block block{.offset = at};
    if (call.compress_now) {
      std::size_t written = 0;
      const bool compressed = call.guarded(-1, [&] {
        buffer.resize(std::max(buffer.size(), at + codec.template max_compressed_size<T>(values.size())));
        const auto out = std::span<std::byte>(buffer).subspan(at);
        if constexpr (carries_feedback) {
          // Feedback only where a key names the hop; data movement compresses each block once, plainly.
          written = key != no_feedback
                        ? codec.compress(call.exec(), state_.at(key), values, out).size()
                        : zcoll::compress(call.exec(), codec.inner(), state_.at(no_feedback).inner, values, out).size();
        } else {
          // A codec that learns (TopK's threshold, Hybrid's choice) keeps one state for the collective.
          written = zcoll::compress(call.exec(), codec, state_.at(no_feedback), values, out).size();
        }
      });
      buffer.resize(std::max(buffer.size(), at + written));
      const auto stream = std::span<const std::byte>(buffer).subspan(at, written);
      block.size = written;
      block.error_bound = !compressed ? 0.0 : key != no_feedback ? sent_bound(stream, key) : read_stream_header(stream).error_bound;
    } else {
      buffer.resize(std::max(buffer.size(), at + values.size_bytes()));
      if (!values.empty()) std::memcpy(buffer.data() + at, values.data(), values.size_bytes());
      block.size = values.size_bytes();
    }
    call.report.compress_s += seconds_since(start);
    return block;
  }

  /// Decodes one received block, sent by rank `from`, into `out`; a block that does not hold out.size()
  /// values of T is a format_error, whatever the peer claimed, and every format_error names `from`.
  template <floating_value T>
  void decode(call_context& call, const Codec& codec, std::span<const std::byte> bytes, std::span<T> out, int from) {
    try {
      decode_block<T>(call, codec, bytes, out);
    } catch (const error& e) {  // whatever a decoder raises on a peer's bytes, they are what is wrong
      call.fail(format_error("block from rank " + std::to_string(from) + ": " + call_context::without_prefix(e.what())), from);
    }
  }

  /// A peer's size word for a compressed block of `values` values: never more than the codec may write
  /// (a larger one is a damaged or hostile message, refused before anything is allocated for it). Returns
  /// the bytes to receive: `bytes`, or in verify mode, with the fault held, the most the codec may write
  /// (the message then fails as one of another size, and the schedule goes on).
  template <floating_value T>
  std::uint64_t peer_size(call_context& call, std::uint64_t bytes, std::size_t values, int peer) const {
    std::size_t most = 0;  // stays 0 when the codec refuses the length (held in verify mode)
    call.guarded(-1, [&] { most = codec_.template max_compressed_size<T>(values); });
    if (bytes > most) {
      call.fail(format_error("rank " + std::to_string(peer) + " announced a compressed block of " + std::to_string(bytes) +
                             " bytes for " + std::to_string(values) + " values; at most " + std::to_string(most) +
                             " are possible"),
                peer);
      return most;
    }
    return bytes;
  }

  /// One residual per hop of a reduction: the operation, the round, the first block and the length,
  /// the same from one call to the next on a tensor of the same length.
  static state_key hop_key(schedule::collective_op kind, int round, int first_block, std::size_t count) {
    return (static_cast<state_key>(kind) << 56) ^ (static_cast<state_key>(round) << 44) ^
           (static_cast<state_key>(first_block) << 32) ^ static_cast<state_key>(count);
  }

  /// The residual of segment k of a hop: segment 0 keeps the hop's own key (one stream per hop when
  /// pipelining is off); the others are spread by a multiplicative hash.
  static state_key segment_key(state_key hop, std::size_t k) {
    return hop ^ (static_cast<state_key>(k) * 0x9E3779B97F4A7C15ull);
  }

 private:
  template <floating_value T>
  void decode_block(call_context& call, const Codec& codec, std::span<const std::byte> bytes, std::span<T> out) {
    const auto start = clock::now();
    if (call.compress_now) {
      const stream_header header = read_stream_header(bytes);
      if (header.count != out.size()) {
        throw format_error("collective block holds " + std::to_string(header.count) + " values, " +
                           std::to_string(out.size()) + " expected");
      }
      codec.decompress(call.exec(), bytes, out);
      call.max_block_bound = std::max(call.max_block_bound, header.error_bound);
    } else {
      if (bytes.size() != out.size_bytes()) {
        throw format_error("collective block of " + std::to_string(bytes.size()) + " bytes, " +
                           std::to_string(out.size_bytes()) + " expected");
      }
      if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    }
    call.report.decompress_s += seconds_since(start);
  }

  /// The bound of one hop's compression, from the stream it wrote: its header's (the codec's bound on
  /// what it compressed). With error feedback the codec compressed x + e, where e is the previous call's
  /// error at this hop, bounded by that call's header: |x - decoded| <= both bounds added.
  double sent_bound(std::span<const std::byte> stream, state_key key) {
    const double stated = read_stream_header(stream).error_bound;
    if constexpr (carries_feedback) {
      auto [entry, inserted] = last_feedback_bound_.try_emplace(key, 0.0);
      const double carried = entry->second;
      entry->second = stated;
      return stated + carried;
    } else {
      return stated;
    }
  }

  Codec codec_;
  std::optional<Codec> hop_codec_;  // the reductions' codec with an absolute bound (hop_codec)
  double hop_codec_bound_ = 0.0;
  codec_state<Codec> state_;        // what the codec learns: residuals per hop key, a threshold, a choice
  std::map<state_key, double> last_feedback_bound_;  // with error feedback: each hop's previous bound
};

}  // namespace zcoll::detail
