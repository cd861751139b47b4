#pragma once
/// One chunk of a pipeline stream (codec/pipeline.hpp has the chunk format), coded and decoded on the
/// host: quantize and predict block after block, encode the blocks or the whole chunk, append the
/// exception section, or store the chunk verbatim when that is not smaller; and back.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcoll/codec/detail/exception_section.hpp"
#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/core/barrier.hpp"
#include "zcoll/core/bits.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/predict/concepts.hpp"
#include "zcoll/predict/detail/interpolation_run.hpp"

namespace zcoll::detail {

/// One worker's room for a chunk's residuals (R: int32 or uint32), allocated at its first use and not
/// zeroed (each residual is written before it is read): a chunk, or the whole input rounded up to a
/// block when that is less, so that a short input does not pay for a long chunk's room (HighRatio on a
/// 32 KB field decompresses 5-10 % faster for it; docs/performance.md).
template <class R>
class residual_scratch {
 public:
  residual_scratch(std::size_t count, std::uint32_t chunk_values)
      : values_(std::min<std::size_t>(chunk_values, padded_to_blocks(count))) {}
  R* get() {
    if (!room_) room_ = std::make_unique_for_overwrite<R[]>(values_);
    return room_.get();
  }

 private:
  std::size_t values_;
  std::unique_ptr<R[]> room_;
};

/// The chunk functions of Pipeline<Q, P, E>; the quantizer comes in as its block_quantizer<T> object.
template <class P, class E>
struct pipeline_chunk {
  /// Chunk encoders code a whole chunk with the stream's model; block encoders block by block.
  static constexpr bool codes_chunks = encode::chunk_encoder<E>;
  /// Chunk predictors predict a whole chunk's codes after the last block is quantized.
  static constexpr bool predicts_chunks = predict::chunk_predictor<P>;
  /// The encoder codes each residual in the contexts of its level class, which the predictor gives
  /// (encode::ContextAns with predict::Interpolation).
  static constexpr bool codes_levels =
      codes_chunks && requires { E::uses_levels; } &&
      requires(const typename P::state& s, std::span<std::uint8_t> levels) { P::level_classes(s, levels); };

  /// The level classes of a chunk's `count` residuals, written into `room` (chunk_values bytes), where
  /// the encoder codes them; empty otherwise.
  static std::span<const std::uint8_t> levels_of(const typename P::state& s, std::size_t count, std::uint8_t* room) {
    if constexpr (codes_levels) {
      static_assert(P::level_class_count <= E::level_classes, "the predictor has more level classes than the coder");
      const std::span<std::uint8_t> levels(room, count);
      P::level_classes(s, levels);
      return levels;
    } else {
      (void)s, (void)count, (void)room;
      return {};
    }
  }

  /// Whether the stream's model codes residuals in their level classes' contexts (ContextAns's choice):
  /// only then are the classes computed (levels_of); else the coder takes every residual as class 0.
  template <class Model>
  static bool uses_levels(const Model& model) {
    if constexpr (codes_levels) {
      return model.uses_levels;
    } else {
      (void)model;
      return false;
    }
  }

  /// The per-chunk state of quantizing and predicting block after block, and the exceptions found.
  struct coder_state {
    explicit coder_state(typename P::state p) : predictor(std::move(p)) {}
    typename P::state predictor;
    std::int32_t previous_code = 0;
    std::vector<block_exceptions> exceptions;  // in block order
  };

  /// Quantizes and predicts block `b` of a chunk into 32 residuals (lanes past the chunk's end are 0),
  /// recording the block's exceptions; an exception's code repeats the code before it.
  template <floating_value T, class BlockQuantizer>
  ZCOLL_ALWAYS_INLINE static void residuals_of_block(const BlockQuantizer& quantizer,
                                                     const std::optional<bits_of<T>>& fill, std::span<const T> values,
                                                     std::size_t b, coder_state& state, std::int32_t* residuals) {
    alignas(64) std::int32_t codes[block_values];
    const std::size_t first = b * block_values;
    const std::size_t lanes = std::min(block_values, values.size() - first);
    const exception_masks e =
        quantize_block<T>(quantizer, fill.has_value(), fill.value_or(0), values.data() + first, lanes, codes);
    if (e.any() != 0) {
      repeat_previous_code(codes, e.any(), state.previous_code);
      state.exceptions.push_back({static_cast<std::uint16_t>(b), e.fill, e.outliers});
    }
    state.previous_code = codes[block_values - 1];
    if constexpr (predicts_chunks) {
      std::copy_n(codes, block_values, residuals);
    } else {
      P::forward(state.predictor, codes, residuals);
    }
    for (std::size_t j = lanes; j < block_values; ++j) residuals[j] = 0;
  }

