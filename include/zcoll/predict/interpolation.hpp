#pragma once
/// Multilevel interpolation prediction (SZ3's interpolation predictor) on integer codes, a whole-chunk
/// predictor. A chunk is read as the box of grid rows (2-D) or planes (3-D) it touches; level by level,
/// from the coarsest stride down to 1, and at each level axis by axis, every point whose coordinate along
/// that axis is an odd multiple of the stride s is predicted from the points at -3s, -s, +s and +3s
/// along it, which earlier steps have already reconstructed:
///
///     four neighbours  p = (-q[-3s] + 9 q[-s] + 9 q[+s] - q[+3s]) / 16     (cubic)
///     three            p = (-q[-3s] + 6 q[-s] + 3 q[+s]) / 8  or  (3 q[-s] + 6 q[+s] - q[+3s]) / 8
///     -s and +s        p = (q[-s] + q[+s]) / 2                               (linear)
///     one of them      p = that neighbour;  none: p = 0
///
/// each rounded down after adding half the divisor. A level takes the cubic forms only when its bit of
/// `cubic_levels` is set. A neighbour outside the grid or outside the chunk does not exist (chunks stay
/// independent), so a chunk that starts or ends inside a row or a plane predicts its partial rows from
/// what it holds.
///
/// Codes are fine: the quantizer runs at eb / code_scale (16), so a code is a multiple of eb / 8, and
/// predictions are made to that resolution. A point's residual is its distance from the prediction in
/// bins of w codes, rounded from the value itself, r = round((x / step - p) / w), and its reconstruction
/// is p + w r; later points are predicted from reconstructions, as SZ3 predicts from decompressed values.
/// The bin width w is the level's (`level_widths`, 1 to 16 codes: at most 2 eb, so the bound holds at
/// every level). 16 at every level is the plain walk; narrower bins on the coarse levels are SZ3's
/// level-wise error bounds (its interpAlpha and interpBeta): the few points there cost more bits, the
/// many points predicted from them are predicted better, and the reconstruction's error falls (on the
/// Penobscot field at relative 1e-2, widths 16, 11, 8, 6 take the PSNR from 46.02 to 48.35 dB for 6.5 %
/// more bytes). Predicting the codes of x ("dual quantization") would be simpler, but each prediction
/// then carries the rounding of its neighbours' codes: on the ECHAM5 temperature at relative
/// 1e-2 the residuals needed 1.03 bits a value that way and 0.51 this way (whole 2-D slices, Shannon
/// entropy). The price: codes 16 times finer leave 16 times less room below the quantizer's largest
/// code, so values beyond 2^20 bins (f32) are stored exactly.
/// The bound never depends on the prediction: the pipeline dequantizes every reconstruction as the
/// decoder will and checks it against the stream's bound; a lane that misses it is stored exactly.
/// All prediction arithmetic is on 64-bit integers of the 32-bit codes and reconstructions wrap modulo
/// 2^32, so decoding is the same on every compiler and device, and a corrupted stream decodes to
/// garbage values, never to undefined behaviour. The walk hands most points over as runs (evenly spaced
/// points of one step with the same form, detail/interpolation_run.hpp), which AVX-512 builds predict 16
/// at a time in 32-bit lanes where that gives the same values (detail/interpolation_avx512.hpp).
///
/// Stream parameters (the pipeline's parameter section): nx and ny (u64 each; as LorenzoGrid's, 1 for
/// the axes the predictor does not use), the method (u8: prediction_method), `cubic_levels` (u32, bit l
/// for the level of stride 2^l) and `level_widths` (8 x u8, each 1..16: the bin width of the levels of
/// stride 1, 2, ..., 128; coarser levels take the last). The compressor picks the method and the cubic
/// levels by trying candidates() on a sample of the data, and, tuned for rate and distortion
/// (codec_config::tuning), the widths by trying width_candidates() (codec/detail/predictor_choice.hpp).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/predict/detail/interpolation_avx512.hpp"
#include "zcoll/predict/detail/interpolation_run.hpp"
#include "zcoll/predict/grid_extents.hpp"

