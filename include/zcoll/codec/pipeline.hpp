#pragma once
/// Pipeline<Quantizer, Predictor, Encoder, Backend>: the error-bounded codec, chunked for threads and
/// pipelining.
///
/// A stream is the header and chunk size index of core/stream_header.hpp, then the chunks. A chunk holds
/// `chunk_values` values (the last one fewer) and is one of:
///
/// | byte 0 (kind)            | then                                                                  |
/// |--------------------------|-----------------------------------------------------------------------|
/// | 0 = coded                | one encoded block per 32 values (the encoder's block format)          |
/// | 1 = verbatim             | the values themselves, little-endian                                  |
/// | 2 = coded, exceptions    | the encoded blocks, then the exception section below                  |
/// | kind + 0x80 (0 or 2)     | a coded chunk's bytes after its kind, packed by the lossless back end |
///
/// (With a chunk encoder "the encoded blocks" are the encoder's chunk format.) A lossless back end
/// (backend/, the stream header's byte 11) packs a coded chunk when that makes it smaller.
///
/// The exception section (the lanes stored exactly: fill values and values the quantizer cannot code
/// within the bound) is described, written and read in codec/detail/exception_section.hpp, the one
/// implementation the host and the CUDA driver share.
///
/// An exception's code repeats the code before it, so a smooth predictor sees no jump and a run of fill
/// values costs one byte per 32 values in the encoded blocks. A chunk whose coded form would not be
/// smaller than its values is stored verbatim, so a stream never exceeds max_compressed_size.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "zcoll/backend/concepts.hpp"
#include "zcoll/backend/none.hpp"
#include "zcoll/core/checked_size.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/codec_id.hpp"
#include "zcoll/codec/detail/chunk_residuals.hpp"
#include "zcoll/codec/detail/pipeline_add.hpp"
#include "zcoll/codec/detail/pipeline_chunk.hpp"
#include "zcoll/codec/detail/predictor_choice.hpp"
#include "zcoll/codec/detail/pipeline_block.hpp"
#include "zcoll/codec/span_codec.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/config.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/lanes.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_range.hpp"
#include "zcoll/core/value_type.hpp"
#include "zcoll/encode/concepts.hpp"
#include "zcoll/predict/concepts.hpp"
#include "zcoll/quantize/concepts.hpp"

namespace zcoll {


/// The codec: Q quantizes values to integer codes, P turns codes into residuals, E packs residuals, and
/// the lossless back end B (none by default) packs each coded chunk's bytes.
///
///     zcoll::FZLight codec{{.error_bound = zcoll::relative(1e-4)}};
///     std::vector<std::byte> stream(codec.max_compressed_size<float>(data.size()));
///     auto written = codec.compress(zcoll::exec::Host{.threads = 2}, data, stream);
///     codec.decompress(zcoll::exec::Host{}, written, restored);
template <class Q, class P, class E, class B = backend::None>
class Pipeline : public span_codec<Pipeline<Q, P, E, B>> {
  static_assert(quantize::quantizer<Q>,
                "Pipeline: Q must model zcoll::quantize::quantizer (id, name, uses_error_bound and a "
                "block_quantizer<T> with usable, guaranteed_bound, quantize and dequantize)");
  static_assert(predict::predictor<P> || predict::chunk_predictor<P>,
                "Pipeline: P must model zcoll::predict::predictor (id, name, state, forward and inverse) or "
                "zcoll::predict::chunk_predictor (forward_chunk, inverse_chunk and stream parameters)");
  static_assert(!predict::chunk_predictor<P> || encode::chunk_encoder<E>,
                "Pipeline: a whole-chunk predictor (predict::Interpolation) needs a chunk encoder such as "
                "encode::Huffman: a block encoder codes each block before the chunk's residuals exist");
  static_assert(encode::encoder<E> || encode::chunk_encoder<E>,
                "Pipeline: E must model zcoll::encode::encoder (id, name, max_block_bytes, encode_block and "
                "decode_block) or zcoll::encode::chunk_encoder (statistics, model, encode_chunk, decode_chunk)");
  static_assert(backend::lossless_backend<B>,
                "Pipeline: B must model zcoll::backend::lossless_backend (backend::None or backend::Zstd)");