  /// The quantizer of the codes: the stream's own, or for a chunk predictor one at its bound / code_scale.
  template <class BlockQuantizer>
  static BlockQuantizer code_quantizer(const BlockQuantizer& quantizer) {
    if constexpr (predicts_chunks) {
      return BlockQuantizer(quantizer.guaranteed_bound() / P::code_scale);
    } else {
      return quantizer;
    }
  }

  /// The bound a chunk predictor's stream states for a requested `eb`: the largest at most `eb` whose
  /// code step (2 eb / code_scale, for the linear quantizer) is a value of T, so that a reconstruction
  /// code_scale / 2 codes from a value at a code (a tie of the walk's rounding; a zero is always at a
  /// code) lies exactly the bound away, not a rounding of the step beyond it. On f32 it is below `eb` by
  /// less than 2^-24 of it; on f64 it is `eb`.
  template <floating_value T>
  static double bound_on_code_grid(double eb) {
    constexpr double steps_per_bound = P::code_scale / 2.0;
    const double step = eb / steps_per_bound;
    T t = static_cast<T>(step);
    if (static_cast<double>(t) > step) t = std::nextafter(t, T(0));
    return static_cast<double>(t) * steps_per_bound;
  }

  /// Whether chunks may be coded: the stream's quantizer and the quantizer of its codes have a step.
  template <class BlockQuantizer>
  static bool codes_usable(const BlockQuantizer& quantizer) {
    return quantizer.usable() && (!predicts_chunks || code_quantizer(quantizer).usable());
  }

  /// The residuals of a whole chunk into `residuals` (room for the chunk rounded up to 32 values). With
  /// `squared_error`, a chunk predictor adds there the squared error of the chunk's reconstruction (the
  /// lanes stored exactly have none).
  template <floating_value T, class BlockQuantizer>
  static void residuals_of_chunk(const BlockQuantizer& quantizer, const std::optional<bits_of<T>>& fill,
                                 std::span<const T> values, coder_state& state, std::int32_t* residuals,
                                 double* squared_error = nullptr) {
    const std::size_t blocks = (values.size() + block_values - 1) / block_values;
    const BlockQuantizer codes = code_quantizer(quantizer);
    for (std::size_t b = 0; b < blocks; ++b) {
      residuals_of_block(codes, fill, values, b, state, residuals + b * block_values);
    }
    if constexpr (predicts_chunks) {
      // The prediction's targets: each value in code steps, or for a lane stored exactly its code (which
      // repeats the code before it).
      std::vector<block_mask> exact(blocks, 0);
      for (const block_exceptions& e : state.exceptions) exact[e.block] = e.fill | e.outliers;
      const predict::detail::chunk_targets<T> target{.values = values.data(),
                                                     .steps_per_unit = 1.0 / static_cast<double>(codes.step()),
                                                     .exact = exact.data(),
                                                     .blocks = blocks,
                                                     .codes = residuals};
      const auto reconstructed = std::make_unique_for_overwrite<std::uint32_t[]>(values.size());
      P::forward_chunk(state.predictor, std::span<std::int32_t>(residuals, values.size()),
                       std::span<std::uint32_t>(reconstructed.get(), values.size()), target);
      store_lanes_beyond_bound(quantizer, codes, values, reconstructed.get(), state, squared_error);
    }
  }

