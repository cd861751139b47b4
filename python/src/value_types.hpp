#pragma once
// The value types the Python face takes, named as numpy and torch name them, and where their bytes are.
// Python passes every array as bytes plus a dtype name: a torch.bfloat16 tensor has no numpy dtype, so
// the Python side hands its storage over as int16 (or, on a GPU, its address) and says "bfloat16"
// beside it. No pybind11 here: nvcc compiles the device modules' parts that include it.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "zcoll/core/error.hpp"
#include "zcoll/core/half_value.hpp"

namespace zcoll::python {

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

/// Where a call's values are, as bytes: a Python buffer's memory, or a CUDA tensor's (device memory).
struct value_view {
  std::byte* data = nullptr;
  std::size_t bytes = 0;

  /// The bytes as `T` values; argument_error when their length is not a whole number of them.
  template <class T>
  std::span<T> values(const char* argument) const {
    if (bytes % sizeof(T) != 0) {
      throw argument_error(std::string(argument) + ": " + std::to_string(bytes) + " bytes are not a whole number of " +
                           std::to_string(sizeof(T)) + "-byte values");
    }
    return {reinterpret_cast<T*>(data), bytes / sizeof(T)};
  }
};

}  // namespace zcoll::python
