#pragma once
/// 2-D and 3-D Lorenzo prediction in integer space (SZ's Lorenzo predictor on codes, as cuSZ does it):
/// a code is predicted from its neighbours at -1 along each axis,
///
///     2-D: p = q[x-1] + q[y-1] - q[x-1, y-1]
///     3-D: p = q[x-1] + q[y-1] + q[z-1] - q[x-1, y-1] - q[x-1, z-1] - q[y-1, z-1] + q[x-1, y-1, z-1]
///
/// and the residual is q - p. A neighbour outside the grid (x, y or z = 0) or outside the chunk (chunks
/// stay independent) counts as 0, so the first row of a grid or of a chunk falls back to 1-D and the
/// first plane to 2-D, as SZ's zero padding does at a field's faces. Arithmetic wraps modulo 2^32, so a
/// corrupted stream decodes to garbage values, never to undefined behaviour.
///
/// The grid's extents are stream parameters (the pipeline's parameter section): nx (the fastest extent)
/// and, for 3-D, ny, each a u64. They come from the data's shape (codec_config::shape), slowest first:
/// the last two or three extents; a shape of fewer extents is padded with leading 1s, and no shape means one row of `count`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <string>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/predict/grid_extents.hpp"

namespace zcoll::predict {

template <unsigned N>
struct LorenzoGrid {
  static_assert(N == 2 || N == 3, "LorenzoGrid<N>: N is 2 or 3 (1-D Lorenzo is predict::Lorenzo1D)");

  static constexpr std::uint8_t id = N;
  static constexpr const char* name = N == 2 ? "lorenzo2d" : "lorenzo3d";

  using parameters = grid_extents;
  /// nx, and ny for 3-D.
  static constexpr std::size_t parameter_bytes = 8 * (N - 1);

  /// The grid of `count` values that `shape` (slowest first) describes; argument_error when the shape
  /// does not hold exactly `count` values.
  static parameters make_parameters(std::span<const std::size_t> shape, std::size_t count) {
    return grid_of_shape(shape, count, N);
  }

  static void write_parameters(const parameters& p, byte_writer& out) { write_grid(p, out, N); }

  /// format_error on a zero extent, or a plane of more than 2^62 values.
  static parameters read_parameters(byte_reader& in) { return read_grid(in, N, name); }

  /// The chunk's codes so far, after `pad` zeros that stand for every neighbour before the chunk, and
  /// the grid position of the next value.
  class state {
   public:
    state() : state(parameters{}, 0, 0) {}
    /// The state at the start of a chunk of at most `chunk_values` values whose first value is number
    /// `first` of the grid.
    state(const parameters& grid, std::uint64_t first, std::size_t chunk_values)
        : nx_(grid.nx), ny_(N == 3 ? grid.ny : std::numeric_limits<std::uint64_t>::max()) {
      // A neighbour further back than the chunk's length is never inside it: clamp the offsets so the
      // zeros before the chunk stay as short as the chunk.
      const std::uint64_t limit = chunk_values + 1;
      row_ = static_cast<std::size_t>(std::min<std::uint64_t>(nx_, limit));
      plane_ = N == 3 ? static_cast<std::size_t>(std::min<std::uint64_t>(nx_ * grid.ny, limit)) : 0;
      pad_ = (N == 3 ? plane_ : 0) + row_ + 1;
      // Only the zeros before the chunk need a value: each block is written before it is read.
      history_ = std::make_unique_for_overwrite<std::uint32_t[]>(pad_ + chunk_values + block_values);
      std::fill_n(history_.get(), pad_, 0u);
      x_ = first % nx_;
      y_ = N == 3 ? (first / nx_) % ny_ : first / nx_;
    }