namespace zcoll::predict {

/// How a chunk is walked: multilevel interpolation with the slowest or the fastest axis first at each
/// level, or Lorenzo prediction value after value (SZ3 too falls back to Lorenzo where it predicts
/// better: the finer bounds on rough fields).
enum class prediction_method : std::uint8_t { interpolation_slowest_first = 0, interpolation_fastest_first = 1, lorenzo = 2 };

/// The levels whose bin width a stream states: those of stride 1 to 2^(width_levels - 1); coarser ones
/// take the last one's.
inline constexpr std::size_t width_levels = 8;

/// The widest bin, in codes (Interpolation::code_scale: 2 eb).
inline constexpr std::uint8_t widest_bin = 16;

/// Bin widths by level, finest first.
using level_width_table = std::array<std::uint8_t, width_levels>;

/// Every level's bins 2 eb wide: the plain walk.
inline constexpr level_width_table uniform_widths = {16, 16, 16, 16, 16, 16, 16, 16};

/// The interpolation predictor's stream parameters.
struct interpolation_parameters {
  grid_extents grid;
  prediction_method method = prediction_method::interpolation_slowest_first;
  /// Bit l set: the interpolation level of stride 2^l uses the cubic forms.
  std::uint32_t cubic_levels = ~std::uint32_t{0};
  /// The bin width, in codes, of the level of stride 2^l (l < width_levels; coarser levels take the
  /// last). The Lorenzo walk bins every point 16 codes wide.
  level_width_table level_widths = uniform_widths;

  std::int64_t width_of_level(unsigned l) const { return level_widths[std::min<std::size_t>(l, width_levels - 1)]; }
};

namespace detail {

/// The box a chunk is read as: up to three axes (slowest first; leading axes of extent 1 when fewer),
/// their strides in the grid, and which of the box's points the chunk holds: those of flat index
/// `offset` to `offset + count - 1`, at chunk index (flat index - offset).
struct interpolation_box {
  std::array<std::uint64_t, 3> extent{1, 1, 1};
  std::array<std::uint64_t, 3> stride{0, 0, 1};
  std::uint64_t offset = 0;
  std::uint64_t count = 0;

  /// The box of the `count` values from grid value `first` on, with `dims` axes of `grid` where the
  /// chunk spans two planes (rows) or more and they cover no more than four times its values (a chunk
  /// short against a row or a plane interpolates along fewer axes: the others would hold only points
  /// outside it).
  static interpolation_box of_chunk(const grid_extents& grid, unsigned dims, std::uint64_t first, std::uint64_t count) {
    interpolation_box b;
    b.count = count;
    b.extent[2] = count;
    if (count == 0) return b;
    // A box of one plane or one row is read as rows or as a line instead: the tighter box.
    const auto fits = [&](std::uint64_t cell, std::uint64_t& offset, std::uint64_t& cells) {
      offset = first % cell;
      cells = (offset + count + cell - 1) / cell;
      return cells >= 2 && cells * cell <= 4 * count;
    };
    std::uint64_t offset = 0, cells = 0;
    if (dims == 3 && fits(grid.nx * grid.ny, offset, cells)) {
      b.extent = {cells, grid.ny, grid.nx};
      b.stride = {grid.nx * grid.ny, grid.nx, 1};
      b.offset = offset;
    } else if (dims >= 2 && fits(grid.nx, offset, cells)) {
      b.extent = {1, cells, grid.nx};
      b.stride = {0, grid.nx, 1};
      b.offset = offset;
    }
    return b;
  }

