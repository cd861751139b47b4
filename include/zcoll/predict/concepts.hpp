#pragma once
/// What a predictor is: codes to residuals per 32-value block, carrying state from block to block.

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

/// A predictor with stream parameters (the grid of a 2-D or 3-D Lorenzo predictor): made from the
/// data's shape (extents, slowest first; empty for a flat sequence) and the value count, written to and read from the pipeline's parameter section, and given to
/// the state of each chunk with the chunk's first value and its length.
template <class P>
concept parameterized_predictor =
    predictor<P> && requires(std::span<const std::size_t> shape, std::size_t count, const typename P::parameters& p,
                             byte_writer& out, byte_reader& in) {
      { P::make_parameters(shape, count) } -> std::same_as<typename P::parameters>;
      { P::parameter_bytes } -> std::convertible_to<std::size_t>;
      P::write_parameters(p, out);
      { P::read_parameters(in) } -> std::same_as<typename P::parameters>;
    } && std::constructible_from<typename P::state, const typename P::parameters&, std::uint64_t, std::size_t>;

}  // namespace zcoll::predict
