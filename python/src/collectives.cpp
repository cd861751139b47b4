// zcoll._zcoll.Collective and Request: the engine's calls from Python. A call returns a Request that
// holds the Python buffers it reads and writes until the call has completed; wait() releases the GIL
// while the engine codes, reduces and waits for its messages.

#include "collectives.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "codecs.hpp"

namespace zcoll::python {

namespace {

reduction parse_reduction(const std::string& name) {
  if (name == "sum") return reduction::sum;
  if (name == "min") return reduction::min;
  if (name == "max") return reduction::max;
  throw argument_error("op: '" + name + "'; expected 'sum', 'min' or 'max' (an average is a sum divided by the ranks)");
}

reduce_schedule parse_schedule(const std::string& name) {
  if (name == "ring") return reduce_schedule::ring;
  if (name == "recursive_doubling") return reduce_schedule::recursive_doubling;
  throw argument_error("schedule: '" + name + "'; expected 'ring' or 'recursive_doubling'");
}

py::dict to_dict(const collective_report& r) {
  py::dict d;
  d["operation"] = r.operation;
  d["schedule"] = r.schedule;
  d["codec"] = r.codec;
  d["ranks"] = r.ranks;
  d["compressed"] = r.compressed;
  d["input_bytes"] = r.input_bytes;
  d["bytes_sent"] = r.bytes_sent;
  d["raw_bytes_sent"] = r.raw_bytes_sent;
  d["ratio"] = r.ratio;
  d["compress_s"] = r.compress_s;
  d["communicate_s"] = r.communicate_s;
  d["decompress_s"] = r.decompress_s;
  d["reduce_s"] = r.reduce_s;
  d["total_s"] = r.total_s;
  d["error_bound"] = r.error_bound;
  d["statistical_error_bound"] = r.statistical_error_bound;
  d["compressions_in_chain"] = r.compressions_in_chain;
  return d;
}

/// A call in flight and the buffers it uses. Dropping it before the call completes completes the call
/// first (zcoll::request's rule: the other ranks are in it).
class python_request {
 public:
  python_request(request r, std::vector<std::unique_ptr<held_buffer>> buffers)
      : request_(std::move(r)), buffers_(std::move(buffers)) {}
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
  std::vector<std::unique_ptr<held_buffer>> buffers_;  // released (with the GIL) after request_ completed
};

class python_collective {
 public:
  python_collective(py::object transport, int tag_base, collective_settings settings) {
    collective_ = make_value_collective(transport, tag_base, settings);
    if (!collective_) collective_ = make_row_collective(transport, tag_base, settings);
    if (!collective_) {
      throw argument_error("codec '" + settings.codec +
                           "' does not run in collectives; use fzlight, identity, int8, int4 or (all-to-all) "
                           "embedding-hybrid");
    }
  }

  std::unique_ptr<python_request> allreduce(const std::optional<py::buffer>& in, const py::buffer& out,
                                            const std::string& d, const std::string& op) {
    std::vector<std::unique_ptr<held_buffer>> held;
    const held_buffer* input = nullptr;
    if (in) input = held.emplace_back(std::make_unique<held_buffer>(*in, false, "allreduce: input")).get();
    const auto& output = *held.emplace_back(std::make_unique<held_buffer>(out, true, "allreduce: out"));
    auto r = collective_->allreduce(parse_dtype(d, "allreduce"), input, output, parse_reduction(op));
    return std::make_unique<python_request>(std::move(r), std::move(held));
  }

  std::unique_ptr<python_request> reduce_scatter(const py::buffer& in, const py::buffer& out, const std::string& d,
                                                 const std::string& op) {
    auto held = hold(in, out, "reduce_scatter");
    auto r = collective_->reduce_scatter(parse_dtype(d, "reduce_scatter"), *held[0], *held[1], parse_reduction(op));
    return std::make_unique<python_request>(std::move(r), std::move(held));
  }