 public:
  using quantizer_type = Q;
  using predictor_type = P;
  using encoder_type = E;
  using backend_type = B;
  /// Whether a lossless back end packs the chunks.
  static constexpr bool packs_chunks = B::id != backend_none;

  /// Chunk encoders code a whole chunk with a model the stream carries in its parameter section.
  static constexpr bool codes_chunks = encode::chunk_encoder<E>;
  /// 2-D and 3-D predictors and chunk predictors carry their parameters there too, before the model.
  static constexpr bool predictor_has_parameters =
      predict::parameterized_predictor<P> || predict::chunk_predictor<P>;
  static constexpr bool has_parameter_section = codes_chunks || predictor_has_parameters;
  static constexpr std::size_t max_parameter_section_bytes = [] {
    std::size_t bytes = has_parameter_section ? 4 : 0;
    if constexpr (predictor_has_parameters) bytes += P::parameter_bytes;
    if constexpr (codes_chunks) bytes += E::max_model_bytes;
    return bytes;
  }();

  static constexpr codec_id id = pipeline_codec_id<Q, P, E, B>();
  /// Whether config().error_bound matters (false for the lossless Exact quantizer).
  static constexpr bool uses_error_bound = Q::uses_error_bound;
  /// Whether config().tuning matters: the chunk predictor has settings to pick on a sample (HighRatio).
  static constexpr bool uses_tuning = predict::chunk_predictor<P>;

  /// "linear+lorenzo1d+bitshuffle", "linear+interpolation2d+huffman+zstd".
  static std::string name() {
    std::string n(Q::name);  // appended in steps: GCC 12 warns falsely (-Warray-bounds) on a chain of +
    n += '+';
    n += P::name;
    n += '+';
    n += E::name;
    if constexpr (packs_chunks) {
      n += '+';
      n += B::name;
    }
    return n;
  }

  /// The longest chunk this pipeline codes: its encoder's (encode::max_chunk_values_of: 2^20 values with
  /// the context coder, 65536 with the others).
  static constexpr std::uint32_t longest_chunk_values = encode::max_chunk_values_of<E>;

  /// The chunk length when the config leaves it 0: 4096 values, or for a 2-D or 3-D predictor, whose rows
  /// and planes must fit in one chunk to be predicted from, 65536 or the chunk the predictor prefers for
  /// the data's `shape` (predict::Interpolation's whole planes, up to longest_chunk_values).
  static std::uint32_t default_chunk_values(std::span<const std::size_t> shape) {
    if constexpr (requires { P::default_chunk_values(shape, longest_chunk_values); }) {
      return P::default_chunk_values(shape, longest_chunk_values);
    } else {
      return predictor_has_parameters ? common_max_chunk_values : 4096;
    }
  }

  /// The encoder's own settings (VectorLZ's match window; encode::no_settings for the others).
  using encoder_settings = encode::settings_t<E>;

  /// Pipeline({.error_bound = zcoll::relative(1e-4)}), or with the encoder's settings beside:
  /// EmbeddingLZ({.error_bound = zcoll::absolute(0.01), .shape = {rows, 64}}, {.match_window = 64}).
  explicit Pipeline(codec_config config = {}, encoder_settings encoder = {})
      : config_(std::move(config)), encoder_(encoder) {
    if (config_.chunk_values == 0) config_.chunk_values = default_chunk_values(config_.shape);
    validate(config_);
    if constexpr (requires { E::check(encoder_); }) E::check(encoder_);
  }

  const codec_config& config() const { return config_; }
  const encoder_settings& encoder_config() const { return encoder_; }
  /// This codec with another error bound, every other setting kept (what a reduction hop needs).
  Pipeline with_error_bound(const bound& error_bound) const {
    codec_config config = config_;
    config.error_bound = error_bound;
    return Pipeline(std::move(config), encoder_);
  }