  /// The number of levels: strides 2^(levels-1) down to 1 reach every point but the origin.
  unsigned levels() const {
    const std::uint64_t longest = std::max({extent[0], extent[1], extent[2]});
    unsigned l = 0;
    while ((std::uint64_t{1} << l) < longest) ++l;
    return l;
  }
};

/// The prediction of the point at coordinate c of a line of the box (grid index base + c' * stride at
/// coordinate c', e points), at level s: cubic from c -+ s and c -+ 3s where all four exist, the
/// three-point forms where one of the outer two is missing, linear from c -+ s, else the one neighbour
/// there is (or 0). A neighbour exists where it lies on the line and in the chunk.
ZCOLL_ALWAYS_INLINE std::int64_t predict_on_line(const interpolation_box& b, const std::uint32_t* recon, std::uint64_t base,
                                                 std::uint64_t stride, std::uint64_t e, std::uint64_t c, std::uint64_t s,
                                                 bool cubic) {
  const std::uint64_t end = b.offset + b.count;
  const auto at = static_cast<std::int64_t>(c), is = static_cast<std::int64_t>(s);
  const auto exists = [&](std::int64_t k) {
    if (k < 0 || static_cast<std::uint64_t>(k) >= e) return false;
    const std::uint64_t v = base + static_cast<std::uint64_t>(k) * stride;
    return v >= b.offset && v < end;
  };
  const auto code = [&](std::int64_t k) -> std::int64_t {
    return static_cast<std::int32_t>(recon[base + static_cast<std::uint64_t>(k) * stride - b.offset]);
  };
  const bool has_a = exists(at - is), has_b = exists(at + is);
  if (has_a && has_b) {
    const std::int64_t qa = code(at - is), qb = code(at + is);
    const bool has_aa = cubic && exists(at - 3 * is), has_bb = cubic && exists(at + 3 * is);
    if (has_aa && has_bb) return (-code(at - 3 * is) + 9 * qa + 9 * qb - code(at + 3 * is) + 8) >> 4;
    if (has_aa) return (-code(at - 3 * is) + 6 * qa + 3 * qb + 4) >> 3;
    if (has_bb) return (3 * qa + 6 * qb - code(at + 3 * is) + 4) >> 3;
    return (qa + qb + 1) >> 1;
  }
  if (has_a) return code(at - is);
  if (has_b) return code(at + is);
  return 0;
}

/// A step along axis 0 or 1 (its lines run across memory): the step's points taken row by row along axis
/// 2 (stride 1) instead, so that consecutive points, and the rows of neighbours they read, are near in
/// memory (the points of a step are independent: any order gives the same values). On each row the
/// points whose neighbours all lie in the chunk are one run (`run(interpolation_run)`); the others, at a
/// chunk's cut, are predicted by predict_on_line (`point(chunk index, prediction)`).
template <class Point, class Run>
void interpolation_step_across(const interpolation_box& b, const std::uint32_t* recon, std::uint64_t s, unsigned axis,
                               unsigned slow, std::uint64_t slow_step, std::uint64_t fast_step, bool cubic, Point point,
                               Run run) {
  const std::uint64_t e = b.extent[axis], stride = b.stride[axis], e1 = b.extent[2];
  const auto offset = static_cast<std::int64_t>(b.offset), end = offset + static_cast<std::int64_t>(b.count);
  // fast_step is s or 2s, a power of two.
  const auto round_up = [&](std::uint64_t c1) { return (c1 + fast_step - 1) & ~(fast_step - 1); };
  // The first c1 (a multiple of fast_step) at which the row starting at grid index `row` is in the chunk,
  // and the first past it (at most e1).
  const auto first_in = [&](std::int64_t row) -> std::uint64_t {
    return row >= offset ? 0 : round_up(static_cast<std::uint64_t>(offset - row));
  };
  const auto first_past = [&](std::int64_t row) -> std::uint64_t {
    return row >= end ? 0 : std::min(round_up(static_cast<std::uint64_t>(end - row)), e1);
  };
  for (std::uint64_t c0 = 0; c0 < b.extent[slow]; c0 += slow_step) {
    const std::uint64_t plane = c0 * b.stride[slow];
    for (std::uint64_t c = s; c < e; c += 2 * s) {
      const auto row = static_cast<std::int64_t>(plane + c * stride);
      const std::uint64_t point_lo = first_in(row), point_hi = first_past(row);
      if (point_lo >= point_hi) continue;
      const bool has_b = c + s < e, has_aa = cubic && c >= 3 * s, has_bb = cubic && c + 3 * s < e;
      const auto is = static_cast<std::int64_t>(s * stride);
      const std::uint64_t fast_lo = std::max(point_lo, first_in(row - (has_aa ? 3 : 1) * is));
      const std::uint64_t fast_hi = std::min(point_hi, first_past(row + (has_bb ? 3 : has_b ? 1 : 0) * is));
      std::uint64_t c1 = point_lo;
      const auto checked = [&](std::uint64_t k) {
        point(static_cast<std::size_t>(row - offset + static_cast<std::int64_t>(k)),
              predict_on_line(b, recon, plane + k, stride, e, c, s, cubic));
      };
      if (fast_lo < fast_hi) {
        for (; c1 < fast_lo; c1 += fast_step) checked(c1);
        const run_form form = has_aa && has_bb ? run_form::cubic
                              : has_aa && has_b ? run_form::without_last
                              : has_bb          ? run_form::without_first
                              : has_b           ? run_form::linear
                                                : run_form::first_only;
        const auto first = row - offset + static_cast<std::int64_t>(fast_lo);
        run(interpolation_run{.first = first,
                              .stride = static_cast<std::int64_t>(fast_step),
                              .count = static_cast<std::int64_t>((fast_hi - fast_lo + fast_step - 1) / fast_step),
                              .form = form,
                              .reach = {-3 * is, -is, is, 3 * is}});
        c1 = fast_hi;
      }
      for (; c1 < point_hi; c1 += fast_step) checked(c1);
    }
  }
}

/// One step of the walk: every point whose coordinate along `axis` is an odd multiple of `s`, whose
/// coordinates along the axes earlier in the level's order are multiples of s and along the later ones
/// multiples of 2s, gets `point(chunk index, prediction)` or is in a run (`run(interpolation_run)`), the
/// prediction made from `recon` (the chunk's reconstructions so far). The points of one step depend only
/// on points of earlier steps.
template <class Point, class Run>
ZCOLL_ALWAYS_INLINE void interpolation_step(const interpolation_box& b, const std::uint32_t* recon, std::uint64_t s,
                                            unsigned axis, const std::array<unsigned, 3>& rank, bool cubic,
                                            Point point, Run run) {
  const std::uint64_t e = b.extent[axis];
  if (e <= s) return;
  unsigned other[2];
  for (unsigned a = 0, k = 0; a < 3; ++a) {
    if (a != axis) other[k++] = a;
  }
  const std::uint64_t step0 = rank[other[0]] < rank[axis] ? s : 2 * s;
  const std::uint64_t step1 = rank[other[1]] < rank[axis] ? s : 2 * s;
  const std::uint64_t stride = b.stride[axis];
  if (axis != 2) {  // other[1] is axis 2, the rows in memory
    interpolation_step_across(b, recon, s, axis, other[0], step0, step1, cubic, point, run);
    return;
  }
  const std::uint64_t end = b.offset + b.count;
  for (std::uint64_t c0 = 0; c0 < b.extent[other[0]]; c0 += step0) {
    for (std::uint64_t c1 = 0; c1 < b.extent[other[1]]; c1 += step1) {
      const std::uint64_t base = c0 * b.stride[other[0]] + c1 * b.stride[other[1]];
      const std::uint64_t last = base + (e - 1) * stride;
      if (base >= end || last < b.offset) continue;  // the line lies outside the chunk
      const bool whole_line = base >= b.offset && last < end;
      std::uint64_t c = s;
      if (whole_line) {
        // The points with every neighbour inside the line, one run: most of them.
        const std::uint64_t first_inner = cubic ? 3 * s : s;
        for (; c < first_inner && c < e; c += 2 * s) {
          point(static_cast<std::size_t>(base - b.offset + c * stride), predict_on_line(b, recon, base, stride, e, c, s, cubic));
        }
        const std::uint64_t reach = cubic ? 3 * s : s;  // the farthest neighbour
        if (c + reach < e) {
          const std::uint64_t count = (e - reach - c + 2 * s - 1) / (2 * s);
          const auto is = static_cast<std::int64_t>(s * stride);
          run(interpolation_run{.first = static_cast<std::int64_t>(base - b.offset + c * stride),
                                .stride = 2 * is,
                                .count = static_cast<std::int64_t>(count),
                                .form = cubic ? run_form::cubic : run_form::linear,
                                .reach = {-3 * is, -is, is, 3 * is}});
          c += 2 * s * count;
        }
      }
      for (; c < e; c += 2 * s) {
        const std::uint64_t v = base + c * stride;
        if (!whole_line && (v < b.offset || v >= end)) continue;
        point(static_cast<std::size_t>(v - b.offset), predict_on_line(b, recon, base, stride, e, c, s, cubic));
      }
    }
  }
}

/// 1 / w for the bin widths w = 1..16 (index 0 unused): the walk's residuals multiply by it.
inline constexpr auto inverse_bin_width = [] {
  std::array<double, widest_bin + 1> inverse{};
  for (std::size_t w = 1; w <= widest_bin; ++w) inverse[w] = 1.0 / static_cast<double>(w);
  return inverse;
}();

/// The walk of a whole chunk in the decoder's order: the origin first (predicted as 0, in the coarsest
/// level's bins), then every step; `point(chunk index, prediction, bin width)` for single points and
/// `run(interpolation_run, bin width)` for runs, whose points the caller predicts (for_each_in_run).
template <class Point, class Run>
void interpolation_walk(const interpolation_box& b, const interpolation_parameters& walk, const std::uint32_t* recon,
                        Point point, Run run) {
  if (b.count == 0) return;
  if (b.offset == 0) point(std::size_t{0}, std::int64_t{0}, walk.width_of_level(b.levels()));
  const std::array<unsigned, 3> order = walk.method == prediction_method::interpolation_slowest_first
                                            ? std::array<unsigned, 3>{0, 1, 2}
                                            : std::array<unsigned, 3>{2, 1, 0};
  std::array<unsigned, 3> rank{};
  for (unsigned k = 0; k < 3; ++k) rank[order[k]] = k;
  for (unsigned l = b.levels(); l-- > 0;) {
    const bool cubic = (walk.cubic_levels >> std::min(l, 31u)) & 1u;
    const std::int64_t width = walk.width_of_level(l);
    const auto at_level = [&](std::size_t i, std::int64_t p) ZCOLL_LAMBDA_ALWAYS_INLINE { point(i, p, width); };
    const auto run_at_level = [&](const interpolation_run& r) ZCOLL_LAMBDA_ALWAYS_INLINE { run(r, width); };
    for (unsigned k = 0; k < 3; ++k) {
      interpolation_step(b, recon, std::uint64_t{1} << l, order[k], rank, cubic, at_level, run_at_level);
    }
  }
}

/// The walk with every point, runs' too, given to `apply(chunk index, prediction, bin width)`.
template <class Apply>
void interpolation_walk(const interpolation_box& b, const interpolation_parameters& walk, const std::uint32_t* recon,
                        Apply apply) {
  interpolation_walk(b, walk, recon, apply, [&](const interpolation_run& r, std::int64_t width) ZCOLL_LAMBDA_ALWAYS_INLINE {
    for_each_in_run(r, recon, [&](std::size_t i, std::int64_t p) ZCOLL_LAMBDA_ALWAYS_INLINE { apply(i, p, width); });
  });
}

/// The Lorenzo walk of a chunk: its points in order, each predicted from its neighbours at -1 along
/// each axis (and the corners between them, with alternating signs), a neighbour before the chunk or
/// outside the grid counting as 0; `apply(chunk index, prediction, bin width 16)`.
template <class Apply>
void lorenzo_walk(const interpolation_box& b, const std::uint32_t* recon, Apply apply) {
  std::uint64_t c[3] = {0, 0, 0};  // the coordinates of the chunk's first point
  {
    std::uint64_t v = b.offset;
    for (int axis = 2; axis >= 0; --axis) {
      c[axis] = v % b.extent[axis];
      v /= b.extent[axis];
    }
  }
  const auto q = [&](std::uint64_t i, std::uint64_t back) -> std::int64_t {
    return back <= i ? static_cast<std::int32_t>(recon[i - back]) : 0;
  };
  const std::uint64_t sx = b.stride[2], sy = b.stride[1], sz = b.stride[0];
  for (std::uint64_t i = 0; i < b.count; ++i) {
    const bool x = c[2] > 0, y = c[1] > 0, z = c[0] > 0;
    std::int64_t p = 0;
    if (x) p += q(i, sx);
    if (y) p += q(i, sy);
    if (x && y) p -= q(i, sx + sy);
    if (z) {
      p += q(i, sz);
      if (x) p -= q(i, sz + sx);
      if (y) p -= q(i, sz + sy);
      if (x && y) p += q(i, sz + sy + sx);
    }
    apply(static_cast<std::size_t>(i), p, std::int64_t{widest_bin});
    if (++c[2] == b.extent[2]) {
      c[2] = 0;
      if (++c[1] == b.extent[1]) {
        c[1] = 0;
        ++c[0];
      }
    }
  }
}

}  // namespace detail

/// The interpolation predictor over the last N axes of the data's shape (N = 1, 2 or 3).
template <unsigned N>
struct Interpolation {
  static_assert(N >= 1 && N <= 3, "Interpolation<N>: N is 1, 2 or 3");

