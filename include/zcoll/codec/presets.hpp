#pragma once
/// The codec combinations the papers use, by name.

#include "zcoll/backend/zstd.hpp"
#include "zcoll/codec/pipeline.hpp"
#include "zcoll/codec/hybrid.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/encode/context_ans.hpp"
#include "zcoll/encode/huffman.hpp"
#include "zcoll/encode/raw.hpp"
#include "zcoll/encode/vector_lz.hpp"
#include "zcoll/predict/interpolation.hpp"
#include "zcoll/predict/lorenzo.hpp"
#include "zcoll/predict/none.hpp"
#include "zcoll/quantize/exact.hpp"
#include "zcoll/quantize/linear.hpp"

namespace zcoll {

/// fZ-light (ZCCL paper §3.3): linear quantization, 1-D Lorenzo on the codes, bit-plane blocks of 32.
using FZLight = Pipeline<quantize::Linear, predict::Lorenzo1D, encode::BitShuffle>;

/// The DLRM compression paper's vector-LZ (§III-D): linear quantization, no prediction (a predictor turns
/// equal embedding vectors into different residuals, its "false prediction"), then whole-vector matches
/// in a window of up to 255 vectors. Needs shape = {rows, dim} and chunk_values a multiple of dim.
using EmbeddingLZ = Pipeline<quantize::Linear, predict::None, encode::VectorLZ>;

/// The DLRM compression paper's entropy coder (§III-D): linear quantization, no prediction, canonical
/// Huffman over the codes with one code table per stream (chunks still decode in parallel).
using EmbeddingHuffman = Pipeline<quantize::Linear, predict::None, encode::Huffman>;

/// The DLRM paper's hybrid: per table, Huffman or vector-LZ, whichever the speed-up model prefers.
using EmbeddingHybrid = Hybrid<EmbeddingHuffman, EmbeddingLZ>;

/// The high-ratio preset for scientific fields, SZ3's recipe on integer codes: multilevel interpolation
/// or Lorenzo prediction, whichever predicts a sample of the data better (predict/interpolation.hpp),
/// the residuals coded by rANS under nine contexts of the two residuals before each, times three of the
/// walk's level where that saves bytes (encode/context_ans.hpp), and zstd over each chunk's bytes. The bound holds exactly and chunks code
/// and decode in parallel. N = 1, 2 or 3: the predictor's axes, the last N extents of
/// codec_config::shape (chunks default to 65536 values, or for N = 2 and 3 to the most whole planes of
/// the shape that fit, when they make a multiple of 32). Compare them on your data: on the shared fields
/// 2-D is best on most, 3-D on the smooth volumes (docs/performance.md, "HighRatio against SZ3").
template <unsigned N>
using HighRatio = Pipeline<quantize::Linear, predict::Interpolation<N>, encode::ContextAns, backend::Zstd>;

/// The first HighRatio (before the interpolation predictor), kept for comparison: N-D Lorenzo on the
/// codes and Huffman, no back end.
template <unsigned N>
using LorenzoHuffman = Pipeline<quantize::Linear, predict::Lorenzo<N>, encode::Huffman>;

/// No compression: every chunk stored verbatim in the zcoll stream format. The uncompressed baseline of
/// every comparison, and what Compressed<Schedule, Identity> moves.
using Identity = Pipeline<quantize::Exact, predict::None, encode::Raw>;

}  // namespace zcoll
