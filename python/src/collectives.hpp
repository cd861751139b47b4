#pragma once
// The bindings of the Python face's collectives, shared by zcoll._zcoll (host memory) and
// zcoll._zcoll_cuda (CUDA tensors): the settings from Python's arguments, the engines' transport over
// a Python object, and the request Python waits on.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collective_face.hpp"
#include "python_transport.hpp"
#include "zcoll/collective/collective_report.hpp"

namespace zcoll::python {

/// The settings of zcoll._zcoll.Collective's arguments; argument_error naming a bad one.
collective_settings make_collective_settings(const std::string& codec, const std::string& bound_mode, double bound_value,
                                             std::uint32_t chunk_values, std::vector<std::size_t> shape,
                                             const std::string& schedule, unsigned threads, bool verify, bool homomorphic,
                                             std::size_t min_compressed_bytes, std::size_t pipeline_values);

/// Engines' transports over the Python object `transport` (python_transport), tags from `tag_base`.
/// The maker takes the GIL while it reads the object.
inline transport_maker python_transport_maker(py::object transport, int tag_base) {
  auto held = std::make_shared<gil_safe_object>(std::move(transport));
  return [held, tag_base](int tag_offset) {
    py::gil_scoped_acquire locked;
    return transport::AnyTransport(python_transport(held->get(), tag_base + tag_offset));
  };
}

reduction parse_reduction(const std::string& name);

/// A call's report as a dict.
py::dict to_dict(const collective_report& r);

/// A call in flight and what must outlive it (the Python buffers it reads and writes). Dropping it
/// before the call completes completes the call first (zcoll::request's rule: the other ranks are in it).
class python_request {
 public:
  python_request(request r, std::vector<std::shared_ptr<void>> keep_alive)
      : request_(std::move(r)), keep_alive_(std::move(keep_alive)) {}
  ~python_request() {
    py::gil_scoped_release unlocked;  // completing the call takes the GIL per message, as wait() does
    request_ = request();
  }

  py::dict wait() {
    {
      py::gil_scoped_release unlocked;
      request_.wait();
    }
    return to_dict(request_.report());
  }
  bool test() {
    py::gil_scoped_release unlocked;
    return request_.test();
  }

 private:
  request request_;
  std::vector<std::shared_ptr<void>> keep_alive_;  // released (with the GIL) after request_ completed
};

void bind_collectives(py::module_& m);

}  // namespace zcoll::python