  /// Bytes that compress may write for `count` values: header, index, parameter section, and each chunk
  /// verbatim (with a chunk encoder, 3 bytes more a chunk, the alignment of chunk_residuals' slots, and
  /// 124 more a stream, the last chunk's residuals rounded up to a block).
  template <floating_value T>
  static std::size_t max_compressed_size(std::size_t count, std::uint32_t chunk_values) {
    const std::uint64_t chunks = chunk_count_for(count, chunk_values);
    if (chunks > std::numeric_limits<std::uint32_t>::max()) {
      throw argument_error("max_compressed_size: " + std::to_string(count) + " values need more than 2^32 chunks of " +
                           std::to_string(chunk_values) + "; raise chunk_values");
    }
    const std::size_t prefix = stream_prefix_size_bytes(static_cast<std::uint32_t>(chunks)) + max_parameter_section_bytes +
                               chunks * (1 + residual_slot_padding_bytes) + residual_tail_padding_bytes;
    return checked_add(prefix, checked_multiply(count, sizeof(T), "max_compressed_size", "count"), "max_compressed_size",
                       "stream bytes");
  }
  template <floating_value T>
  std::size_t max_compressed_size(std::size_t count) const {
    return max_compressed_size<T>(count, config_.chunk_values);
  }

  using span_codec<Pipeline>::decompress;

  /// Convenience: a new vector of the stream's values, one thread.
  template <floating_value T>
  std::vector<T> decompress(std::span<const std::byte> in) const {
    const stream_layout layout = read_stream_layout(in, has_parameter_section);
    check_header<T>(layout.header);
    // Validate before allocating: a header may claim any count, but with a block encoder and no back end
    // every chunk spends at least one byte per block of 32 values (a chunk encoder's chunks at least their
    // kind byte, which read_stream_layout checked).
    if (!codes_chunks && !packs_chunks && layout.header.count / block_values > in.size()) {
      throw format_error("value count " + std::to_string(layout.header.count) + " is more than a stream of " +
                         std::to_string(in.size()) + " bytes can hold");
    }
    std::vector<T> values(checked_count(layout.header));
    decompress_values(exec::Host{}, in, std::span<T>(values));
    return values;
  }

  /// The fill value as the bit pattern of the T nearest to it (core/fill_value.hpp), or nothing.
  template <floating_value T>
  std::optional<bits_of<T>> fill_bits() const {
    return fill_bits_of<T>(config_.fill_value);
  }

 private:
  friend class span_codec<Pipeline>;
  static void validate(const codec_config& config) {
    const auto c = config.chunk_values;
    if (c < min_chunk_values || c > longest_chunk_values || c % block_values != 0) {
      throw argument_error("codec_config: chunk_values " + std::to_string(c) + " must be a multiple of 32 in [32, " +
                           std::to_string(longest_chunk_values) + "] for " + name() + " (or 0 for the default)");
    }
  }

  template <floating_value T>
  static void check_header(const stream_header& header) {
    require_codec_and_type(header, id, name, value_type_of<T>);
    if (header.chunk_values > longest_chunk_values) {
      throw format_error("a " + name() + " stream has chunks of at most " + std::to_string(longest_chunk_values) +
                         " values, not " + std::to_string(header.chunk_values));
    }
    if (!std::isfinite(header.error_bound)) {
      throw format_error("a pipeline stream states a finite error bound, not " + std::to_string(header.error_bound));
    }
  }

  using predictor_parameters = decltype([] {
    if constexpr (predictor_has_parameters) {
      return typename P::parameters{};
    } else {
      return std::monostate{};
    }
  }());

  predictor_parameters make_predictor_parameters(std::size_t count) const {
    if constexpr (predictor_has_parameters) {
      return P::make_parameters(config_.shape, count);
    } else {
      return {};
    }
  }

  /// The predictor's state at the start of the chunk whose first value is number `first`.
  static typename P::state predictor_state(const predictor_parameters& parameters, std::uint64_t first,
                                           std::size_t chunk_values) {
    if constexpr (predictor_has_parameters) {
      return typename P::state(parameters, first, chunk_values);
    } else {
      return {};
    }
  }

