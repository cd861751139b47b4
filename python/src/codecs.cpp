// The codecs of the registry as Python objects: one C++ codec value, made once, behind a small virtual
// interface (one virtual call per compress or decompress, never per value). Every call releases the
// GIL while it codes, so Python threads and torch's own ops run beside it.

#include "codecs.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll::python {

namespace {

template <class Entry>
class codec_model final : public codec_face {
 public:
  using Codec = typename Entry::type;

  codec_model(codec_config config, unsigned threads) : codec_(check_shape(std::move(config))), threads_(threads) {}

  std::string name() const override { return std::string(Entry::name); }
  bool on_rows() const override { return Entry::traits.input == codec_input::rows; }
  const codec_config& config() const override { return codec_.config(); }

  std::size_t max_compressed_size(dtype d, std::size_t count) const override {
    if (d == dtype::float64) return codec_.template max_compressed_size<double>(count);
    return codec_.template max_compressed_size<float>(count);  // 16-bit values travel as f32 streams
  }

  std::size_t compress(dtype d, const held_buffer& in, std::span<std::byte> out) const override {
    return with_dtype(d, [&]<class T>(T) {
      const auto values = in.values<const T>("compress: input");
      check_rows(values.size());
      py::gil_scoped_release unlocked;
      return zcoll::compress(exec::Host{.threads = threads_}, codec_, values, out).size();
    });
  }

  double decompress(dtype d, std::span<const std::byte> stream, const held_buffer& out) const override {
    return with_dtype(d, [&]<class T>(T) -> double {
      const auto values = out.values<T>("decompress: out");
      py::gil_scoped_release unlocked;
      if constexpr (half_value<T>) {
        return zcoll::decompress(exec::Host{.threads = threads_}, codec_, stream, values);
      } else {
        zcoll::decompress(exec::Host{.threads = threads_}, codec_, stream, values);
        return 0.0;
      }
    });
  }

 private:
  static codec_config check_shape(codec_config config) {
    if (Entry::traits.input == codec_input::rows && config.shape.empty()) {
      throw argument_error("Codec('" + std::string(Entry::name) +
                           "'): this codec works on rows; give shape=(rows, row_length) or shape=(row_length,)");
    }
    return config;
  }
  void check_rows(std::size_t count) const {
    const std::size_t row = row_length(codec_.config());
    if (Entry::traits.input == codec_input::rows && row != 0 && count % row != 0) {
      throw argument_error("compress: " + std::to_string(count) + " values are not whole rows of shape[-1] = " +
                           std::to_string(row));
    }
  }

  Codec codec_;
  unsigned threads_;
};

py::dict stream_info(const py::buffer& stream) {
  const held_buffer held(stream, false, "stream_info: stream");
  const auto bytes = std::span<const std::byte>(held.data, held.bytes);
  const stream_header header = read_stream_header(bytes);
  std::string codec = "unregistered (" + to_string(header.codec) + ")";
  for_each_registered_codec([&]<class Entry>() {
    if (Entry::type::id == header.codec) codec = std::string(Entry::name);
  });
  py::dict info;
  info["codec"] = codec;
  info["dtype"] = header.type == value_type::f32 ? "float32" : "float64";
  info["count"] = header.count;
  info["error_bound"] = header.error_bound;
  info["chunk_values"] = header.chunk_values;
  if (header.has_fill_value) {
    info["fill_value"] = header.type == value_type::f32
                             ? static_cast<double>(fill_value_of<float>(static_cast<std::uint32_t>(header.fill_bits)))
                             : fill_value_of<double>(header.fill_bits);
  } else {
    info["fill_value"] = py::none();
  }
  info["bytes"] = held.bytes;
  return info;
}

}  // namespace

std::shared_ptr<codec_face> make_codec(const std::string& name, codec_config config, unsigned threads) {
  if (threads == 0) throw argument_error("Codec: threads = 0; expected at least 1");
  return with_registered_codec(name, [&]<class Entry>() -> std::shared_ptr<codec_face> {
    return std::make_shared<codec_model<Entry>>(std::move(config), threads);
  });
}

void bind_codecs(py::module_& m) {
  m.def("codec_names", [] {
    std::vector<std::string> names;
    for (const auto name : registered_codec_names()) names.emplace_back(name);
    return names;
  });
  m.def("stream_info", &stream_info, py::arg("stream"));
  m.attr("stream_header_bytes") = stream_header_size_bytes;  // the fixed header stream_info reads
  m.def("codec_on_rows", [](const std::string& name) {
    return with_registered_codec(name, [&]<class Entry>() { return Entry::traits.input == codec_input::rows; });
  });

  py::class_<codec_face, std::shared_ptr<codec_face>>(m, "Codec")
      .def(py::init([](const std::string& name, const std::string& bound_mode, double bound_value,
                       std::uint32_t chunk_values, std::optional<double> fill_value, std::vector<std::size_t> shape,
                       unsigned threads, const std::string& tuning) {
             codec_config config{.error_bound = parse_bound(bound_mode, bound_value),
                                 .chunk_values = chunk_values,
                                 .fill_value = fill_value,
                                 .shape = std::move(shape),
                                 .tuning = parse_tuning(tuning)};
             return make_codec(name, std::move(config), threads);
           }),
           py::arg("name"), py::arg("bound_mode"), py::arg("bound_value"), py::arg("chunk_values"),
           py::arg("fill_value"), py::arg("shape"), py::arg("threads"), py::arg("tuning"))
      .def_property_readonly("name", &codec_face::name)
      .def_property_readonly("on_rows", &codec_face::on_rows)
      .def_property_readonly("chunk_values", [](const codec_face& c) { return c.config().chunk_values; })
      .def("max_compressed_size",
           [](const codec_face& c, const std::string& d, std::size_t count) {
             return c.max_compressed_size(parse_dtype(d, "max_compressed_size"), count);
           })
      .def("compress",
           [](const codec_face& c, const py::buffer& in, const std::string& d, const py::buffer& out) {
             const dtype type = parse_dtype(d, "compress");
             const held_buffer input(in, false, "compress: input");
             const held_buffer output(out, true, "compress: out");
             return c.compress(type, input, std::span<std::byte>(output.data, output.bytes));
           })
      .def("decompress", [](const codec_face& c, const py::buffer& stream, const py::buffer& out, const std::string& d) {
        const dtype type = parse_dtype(d, "decompress");
        const held_buffer in(stream, false, "decompress: stream");
        const held_buffer output(out, true, "decompress: out");
        return c.decompress(type, std::span<const std::byte>(in.data, in.bytes), output);
      });
}

}  // namespace zcoll::python
