#pragma once
/// The grid a multi-dimensional predictor reads from the data's shape: its fastest two extents, stored
/// in the pipeline's parameter section. Shared by the 2-D/3-D Lorenzo and the interpolation predictors.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll::predict {

/// The fastest two extents of a grid: x (within a row) and y (rows within a plane; 3-D only).
struct grid_extents {
  std::uint64_t nx = 1;
  std::uint64_t ny = 1;
};

/// "{2, 3, 4}".
inline std::string shape_text(std::span<const std::size_t> shape) {
  std::string text = "{";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "}";
}

/// The grid of `count` values that `shape` (slowest first) describes for a predictor of `dims`
/// dimensions: the last extent is nx, and for 3-D the one before it ny (a shorter shape is padded with
/// leading 1s; no shape is one row of `count`). argument_error when the shape does not hold exactly
/// `count` values.
inline grid_extents grid_of_shape(std::span<const std::size_t> shape, std::size_t count, unsigned dims) {
  if (shape.empty()) return {.nx = count > 0 ? count : 1, .ny = 1};
  std::uint64_t product = 1;
  bool overflow = false;
  for (const auto extent : shape) {
    overflow = overflow || (extent != 0 && product > std::numeric_limits<std::uint64_t>::max() / extent);
    product *= extent;
  }
  if (overflow || product != count) {
    throw argument_error("codec_config: shape " + shape_text(shape) + " does not hold the input's " +
                         std::to_string(count) + " values");
  }
  if (count == 0) return {};  // an empty grid: any extents serve
  const auto extent = [&](std::size_t from_last) -> std::uint64_t {
    return from_last < shape.size() ? shape[shape.size() - 1 - from_last] : 1;
  };
  return {.nx = dims >= 2 ? extent(0) : 1, .ny = dims == 3 ? extent(1) : 1};
}

/// Reads nx (and ny for 3-D) as written by write_grid; format_error on a zero extent or a plane of
/// more than 2^62 values.
inline grid_extents read_grid(byte_reader& in, unsigned dims, const char* name) {
  grid_extents g;
  g.nx = in.read<std::uint64_t>("grid row length");
  if (dims == 3) g.ny = in.read<std::uint64_t>("grid rows per plane");
  if (g.nx == 0 || g.ny == 0 || g.nx > (std::uint64_t{1} << 62) / g.ny) {
    throw format_error(std::string(name) + ": grid extents nx " + std::to_string(g.nx) + ", ny " +
                       std::to_string(g.ny) + " are zero or too large");
  }
  return g;
}

inline void write_grid(const grid_extents& g, byte_writer& out, unsigned dims) {
  out.write(g.nx);
  if (dims == 3) out.write(g.ny);
}

}  // namespace zcoll::predict
