#pragma once
/// Codec ids, byte 5 of the stream header: which pipeline wrote a stream.

#include <cstdint>

namespace zcoll {

/// 1 qqq pp ee: quantizer id in bits 4-6, predictor id in bits 2-3, encoder id in bits 0-1.
constexpr std::uint8_t pipeline_codec_id(std::uint8_t quantizer, std::uint8_t predictor, std::uint8_t encoder) {
  return static_cast<std::uint8_t>(0x80 | ((quantizer & 0x7) << 4) | ((predictor & 0x3) << 2) | (encoder & 0x3));
}

}  // namespace zcoll
