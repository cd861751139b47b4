// zcoll._zcoll_cuda: zcoll's codecs and collectives on CUDA tensors, for the package zcoll (python/zcoll/:
// zcoll.Codec and zcoll.torch.Collectives take a CUDA tensor here). It links no libtorch: a tensor
// arrives as its address and byte length, torch's current stream as its integer handle
// (torch.cuda.current_stream().cuda_stream), the device as its index; errors are zcoll._zcoll's classes.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../codecs.hpp"
#include "../collectives.hpp"
#include "../exceptions.hpp"
#include "device_faces.hpp"

namespace py = pybind11;

namespace zcoll::python::cuda_face {

namespace {

/// Device memory as Python hands it over: (address, bytes).
using device_span = std::pair<std::uintptr_t, std::size_t>;

value_view view_of(const device_span& s) { return {reinterpret_cast<std::byte*>(s.first), s.second}; }

/// The number of `d` values in `s`; argument_error naming `argument` when its bytes are not whole values.
std::size_t value_count(const device_span& s, dtype d, const std::string& d_name, const char* argument) {
  if (s.second % size_of(d) != 0) {
    throw argument_error(std::string(argument) + ": " + std::to_string(s.second) + " bytes are not a whole number of " + d_name +
                         " values");
  }
  return s.second / size_of(d);
}

/// A call in flight on a device: its waits, and the completion its destruction forces, run with that
/// device as the thread's, as the call's start did (the thread's own device is restored after each).
class cuda_request {
 public:
  cuda_request(std::unique_ptr<python_request> request, int device) : request_(std::move(request)), device_(device) {}
  ~cuda_request() {
    const device_scope on_device(device_);
    request_.reset();
  }
  cuda_request(const cuda_request&) = delete;
  cuda_request& operator=(const cuda_request&) = delete;

  py::dict wait() {
    const device_scope on_device(device_);
    return request_->wait();
  }
  bool test() {
    const device_scope on_device(device_);
    return request_->test();
  }

 private:
  std::unique_ptr<python_request> request_;
  int device_;
};

/// A collective on CUDA tensors. Each call moves the staging space to the caller's device and stream,
/// then starts as the host calls do; its Request keeps `keep` (the tensors) alive until it completes.
class cuda_collective {
 public:
  cuda_collective(py::object transport, int tag_base, const collective_settings& settings)
      : collective_(python_transport_maker(std::move(transport), tag_base), settings) {}

  std::unique_ptr<cuda_request> allreduce(const std::optional<device_span>& in, const device_span& out,
                                            const std::string& d, const std::string& op, int device, std::uintptr_t stream,
                                            py::object keep) {
    const dtype type = parse_dtype(d, "allreduce");
    const reduction r = parse_reduction(op);
    const std::optional<value_view> input = in ? std::optional(view_of(*in)) : std::nullopt;
    return start(device, stream, std::move(keep),
                 [&](collective_face& c) { return c.allreduce(type, input ? &*input : nullptr, view_of(out), r); });
  }

  std::unique_ptr<cuda_request> reduce_scatter(const device_span& in, const device_span& out, const std::string& d,
                                                 const std::string& op, int device, std::uintptr_t stream, py::object keep) {
    const dtype type = parse_dtype(d, "reduce_scatter");
    const reduction r = parse_reduction(op);
    return start(device, stream, std::move(keep),
                 [&](collective_face& c) { return c.reduce_scatter(type, view_of(in), view_of(out), r); });
  }

  std::unique_ptr<cuda_request> allgather(const device_span& in, const device_span& out, const std::string& d, int device,
                                            std::uintptr_t stream, py::object keep) {
    const dtype type = parse_dtype(d, "allgather");
    return start(device, stream, std::move(keep), [&](collective_face& c) { return c.allgather(type, view_of(in), view_of(out)); });
  }

  std::unique_ptr<cuda_request> alltoall(const device_span& in, const device_span& out, const std::string& d, int device,
                                           std::uintptr_t stream, py::object keep) {
    const dtype type = parse_dtype(d, "alltoall");
    return start(device, stream, std::move(keep), [&](collective_face& c) { return c.alltoall(type, view_of(in), view_of(out)); });
  }

  std::unique_ptr<cuda_request> alltoallv(const device_span& in, std::vector<std::size_t> send_counts, const device_span& out,
                                            std::vector<std::size_t> recv_counts, const std::string& d, int device,
                                            std::uintptr_t stream, py::object keep) {
    const dtype type = parse_dtype(d, "alltoall_single");
    return start(device, stream, std::move(keep), [&](collective_face& c) {
      return c.alltoallv(type, view_of(in), send_counts, view_of(out), recv_counts);
    });
  }

 private:
  /// Starts the call without the GIL (it codes and moves its first messages).
  template <class Call>
  std::unique_ptr<cuda_request> start(int device, std::uintptr_t stream, py::object keep, Call&& call) {
    std::optional<request> r;
    {
      py::gil_scoped_release unlocked;
      const device_scope on_device(device);
      r.emplace(call(collective_.on_stream(device, stream)));
    }
    std::vector<std::shared_ptr<void>> held{std::make_shared<py::object>(std::move(keep))};
    return std::make_unique<cuda_request>(std::make_unique<python_request>(std::move(*r), std::move(held)), device);
  }