  static constexpr std::uint8_t id = 3 + N;
  static constexpr const char* name = N == 1 ? "interpolation1d" : N == 2 ? "interpolation2d" : "interpolation3d";

  using parameters = interpolation_parameters;
  /// nx, ny, the method byte, the cubic levels and the levels' bin widths.
  static constexpr std::size_t parameter_bytes = 8 + 8 + 1 + 4 + width_levels;

  /// The default walk (interpolation, slowest axis first, cubic at every level) over the grid `shape`
  /// describes; argument_error when the shape does not hold exactly `count` values.
  static parameters make_parameters(std::span<const std::size_t> shape, std::size_t count) {
    parameters p;
    if constexpr (N >= 2) p.grid = grid_of_shape(shape, count, N);
    return p;
  }

  /// The longest default chunk of a volume: its walk fits the core's cache.
  static constexpr std::uint32_t short_chunk_values = 65536;

  /// The chunk length when codec_config::chunk_values is 0, for an encoder that codes chunks of at most
  /// `longest` values (2^20 for the context coder).
  ///
  /// - A volume (a `shape` of three axes or more): the most whole planes (the last two extents) that fit
  ///   in short_chunk_values (or `longest`, if less) and make a multiple of 32; else that limit. A chunk that
  ///   ends inside a plane holds a partial plane that the walk predicts from fewer neighbours, and a 2-D
  ///   walk over a volume's rows predicts across the planes' edges, where the rows on either side lie far
  ///   apart in the field; a chunk edge costs least there. On the ECHAM5 field (17 x 96 x 192) at
  ///   relative 1e-2, chunks of three planes (55296 values) instead of 65536 take HighRatio's ratio from
  ///   54.80 to 56.34 on the 2-D walk and from 34.25 to 40.73 on the 3-D walk. More planes, up to 2^20
  ///   values, change the ratios of the shared volumes by -4.6 % to +20 % and cost 3-27 % of the
  ///   compression speed (fresh pages for a long chunk's buffers on every call, a walk that no longer
  ///   fits the core's cache): not the default.
  /// - A 2-D field (two axes, N >= 2): the whole field where it fits in `longest` values (rounded up to a
  ///   multiple of 32), else `longest`. 65536 values are only 43 rows of the Penobscot field (601 x 1501),
  ///   whose walk then stops its levels across the rows at a stride of 32 and starts again at every
  ///   chunk's edge; the whole field takes HighRatio's ratio at relative 1e-2 from 42.92 to 44.99, and
  ///   compression runs at 0.68 times the speed (docs/performance.md, "Fifth round, third step").
  /// - Otherwise (a 1-D walk, or no shape): 65536 values, or `longest` if less.
  static std::uint32_t default_chunk_values(std::span<const std::size_t> shape, std::uint32_t longest) {
    const std::uint32_t volume_limit = std::min(longest, short_chunk_values);
    if (N < 2 || shape.size() < 2) return volume_limit;
    const std::size_t nx = shape[shape.size() - 1], ny = shape[shape.size() - 2];
    if (shape.size() == 2) {
      const bool fits = nx != 0 && ny != 0 && nx <= longest / ny;
      return fits ? static_cast<std::uint32_t>(padded_to_blocks(nx * ny)) : longest;
    }
    if (nx == 0 || ny == 0 || nx > volume_limit / ny) return volume_limit;
    const std::size_t plane = nx * ny;
    for (std::size_t planes = volume_limit / plane; planes > 0; --planes) {
      if (planes * plane % block_values == 0) return static_cast<std::uint32_t>(planes * plane);
    }
    return volume_limit;
  }

