#pragma once
// FBGEMM's fused row-wise layout and the small-float casts, as raw buffers for zcoll.torchrec.

#include <pybind11/pybind11.h>

#include "held_buffer.hpp"

namespace zcoll::python {

void bind_fused_rows(py::module_& m);

}  // namespace zcoll::python