  /// A chunk predictor's parameters chosen on a sample of `in` (codec/detail/predictor_choice.hpp): the
  /// walk among P::candidates() for the fewest bits; tuned for rate and distortion, then its bin widths
  /// among its own and P::width_candidates() for the least error + λ bits. The others' as made.
  template <floating_value T, class BlockQuantizer>
  predictor_parameters choose_predictor_parameters(const predictor_parameters& made, const BlockQuantizer& quantizer,
                                                   const std::optional<bits_of<T>>& fill, std::span<const T> in) const {
    if constexpr (predict::chunk_predictor<P>) {
      if (!chunk::codes_usable(quantizer)) return made;
      using parameters = typename P::parameters;  // (predictor_parameters, a lambda's type, confuses GCC 12 in the lambda below)
      const bool rate_distortion = config_.tuning == tuning_target::rate_distortion;
      // A trial's residuals and, tuned for rate and distortion, the squared error of its reconstruction.
      const auto trial = [&](const parameters& candidate, std::size_t first, std::size_t length, std::int32_t* out) {
        typename chunk::coder_state state(typename P::state(candidate, first, length));
        double squared_error = 0.0;
        chunk::residuals_of_chunk(quantizer, fill, in.subspan(first, length), state, out, rate_distortion ? &squared_error : nullptr);
        return squared_error;
      };
      const auto sample = detail::predictor_sample(in.size());
      const parameters walk = detail::choose_predictor_parameters(P::candidates(made), sample, 0.0, trial);
      if constexpr (requires { P::width_candidates(made); }) {
        if (!rate_distortion) return walk;
        std::vector<parameters> widths = P::width_candidates(walk);
        if (widths.empty()) return walk;
        // Error in units of λ = 2 ln 2 Δ² / 12, Δ = 2 eb: the slope -dD/dR of a uniform quantizer's
        // distortion at the bound, Δ² / 12 and a quarter of it for each further bit a value, so that a
        // trial trades a bit for error as the quantizer itself does there.
        const double step = 2.0 * quantizer.guaranteed_bound();
        const double error_weight = 1.0 / (2.0 * std::numbers::ln2 * step * step / 12.0);
        widths.insert(widths.begin(), walk);
        return detail::choose_predictor_parameters(widths, sample, error_weight, trial);
      }
      return walk;
    } else {
      return made;
    }
  }

  static std::size_t checked_count(const stream_header& header) {
    if (header.count > std::numeric_limits<std::size_t>::max() / 8) {
      throw format_error("value count " + std::to_string(header.count) + " is too large");
    }
    return static_cast<std::size_t>(header.count);
  }

