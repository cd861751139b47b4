#pragma once
// The Python face's compressed collectives as its bindings see them: zcoll's engine (Compressed<S, C>)
// over a transport the bindings make, with codec, schedule and value type chosen at run time. One
// virtual call per collective call. No pybind11 here: nvcc compiles the device models (python/src/cuda/).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "value_types.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/collective/collective_config.hpp"
#include "zcoll/collective/host_staging.hpp"
#include "zcoll/collective/request.hpp"
#include "zcoll/transport/any.hpp"

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

/// Makes the transport of one engine: the bindings' transport with its tags offset by `tag_offset`
/// (each schedule's engine has a tag space of its own). Called with the GIL released.
using transport_maker = std::function<transport::AnyTransport(int tag_offset)>;

/// The calls of one collective object. The bindings keep the buffers alive until the request completes
/// and call with the GIL released. `in == nullptr` means in place (allreduce only).
class collective_face {
 public:
  virtual ~collective_face() = default;
  virtual request allreduce(dtype d, const value_view* in, const value_view& out, reduction r) = 0;
  virtual request reduce_scatter(dtype d, const value_view& in, const value_view& out, reduction r) = 0;
  virtual request allgather(dtype d, const value_view& in, const value_view& out) = 0;
  virtual request alltoall(dtype d, const value_view& in, const value_view& out) = 0;
  virtual request alltoallv(dtype d, const value_view& in, std::span<const std::size_t> send_counts, const value_view& out,
                            std::span<const std::size_t> recv_counts) = 0;
};

/// A factory per codec family, each compiled in a translation unit of its own (collectives_*.cpp):
/// nullptr when `settings.codec` is not in that family. The host calls on host memory, or the staged
/// calls (collective/staging.hpp) through `space`, a HostStaging: the steps the calls on CUDA tensors
/// take through a cuda::Staging (python/src/cuda/), so the Python tests run them. `space` outlives the
/// collective.
std::unique_ptr<collective_face> make_value_collective(transport_maker transport, const collective_settings& settings);
std::unique_ptr<collective_face> make_row_collective(transport_maker transport, const collective_settings& settings);
std::unique_ptr<collective_face> make_staged_value_collective(transport_maker transport, const collective_settings& settings,
                                                              HostStaging& space);
std::unique_ptr<collective_face> make_staged_row_collective(transport_maker transport, const collective_settings& settings,
                                                            HostStaging& space);

}  // namespace zcoll::python