  std::unique_ptr<python_request> allgather(const py::buffer& in, const py::buffer& out, const std::string& d) {
    auto held = hold(in, out, "allgather");
    auto r = collective_->allgather(parse_dtype(d, "allgather"), *held[0], *held[1]);
    return std::make_unique<python_request>(std::move(r), std::move(held));
  }

  std::unique_ptr<python_request> alltoall(const py::buffer& in, const py::buffer& out, const std::string& d) {
    auto held = hold(in, out, "alltoall");
    auto r = collective_->alltoall(parse_dtype(d, "alltoall"), *held[0], *held[1]);
    return std::make_unique<python_request>(std::move(r), std::move(held));
  }

  std::unique_ptr<python_request> alltoallv(const py::buffer& in, std::vector<std::size_t> send_counts,
                                            const py::buffer& out, std::vector<std::size_t> recv_counts,
                                            const std::string& d) {
    auto held = hold(in, out, "alltoall_single");
    auto r = collective_->alltoallv(parse_dtype(d, "alltoall_single"), *held[0], send_counts, *held[1], recv_counts);
    return std::make_unique<python_request>(std::move(r), std::move(held));
  }

 private:
  static std::vector<std::unique_ptr<held_buffer>> hold(const py::buffer& in, const py::buffer& out, const char* call) {
    std::vector<std::unique_ptr<held_buffer>> held;
    held.push_back(std::make_unique<held_buffer>(in, false, (std::string(call) + ": input").c_str()));
    held.push_back(std::make_unique<held_buffer>(out, true, (std::string(call) + ": out").c_str()));
    return held;
  }

  std::unique_ptr<collective_face> collective_;
};

}  // namespace

void bind_collectives(py::module_& m) {
  py::class_<python_request>(m, "Request")
      .def("wait", &python_request::wait, "Completes the call; its report (a dict). Raises the call's error.")
      .def("test", &python_request::test, "Progresses the call without blocking; whether it has completed.");

  py::class_<python_collective>(m, "Collective")
      .def(py::init([](py::object transport, int tag_base, const std::string& codec, const std::string& bound_mode,
                       double bound_value, std::uint32_t chunk_values, std::vector<std::size_t> shape,
                       const std::string& schedule, unsigned threads, bool verify, bool homomorphic,
                       std::size_t min_compressed_bytes, std::size_t pipeline_values) {
             if (threads == 0) throw argument_error("threads = 0; expected at least 1");
             collective_settings settings;
             settings.codec = codec;
             settings.codec_settings = {.error_bound = parse_bound(bound_mode, bound_value),
                                        .chunk_values = chunk_values,
                                        .shape = std::move(shape)};
             settings.allreduce = parse_schedule(schedule);
             settings.config.threads = threads;
             settings.config.verify = verify;
             settings.config.homomorphic = homomorphic;
             settings.config.min_compressed_bytes = min_compressed_bytes;
             settings.config.pipeline_values = pipeline_values;
             return std::make_unique<python_collective>(std::move(transport), tag_base, std::move(settings));
           }),
           py::arg("transport"), py::arg("tag_base"), py::arg("codec"), py::arg("bound_mode"), py::arg("bound_value"),
           py::arg("chunk_values"), py::arg("shape"), py::arg("schedule"), py::arg("threads"), py::arg("verify"),
           py::arg("homomorphic"), py::arg("min_compressed_bytes"), py::arg("pipeline_values"))
      .def("allreduce", &python_collective::allreduce, py::arg("input"), py::arg("out"), py::arg("dtype"), py::arg("op"))
      .def("reduce_scatter", &python_collective::reduce_scatter, py::arg("input"), py::arg("out"), py::arg("dtype"),
           py::arg("op"))
      .def("allgather", &python_collective::allgather, py::arg("input"), py::arg("out"), py::arg("dtype"))
      .def("alltoall", &python_collective::alltoall, py::arg("input"), py::arg("out"), py::arg("dtype"))
      .def("alltoallv", &python_collective::alltoallv, py::arg("input"), py::arg("send_counts"), py::arg("out"),
           py::arg("recv_counts"), py::arg("dtype"));
}

}  // namespace zcoll::python
