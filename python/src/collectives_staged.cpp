// The staged collectives on host memory (HostStaging): the codecs with device drivers (fzlight, int8,
// int4), taking the steps the collectives on CUDA tensors take (python/src/cuda/collectives.cu).
#include "collective_model.hpp"

namespace zcoll::python {

namespace {
template <class Entry>
struct staged_on_values : std::bool_constant<staged_codec<Entry> && Entry::traits.input == codec_input::values> {};
template <class Entry>
struct staged_on_rows : std::bool_constant<staged_codec<Entry> && Entry::traits.input == codec_input::rows> {};
}  // namespace

std::unique_ptr<collective_face> make_staged_value_collective(transport_maker transport, const collective_settings& settings,
                                                              HostStaging& space) {
  return make_collective_of<staged_on_values>(transport, settings, &space);
}

std::unique_ptr<collective_face> make_staged_row_collective(transport_maker transport, const collective_settings& settings,
                                                            HostStaging& space) {
  return make_collective_of<staged_on_rows>(transport, settings, &space);
}

}  // namespace zcoll::python