  /// A chunk predictor's reconstructions, dequantized as the decoder will, checked against the stream's
  /// bound: each lane that misses it (rounding at the limits of T's precision) becomes an outlier, stored
  /// exactly; its residual stays, so the decoder predicts its neighbours from the same reconstruction.
  /// The quantizer's check is conservative (in T, below the bound by T's rounding); a lane it rejects is
  /// checked again exactly (zcoll::exactly_within), because the walk's rounding puts some values exactly
  /// the bound from their reconstruction: a value at a code (a zero always is) whose prediction lies half
  /// a bin away; bound_on_code_grid makes that distance the stated bound, not a rounding beyond it.
  /// Without the two, those values were outliers: 1436 on the Penobscot field at relative 1e-2, 926 of
  /// them in its first chunk, where 14420 of 65536 values are zeros.
  /// With `squared_error`, adds there the squared error of the lanes not stored exactly.
  template <floating_value T, class BlockQuantizer>
  static void store_lanes_beyond_bound(const BlockQuantizer& quantizer, const BlockQuantizer& codes,
                                       std::span<const T> values, const std::uint32_t* reconstructed,
                                       coder_state& state, double* squared_error) {
    const std::size_t blocks = (values.size() + block_values - 1) / block_values;
    std::vector<block_exceptions> merged;  // the exceptions found so far and the new outliers, in block order
    std::size_t next = 0;
    bool missed_any = false;
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t first = b * block_values;
      const std::size_t lanes = std::min(block_values, values.size() - first);
      // Only a short last block's tail is zeroed, so that the whole-block checks below read defined
      // lanes: zeroing both arrays for every block was half of this pass's time (`rep stos`, Zen 3).
      alignas(64) T x[block_values];
      alignas(64) T x_prime[block_values];
      std::copy_n(values.data() + first, lanes, x);
      codes.dequantize(reconstructed + first, x_prime, lanes);
      if (lanes < block_values) {
        std::fill(x + lanes, x + block_values, T{0});
        std::fill(x_prime + lanes, x_prime + block_values, T{0});
      }
      zcoll::detail::materialize(x_prime);
      block_exceptions e{static_cast<std::uint16_t>(b), 0, 0};
      if (next < state.exceptions.size() && state.exceptions[next].block == b) e = state.exceptions[next++];
      const block_mask valid = lanes == block_values ? ~block_mask{0} : (block_mask{1} << lanes) - 1;
      block_mask missed = ~quantizer.lanes_within(x, x_prime) & valid & ~(e.fill | e.outliers);
      for (block_mask rejected = missed; rejected != 0; rejected &= rejected - 1) {
        const int j = zcoll::countr_zero(rejected);
        if (exactly_within(x[j], x_prime[j], quantizer.guaranteed_bound())) missed &= ~(block_mask{1} << j);
      }
      missed_any = missed_any || missed != 0;
      e.outliers |= missed;
      if (squared_error != nullptr) *squared_error += squared_error_of_lanes(x, x_prime, valid & ~(e.fill | e.outliers));
      if ((e.fill | e.outliers) != 0) merged.push_back(e);
    }
    if (missed_any) state.exceptions = std::move(merged);
  }

  template <floating_value T>
  static double squared_error_of_lanes(const T* x, const T* x_prime, block_mask lanes) {
    double sum = 0.0;
    for (std::size_t j = 0; j < block_values; ++j) {
      const double e = static_cast<double>(x[j]) - static_cast<double>(x_prime[j]);
      sum += ((lanes >> j) & 1u) != 0 ? e * e : 0.0;
    }
    return sum;
  }

  /// Writes one chunk at `out` (room for 1 + values.size() * sizeof(T) bytes) with a block encoder;
  /// returns its size.
  template <floating_value T, class BlockQuantizer>
  static std::size_t compress_chunk(const BlockQuantizer& quantizer, const std::optional<bits_of<T>>& fill,
                                    std::span<const T> values, std::byte* out, coder_state& state) {
    static_assert(!predicts_chunks, "a chunk predictor codes with a chunk encoder");
    if (!quantizer.usable()) return write_verbatim(values, out);

    // The coded form is kept only when it is smaller than the verbatim one.
    std::byte* const limit = out + 1 + values.size_bytes() - 1;
    std::byte* cursor = out + 1;
    const std::size_t blocks = (values.size() + block_values - 1) / block_values;
    alignas(64) std::int32_t residuals[block_values];
    for (std::size_t b = 0; b < blocks; ++b) {
      residuals_of_block(quantizer, fill, values, b, state, residuals);
      if (static_cast<std::size_t>(limit - cursor) >= E::max_block_bytes) {
        cursor += E::encode_block(residuals, cursor);
      } else {  // near the end of the room: encode aside, keep it only if it still fits
        std::byte aside[E::max_block_bytes];
        const std::size_t size = E::encode_block(residuals, aside);
        if (size > static_cast<std::size_t>(limit - cursor)) return write_verbatim(values, out);
        std::memcpy(cursor, aside, size);
        cursor += size;
      }
    }
    return finish_chunk(std::span<const block_exceptions>(state.exceptions), values, out, cursor, limit);
  }

