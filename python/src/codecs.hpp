#pragma once
// The Python face's codecs: any registered codec behind one interface, chosen by name at run time.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "held_buffer.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/core/error_bound.hpp"

namespace zcoll::python {

/// One codec value, made once; calls release the GIL while they code.
class codec_face {
 public:
  virtual ~codec_face() = default;
  virtual std::string name() const = 0;
  virtual bool on_rows() const = 0;
  virtual const codec_config& config() const = 0;
  virtual std::size_t max_compressed_size(dtype d, std::size_t count) const = 0;
  /// Compresses `in` (values of `d`) into `out`; the bytes written.
  virtual std::size_t compress(dtype d, const held_buffer& in, std::span<std::byte> out) const = 0;
  /// Decompresses into `out` (values of `d`); for 16-bit values, the largest error the final rounding
  /// added (docs/python.md), else 0.
  virtual double decompress(dtype d, std::span<const std::byte> stream, const held_buffer& out) const = 0;
};

/// The registered codec `name` with `config`; argument_error naming the known codecs when there is none.
std::shared_ptr<codec_face> make_codec(const std::string& name, codec_config config, unsigned threads);

/// zcoll::absolute(value) or zcoll::relative(value) from the mode's name.
inline bound parse_bound(const std::string& mode, double value) {
  if (mode == "absolute") return absolute(value);
  if (mode == "relative") return relative(value);
  throw argument_error("error_bound: mode '" + mode + "'; expected 'absolute' or 'relative'");
}

/// codec_config::tuning from its name.
inline tuning_target parse_tuning(const std::string& name) {
  if (name == "ratio") return tuning_target::ratio;
  if (name == "rate-distortion") return tuning_target::rate_distortion;
  throw argument_error("tuning: '" + name + "'; expected 'ratio' or 'rate-distortion'");
}

void bind_codecs(py::module_& m);

}  // namespace zcoll::python