  template <floating_value T>
  std::span<std::byte> compress_values(const exec::Host& exec, std::span<const T> in, std::span<std::byte> out) const {
    const std::size_t count = in.size();
    const std::uint32_t chunk_values = config_.chunk_values;
    const std::uint64_t chunks64 = chunk_count_for(count, chunk_values);
    if (chunks64 > std::numeric_limits<std::uint32_t>::max()) {
      throw argument_error("compress: input of " + std::to_string(count) + " values needs more than 2^32 chunks of " +
                           std::to_string(chunk_values) + "; raise chunk_values");
    }
    const auto chunks = static_cast<std::uint32_t>(chunks64);
    const std::size_t needed = max_compressed_size<T>(count);
    if (out.size() < needed) {
      throw argument_error("compress: out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" +
                           std::to_string(count) + ") = " + std::to_string(needed) + " are needed");
    }
    const auto fill = fill_bits<T>();
    predictor_parameters grid = make_predictor_parameters(count);

    double eb = 0.0;
    if constexpr (Q::uses_error_bound) {
      const bool relative = config_.error_bound.mode == bound_mode::relative;
      eb = absolute_bound(config_.error_bound, relative ? find_value_extent(exec, in, fill).range() : 0.0);
      if constexpr (chunk::predicts_chunks) eb = chunk::template bound_on_code_grid<T>(eb);
    }
    const typename Q::template block_quantizer<T> quantizer(eb);
    grid = choose_predictor_parameters(grid, quantizer, fill, in);

    stream_header header;
    header.codec = id;
    header.type = value_type_of<T>;
    header.has_fill_value = fill.has_value();
    header.count = count;
    header.error_bound = quantizer.usable() ? quantizer.guaranteed_bound() : 0.0;
    header.fill_bits = fill.value_or(0);
    header.chunk_values = chunk_values;
    header.chunk_count = chunks;
    byte_writer prefix(out);
    write_stream_header(prefix, header);
    std::size_t prefix_bytes = stream_prefix_size_bytes(chunks);
    std::byte* const index = out.data() + stream_header_size_bytes;
    const auto chunk_of = [&](std::size_t c) {
      const std::size_t first = c * chunk_values;
      return in.subspan(first, std::min<std::size_t>(chunk_values, count - first));
    };

    // Each worker compresses a contiguous range of chunks into its own region, sized for the worst case
    // (every chunk verbatim); the regions are then moved together. The first worker writes in place;
    // with a chunk encoder the others start at their first chunk's residual slot (chunk_residuals).
    const std::size_t chunk_capacity = 1 + std::size_t{chunk_values} * sizeof(T);
    std::size_t regions = prefix_bytes;
    std::size_t region_stride = chunk_capacity;
    const auto region_of = [&](std::size_t begin) {
      return out.data() + (begin == 0 ? prefix_bytes : regions + begin * region_stride);
    };
    const auto state_of = [&](std::size_t c) {
      return typename chunk::coder_state(predictor_state(grid, std::uint64_t{c} * chunk_values, chunk_values));
    };
    if constexpr (codes_chunks) {
      // The statistics pass keeps every chunk's residuals and exceptions, so the coding pass does not
      // quantize and predict again (a quarter of the compression time with 2-D Lorenzo).
      detail::chunk_residuals cache(out, prefix_bytes + max_parameter_section_bytes, chunk_capacity, chunk_values, chunks,
                                    exec::worker_count(exec, chunks), E::needs_statistics && chunk::codes_usable(quantizer));
      regions = cache.first_slot_offset();
      region_stride = cache.slot_stride();
      const auto model = build_model<T>(exec, quantizer, fill, count, chunks, chunk_of, state_of, cache);
      prefix_bytes += write_parameter_section(grid, model, out.subspan(prefix_bytes));
      exec::for_each_range(exec, chunks, [&](std::size_t, std::size_t begin, std::size_t end) {
        detail::residual_scratch<std::int32_t> scratch(count, chunk_values);
        detail::residual_scratch<std::uint8_t> level_room(count, chunk_values);
        typename B::context backend;
        std::byte* cursor = region_of(begin);
        for (std::size_t c = begin; c < end; ++c) {
          std::size_t size = 0;
          if (cache.kept()) {
            const std::span<const T> values = chunk_of(c);
            const std::int32_t* residuals = cache.slot(c);
            // A chunk written from `cursor` may reach its own slot: read the residuals out of it first.
            if (cursor + chunk_capacity > reinterpret_cast<const std::byte*>(residuals)) {
              std::copy_n(residuals, values.size(), scratch.get());
              residuals = scratch.get();
            }
            if (c + 1 < end) cache.prefetch(c + 1, chunk_of(c + 1).size());
            std::span<const std::uint8_t> levels;
            if (chunk::uses_levels(model)) {
              levels = chunk::levels_of(state_of(c).predictor, values.size(), level_room.get());
            }
            size = chunk::code_chunk(values, cursor, model, residuals, cache.exceptions(c), levels);
          } else {
            auto state = state_of(c);
            size = chunk::compress_chunk(quantizer, fill, chunk_of(c), cursor, state, model, scratch.get());
          }
          size = pack_chunk(backend, cursor, size);
          const auto size32 = static_cast<std::uint32_t>(size);
          std::memcpy(index + 4 * c, &size32, 4);
          cursor += size;
        }
      });
    } else {
      if constexpr (has_parameter_section) {
        prefix_bytes += write_parameter_section(grid, std::monostate{}, out.subspan(prefix_bytes));
        regions = prefix_bytes;
      }
      exec::for_each_range(exec, chunks, [&](std::size_t, std::size_t begin, std::size_t end) {
        typename B::context backend;
        std::byte* cursor = region_of(begin);
        for (std::size_t c = begin; c < end; ++c) {
          auto state = state_of(c);
          const auto size = static_cast<std::uint32_t>(
              pack_chunk(backend, cursor, chunk::compress_chunk(quantizer, fill, chunk_of(c), cursor, state)));
          std::memcpy(index + 4 * c, &size, 4);
          cursor += size;
        }
      });
    }
    return out.first(gather_regions(exec, out, chunks, prefix_bytes, region_of));
  }

  /// Packs the chunk of `size` bytes at `chunk` with the back end when it is coded; returns its size.
  static std::size_t pack_chunk(typename B::context& backend, std::byte* chunk, std::size_t size) {
    if constexpr (packs_chunks) {
      if (static_cast<detail::chunk_kind>(chunk[0]) != detail::chunk_kind::verbatim) {
        return backend.pack(std::span<std::byte>(chunk, size));
      }
    }
    return size;
  }