  /// Writes one chunk at `out` with a chunk encoder, given scratch for the chunk's residuals.
  template <floating_value T, class BlockQuantizer, class Model>
  static std::size_t compress_chunk(const BlockQuantizer& quantizer, const std::optional<bits_of<T>>& fill,
                                    std::span<const T> values, std::byte* out, coder_state& state,
                                    const Model& model, std::int32_t* residuals) {
    if (!codes_usable(quantizer)) return write_verbatim(values, out);
    residuals_of_chunk(quantizer, fill, values, state, residuals);
    std::vector<std::uint8_t> level_room;
    std::span<const std::uint8_t> levels;
    if (uses_levels(model)) {
      level_room.resize(values.size());
      levels = levels_of(state.predictor, values.size(), level_room.data());
    }
    return code_chunk(values, out, model, residuals, std::span<const block_exceptions>(state.exceptions), levels);
  }

  /// Writes one chunk at `out` with a chunk encoder from its residuals, exceptions and level classes
  /// (levels_of).
  template <floating_value T, class Model>
  static std::size_t code_chunk(std::span<const T> values, std::byte* out, const Model& model,
                                const std::int32_t* residuals, std::span<const block_exceptions> exceptions,
                                std::span<const std::uint8_t> levels) {
    std::byte* const limit = out + values.size_bytes();
    const std::span<const std::int32_t> chunk_residuals(residuals, values.size());
    const std::span<std::byte> room(out + 1, static_cast<std::size_t>(limit - out - 1));
    std::optional<std::size_t> size;
    if constexpr (codes_levels) {
      size = E::encode_chunk(model, chunk_residuals, room, levels);
    } else {
      (void)levels;
      size = E::encode_chunk(model, chunk_residuals, room);
    }
    if (!size) return write_verbatim(values, out);
    return finish_chunk(exceptions, values, out, out + 1 + *size, limit);
  }

  /// Sets the chunk's kind and appends its exception section, or falls back to verbatim when the coded
  /// form (ending at `cursor`) and the section do not fit before `limit`.
  template <floating_value T>
  static std::size_t finish_chunk(std::span<const block_exceptions> exceptions, std::span<const T> values,
                                  std::byte* out, std::byte* cursor, std::byte* limit) {
    if (exceptions.empty()) {
      out[0] = static_cast<std::byte>(chunk_kind::coded);
      return static_cast<std::size_t>(cursor - out);
    }
    const std::size_t exception_bytes = exception_section_bytes<T>(exceptions, values.size());
    if (exception_bytes > static_cast<std::size_t>(limit - cursor)) return write_verbatim(values, out);
    out[0] = static_cast<std::byte>(chunk_kind::coded_with_exceptions);
    write_exception_section(cursor, exceptions, values);
    return static_cast<std::size_t>(cursor - out) + exception_bytes;
  }

  template <floating_value T>
  static std::size_t write_verbatim(std::span<const T> values, std::byte* out) {
    out[0] = static_cast<std::byte>(chunk_kind::verbatim);
    if (!values.empty()) std::memcpy(out + 1, values.data(), values.size_bytes());
    return 1 + values.size_bytes();
  }