  static void write_parameters(const parameters& p, byte_writer& out) {
    out.write(p.grid.nx);
    out.write(p.grid.ny);
    out.write(static_cast<std::uint8_t>(p.method));
    out.write(p.cubic_levels);
    for (const std::uint8_t w : p.level_widths) out.write(w);
  }

  /// format_error on a zero extent, a plane of more than 2^62 values, an unknown method or a bin width
  /// outside 1..16.
  static parameters read_parameters(byte_reader& in) {
    parameters p;
    p.grid = read_grid(in, 3, name);
    const auto method = in.read<std::uint8_t>("prediction method");
    p.cubic_levels = in.read<std::uint32_t>("interpolation cubic levels");
    if (method > static_cast<std::uint8_t>(prediction_method::lorenzo)) {
      throw format_error(std::string(name) + ": prediction method " + std::to_string(method) + " is not 0, 1 or 2");
    }
    for (std::size_t l = 0; l < width_levels; ++l) {
      p.level_widths[l] = in.read<std::uint8_t>("interpolation level bin width");
      if (p.level_widths[l] == 0 || p.level_widths[l] > widest_bin) {
        throw format_error(std::string(name) + ": the bin width of level " + std::to_string(l) + " is " +
                           std::to_string(p.level_widths[l]) + " codes, expected 1.." + std::to_string(widest_bin));
      }
    }
    p.method = static_cast<prediction_method>(method);
    return p;
  }

