// zcoll._zcoll_cuda's collectives (device_faces.hpp): collective_model's staged calls through a
// cuda::Staging — the codecs with device drivers that run in every collective (fzlight, int8, int4).
// The same model runs through a HostStaging in zcoll._zcoll (python/src/collectives_staged.cpp), which
// is how the Python tests take these steps without a GPU.

#include "device_faces.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "../collective_model.hpp"
#include "zcoll/collective/cuda_staging.cuh"

namespace zcoll::python::cuda_face {

namespace {
template <class Entry>
struct staged_on_device : std::bool_constant<staged_codec<Entry>> {};
}  // namespace

struct device_collective::state {
  cuda::Staging space;
  std::unique_ptr<collective_face> face;  // after the space, which it uses: destroyed before it
  int device = -1;                        // the device of the space's buffers, from its first call
};

device_collective::device_collective(transport_maker transport, const collective_settings& settings)
    : state_(std::make_unique<state>()) {
  state_->face = make_collective_of<staged_on_device>(transport, settings, &state_->space);
  if (!state_->face) {
    throw argument_error("codec '" + settings.codec + "' on CUDA tensors: collectives run the codecs with device drivers, "
                         "fzlight, int8 and int4");
  }
}

device_collective::~device_collective() {
  if (!state_ || state_->device < 0) return;
  const device_scope on_device(state_->device);  // the buffers are freed on their device
  state_.reset();
}

int device_collective::device() const { return state_->device; }

collective_face& device_collective::on_stream(int device, std::uintptr_t stream) {
  if (state_->device >= 0 && device != state_->device) {
    throw argument_error("a CUDA tensor on cuda:" + std::to_string(device) + "; this Collectives' staging buffers are on cuda:" +
                         std::to_string(state_->device) + " (make a Collectives per device)");
  }
  use_device(device);  // (the caller's device_scope restores the thread's own)
  state_->device = device;
  state_->space.use_stream(reinterpret_cast<cudaStream_t>(stream));
  return *state_->face;
}

}  // namespace zcoll::python::cuda_face
