#pragma once
// The Python face's compressed collectives: zcoll's engine (Compressed<S, C>) over a python_transport,
// with codec, schedule and value type chosen at run time. One virtual call per collective call.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "python_transport.hpp"
#include "value_types.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/collective/collective_config.hpp"
#include "zcoll/collective/request.hpp"

namespace zcoll::python {

enum class reduction : unsigned char { sum, min, max };

/// The allreduce schedule (reduce_scatter and allgather run on Ring, alltoall on Pairwise).
enum class reduce_schedule : unsigned char { ring, recursive_doubling };

/// What a collective object is made with.
struct collective_settings {
  std::string codec;
  codec_config codec_settings;
  reduce_schedule allreduce = reduce_schedule::ring;
  collective_config config;
};

/// The calls of one collective object. Buffers stay alive until the request completes (the Python
/// Request object holds them). `in == nullptr` means in place (allreduce only).
class collective_face {
 public:
  virtual ~collective_face() = default;
  virtual request allreduce(dtype d, const held_buffer* in, const held_buffer& out, reduction r) = 0;
  virtual request reduce_scatter(dtype d, const held_buffer& in, const held_buffer& out, reduction r) = 0;
  virtual request allgather(dtype d, const held_buffer& in, const held_buffer& out) = 0;
  virtual request alltoall(dtype d, const held_buffer& in, const held_buffer& out) = 0;
  virtual request alltoallv(dtype d, const held_buffer& in, std::span<const std::size_t> send_counts,
                            const held_buffer& out, std::span<const std::size_t> recv_counts) = 0;
};

/// A factory per codec family, each compiled in a translation unit of its own (collectives_*.cpp):
/// nullptr when `settings.codec` is not in that family.
std::unique_ptr<collective_face> make_value_collective(py::object transport, int tag_base,
                                                       const collective_settings& settings);
std::unique_ptr<collective_face> make_row_collective(py::object transport, int tag_base,
                                                     const collective_settings& settings);

void bind_collectives(py::module_& m);

}  // namespace zcoll::python
