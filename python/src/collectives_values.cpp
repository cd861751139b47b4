// The collectives of the codecs that take any value sequence (fzlight, identity): every operation,
// every value type.
#include "collective_model.hpp"

namespace zcoll::python {

namespace {
template <class Entry>
struct on_values
    : std::bool_constant<Entry::traits.collective != collective_use::none && Entry::traits.input == codec_input::values> {};
}  // namespace

std::unique_ptr<collective_face> make_value_collective(transport_maker transport, const collective_settings& settings) {
  return make_collective_of<on_values>(transport, settings);
}

}  // namespace zcoll::python
