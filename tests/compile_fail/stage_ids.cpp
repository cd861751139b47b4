// Compile-fail test (registered in tests/CMakeLists.txt): a codec id that does not fit in its stream-header
// byte stops the build instead of aliasing another codec's id. ZCOLL_COMPILE_FAIL_CASE selects the id
// that is wrong; without it the file must compile.
#include "zcoll/zcoll.hpp"

namespace {

/// Linear quantization under a stage id of the given value.
template <auto Id>
struct LinearWithId : zcoll::quantize::Linear {
  using zcoll::quantize::Linear::Linear;
  static constexpr auto id = Id;
};

}  // namespace

#if ZCOLL_COMPILE_FAIL_CASE == 1
using Tested = zcoll::Pipeline<LinearWithId<256>, zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle>;
#elif ZCOLL_COMPILE_FAIL_CASE == 2
using Tested = zcoll::Pipeline<LinearWithId<-1>, zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle>;
#else
using Tested = zcoll::Pipeline<LinearWithId<255>, zcoll::predict::Lorenzo1D, zcoll::encode::BitShuffle>;
#endif

#if ZCOLL_COMPILE_FAIL_CASE == 3
constexpr zcoll::codec_id own_layout = zcoll::own_layout_codec_id<0x80>();  // a pipeline's kind
#else
constexpr zcoll::codec_id own_layout = zcoll::own_layout_codec_id<0x7F>();
#endif

int main() {
  const Tested codec{};
  static_assert(Tested::id.quantizer == 255 && own_layout.kind == 0x7F);
  return static_cast<int>(codec.config().chunk_values == 0);
}
