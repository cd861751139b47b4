// What zcoll._zcoll and zcoll._zcoll_cuda share of their collectives' bindings (collectives.hpp).

#include "collectives.hpp"

#include <string>
#include <utility>
#include <vector>

#include "codecs.hpp"

namespace zcoll::python {

namespace {

reduce_schedule parse_schedule(const std::string& name) {
  if (name == "ring") return reduce_schedule::ring;
  if (name == "recursive_doubling") return reduce_schedule::recursive_doubling;
  throw argument_error("schedule: '" + name + "'; expected 'ring' or 'recursive_doubling'");
}

}  // namespace

reduction parse_reduction(const std::string& name) {
  if (name == "sum") return reduction::sum;
  if (name == "min") return reduction::min;
  if (name == "max") return reduction::max;
  throw argument_error("op: '" + name + "'; expected 'sum', 'min' or 'max' (an average is a sum divided by the ranks)");
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

collective_settings make_collective_settings(const std::string& codec, const std::string& bound_mode, double bound_value,
                                             std::uint32_t chunk_values, std::vector<std::size_t> shape,
                                             const std::string& schedule, unsigned threads, bool verify, bool homomorphic,
                                             std::size_t min_compressed_bytes, std::size_t pipeline_values) {
  if (threads == 0) throw argument_error("threads = 0; expected at least 1");
  collective_settings settings;
  settings.codec = codec;
  settings.codec_settings = {.error_bound = parse_bound(bound_mode, bound_value), .chunk_values = chunk_values, .shape = std::move(shape)};
  settings.allreduce = parse_schedule(schedule);
  settings.config.threads = threads;
  settings.config.verify = verify;
  settings.config.homomorphic = homomorphic;
  settings.config.min_compressed_bytes = min_compressed_bytes;
  settings.config.pipeline_values = pipeline_values;
  return settings;
}

}  // namespace zcoll::python
