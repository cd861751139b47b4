#pragma once
/// Codec ids, header bytes 5 and 8-11 (core/stream_header.hpp): which codec wrote a stream. A pipeline
/// writes kind 0x80 and a byte per stage; the codecs with a layout of their own (casts, row-wise
/// quantizers, sparsifiers, Hybrid's tag) take kinds below 0x80, listed here so no two collide.

#include <concepts>
#include <cstdint>
#include <utility>

#include "zcoll/backend/none.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll {

/// The id of a stage (quantizer, predictor or encoder) as its header byte. An id that does not fit in a
/// byte is a compile error, never an alias of another stage.
template <auto Id>
consteval std::uint8_t stage_id_byte() {
  static_assert(std::integral<decltype(Id)>, "a stage id is an integer");
  static_assert(std::in_range<std::uint8_t>(Id), "a stage id must fit in its stream-header byte (0..255)");
  return static_cast<std::uint8_t>(Id);
}

/// The codec id of the pipeline of stages Q, P, E and the lossless back end B.
template <class Q, class P, class E, class B = backend::None>
consteval codec_id pipeline_codec_id() {
  return codec_id{pipeline_codec_kind, stage_id_byte<Q::id>(), stage_id_byte<P::id>(), stage_id_byte<E::id>(),
                  stage_id_byte<B::id>()};
}

/// The codec id of a codec with a layout of its own: kind `Kind`, below 0x80.
template <auto Kind>
consteval codec_id own_layout_codec_id() {
  static_assert(std::integral<decltype(Kind)> && Kind > 0 && Kind < pipeline_codec_kind,
                "a codec with a layout of its own has a kind in [1, 0x7F]");
  return codec_id{static_cast<std::uint8_t>(Kind), 0, 0, 0, backend_none};
}

namespace codec_ids {
inline constexpr std::uint8_t cast_fp16 = 0x01;
inline constexpr std::uint8_t cast_bf16 = 0x02;
inline constexpr std::uint8_t cast_fp8_e4m3 = 0x03;
inline constexpr std::uint8_t cast_fp8_e5m2 = 0x04;
inline constexpr std::uint8_t rowwise_int8 = 0x10;
inline constexpr std::uint8_t rowwise_int4 = 0x11;
inline constexpr std::uint8_t rowwise_int2 = 0x12;
inline constexpr std::uint8_t topk = 0x20;
inline constexpr std::uint8_t row_topk = 0x21;
inline constexpr std::uint8_t hybrid = 0x30;
}  // namespace codec_ids

}  // namespace zcoll