  /// The walks the compressor tries on a sample of the data, keeping the one whose residuals cost least:
  /// interpolation with either axis order, cubic or linear, and Lorenzo; every level's bins 16 codes wide.
  static std::array<parameters, 5> candidates(const parameters& p) {
    const auto with = [&](prediction_method m, std::uint32_t cubic) {
      parameters c = p;
      c.method = m;
      c.cubic_levels = cubic;
      return c;
    };
    return {with(prediction_method::interpolation_slowest_first, ~0u), with(prediction_method::interpolation_fastest_first, ~0u),
            with(prediction_method::interpolation_slowest_first, 0u), with(prediction_method::interpolation_fastest_first, 0u),
            with(prediction_method::lorenzo, 0u)};
  }

  /// The bin widths a compressor tuned for rate and distortion then tries on the chosen walk, beside its
  /// own 16 codes at every level: narrower bins on the coarse levels, around SZ3's default (interpAlpha
  /// 1.25, interpBeta 2: 16, 13, 10, 8), gentler and tighter, each level at least half as wide as the
  /// finer one. None for Lorenzo, which bins every point alike. On the shared fields (docs/performance.md,
  /// issue 21) the tighter ones win at relative 1e-2 and uniform bins at 1e-4; for the fewest bytes
  /// uniform bins win on the sample nearly everywhere (a gentle schedule saves 1.5 % at 1e-2 on two
  /// fields, which a sample does not resolve), so the ratio tuning does not try them.
  static std::vector<parameters> width_candidates(const parameters& p) {
    constexpr std::array<level_width_table, 5> schedules = {{{16, 15, 14, 13, 12, 12, 12, 12},
                                                             {16, 14, 12, 10, 10, 10, 10, 10},
                                                             {16, 13, 10, 8, 8, 8, 8, 8},
                                                             {16, 12, 9, 8, 8, 8, 8, 8},
                                                             {16, 11, 8, 6, 6, 6, 6, 6}}};
    std::vector<parameters> c;
    if (p.method == prediction_method::lorenzo) return c;
    for (const level_width_table& widths : schedules) {
      c.push_back(p);
      c.back().level_widths = widths;
    }
    return c;
  }

