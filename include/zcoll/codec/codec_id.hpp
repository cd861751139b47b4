#pragma once
/// Codec ids, byte 5 of the stream header: which codec wrote a stream. Pipelines have bit 7 set; the
/// codecs with a layout of their own (casts, row-wise quantizers, sparsifiers) take ids below 0x80,
/// listed here so no two collide.

#include <cstdint>

#include "zcoll/core/config.hpp"

namespace zcoll {

/// 1 qqq pp ee: quantizer id in bits 4-6, predictor id in bits 2-3, encoder id in bits 0-1.
ZCOLL_HOST_DEVICE constexpr std::uint8_t pipeline_codec_id(std::uint8_t quantizer, std::uint8_t predictor, std::uint8_t encoder) {
  return static_cast<std::uint8_t>(0x80 | ((quantizer & 0x7) << 4) | ((predictor & 0x3) << 2) | (encoder & 0x3));
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
