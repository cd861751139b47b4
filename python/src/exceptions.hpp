#pragma once
// zcoll's exception classes in Python, and the translator that raises them for zcoll's C++ errors:
// zcoll._zcoll makes the classes, zcoll._zcoll_cuda raises the same ones.

#include <pybind11/pybind11.h>

#include <exception>

#include "zcoll/core/error.hpp"

namespace zcoll::python {

namespace py = pybind11;

/// The classes a module's translator raises. Set once at import; the modules hold the classes for the
/// interpreter's life.
struct exception_classes {
  PyObject* error = nullptr;
  PyObject* format_error = nullptr;
  PyObject* argument_error = nullptr;
  PyObject* transport_error = nullptr;
};

/// The classes of the module being imported (one per shared object: this header's inline variable is
/// private to each, as the modules hide their symbols).
inline exception_classes module_exceptions;

inline void translate_zcoll_errors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const format_error& e) {
    PyErr_SetString(module_exceptions.format_error, e.what());
  } catch (const argument_error& e) {
    PyErr_SetString(module_exceptions.argument_error, e.what());
  } catch (const transport_error& e) {
    PyErr_SetString(module_exceptions.transport_error, e.what());
  } catch (const error& e) {
    PyErr_SetString(module_exceptions.error, e.what());
  }
}

/// Raises zcoll's errors as the given classes from now on (pybind11 takes a plain function: no captures).
inline void register_zcoll_errors(exception_classes classes) {
  module_exceptions = classes;
  py::register_exception_translator(&translate_zcoll_errors);
}

}  // namespace zcoll::python
