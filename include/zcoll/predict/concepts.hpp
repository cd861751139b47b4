#pragma once
/// What a predictor is: codes to residuals per 32-value block, carrying state from block to block, or
/// (a chunk predictor) a whole chunk's codes at once.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "zcoll/core/byte_io.hpp"

namespace zcoll::predict {

/// P::forward turns 32 codes into residuals, P::inverse turns residuals back into codes in place; the
/// state carries what one block needs of the one before and restarts at each chunk.
template <class P>
concept predictor = std::default_initializable<typename P::state> &&
                    requires(typename P::state& s, const std::int32_t* codes, std::int32_t* residuals,
                             std::uint32_t* values) {
                      { P::id } -> std::convertible_to<std::uint8_t>;
                      { P::name } -> std::convertible_to<const char*>;
                      P::forward(s, codes, residuals);
                      P::inverse(s, values);
                    };

/// What a predictor with stream parameters has: made from the data's shape (extents, slowest first;
/// empty for a flat sequence) and the value count, written to and read from the pipeline's parameter
/// section, and given to the state of each chunk with the chunk's first value and its length.
template <class P>
concept has_stream_parameters =
    requires(std::span<const std::size_t> shape, std::size_t count, const typename P::parameters& p, byte_writer& out,
             byte_reader& in) {
      { P::make_parameters(shape, count) } -> std::same_as<typename P::parameters>;
      { P::parameter_bytes } -> std::convertible_to<std::size_t>;
      P::write_parameters(p, out);
      { P::read_parameters(in) } -> std::same_as<typename P::parameters>;
    } && std::constructible_from<typename P::state, const typename P::parameters&, std::uint64_t, std::size_t>;

/// A block predictor with stream parameters (the grid of a 2-D or 3-D Lorenzo predictor).
template <class P>
concept parameterized_predictor = predictor<P> && has_stream_parameters<P>;

/// A whole-chunk predictor (the interpolation predictor): its codes are those of the quantizer at the
/// stream's bound / P::code_scale. P::forward_chunk(state, residuals, codes, target) writes a chunk's
/// residuals and the codes the decoder will reconstruct (which the pipeline checks against the bound)
/// from target(i), value i in code steps; P::inverse_chunk turns residuals into those codes in place.
/// It always has stream parameters, and a pipeline with one needs a chunk encoder, which holds the
/// chunk's residuals at once.
template <class P>
concept chunk_predictor = has_stream_parameters<P> &&
                          requires(const typename P::state& s, std::span<std::int32_t> codes,
                                   std::span<std::uint32_t> values, double (*target)(std::size_t)) {
                            { P::id } -> std::convertible_to<std::uint8_t>;
                            { P::name } -> std::convertible_to<const char*>;
                            { P::code_scale } -> std::convertible_to<unsigned>;
                            P::forward_chunk(s, codes, values, target);
                            P::inverse_chunk(s, values);
                          };

}  // namespace zcoll::predict