  /// Moves the workers' regions of chunks (exec::for_each_range's split of `chunks`; the region of the
  /// worker whose first chunk is `begin` at region_of(begin), its chunks' sizes in the index) together
  /// after the stream's first `prefix_bytes`; returns the stream's size.
  template <class RegionOf>
  static std::size_t gather_regions(const exec::Host& exec, std::span<std::byte> out, std::size_t chunks,
                                    std::size_t prefix_bytes, const RegionOf& region_of) {
    const std::byte* const index = out.data() + stream_header_size_bytes;
    std::size_t end = prefix_bytes;
    const std::size_t workers = exec::worker_count(exec, chunks);
    for (std::size_t w = 0; w < workers; ++w) {
      const std::size_t begin = chunks * w / workers, stop = chunks * (w + 1) / workers;
      std::size_t bytes = 0;
      for (std::size_t c = begin; c < stop; ++c) {
        std::uint32_t size;
        std::memcpy(&size, index + 4 * c, 4);
        bytes += size;
      }
      const std::byte* region = region_of(begin);
      if (region != out.data() + end) std::memmove(out.data() + end, region, bytes);
      end += bytes;
    }
    return end;
  }

 public:
  /// The stream of the sum of streams `a` and `b` (zcoll::add in codec/add.hpp states the contract)
  /// into `out`, chunk pairs in parallel on exec's threads.
  /// Only for the codecs zcoll::addable_codec admits, which zcoll::add checks.
  template <floating_value T>
  std::span<std::byte> add_streams(const exec::Host& exec, std::span<const std::byte> a, std::span<const std::byte> b,
                                   std::span<std::byte> out) const {
    static_assert(!packs_chunks, "add_streams: streams packed by a lossless back end do not add");
    const stream_layout la = read_stream_layout(a, has_parameter_section);
    const stream_layout lb = read_stream_layout(b, has_parameter_section);
    require_addable(la, lb);
    check_header<T>(la.header);
    const auto fills = detail::addition_fills<T>::of(la.header, lb.header);
    const stream_header header = fills.header_of_sum(la.header);
    const std::size_t count = checked_count(header);
    const std::size_t needed = max_compressed_size<T>(count, header.chunk_values);
    if (out.size() < needed) {
      throw argument_error("add: out has " + std::to_string(out.size()) + " bytes, max_compressed_size(" +
                           std::to_string(count) + ") = " + std::to_string(needed) + " are needed");
    }
    const std::uint32_t chunks = header.chunk_count;
    byte_writer prefix(out);
    write_stream_header(prefix, header);
    std::size_t prefix_bytes = stream_prefix_size_bytes(chunks);
    if constexpr (has_parameter_section) {
      byte_writer section(out.subspan(prefix_bytes, 4 + la.parameters.size()));
      section.write(static_cast<std::uint32_t>(la.parameters.size()));
      std::memcpy(out.data() + prefix_bytes + 4, la.parameters.data(), la.parameters.size());
      prefix_bytes += 4 + la.parameters.size();
    }
    const typename Q::template block_quantizer<T> quantizer(header.error_bound);
    const auto grid = read_parameter_section(la).first;
    std::byte* const index = out.data() + stream_header_size_bytes;
    const std::size_t chunk_capacity = 1 + std::size_t{header.chunk_values} * sizeof(T);
    const auto region_of = [&](std::size_t begin) {
      return out.data() + prefix_bytes + (begin == 0 ? 0 : begin * chunk_capacity);
    };
    exec::for_each_range(exec, chunks, [&](std::size_t, std::size_t begin, std::size_t end) {
      detail::chunk_sum_scratch<T> scratch(header.chunk_values);
      std::size_t at_a = la.chunk_offset(static_cast<std::uint32_t>(begin));
      std::size_t at_b = lb.chunk_offset(static_cast<std::uint32_t>(begin));
      std::byte* cursor = region_of(begin);
      for (std::size_t c = begin; c < end; ++c) {
        const std::size_t first = c * header.chunk_values;
        const std::size_t n = std::min<std::size_t>(header.chunk_values, count - first);
        const auto size_a = la.chunk_size_bytes(static_cast<std::uint32_t>(c));
        const auto size_b = lb.chunk_size_bytes(static_cast<std::uint32_t>(c));
        const auto new_state = [&] { return predictor_state(grid, first, header.chunk_values); };
        const auto size = static_cast<std::uint32_t>(detail::pipeline_add<P, E>::template add_chunk<T>(
            quantizer, fills, new_state, a.subspan(at_a, size_a), b.subspan(at_b, size_b), n, cursor, scratch, c));
        std::memcpy(index + 4 * c, &size, 4);
        cursor += size;
        at_a += size_a;
        at_b += size_b;
      }
    });
    return out.first(gather_regions(exec, out, chunks, prefix_bytes, region_of));
  }

