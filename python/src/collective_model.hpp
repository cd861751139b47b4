#pragma once
// collective_model<Entry>: collective_face for one registered codec, its engines made at first use.
// Included by the collectives_*.cpp translation units only.

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "collectives.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/any.hpp"

namespace zcoll::python {

/// Whether the collectives take values of type T with this codec: row codecs are compiled for f32
/// (their DLRM use, as in zcoll-bench coll), the others for every value type.
template <class Entry, class T>
inline constexpr bool takes_value = Entry::traits.input == codec_input::values || std::same_as<T, float>;

template <class Entry>
class collective_model final : public collective_face {
  using Codec = typename Entry::type;
  static constexpr bool every_operation = Entry::traits.collective == collective_use::every;

 public:
  collective_model(py::object transport, int tag_base, const collective_settings& settings)
      : transport_(std::move(transport)), tag_base_(tag_base), settings_(settings) {}

  request allreduce(dtype d, const held_buffer* in, const held_buffer& out, reduction r) override {
    const auto run = [&](auto& coll, auto values, auto op) {
      using T = typename decltype(values)::element_type;
      if (in == nullptr) return coll.template allreduce_async<T>(values, op);
      return coll.template allreduce_async<T>(in->values<const T>("allreduce: input"), values, op);
    };
    if constexpr (every_operation) {
      if (settings_.allreduce == reduce_schedule::recursive_doubling) {
        return reduce_call(d, "allreduce", engine(recursive_doubling_, 1), run, out, r);
      }
      return reduce_call(d, "allreduce", engine(ring_, 0), run, out, r);
    } else {
      (void)d, (void)in, (void)out, (void)r, (void)run;
      return not_offered<request>("allreduce");
    }
  }

  request reduce_scatter(dtype d, const held_buffer& in, const held_buffer& out, reduction r) override {
    if constexpr (every_operation) {
      return reduce_call(d, "reduce_scatter", engine(ring_, 0), [&](auto& coll, auto values, auto op) {
        using T = typename decltype(values)::element_type;
        return coll.template reduce_scatter_async<T>(in.values<const T>("reduce_scatter: input"), values, op);
      }, out, r);
    } else {
      (void)d, (void)in, (void)out, (void)r;
      return not_offered<request>("reduce_scatter");
    }
  }

  request allgather(dtype d, const held_buffer& in, const held_buffer& out) override {
    return typed_call(d, "allgather", [&]<class T>(T) {
      if constexpr (every_operation) {
        return engine(ring_, 0).template allgather_async<T>(in.values<const T>("allgather: input"),
                                                            out.values<T>("allgather: out"));
      } else {
        return not_offered<request>("allgather");
      }
    });
  }

  request alltoall(dtype d, const held_buffer& in, const held_buffer& out) override {
    return typed_call(d, "alltoall", [&]<class T>(T) {
      return engine(pairwise_, 2).template alltoall_async<T>(in.values<const T>("alltoall: input"),
                                                             out.values<T>("alltoall: out"));
    });
  }

  request alltoallv(dtype d, const held_buffer& in, std::span<const std::size_t> send_counts, const held_buffer& out,
                    std::span<const std::size_t> recv_counts) override {
    return typed_call(d, "alltoall_single", [&]<class T>(T) {
      return engine(pairwise_, 2).template alltoallv_async<T>(in.values<const T>("alltoall_single: input"),
                                                              send_counts, out.values<T>("alltoall_single: out"),
                                                              recv_counts);
    });
  }

 private:
  template <class S>
  using slot = std::unique_ptr<Compressed<S, Codec>>;

  /// The engine of schedule S, made at first use with a tag space of its own: its tags (wire.hpp's) offset
  /// by 16 per engine.
  template <class S>
  Compressed<S, Codec>& engine(slot<S>& s, int index) {
    if (!s) {
      // Called inside calls that released the GIL; making the transport reads and copies Python objects.
      std::optional<transport::AnyTransport> t;
      {
        py::gil_scoped_acquire locked;
        t.emplace(python_transport(transport_, tag_base_ + 16 * index));
      }
      s = std::make_unique<Compressed<S, Codec>>(std::move(*t), Codec{settings_.codec_settings}, settings_.config);
    }
    return *s;
  }

  template <class Result>
  [[noreturn]] Result not_offered(const char* call) const {
    throw argument_error(std::string(call) + ": codec '" + std::string(Entry::name) +
                         "' runs in the embedding all-to-all only; use fzlight, identity, int8 or int4");
  }

  template <class Fn>
  request typed_call(dtype d, const char* call, Fn&& fn) {
    return with_dtype(d, [&]<class T>(T value) -> request {
      if constexpr (takes_value<Entry, T>) {
        py::gil_scoped_release unlocked;  // the call may code and move its first messages
        return fn(value);
      } else {
        throw argument_error(std::string(call) + ": codec '" + std::string(Entry::name) +
                             "' works on float32 rows; convert the tensor or use fzlight");
      }
    });
  }

  template <class Engine, class Fn>
  request reduce_call(dtype d, const char* call, Engine& coll, Fn&& fn, const held_buffer& out, reduction r) {
    return typed_call(d, call, [&]<class T>(T) {
      const auto values = out.values<T>(call);
      if (r == reduction::min) return fn(coll, values, op::min);
      if (r == reduction::max) return fn(coll, values, op::max);
      return fn(coll, values, op::sum);
    });
  }

  py::object transport_;
  int tag_base_;
  collective_settings settings_;
  slot<Ring> ring_;
  slot<RecursiveDoubling> recursive_doubling_;
  slot<Pairwise> pairwise_;
};

/// A collective_model for the registered codec `name` when `Accept<Entry>` holds; nullptr otherwise.
template <template <class> class Accept>
std::unique_ptr<collective_face> make_collective_of(py::object transport, int tag_base,
                                                    const collective_settings& settings) {
  std::unique_ptr<collective_face> made;
  for_each_registered_codec([&]<class Entry>() {
    if constexpr (Accept<Entry>::value) {
      if (!made && Entry::name == settings.codec) {
        made = std::make_unique<collective_model<Entry>>(transport, tag_base, settings);
      }
    }
  });
  return made;
}

}  // namespace zcoll::python
