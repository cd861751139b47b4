// Compile-fail test (KaMPIng style, registered in tests/CMakeLists.txt): Pipeline names what a stage lacks
// in a static_assert. ZCOLL_COMPILE_FAIL_CASE selects the stage that is wrong; without it the file must
// compile, which proves the failures come from the static_asserts and not from a broken test.
#include "zcoll/zcoll.hpp"
#include "zcoll/encode/bitshuffle.hpp"
#include "zcoll/predict/interpolation.hpp"
#include "zcoll/predict/lorenzo.hpp"
#include "zcoll/quantize/linear.hpp"

namespace {

/// Has everything an encoder has except decode_block.
struct NotAnEncoder {
  static constexpr std::uint8_t id = 3;
  static constexpr const char* name = "not-an-encoder";
  static constexpr std::size_t max_block_bytes = 4;
  static std::size_t encode_block(const std::int32_t*, std::byte*) { return 0; }
};

/// Has no state and no inverse.
struct NotAPredictor {
  static constexpr std::uint8_t id = 2;
  static constexpr const char* name = "not-a-predictor";
};

/// Has no block_quantizer.
struct NotAQuantizer {
  static constexpr std::uint8_t id = 5;
  static constexpr const char* name = "not-a-quantizer";
  static constexpr bool uses_error_bound = true;
};

}  // namespace

#if ZCOLL_COMPILE_FAIL_CASE == 1
using Tested = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, NotAnEncoder>;
#elif ZCOLL_COMPILE_FAIL_CASE == 2
using Tested = zcoll::Pipeline<zcoll::quantize::Linear, NotAPredictor, zcoll::encode::BitShuffle>;
#elif ZCOLL_COMPILE_FAIL_CASE == 3
using Tested = zcoll::Pipeline<NotAQuantizer, zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle>;
#elif ZCOLL_COMPILE_FAIL_CASE == 4
using Tested = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Interpolation<2>, zcoll::encode::BitShuffle>;
#elif ZCOLL_COMPILE_FAIL_CASE == 5
using Tested = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle, NotAnEncoder>;
#else
using Tested = zcoll::Pipeline<zcoll::quantize::Linear, zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle>;
#endif

int main() {
  const Tested codec{};
  return static_cast<int>(codec.config().chunk_values == 0);
}