 private:
  /// argument_error naming the first setting in which two streams to be added differ, or in which they
  /// are not this codec's.
  static void require_addable(const stream_layout& a, const stream_layout& b) {
    const stream_header &x = a.header, &y = b.header;
    const auto differ = [](const std::string& what, const std::string& in_a, const std::string& in_b) {
      throw argument_error("add: the streams differ in " + what + ": a has " + in_a + ", b has " + in_b);
    };
    if (!(x.codec == y.codec)) differ("codec", to_string(x.codec), to_string(y.codec));
    if (!(x.codec == id)) {
      throw argument_error("add: the streams were written by codec " + to_string(x.codec) + ", not by " + name() + " (" +
                           to_string(id) + ")");
    }
    if (x.type != y.type) differ("value type", to_string(x.type), to_string(y.type));
    if (x.count != y.count) differ("value count", std::to_string(x.count), std::to_string(y.count));
    if (x.chunk_values != y.chunk_values) {
      differ("chunking (chunk_values)", std::to_string(x.chunk_values), std::to_string(y.chunk_values));
    }
    if (std::bit_cast<std::uint64_t>(x.error_bound) != std::bit_cast<std::uint64_t>(y.error_bound)) {
      differ("absolute error bound (the bin width is twice it)", fmt_double(x.error_bound), fmt_double(y.error_bound));
    }
    if (!std::ranges::equal(a.parameters, b.parameters)) {
      differ("shape (the predictor's grid in the parameter section)", std::to_string(a.parameters.size()) + " parameter bytes",
             "others");
    }
  }

  static std::string fmt_double(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return text;
  }

  /// What a chunk encoder's stream may need beyond the chunks' room (codec/detail/chunk_residuals.hpp).
  static constexpr std::size_t residual_slot_padding_bytes = codes_chunks ? detail::residual_slot_padding_bytes : 0;
  static constexpr std::size_t residual_tail_padding_bytes = codes_chunks ? detail::residual_tail_padding_bytes : 0;
  using chunk = detail::pipeline_chunk<P, E>;

  /// The chunk encoder's model: from the statistics of every chunk's residuals when the encoder needs
  /// them (one pass more over the input, in parallel, one statistics object per worker).
  template <floating_value T, class BlockQuantizer, class ChunkOf, class StateOf>
    requires codes_chunks
  auto build_model(const exec::Host& exec, const BlockQuantizer& quantizer, const std::optional<bits_of<T>>& fill,
                   std::size_t count, std::size_t chunks, const ChunkOf& chunk_of, const StateOf& state_of,
                   detail::chunk_residuals& cache) const {
    typename E::statistics statistics;
    if (E::needs_statistics && chunk::codes_usable(quantizer) && chunks > 0) {
      std::vector<typename E::statistics> partial(exec::worker_count(exec, chunks));
      exec::for_each_range(exec, chunks, [&](std::size_t worker, std::size_t begin, std::size_t end) {
        detail::residual_scratch<std::int32_t> scratch(count, config_.chunk_values);
        detail::residual_scratch<std::uint8_t> level_room(count, config_.chunk_values);
        for (std::size_t c = begin; c < end; ++c) {
          const std::span<const T> values = chunk_of(c);
          auto state = state_of(c);
          // Straight into the slot, which has room for the chunk's padded blocks.
          std::int32_t* residuals = cache.kept() ? cache.slot(c) : scratch.get();
          chunk::residuals_of_chunk(quantizer, fill, values, state, residuals);
          const std::span<const std::int32_t> kept(residuals, values.size());
          if (cache.kept()) cache.keep(c, kept, state.exceptions);
          if constexpr (chunk::codes_levels) {
            partial[worker].add(kept, chunk::levels_of(state.predictor, values.size(), level_room.get()));
          } else {
            partial[worker].add(kept);
          }
        }
      });
      for (const auto& p : partial) statistics.merge(p);
    }
    return E::make_model(statistics, encoder_, {.chunk_values = config_.chunk_values, .row_length = row_length(config_)});
  }