  /// The quantizer of the codes runs at the stream's bound / code_scale: a code is a multiple of eb / 8,
  /// and a residual a bin of code_scale codes (2 eb).
  static constexpr unsigned code_scale = 16;
  static constexpr unsigned code_scale_bits = 4;
  static_assert(code_scale == 1u << code_scale_bits);
  static_assert(code_scale == widest_bin, "the widest bin is 2 eb: a residual of 0 is within the bound");

  /// Where a chunk lies in the grid: all a chunk's prediction needs.
  struct state {
    state() = default;
    state(const parameters& p, std::uint64_t first_value, std::size_t) : walk(p), first(first_value) {}
    parameters walk;
    std::uint64_t first = 0;
  };

  /// The chunk's residuals into `residuals`, and into `recon` the codes the decoder will reconstruct.
  /// `target(i)` is value i in code steps (x / step, in double: the residual then rounds once), or for a
  /// lane stored exactly any code that keeps the prediction smooth.
  /// A detail::chunk_targets (the pipeline's) walks its runs 16 points a vector where `lanes` and the
  /// build allow; any other callable target a point at a time. Both give the same residuals.
  template <class Target>
  static void forward_chunk(const state& s, std::span<std::int32_t> residuals, std::span<std::uint32_t> recon,
                            const Target& target, detail::walk_lanes lanes = detail::walk_default_lanes) {
    const auto b = detail::interpolation_box::of_chunk(s.walk.grid, N, s.first, residuals.size());
    const auto store = [&](std::size_t i, std::int64_t p, std::int64_t code_r, std::int64_t width) {
      recon[i] = static_cast<std::uint32_t>(p + width * code_r);
      residuals[i] = static_cast<std::int32_t>(code_r);
    };
    // At a bin width of 16 both forms give r = nearbyint((t - p) / code_scale) (halves to even), tie for
    // tie, for |t - p| below 2^26, as every lane the quantizer admits is.
    if (s.walk.method == prediction_method::lorenzo) {
      // Lorenzo's walk is one dependency chain across the chunk (each prediction reads the point just
      // reconstructed), so the rounding is done in integers with only a few operations on the chain. Off
      // it: t in half steps, h = 2 floor(t) + (1 if t has a fraction). On it: m = h - 2p (t - p in half
      // steps, odd when it has a fraction) and r = floor((m + code_scale - 1 + ((m | m / 2 code_scale) & 1))
      // / 2 code_scale): with a fraction no tie is possible and that rounds half up; without one, the
      // parity of m / 2 code_scale moves an exact half to the even side.
      detail::lorenzo_walk(b, recon.data(), [&](std::size_t i, std::int64_t p, std::int64_t) {
        const double t = target(i);
        const double whole = std::floor(t);
        const std::int64_t m = 2 * static_cast<std::int64_t>(whole) + (t != whole ? 1 : 0) - 2 * p;
        store(i, p, (m + (code_scale - 1) + ((m | (m >> (code_scale_bits + 1))) & 1)) >> (code_scale_bits + 1), code_scale);
      });
    } else {
      // The interpolation walks predict a level's points from earlier levels, independent of each other:
      // there fewer operations a point count, and rounding in double takes fewer. The quotient by the
      // width is a product with 1 / width, exact for 16 (a power of two); for another width it may fall
      // on the other side of a half than the exact quotient, leaving the reconstruction a hair more than
      // half a bin away: still well inside 8 codes (the bound), as every other width is at most 15.
      const auto point = [&](std::size_t i, std::int64_t p, std::int64_t width) ZCOLL_LAMBDA_ALWAYS_INLINE {
        const double inverse = detail::inverse_bin_width[static_cast<std::size_t>(width)];
        store(i, p, static_cast<std::int64_t>(std::nearbyint(target_minus(target, i, static_cast<double>(p)) * inverse)), width);
      };
      const auto run = [&](const detail::interpolation_run& r, std::int64_t width) {
        const auto at_width = [&](std::size_t i, std::int64_t p) ZCOLL_LAMBDA_ALWAYS_INLINE { point(i, p, width); };
#if ZCOLL_HAS_AVX512
        if constexpr (detail::is_chunk_targets<Target>) {
          if (lanes == detail::walk_lanes::vector && detail::run_in_vectors(r)) {
            detail::forward_run_avx512(r, target, residuals.data(), recon.data(), width,
                                       detail::inverse_bin_width[static_cast<std::size_t>(width)], at_width);
            return;
          }
        }
#endif
        detail::for_each_in_run(r, recon.data(), at_width);
      };
      detail::interpolation_walk(b, s.walk, recon.data(), point, run);
    }
    (void)lanes;
  }

