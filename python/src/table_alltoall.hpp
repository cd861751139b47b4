#pragma once
// The table-wise embedding all-to-all and the adapt/ rules, for zcoll.torch and zcoll.adapt.

#include <pybind11/pybind11.h>

namespace zcoll::python {

namespace py = pybind11;

void bind_table_alltoall(py::module_& m);

}  // namespace zcoll::python