  /// Decodes one chunk into `values`; `residuals` is scratch for a chunk encoder's whole chunk and
  /// `level_room` for its level classes (chunk_values bytes, where codes_levels and the model uses them;
  /// else unread, and may be null).
  template <floating_value T, class BlockQuantizer, class Model>
  static void decompress_chunk(const BlockQuantizer& quantizer, const std::optional<T>& fill, const Model& model,
                               typename P::state state, std::uint32_t* residuals, std::uint8_t* level_room,
                               std::span<const std::byte> chunk, std::span<T> values, std::size_t chunk_number) {
    const auto where = [&] { return "chunk " + std::to_string(chunk_number) + ": "; };
    byte_reader in(chunk);
    const auto kind = static_cast<chunk_kind>(in.read<std::uint8_t>("chunk kind"));
    if (kind == chunk_kind::verbatim) {
      if (chunk.size() != 1 + values.size_bytes()) {
        throw format_error(where() + "verbatim chunk of " + std::to_string(chunk.size()) + " bytes holds " +
                           std::to_string(values.size()) + " values");
      }
      std::memcpy(values.data(), chunk.data() + 1, values.size_bytes());
      return;
    }
    if (kind != chunk_kind::coded && kind != chunk_kind::coded_with_exceptions) {
      throw format_error(where() + "unknown chunk kind " + std::to_string(static_cast<unsigned>(kind)));
    }
    if (!codes_usable(quantizer)) {
      throw format_error(where() + "coded chunk in a stream whose error bound admits no quantizer step");
    }
    const BlockQuantizer codes_quantizer = code_quantizer(quantizer);
    alignas(64) std::uint32_t block_codes[block_values];
    alignas(64) T tail[block_values];
    std::size_t offset = 1;
    const std::size_t blocks = (values.size() + block_values - 1) / block_values;
    if constexpr (codes_chunks) {
      const std::span<std::uint32_t> chunk_residuals(residuals, values.size());
      if constexpr (codes_levels) {
        // The classes are given where the stream's model has their contexts (ContextAns's choice).
        const auto levels = uses_levels(model) ? levels_of(state, values.size(), level_room) : std::span<const std::uint8_t>{};
        offset += E::decode_chunk(model, chunk.subspan(1), chunk_residuals, levels);
      } else {
        (void)level_room;
        offset += E::decode_chunk(model, chunk.subspan(1), chunk_residuals);
      }
      std::fill(residuals + values.size(), residuals + blocks * block_values, 0u);
      if constexpr (predicts_chunks) P::inverse_chunk(state, std::span<std::uint32_t>(residuals, values.size()));
    }
    for (std::size_t b = 0; b < blocks; ++b) {
      std::uint32_t* codes = block_codes;
      if constexpr (codes_chunks) {
        codes = residuals + b * block_values;
      } else {
        offset += E::decode_block(chunk.subspan(offset), codes);
      }
      if constexpr (!predicts_chunks) P::inverse(state, codes);
      const std::size_t first = b * block_values;
      const std::size_t lanes = std::min(block_values, values.size() - first);
      if (lanes == block_values) {
        codes_quantizer.dequantize(codes, values.data() + first, block_values);
      } else {
        codes_quantizer.dequantize(codes, tail, lanes);
        std::copy_n(tail, lanes, values.data() + first);
      }
    }
    if (kind == chunk_kind::coded_with_exceptions) {
      offset += read_exception_section(chunk.subspan(offset), fill, values, where);
    }
    if (offset != chunk.size()) {
      throw format_error(where() + std::to_string(chunk.size() - offset) + " bytes left after the last block");
    }
  }

  /// Applies the exception section at the front of `section`; returns its size. Kept out of line: inlined
  /// into decompress_chunk it made the block loop of HighRatio-2d decompression 20 % slower (measured
  /// side by side), on streams with no exception at all.
  template <floating_value T, class Where>
  [[gnu::noinline]] static std::size_t read_exception_section(std::span<const std::byte> section, const std::optional<T>& fill,
                                            std::span<T> values, const Where& where) {
    const auto read = apply_exception_section(section.data(), section.size(), fill.has_value(),
                                                      fill.value_or(T(0)), values.data(), values.size());
    if (read.fault != exception_fault::none) {
      throw format_error(where() + "exception section, entry " + std::to_string(read.entry) + ": " +
                         to_string(read.fault));
    }
    return read.bytes;
  }
};

}  // namespace zcoll::detail
