#pragma once
/// The per-block steps of the pipeline's chunk format, written once for the host driver
/// (codec/pipeline.hpp) and the CUDA driver (codec/pipeline.cuh): quantizing a block with its exceptions,
/// the code an exception repeats, and the sizes of the exception section's entries. The chunk format
/// itself is documented in codec/pipeline.hpp.

#include <bit>
#include <cstddef>
#include <cstdint>

#include "zcoll/core/bits.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll::detail {

enum class chunk_kind : std::uint8_t { coded = 0, verbatim = 1, coded_with_exceptions = 2 };
enum class exception_type : std::uint8_t { fill_run = 0, masked_block = 1 };

inline constexpr std::size_t exception_entry_header_bytes = 5;
inline constexpr std::size_t masked_block_mask_bytes = 8;

/// Lanes [0, lanes) of a block.
ZCOLL_HOST_DEVICE constexpr block_mask first_lanes(std::size_t lanes) {
  return lanes >= block_values ? ~block_mask{0} : (block_mask{1} << lanes) - 1;
}

/// Exceptions of one block, as the encoder collects them.
struct block_exceptions {
  std::uint16_t block;
  block_mask fill;
  block_mask outliers;
};

/// The lanes of a block that are not coded: values holding the declared fill value, and outliers (values
/// the quantizer cannot code within the bound), disjoint.
struct exception_masks {
  block_mask fill = 0;
  block_mask outliers = 0;

  ZCOLL_HOST_DEVICE block_mask any() const { return fill | outliers; }
};

/// Codes of the first `lanes` (1..32) values at `x`, lanes past them coded from 0, and the block's
/// exception lanes. `fill` is the fill value's bit pattern when `has_fill`.
template <floating_value T, class BlockQuantizer>
ZCOLL_HOST_DEVICE ZCOLL_ALWAYS_INLINE exception_masks quantize_block(const BlockQuantizer& quantizer, bool has_fill,
                                                                     bits_of<T> fill, const T* x, std::size_t lanes,
                                                                     std::int32_t* codes) {
  alignas(64) T padded[block_values];
  if (lanes < block_values) {
    for (std::size_t j = 0; j < block_values; ++j) padded[j] = j < lanes ? x[j] : T(0);
    x = padded;
  }
  const block_mask valid = first_lanes(lanes);
  const block_mask unbounded = quantizer.quantize(x, codes) & valid;
  const block_mask fill_lanes = has_fill ? lanes_with_bits(x, fill) & valid : 0;
  return {fill_lanes, unbounded & ~fill_lanes};
}

/// An exception's code repeats the code before it (`previous_code` at the block's start), so a run of
/// exceptions costs no residual inside or at its start. Filled run by run: a fill mask has few runs
/// (coasts), where a loop over its bits made a chain of store-to-load dependencies.
ZCOLL_HOST_DEVICE inline void repeat_previous_code(std::int32_t* codes, block_mask lanes, std::int32_t previous_code) {
  for (block_mask rest = lanes; rest != 0;) {
    const auto start = static_cast<unsigned>(zcoll::countr_zero(rest));
    const auto length = static_cast<unsigned>(zcoll::countr_one(rest >> start));
    const std::int32_t code = start == 0 ? previous_code : codes[start - 1];
    for (unsigned j = start; j < start + length; ++j) codes[j] = code;
    rest = start + length >= 32 ? 0 : rest & ~((block_mask{1} << (start + length)) - 1);
  }
}

/// A block whose every valid lane is fill, and nothing else: it joins a fill run.
ZCOLL_HOST_DEVICE inline bool all_fill(const exception_masks& e, std::size_t lanes) {
  return e.outliers == 0 && e.fill == first_lanes(lanes);
}

/// Bytes of a masked-block entry of the exception section.
template <floating_value T>
ZCOLL_HOST_DEVICE constexpr std::size_t masked_block_entry_bytes(block_mask outliers) {
  return exception_entry_header_bytes + masked_block_mask_bytes +
         sizeof(T) * static_cast<std::size_t>(zcoll::popcount(outliers));
}

}  // namespace zcoll::detail
