// The collectives of the codecs on rows (int8, int4; embedding-hybrid in the all-to-all): float32 rows,
// the embedding and gradient exchanges of recommendation models.
#include "collective_model.hpp"

namespace zcoll::python {

namespace {
template <class Entry>
struct on_rows
    : std::bool_constant<Entry::traits.collective != collective_use::none && Entry::traits.input == codec_input::rows> {};
}  // namespace

std::unique_ptr<collective_face> make_row_collective(transport_maker transport, const collective_settings& settings) {
  return make_collective_of<on_rows>(transport, settings);
}

}  // namespace zcoll::python
