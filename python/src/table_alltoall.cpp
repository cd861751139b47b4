// zcoll._zcoll.TableAlltoall and the adapt/ rules: the DLRM compression paper's embedding all-to-all
// (embedding::TableWiseAlltoall: one stream per table segment, each at its table's bound, sizes first)
// over a python_transport, and the table-wise bounds of adapt/ (homogenization index, classifier).

#include "table_alltoall.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "python_transport.hpp"
#include "held_buffer.hpp"
#include "zcoll/adapt/homogenization.hpp"
#include "zcoll/adapt/table_classifier.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/embedding/table_alltoall.hpp"
#include "zcoll/transport/any.hpp"

namespace zcoll::python {

namespace {

using segment_tuple = std::tuple<int, std::uint32_t, std::size_t>;  // (peer, table, values)

class table_alltoall_face {
 public:
  virtual ~table_alltoall_face() = default;
  virtual embedding::table_alltoall_report exchange(std::span<const float> in, std::span<const embedding::table_segment> send,
                                                    std::span<float> out, std::span<const embedding::table_segment> recv,
                                                    std::span<const double> bounds) = 0;
};

template <class Codec>
class table_alltoall_model final : public table_alltoall_face {
 public:
  table_alltoall_model(transport::AnyTransport t, codec_config base, unsigned threads)
      : alltoall_(std::move(t), std::move(base), threads) {}
  embedding::table_alltoall_report exchange(std::span<const float> in, std::span<const embedding::table_segment> send,
                                            std::span<float> out, std::span<const embedding::table_segment> recv,
                                            std::span<const double> bounds) override {
    alltoall_.exchange(in, send, out, recv, bounds);
    return alltoall_.last_report();
  }

 private:
  embedding::TableWiseAlltoall<Codec> alltoall_;
};

/// The codecs the table-wise all-to-all runs: those of the embedding exchange.
constexpr bool table_codec(std::string_view name) {
  return name == "fzlight" || name == "embedding-hybrid" || name == "embedding-lz" || name == "embedding-huffman";
}

std::vector<embedding::table_segment> segments_of(const std::vector<segment_tuple>& list) {
  std::vector<embedding::table_segment> segments;
  segments.reserve(list.size());
  for (const auto& [peer, table, values] : list) segments.push_back({peer, table, values});
  return segments;
}

class python_table_alltoall {
 public:
  python_table_alltoall(py::object transport, int tag_base, const std::string& codec, std::size_t dim,
                        std::uint32_t chunk_values, unsigned threads) {
    if (!table_codec(codec)) {
      throw argument_error("TableWiseAlltoall: codec '" + codec +
                           "'; expected fzlight, embedding-hybrid, embedding-lz or embedding-huffman");
    }
    if (dim == 0) throw argument_error("TableWiseAlltoall: dim 0; expected the embedding dimension (>= 1)");
    if (threads == 0) throw argument_error("TableWiseAlltoall: threads = 0; expected at least 1");
    transport::AnyTransport t{python_transport(std::move(transport), tag_base)};
    const codec_config base{.chunk_values = chunk_values, .shape = {dim}};
    with_registered_codec(codec, [&]<class Entry>() {
      if constexpr (table_codec(Entry::name)) {
        impl_ = std::make_unique<table_alltoall_model<typename Entry::type>>(std::move(t), base, threads);
      }
    });
  }

  py::dict exchange(const py::buffer& in, const std::vector<segment_tuple>& send_segments, const py::buffer& out,
                    const std::vector<segment_tuple>& recv_segments, const std::vector<double>& bounds) {
    const held_buffer input(in, false, "exchange: input");
    const held_buffer output(out, true, "exchange: output");
    const auto send = segments_of(send_segments);
    const auto recv = segments_of(recv_segments);
    embedding::table_alltoall_report r;
    {
      py::gil_scoped_release unlocked;
      r = impl_->exchange(input.values<const float>("exchange: input"), send, output.values<float>("exchange: output"),
                          recv, bounds);
    }
    py::dict d;
    d["bytes_sent"] = r.bytes_sent;
    d["raw_bytes_sent"] = r.raw_bytes_sent;
    d["ratio"] = r.ratio();
    d["compress_s"] = r.compress_s;
    d["communicate_s"] = r.communicate_s;
    d["decompress_s"] = r.decompress_s;
    return d;
  }

 private:
  std::unique_ptr<table_alltoall_face> impl_;
};

}  // namespace

void bind_table_alltoall(py::module_& m) {
  py::class_<python_table_alltoall>(m, "TableAlltoall")
      .def(py::init<py::object, int, const std::string&, std::size_t, std::uint32_t, unsigned>(), py::arg("transport"),
           py::arg("tag_base"), py::arg("codec"), py::arg("dim"), py::arg("chunk_values"), py::arg("threads"))
      .def("exchange", &python_table_alltoall::exchange, py::arg("input"), py::arg("send_segments"), py::arg("output"),
           py::arg("recv_segments"), py::arg("bounds"));

  m.def("homogenization_index", [](const py::buffer& rows, std::size_t dim, double error_bound) {
    const held_buffer held(rows, false, "homogenization_index: rows");
    py::gil_scoped_release unlocked;
    return adapt::homogenization_of(held.values<const float>("homogenization_index: rows"), dim, error_bound).index();
  });
  m.def("table_bound", [](double index, double global_bound, double alpha, double beta, double large_below,
                          double small_above) {
    const adapt::table_classifier c{global_bound, alpha, beta, large_below, small_above};
    const adapt::bound_class k = c.classify(index);
    return std::make_pair(c.bound_of(k), std::string(adapt::to_string(k)));
  });
}

}  // namespace zcoll::python
