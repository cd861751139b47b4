#pragma once
/// zcoll::add: the stream of a + b from the streams of a and b, without decompressing them (hZCCL's
/// homomorphic sum, SC'24). The reduction hops of the compressed collectives use it for op::sum.
///
///     const zcoll::FZLight codec{{.error_bound = zcoll::absolute(1e-3)}};
///     auto a = codec.compress(x), b = codec.compress(y);
///     auto sum = zcoll::add(zcoll::exec::Host{}, codec, a, b);  // decompresses to x' + y'
///
/// What the sum holds, lane by lane (codec/detail/pipeline_add.hpp has how):
/// - a lane coded in both streams: the code qa + qb, decoding to float(qa + qb) · 2eb, within the sum of
///   the two streams' errors of x + y (the bounds add: each input was quantized once, the sum is exact);
/// - a lane stored exactly in either stream (NaN, ±Inf, a value beyond the code range, a fill value), and a
///   lane whose summed code leaves the code range: a' + b' of the decoded values, in T (a fill value counts
///   as the value it is); a NaN is the canonical quiet NaN. The sum declares the fill value fill_a + fill_b
///   (none where either stream declares none), so a lane that is fill in both (land in two fields of one
///   grid) is a fill lane of the sum, a mask bit and no value, as is any lane whose a' + b' is that value;
///   every other such lane is stored exactly;
/// - a chunk stored verbatim in either stream: every lane a' + b', stored verbatim.
///
/// So add(a, b) and add(b, a) are the same bytes, and any order of additions gives the same stream except
/// where exact lanes or the fill value hold finite sums that round (a' + b' + c' in floating point), as any
/// sum of floats; a sum of N streams of fill value f declares N·f, as decompress-then-add gives for those
/// lanes. Streams that cannot be added (another codec, value type, count, chunking, absolute bound or
/// shape) are an argument_error naming what differs; damaged ones a format_error.

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "zcoll/codec/pipeline.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/predict/lorenzo.hpp"
#include "zcoll/predict/none.hpp"
#include "zcoll/quantize/linear.hpp"

namespace zcoll {

namespace detail {
template <class C>
inline constexpr bool addable = false;
template <class P, class E>
inline constexpr bool addable<Pipeline<quantize::Linear, P, E>> =
    encode::encoder<E> && (std::is_same_v<P, predict::None> || std::is_same_v<P, predict::Lorenzo1D> ||
                           std::is_same_v<P, predict::LorenzoGrid<2>> || std::is_same_v<P, predict::LorenzoGrid<3>>);
}  // namespace detail

/// The codecs whose streams add: Pipeline<Linear, P, E> with P one of None, Lorenzo<1>, Lorenzo<2>,
/// Lorenzo<3> (linear in the codes) and E a block encoder (BitShuffle, Raw). FZLight is one.
template <class C>
concept addable_codec = detail::addable<std::remove_cvref_t<C>>;

/// Writes the stream of a + b into `out` (room for codec.max_compressed_size<T>(count)); returns it.
template <class Codec>
std::span<std::byte> add(const exec::Host& exec, const Codec& codec, std::span<const std::byte> a,
                         std::span<const std::byte> b, std::span<std::byte> out) {
  static_assert(addable_codec<Codec>,
                "zcoll::add: only Pipeline<quantize::Linear, P, E> with P = predict::None or predict::Lorenzo<1..3> "
                "and a block encoder (encode::BitShuffle, encode::Raw) adds streams, e.g. zcoll::FZLight; for other "
                "codecs decompress both, add and compress");
  const value_type type = read_stream_header(a).type;
  if (type == value_type_of<float>) return codec.template add_streams<float>(exec, a, b, out);
  if (type == value_type_of<double>) return codec.template add_streams<double>(exec, a, b, out);
  throw argument_error("add: stream a holds " + std::string(to_string(type)) + " values; streams of float or double add");
}

/// A new vector holding the stream of a + b.
template <class Codec>
std::vector<std::byte> add(const exec::Host& exec, const Codec& codec, std::span<const std::byte> a,
                           std::span<const std::byte> b) {
  const stream_header header = read_stream_header(a);
  // A chunk length no pipeline writes is left to add() to refuse, with the error that says why.
  const bool chunked = header.chunk_values >= min_chunk_values && header.chunk_values <= max_chunk_values;
  const std::size_t most = !chunked ? 0
                           : header.type == value_type_of<double>
                               ? Codec::template max_compressed_size<double>(header.count, header.chunk_values)
                               : Codec::template max_compressed_size<float>(header.count, header.chunk_values);
  std::vector<std::byte> sum(most);
  sum.resize(add(exec, codec, a, b, std::span<std::byte>(sum)).size());
  return sum;
}

/// sum = sum + b, accumulating in place: what a reduction over many streams calls.
template <class Codec>
void add_into(const exec::Host& exec, const Codec& codec, std::vector<std::byte>& sum, std::span<const std::byte> b) {
  std::vector<std::byte> next = add(exec, codec, std::span<const std::byte>(sum), b);
  sum.swap(next);
}

}  // namespace zcoll