  /// Writes the parameter section (u32 size, the predictor's parameters, then the encoder's model) at
  /// the front of `out`; returns its size.
  template <class Model>
  static std::size_t write_parameter_section(const predictor_parameters& grid, const Model& model,
                                             std::span<std::byte> out) {
    std::size_t bytes = 0;
    if constexpr (predictor_has_parameters) bytes += P::parameter_bytes;
    if constexpr (codes_chunks) bytes += E::model_size_bytes(model);
    byte_writer section(out.first(4 + bytes));
    section.write(static_cast<std::uint32_t>(bytes));
    if constexpr (predictor_has_parameters) P::write_parameters(grid, section);
    if constexpr (codes_chunks) E::write_model(model, section);
    if (section.remaining() != 0) {
      throw error(name() + ": parameter_bytes or model_size_bytes() does not match what was written");
    }
    return 4 + bytes;
  }

  template <floating_value T>
  void decompress_values(const exec::Host& exec, std::span<const std::byte> in, std::span<T> out) const {
    const stream_layout layout = read_stream_layout(in, has_parameter_section);
    const stream_header& header = layout.header;
    check_header<T>(header);
    if (header.count != out.size()) {
      throw argument_error("decompress: out holds " + std::to_string(out.size()) + " values, the stream " +
                           std::to_string(header.count));
    }
    const typename Q::template block_quantizer<T> quantizer(header.error_bound);
    const std::optional<T> fill =
        header.has_fill_value ? std::optional<T>(std::bit_cast<T>(static_cast<bits_of<T>>(header.fill_bits)))
                              : std::nullopt;
    const auto parameters = read_parameter_section(layout);
    const auto& grid = parameters.first;
    const auto& model = parameters.second;
    exec::for_each_range(exec, header.chunk_count, [&](std::size_t, std::size_t begin, std::size_t end) {
      detail::residual_scratch<std::uint32_t> residuals(codes_chunks ? out.size() : 0, header.chunk_values);
      detail::residual_scratch<std::uint8_t> level_room(chunk::codes_levels ? out.size() : 0, header.chunk_values);
      typename B::context backend;
      std::size_t offset = layout.chunk_offset(static_cast<std::uint32_t>(begin));
      for (std::size_t c = begin; c < end; ++c) {
        const std::size_t size = layout.chunk_size_bytes(static_cast<std::uint32_t>(c));
        const std::size_t first = c * header.chunk_values;
        const auto values = out.subspan(first, std::min<std::size_t>(header.chunk_values, out.size() - first));
        const auto bytes = backend.unpack(in.subspan(offset, size), 1 + std::size_t{header.chunk_values} * sizeof(T));
        std::uint8_t* const room = chunk::uses_levels(model) ? level_room.get() : nullptr;
        chunk::decompress_chunk(quantizer, fill, model, predictor_state(grid, first, header.chunk_values),
                                residuals.get(), room, bytes, values, c);
        offset += size;
      }
    });
  }

  /// The predictor's parameters and the chunk encoder's model, read and validated; monostate for what a
  /// stage does not have.
  static auto read_parameter_section(const stream_layout& layout) {
    byte_reader section(layout.parameters);
    predictor_parameters grid{};
    if constexpr (predictor_has_parameters) grid = P::read_parameters(section);
    auto model = [&] {
      if constexpr (codes_chunks) {
        return E::read_model(section);
      } else {
        return std::monostate{};
      }
    }();
    if (section.remaining() != 0) {
      throw format_error(std::to_string(section.remaining()) + " bytes left in the parameter section of " + name());
    }
    return std::pair{grid, std::move(model)};
  }

  codec_config config_;
  encoder_settings encoder_;
};

}  // namespace zcoll