  /// The classes of level_classes(): the walk's finest level, the next, and the coarser ones.
  static constexpr unsigned level_class_count = 3;

  /// Each of the chunk's points' level class, for a chunk encoder that codes them in contexts of their
  /// own (encode::ContextAns): 0 for the walk's finest level (stride 1: a coordinate odd), 1 for stride 2,
  /// 2 for the coarser levels (the origin: the coarsest); 0 for every point of the Lorenzo walk. At a coarse bound
  /// the finest level's residuals are nearly all 0 and the coarser levels' are not: on the Penobscot
  /// field at relative 2e-2, 97.7 % zeros at stride 1, 86 % at 2, 74 % at 4 (docs/performance.md).
  static void level_classes(const state& s, std::span<std::uint8_t> levels) {
    if (levels.empty()) return;
    if (s.walk.method == prediction_method::lorenzo) {
      std::fill(levels.begin(), levels.end(), std::uint8_t{0});
      return;
    }
    const auto b = detail::interpolation_box::of_chunk(s.walk.grid, N, s.first, levels.size());
    // A point's level is the lowest set bit of its coordinates, ORed: row by row, the row's two
    // coordinates ORed once (no division a point).
    const std::uint64_t e2 = b.extent[2], e1 = b.extent[1];
    std::uint64_t c2 = b.offset % e2, c1 = (b.offset / e2) % e1, c0 = b.offset / (e2 * e1);
    for (std::size_t j = 0; j < levels.size();) {
      const std::uint64_t row = c0 | c1;
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(e2 - c2, levels.size() - j));
      for (std::size_t k = 0; k < n; ++k) {
        const std::uint64_t o = row | (c2 + k);
        levels[j + k] = static_cast<std::uint8_t>(((o & 1u) == 0) + ((o & 3u) == 0));
      }
      j += n;
      c2 = 0;
      if (++c1 == e1) {
        c1 = 0;
        ++c0;
      }
    }
    // The origin, whose coordinates have no bit set, is of the walk's coarsest level.
    if (b.offset == 0) levels[0] = static_cast<std::uint8_t>(std::min(b.levels(), level_class_count - 1));
  }

  /// The chunk's residuals back into the encoder's reconstructions (fine codes), in place.
  /// Runs of the interpolation walks go 16 points a vector where `lanes` and the build allow (the same
  /// codes as a point at a time).
  static void inverse_chunk(const state& s, std::span<std::uint32_t> values,
                            detail::walk_lanes lanes = detail::walk_default_lanes) {
    const auto b = detail::interpolation_box::of_chunk(s.walk.grid, N, s.first, values.size());
    const auto point = [&](std::size_t i, std::int64_t p, std::int64_t width) ZCOLL_LAMBDA_ALWAYS_INLINE {
      values[i] = static_cast<std::uint32_t>(p + width * static_cast<std::int32_t>(values[i]));
    };
    if (s.walk.method == prediction_method::lorenzo) {
      detail::lorenzo_walk(b, values.data(), point);
      return;
    }
    const auto run = [&](const detail::interpolation_run& r, std::int64_t width) {
      const auto at_width = [&](std::size_t i, std::int64_t p) ZCOLL_LAMBDA_ALWAYS_INLINE { point(i, p, width); };
#if ZCOLL_HAS_AVX512
      if (lanes == detail::walk_lanes::vector && detail::run_in_vectors(r)) {
        detail::inverse_run_avx512(r, values.data(), width, at_width);
        return;
      }
#endif
      detail::for_each_in_run(r, values.data(), at_width);
    };
    detail::interpolation_walk(b, s.walk, values.data(), point, run);
    (void)lanes;
  }

 private:
  /// target(i) - p, rounded as the vector runs round it where the target is the pipeline's.
  template <class Target>
  ZCOLL_ALWAYS_INLINE static double target_minus(const Target& target, std::size_t i, double p) {
    if constexpr (detail::is_chunk_targets<Target>) {
      return target.target_minus(i, p);
    } else {
      return target(i) - p;
    }
  }
};

}  // namespace zcoll::predict
