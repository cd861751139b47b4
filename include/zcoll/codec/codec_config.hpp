#pragma once
/// The settings every codec reads: {.error_bound = zcoll::relative(1e-4), .chunk_values = 4096}. A codec's
/// own settings come beside it (TopK's topk_config, Hybrid's hybrid_config, VectorLZ's match window).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "zcoll/core/error_bound.hpp"

namespace zcoll {

/// What a codec that picks its predictor's settings on a sample of the data picks them for (HighRatio:
/// the interpolation walk's axis order, cubic levels and the levels' bin widths,
/// codec/detail/predictor_choice.hpp). SZ3's counterpart is its tuning for ratio; QoZ's, its tuning target.
enum class tuning_target : std::uint8_t {
  /// The fewest bytes within the bound: the highest ratio at the bound.
  ratio,
  /// The least squared error for the bytes spent: the trial with the least error + λ bits, λ = 2 ln 2 ×
  /// (2 eb)² / 12 (the slope of a uniform quantizer's rate-distortion curve at the bound). At a coarse
  /// bound it narrows the bins of the coarse levels: more bytes at the same bound and a higher PSNR, a
  /// better point on the ratio-PSNR curve (docs/performance.md, issue 21).
  rate_distortion,
};

struct codec_config {
  /// The pointwise bound: zcoll::absolute(eb) or zcoll::relative(fraction of the value range).
  /// The default, absolute(0), is lossless.
  bound error_bound = {};
  /// Values per independently coded chunk: a multiple of 32 in [32, 65536], or 0 for the codec's
  /// default. Pipelines default to 4096 values (16 KiB of f32 keep a chunk and its codes in L1; see
  /// docs/performance.md for the chunk-length sweep), and to 65536 with 2-D or 3-D Lorenzo prediction,
  /// which restarts at each chunk and needs many rows in one; 2-D and 3-D interpolation (HighRatio<2>,
  /// <3>) to the most whole planes of `shape` within that (predict::Interpolation::default_chunk_values).
  /// config() reports the length in use.
  std::uint32_t chunk_values = 0;
  /// A value that marks missing data (land in an ocean field, say): stored exactly, at almost no cost,
  /// and left out of the range a relative bound refers to. It means the value of the data's type nearest
  /// to it (-1e34 on f32 data is -9.99999979e33, what NetCDF's -1e34f is; core/fill_value.hpp), which the
  /// stream and the report state; matched bit for bit (so NaN works, and -0.0 is not 0.0).
  std::optional<double> fill_value = std::nullopt;
  /// The data's extents, slowest first: {rows, dim} for a batch of embedding vectors, {nz, ny, nx} for a
  /// 3-D field; empty for a flat sequence. Row stages (row-wise quantizers, vector-LZ) take the last
  /// extent as the row length and need a count that is a multiple of it; Lorenzo<2> and Lorenzo<3> use
  /// the last two or three extents.
  std::vector<std::size_t> shape = {};
  /// What the predictor's settings are picked for (tuning_target); codecs that pick none ignore it.
  tuning_target tuning = tuning_target::ratio;
};

/// The row length `shape` gives (its last extent), or 0 for a flat sequence.
inline std::size_t row_length(const codec_config& config) { return config.shape.empty() ? 0 : config.shape.back(); }

}  // namespace zcoll
