// zcoll._zcoll.Collective and Request: the engine's calls from Python on host memory. A call returns a
// Request that holds the Python buffers it reads and writes until the call has completed; wait()
// releases the GIL while the engine codes, reduces and waits for its messages.

#include "collectives.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "held_buffer.hpp"

namespace zcoll::python {

namespace {

class python_collective {
 public:
  /// `staged`: the staged calls through a HostStaging of its own (the steps the calls on CUDA tensors
  /// take), for the codecs with device drivers.
  python_collective(py::object transport, int tag_base, const collective_settings& settings, bool staged) {
    const transport_maker maker = python_transport_maker(std::move(transport), tag_base);
    if (staged) {
      space_ = std::make_unique<HostStaging>(exec::Host{.threads = settings.config.threads});
      collective_ = make_staged_value_collective(maker, settings, *space_);
      if (!collective_) collective_ = make_staged_row_collective(maker, settings, *space_);
      if (!collective_) {
        throw argument_error("codec '" + settings.codec + "' has no device driver for staged collectives; use fzlight, int8 or int4");
      }
      return;
    }
    collective_ = make_value_collective(maker, settings);
    if (!collective_) collective_ = make_row_collective(maker, settings);
    if (!collective_) {
      throw argument_error("codec '" + settings.codec +
                           "' does not run in collectives; use fzlight, identity, int8, int4 or (all-to-all) "
                           "embedding-hybrid");
    }
  }

  std::unique_ptr<python_request> allreduce(const std::optional<py::buffer>& in, const py::buffer& out,
                                            const std::string& d, const std::string& op) {
    const dtype type = parse_dtype(d, "allreduce");
    const reduction r = parse_reduction(op);
    std::vector<std::shared_ptr<void>> held;
    std::optional<value_view> input;
    if (in) input = hold(held, *in, false, "allreduce: input");
    const value_view output = hold(held, out, true, "allreduce: out");
    return start(std::move(held), [&] { return collective_->allreduce(type, input ? &*input : nullptr, output, r); });
  }

  std::unique_ptr<python_request> reduce_scatter(const py::buffer& in, const py::buffer& out, const std::string& d,
                                                 const std::string& op) {
    const dtype type = parse_dtype(d, "reduce_scatter");
    const reduction r = parse_reduction(op);
    std::vector<std::shared_ptr<void>> held;
    const value_view input = hold(held, in, false, "reduce_scatter: input"), output = hold(held, out, true, "reduce_scatter: out");
    return start(std::move(held), [&] { return collective_->reduce_scatter(type, input, output, r); });
  }

  std::unique_ptr<python_request> allgather(const py::buffer& in, const py::buffer& out, const std::string& d) {
    const dtype type = parse_dtype(d, "allgather");
    std::vector<std::shared_ptr<void>> held;
    const value_view input = hold(held, in, false, "allgather: input"), output = hold(held, out, true, "allgather: out");
    return start(std::move(held), [&] { return collective_->allgather(type, input, output); });
  }

  std::unique_ptr<python_request> alltoall(const py::buffer& in, const py::buffer& out, const std::string& d) {
    const dtype type = parse_dtype(d, "alltoall");
    std::vector<std::shared_ptr<void>> held;
    const value_view input = hold(held, in, false, "alltoall: input"), output = hold(held, out, true, "alltoall: out");
    return start(std::move(held), [&] { return collective_->alltoall(type, input, output); });
  }

  std::unique_ptr<python_request> alltoallv(const py::buffer& in, std::vector<std::size_t> send_counts,
                                            const py::buffer& out, std::vector<std::size_t> recv_counts,
                                            const std::string& d) {
    const dtype type = parse_dtype(d, "alltoall_single");
    std::vector<std::shared_ptr<void>> held;
    const value_view input = hold(held, in, false, "alltoall_single: input"), output = hold(held, out, true, "alltoall_single: out");
    return start(std::move(held), [&] { return collective_->alltoallv(type, input, send_counts, output, recv_counts); });
  }

 private:
  static value_view hold(std::vector<std::shared_ptr<void>>& held, const py::buffer& buffer, bool writable, const char* argument) {
    auto h = std::make_shared<held_buffer>(buffer, writable, argument);
    const value_view view = h->view();
    held.push_back(std::move(h));
    return view;
  }

  /// Starts the call without the GIL (it may code and move its first messages).
  template <class Call>
  static std::unique_ptr<python_request> start(std::vector<std::shared_ptr<void>> held, Call&& call) {
    std::optional<request> r;
    {
      py::gil_scoped_release unlocked;
      r.emplace(call());
    }
    return std::make_unique<python_request>(std::move(*r), std::move(held));
  }

  std::unique_ptr<HostStaging> space_;  // before collective_, which uses it: destroyed after it
  std::unique_ptr<collective_face> collective_;
};

}  // namespace

void bind_collectives(py::module_& m) {
  py::class_<python_request>(m, "Request")
      .def("wait", &python_request::wait, "Completes the call; its report (a dict). Raises the call's error.")
      .def("test", &python_request::test, "Progresses the call without blocking; whether it has completed.");

  // A Request keeps its Collective alive (keep_alive<0, 1>): the call in flight uses its engine and space.
  py::class_<python_collective>(m, "Collective")
      .def(py::init([](py::object transport, int tag_base, const std::string& codec, const std::string& bound_mode,
                       double bound_value, std::uint32_t chunk_values, std::vector<std::size_t> shape,
                       const std::string& schedule, unsigned threads, bool verify, bool homomorphic,
                       std::size_t min_compressed_bytes, std::size_t pipeline_values, bool staged) {
             return std::make_unique<python_collective>(
                 std::move(transport), tag_base,
                 make_collective_settings(codec, bound_mode, bound_value, chunk_values, std::move(shape), schedule, threads,
                                          verify, homomorphic, min_compressed_bytes, pipeline_values),
                 staged);
           }),
           py::arg("transport"), py::arg("tag_base"), py::arg("codec"), py::arg("bound_mode"), py::arg("bound_value"),
           py::arg("chunk_values"), py::arg("shape"), py::arg("schedule"), py::arg("threads"), py::arg("verify"),
           py::arg("homomorphic"), py::arg("min_compressed_bytes"), py::arg("pipeline_values"), py::arg("staged") = false)
      .def("allreduce", &python_collective::allreduce, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"), py::arg("op"))
      .def("reduce_scatter", &python_collective::reduce_scatter, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"),
           py::arg("op"))
      .def("allgather", &python_collective::allgather, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"))
      .def("alltoall", &python_collective::alltoall, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("out"), py::arg("dtype"))
      .def("alltoallv", &python_collective::alltoallv, py::keep_alive<0, 1>(),
           py::arg("input"), py::arg("send_counts"), py::arg("out"),
           py::arg("recv_counts"), py::arg("dtype"));
}

}  // namespace zcoll::python
