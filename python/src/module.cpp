// zcoll._zcoll: the compiled half of the Python package zcoll (python/zcoll/). It links no libtorch:
// arrays arrive through the buffer protocol (a tensor through its numpy view), so one build serves
// every torch >= 1.13.

#include <pybind11/pybind11.h>

#include "codecs.hpp"
#include "collectives.hpp"
#include "exceptions.hpp"
#include "fused_rows.hpp"
#include "table_alltoall.hpp"
#include "zcoll/core/error.hpp"

namespace py = pybind11;

namespace {

/// A new exception class `name` of the module, derived from every class of `bases`.
py::object exception_class(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("zcoll._zcoll.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  auto object = py::reinterpret_steal<py::object>(type);
  m.attr(name) = object;
  return object;
}

}  // namespace

PYBIND11_MODULE(_zcoll, m) {
  m.doc() = "zcoll's codecs and compressed collectives (use the package zcoll, not this module)";

  // zcoll.Error and its kinds; ArgumentError is also a ValueError, as Python's own argument checks are.
  const py::object error = exception_class(m, "Error", py::make_tuple(py::handle(PyExc_RuntimeError)),
                                           "An error zcoll raises.");
  const py::object format_error = exception_class(m, "FormatError", py::make_tuple(error),
                                                  "A stream is damaged, truncated or not what the call expects.");
  const py::object argument_error =
      exception_class(m, "ArgumentError", py::make_tuple(error, py::handle(PyExc_ValueError)),
                      "An argument is out of range; the message names it and the values it takes.");
  const py::object transport_error = exception_class(m, "TransportError", py::make_tuple(error),
                                                     "A message could not be moved (a peer failed or aborted).");
  zcoll::python::register_zcoll_errors({error.ptr(), format_error.ptr(), argument_error.ptr(), transport_error.ptr()});

  zcoll::python::bind_codecs(m);
  zcoll::python::bind_collectives(m);
  zcoll::python::bind_fused_rows(m);
  zcoll::python::bind_table_alltoall(m);
}
