#pragma once
// held_buffer: the bytes of a Python object that has the buffer protocol (numpy array, memoryview, a
// CPU tensor's numpy view), held while C++ reads or writes them.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>
#include <string>

#include "value_types.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll::python {

namespace py = pybind11;

/// A contiguous buffer of a Python object (numpy array, memoryview, a tensor's numpy view), held for
/// as long as this lives: the Python object cannot be freed under the C++ code reading it.
struct held_buffer {
  py::buffer_info info;
  std::byte* data = nullptr;
  std::size_t bytes = 0;

  held_buffer(const py::buffer& object, bool writable, const char* argument) : info(object.request(writable)) {
    if (!contiguous(info)) {
      throw argument_error(std::string(argument) +
                           ": the array is not contiguous; zcoll reads arrays in place (pass a contiguous copy)");
    }
    data = static_cast<std::byte*>(info.ptr);
    bytes = static_cast<std::size_t>(info.size) * static_cast<std::size_t>(info.itemsize);
  }

  value_view view() const { return {data, bytes}; }

  /// The buffer as `T` values; argument_error when its byte length is not a whole number of them.
  template <class T>
  std::span<T> values(const char* argument) const {
    return view().values<T>(argument);
  }

 private:
  static bool contiguous(const py::buffer_info& b) {
    py::ssize_t expected = b.itemsize;
    for (py::ssize_t d = b.ndim - 1; d >= 0; --d) {
      if (b.shape[d] != 1 && b.strides[d] != expected) return false;
      expected *= b.shape[d];
    }
    return true;
  }
};

}  // namespace zcoll::python
