#pragma once
// The value types the Python face takes, named as numpy and torch name them, and the buffers it reads
// them from. Python passes every array as a buffer of bytes plus a dtype name: a torch.bfloat16 tensor
// has no numpy dtype, so the Python side hands its storage over as int16 and says "bfloat16" beside it.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "zcoll/core/error.hpp"
#include "zcoll/core/half_value.hpp"

namespace zcoll::python {

namespace py = pybind11;

enum class dtype : unsigned char { float32, float64, float16, bfloat16 };

/// The dtype called `name` ("float32", "float64", "float16", "bfloat16"); argument_error naming `argument`.
inline dtype parse_dtype(std::string_view name, const char* argument) {
  if (name == "float32") return dtype::float32;
  if (name == "float64") return dtype::float64;
  if (name == "float16") return dtype::float16;
  if (name == "bfloat16") return dtype::bfloat16;
  throw argument_error(std::string(argument) + ": dtype '" + std::string(name) +
                       "' is not one zcoll codes; expected float32, float64, float16 or bfloat16");
}

inline std::size_t size_of(dtype d) { return d == dtype::float64 ? 8 : d == dtype::float32 ? 4 : 2; }

/// fn(T{}) for the C++ value type of `d`.
template <class Fn>
decltype(auto) with_dtype(dtype d, Fn&& fn) {
  switch (d) {
    case dtype::float32: return fn(float{});
    case dtype::float64: return fn(double{});
    case dtype::float16: return fn(float16{});
    case dtype::bfloat16: return fn(bfloat16{});
  }
  throw argument_error("dtype: unknown value");
}

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

  /// The buffer as `T` values; argument_error when its byte length is not a whole number of them.
  template <class T>
  std::span<T> values(const char* argument) const {
    if (bytes % sizeof(T) != 0) {
      throw argument_error(std::string(argument) + ": " + std::to_string(bytes) + " bytes are not a whole number of " +
                           std::to_string(sizeof(T)) + "-byte values");
    }
    return {reinterpret_cast<T*>(data), bytes / sizeof(T)};
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
