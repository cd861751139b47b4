#pragma once
// collective_model<Entry, Space>: collective_face for one registered codec, its engines made at first
// use; the host calls (Space = void) or the staged calls through a staging space (HostStaging, or
// cuda::Staging in python/src/cuda/). Included by the translation units that make collectives only.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "collective_face.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/any.hpp"

namespace zcoll::python {

/// Whether the collectives take values of type T with this codec: row codecs are compiled for f32
/// (their DLRM use, as in zcoll-bench coll), the others for every value type.
template <class Entry, class T>
inline constexpr bool takes_value = Entry::traits.input == codec_input::values || std::same_as<T, float>;

/// Whether a staged collective takes the codec: the device drivers' codecs (the steps run on the host
/// and on a GPU alike), in every operation.
template <class Entry>
inline constexpr bool staged_codec = Entry::traits.device && Entry::traits.collective == collective_use::every;

template <class Entry, class Space = void>
class collective_model final : public collective_face {
  using Codec = typename Entry::type;
  static constexpr bool every_operation = Entry::traits.collective == collective_use::every;
  static constexpr bool staged = !std::is_void_v<Space>;
  using space_pointer = std::conditional_t<staged, Space*, std::nullptr_t>;

 public:
  collective_model(transport_maker transport, const collective_settings& settings, space_pointer space = nullptr)
      : transport_(std::move(transport)), settings_(settings), space_(space) {}

  request allreduce(dtype d, const value_view* in, const value_view& out, reduction r) override {
    const auto run = [&](auto& coll, auto values, auto op) {
      using T = typename decltype(values)::element_type;
      return in_space([&](auto&... space) {
        if (in == nullptr) return coll.allreduce_async(space..., values, op);
        return coll.allreduce_async(space..., in->values<const T>("allreduce: input"), values, op);
      });
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

  request reduce_scatter(dtype d, const value_view& in, const value_view& out, reduction r) override {
    if constexpr (every_operation) {
      return reduce_call(d, "reduce_scatter", engine(ring_, 0), [&](auto& coll, auto values, auto op) {
        using T = typename decltype(values)::element_type;
        return in_space([&](auto&... space) {
          return coll.reduce_scatter_async(space..., in.values<const T>("reduce_scatter: input"), values, op);
        });
      }, out, r);
    } else {
      (void)d, (void)in, (void)out, (void)r;
      return not_offered<request>("reduce_scatter");
    }
  }

  request allgather(dtype d, const value_view& in, const value_view& out) override {
    return typed_call(d, "allgather", [&]<class T>(T) {
      if constexpr (every_operation) {
        return in_space([&](auto&... space) {
          return engine(ring_, 0).allgather_async(space..., in.values<const T>("allgather: input"), out.values<T>("allgather: out"));
        });
      } else {
        return not_offered<request>("allgather");
      }
    });
  }

  request alltoall(dtype d, const value_view& in, const value_view& out) override {
    return typed_call(d, "alltoall", [&]<class T>(T) {
      return in_space([&](auto&... space) {
        return engine(pairwise_, 2).alltoall_async(space..., in.values<const T>("alltoall: input"), out.values<T>("alltoall: out"));
      });
    });
  }

  request alltoallv(dtype d, const value_view& in, std::span<const std::size_t> send_counts, const value_view& out,
                    std::span<const std::size_t> recv_counts) override {
    return typed_call(d, "alltoall_single", [&]<class T>(T) {
      return in_space([&](auto&... space) {
        return engine(pairwise_, 2).alltoallv_async(space..., in.values<const T>("alltoall_single: input"), send_counts,
                                                    out.values<T>("alltoall_single: out"), recv_counts);
      });
    });
  }

 private:
  template <class S>
  using slot = std::unique_ptr<Compressed<S, Codec>>;

  /// The engine of schedule S, made at first use with a tag space of its own: its tags (wire.hpp's) offset
  /// by 16 per engine.
  template <class S>
  Compressed<S, Codec>& engine(slot<S>& s, int index) {
    if (!s) s = std::make_unique<Compressed<S, Codec>>(transport_(16 * index), Codec{settings_.codec_settings}, settings_.config);
    return *s;
  }

  /// fn(space...): the engine call's leading arguments, none for a host call, the space for a staged one.
  template <class Fn>
  decltype(auto) in_space(Fn&& fn) {
    if constexpr (staged) {
      return fn(*space_);
    } else {
      return fn();
    }
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
        return fn(value);
      } else {
        throw argument_error(std::string(call) + ": codec '" + std::string(Entry::name) +
                             "' works on float32 rows; convert the tensor or use fzlight");
      }
    });
  }

  template <class Engine, class Fn>
  request reduce_call(dtype d, const char* call, Engine& coll, Fn&& fn, const value_view& out, reduction r) {
    return typed_call(d, call, [&]<class T>(T) {
      const auto values = out.values<T>(call);
      if (r == reduction::min) return fn(coll, values, op::min);
      if (r == reduction::max) return fn(coll, values, op::max);
      return fn(coll, values, op::sum);
    });
  }

  transport_maker transport_;
  collective_settings settings_;
  space_pointer space_;
  slot<Ring> ring_;
  slot<RecursiveDoubling> recursive_doubling_;
  slot<Pairwise> pairwise_;
};

/// A collective_model for the registered codec `settings.codec` when `Accept<Entry>` holds; nullptr
/// otherwise. Staged through `space` when one is given.
template <template <class> class Accept, class Space = void>
std::unique_ptr<collective_face> make_collective_of(const transport_maker& transport, const collective_settings& settings,
                                                    Space* space = nullptr) {
  std::unique_ptr<collective_face> made;
  for_each_registered_codec([&]<class Entry>() {
    if constexpr (Accept<Entry>::value) {
      if (!made && Entry::name == settings.codec) {
        if constexpr (std::is_void_v<Space>) {
          made = std::make_unique<collective_model<Entry>>(transport, settings);
        } else {
          made = std::make_unique<collective_model<Entry, Space>>(transport, settings, space);
        }
      }
    }
  });
  return made;
}

}  // namespace zcoll::python