    /// Residuals of the next 32 codes.
    ZCOLL_ALWAYS_INLINE void forward(const std::int32_t* ZCOLL_RESTRICT codes, std::int32_t* ZCOLL_RESTRICT residuals) {
      std::uint32_t* h = next();
      // The left neighbour is (h + j)[-1], not h[j - 1]: at j = 0, j - 1 wraps to SIZE_MAX and the pointer
      // arithmetic with it is undefined (UBSan's pointer-overflow check, met by the fuzz harness).
      for (std::size_t j = 0; j < block_values; ++j) h[j] = static_cast<std::uint32_t>(codes[j]);
      if (interior_block()) {
        for (std::size_t j = 0; j < block_values; ++j) {
          residuals[j] = static_cast<std::int32_t>(h[j] - (h + j)[-1] - behind(h, j, ~0u, ~0u));
        }
        advance_interior();
        return;
      }
      std::uint32_t left[block_values], up[block_values];
      lane_masks(left, up);
      for (std::size_t j = 0; j < block_values; ++j) {
        residuals[j] = static_cast<std::int32_t>(h[j] - ((h + j)[-1] & left[j]) - behind(h, j, left[j], up[j]));
      }
      position_ += block_values;
    }

    /// Codes from the residuals in `values`, in place.
    ZCOLL_ALWAYS_INLINE void inverse(std::uint32_t* values) {
      std::uint32_t* h = next();
      if (interior_block()) {
        // Every term but the left neighbour lies at least a row back, outside this block (nx > 32):
        // those terms first, vectorized, then the running sum along the row.
        std::uint32_t partial[block_values];
        for (std::size_t j = 0; j < block_values; ++j) partial[j] = values[j] + behind(h, j, ~0u, ~0u);
        std::uint32_t running = h[-1];
        for (std::size_t j = 0; j < block_values; ++j) {
          running += partial[j];
          h[j] = running;
          values[j] = running;
        }
        advance_interior();
        return;
      }
      // Near a row's start, or rows shorter than a block: neighbours may lie in this block, one by one.
      std::uint32_t left[block_values], up[block_values];
      lane_masks(left, up);
      for (std::size_t j = 0; j < block_values; ++j) {
        h[j] = values[j] + ((h + j)[-1] & left[j]) + behind(h, j, left[j], up[j]);
        values[j] = h[j];
      }
      position_ += block_values;
    }

   private:
    std::uint32_t* next() { return history_.get() + pad_ + position_; }

    /// The prediction's terms other than the left neighbour: those a row or a plane back. `left` and
    /// `up` are all-ones masks when the value has a left or an upper neighbour in the grid.
    ZCOLL_ALWAYS_INLINE std::uint32_t behind(const std::uint32_t* h, std::size_t j, std::uint32_t left,
                                            std::uint32_t up) const {
      const std::uint32_t* row = h + j - row_;
      std::uint32_t p = (row[0] - (row[-1] & left)) & up;
      if constexpr (N == 3) {
        const std::uint32_t* back = h + j - plane_;
        const std::uint32_t* back_row = back - row_;
        p += back[0] - (back[-1] & left) - ((back_row[0] - (back_row[-1] & left)) & up);
      }
      return p;
    }

    /// Whether all 32 values of the next block have a left and an upper neighbour in the grid.
    bool interior_block() const { return x_ != 0 && x_ + block_values <= nx_ && y_ != 0; }

    void advance_interior() {
      position_ += block_values;
      x_ += block_values;
      if (x_ == nx_) next_row();
    }

    void next_row() {
      x_ = 0;
      if (++y_ == ny_) y_ = 0;
    }

    /// Per lane of the next block: all ones when the value has a left (x > 0) or upper (y > 0)
    /// neighbour in the grid, and the grid position moved past the block.
    void lane_masks(std::uint32_t* left, std::uint32_t* up) {
      for (std::size_t j = 0; j < block_values; ++j) {
        left[j] = x_ != 0 ? ~0u : 0u;
        up[j] = y_ != 0 ? ~0u : 0u;
        if (++x_ == nx_) next_row();
      }
    }

    std::uint64_t nx_, ny_;
    std::size_t row_ = 0, plane_ = 0, pad_ = 0;
    std::unique_ptr<std::uint32_t[]> history_;
    std::size_t position_ = 0;
    std::uint64_t x_ = 0, y_ = 0;
  };

  ZCOLL_ALWAYS_INLINE static void forward(state& s, const std::int32_t* ZCOLL_RESTRICT codes,
                                          std::int32_t* ZCOLL_RESTRICT residuals) {
    s.forward(codes, residuals);
  }

  ZCOLL_ALWAYS_INLINE static void inverse(state& s, std::uint32_t* values) { s.inverse(values); }
};

}  // namespace zcoll::predict
