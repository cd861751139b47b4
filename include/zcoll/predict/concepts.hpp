#pragma once
/// What a predictor is: codes to residuals per 32-value block, carrying state from block to block.

#include <concepts>
#include <cstdint>

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

}  // namespace zcoll::predict
