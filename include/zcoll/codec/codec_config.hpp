#pragma once
/// The numbers a codec is configured with: {.error_bound = zcoll::relative(1e-4), .chunk_values = 4096}.

#include <cstdint>
#include <optional>

#include "zcoll/core/error_bound.hpp"

namespace zcoll {

struct codec_config {
  /// The pointwise bound: zcoll::absolute(eb) or zcoll::relative(fraction of the value range).
  /// The default, absolute(0), is lossless.
  bound error_bound = {};
  /// Values per independently coded chunk: a multiple of 32 in [32, 65536]. 4096 values (16 KiB of
  /// f32) keep a chunk and its codes in L1; see docs/performance.md for the chunk-length sweep.
  std::uint32_t chunk_values = 4096;
  /// A value that marks missing data (land in an ocean field, say): stored exactly, at almost no cost,
  /// and left out of the range a relative bound refers to. Must be exactly representable in the data's
  /// type; matched bit for bit (so NaN works, and -0.0 is not 0.0).
  std::optional<double> fill_value = std::nullopt;
};

}  // namespace zcoll
