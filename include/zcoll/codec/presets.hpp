#pragma once
/// The codec combinations the papers use, by name.

#include "zcoll/codec/pipeline.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/raw.hpp"
#include "zcoll/predict/lorenzo.hpp"
#include "zcoll/predict/none.hpp"
#include "zcoll/quantize/exact.hpp"
#include "zcoll/quantize/linear.hpp"

namespace zcoll {

/// fZ-light (ZCCL paper §3.3): linear quantization, 1-D Lorenzo on the codes, bit-plane blocks of 32.
using FZLight = Pipeline<quantize::Linear, predict::Lorenzo1D, encode::BitShuffle>;

/// No compression: every chunk stored verbatim in the zcoll stream format. The uncompressed baseline of
/// every comparison, and what Compressed<Schedule, Identity> moves.
using Identity = Pipeline<quantize::Exact, predict::None, encode::Raw>;

}  // namespace zcoll