  device_collective collective_;
};

void bind(py::module_& m) {
  m.def("device_codec_names", &device_codec_names);

  py::class_<device_codec>(m, "DeviceCodec")
      .def(py::init([](const std::string& name, const std::string& bound_mode, double bound_value, std::uint32_t chunk_values,
                       std::optional<double> fill_value, std::vector<std::size_t> shape) {
             codec_config config{.error_bound = parse_bound(bound_mode, bound_value),
                                 .chunk_values = chunk_values,
                                 .fill_value = fill_value,
                                 .shape = std::move(shape)};
             return make_device_codec(name, config);
           }),
           py::arg("name"), py::arg("bound_mode"), py::arg("bound_value"), py::arg("chunk_values"), py::arg("fill_value"),
           py::arg("shape"))
      .def("max_compressed_size",
           [](const device_codec& c, const std::string& d, std::size_t count) {
             return c.max_compressed_size(parse_dtype(d, "max_compressed_size"), count);
           })
      .def("compress",
           [](device_codec& c, const device_span& in, const std::string& d, const device_span& out, int device,
              std::uintptr_t stream) {
             const dtype type = parse_dtype(d, "compress");
             const std::size_t count = value_count(in, type, d, "compress: input");
             py::gil_scoped_release unlocked;
             return c.compress(type, in.first, count, out.first, out.second, device, stream);
           },
           py::arg("input"), py::arg("dtype"), py::arg("out"), py::arg("device"), py::arg("stream"))
      .def("decompress",
           [](device_codec& c, const device_span& stream_bytes, const device_span& out, const std::string& d, int device,
              std::uintptr_t stream) {
             const dtype type = parse_dtype(d, "decompress");
             const std::size_t count = value_count(out, type, d, "decompress: out");
             py::gil_scoped_release unlocked;
             return c.decompress(type, stream_bytes.first, stream_bytes.second, out.first, count, device, stream);
           },
           py::arg("stream_bytes"), py::arg("out"), py::arg("dtype"), py::arg("device"), py::arg("stream"));

  py::class_<cuda_request>(m, "Request")
      .def("wait", &cuda_request::wait, "Completes the call; its report (a dict). Raises the call's error.")
      .def("test", &cuda_request::test, "Progresses the call without blocking; whether it has completed.");

  py::class_<cuda_collective>(m, "Collective")
      .def(py::init([](py::object transport, int tag_base, const std::string& codec, const std::string& bound_mode,
                       double bound_value, std::uint32_t chunk_values, std::vector<std::size_t> shape,
                       const std::string& schedule, unsigned threads, bool verify, bool homomorphic,
                       std::size_t min_compressed_bytes, std::size_t pipeline_values) {
             return std::make_unique<cuda_collective>(
                 std::move(transport), tag_base,
                 make_collective_settings(codec, bound_mode, bound_value, chunk_values, std::move(shape), schedule, threads,
                                          verify, homomorphic, min_compressed_bytes, pipeline_values));
           }),
           py::arg("transport"), py::arg("tag_base"), py::arg("codec"), py::arg("bound_mode"), py::arg("bound_value"),
           py::arg("chunk_values"), py::arg("shape"), py::arg("schedule"), py::arg("threads"), py::arg("verify"),
           py::arg("homomorphic"), py::arg("min_compressed_bytes"), py::arg("pipeline_values"))
      .def("allreduce", &cuda_collective::allreduce, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"), py::arg("op"),
           py::arg("device"), py::arg("stream"), py::arg("keep"))
      .def("reduce_scatter", &cuda_collective::reduce_scatter, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"), py::arg("op"),
           py::arg("device"), py::arg("stream"), py::arg("keep"))
      .def("allgather", &cuda_collective::allgather, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"), py::arg("device"),
           py::arg("stream"), py::arg("keep"))
      .def("alltoall", &cuda_collective::alltoall, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"), py::arg("device"),
           py::arg("stream"), py::arg("keep"))
      .def("alltoallv", &cuda_collective::alltoallv, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("send_counts"), py::arg("out"),
           py::arg("recv_counts"), py::arg("dtype"), py::arg("device"), py::arg("stream"), py::arg("keep"));
}

}  // namespace

}  // namespace zcoll::python::cuda_face

PYBIND11_MODULE(_zcoll_cuda, m) {
  m.doc() = "zcoll's codecs and compressed collectives on CUDA tensors (use the package zcoll, not this module)";
  const py::module_ base = py::module_::import("zcoll._zcoll");  // zcoll's exception classes are its
  zcoll::python::register_zcoll_errors({base.attr("Error").ptr(), base.attr("FormatError").ptr(),
                                        base.attr("ArgumentError").ptr(), base.attr("TransportError").ptr()});
  zcoll::python::cuda_face::bind(m);
}
