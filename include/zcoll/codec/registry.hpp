#pragma once
/// The codec registry: every codec zcoll ships, by the name its tools use. `zcoll-bench codec` and
/// `zcoll-bench coll`, the CUDA benchmark, the fuzz harness and the `zcoll` command-line tool all read it:
/// adding a codec is one line in `codec_registry` below.
///
///     zcoll::with_registered_codec("highratio-2d", [&]<class Entry>() {
///       const typename Entry::type codec{{.error_bound = zcoll::relative(1e-4), .shape = {ny, nx}}};
///       ...
///     });
///
/// The registry is a list of types, so a tool instantiates only the codecs it runs; the traits say which
/// ones each tool takes (a collective or a device kernel per codec costs compile time).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/hybrid.hpp"
#include "zcoll/codec/pipeline.hpp"
#include "zcoll/codec/presets.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/codec/topk.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll {

/// What a codec needs of its input beyond the values.
enum class codec_input : std::uint8_t {
  values,  ///< any sequence; codec_config::shape is optional (a predictor over 2-D or 3-D uses it)
  rows,    ///< whole rows of codec_config::shape.back() values (row-wise quantizers, embedding vectors)
};

/// Which collectives `zcoll-bench coll` runs a codec in: each is an instantiation of the collective
/// engine per schedule and value type, so the list is chosen, not every codec.
enum class collective_use : std::uint8_t {
  none,
  every,     ///< every operation and schedule (codecs on rows: f32 only, their DLRM use)
  alltoall,  ///< the embedding all-to-all only (Pairwise schedule, f32)
};

/// What the tools may do with a registered codec.
struct codec_traits {
  codec_input input = codec_input::values;
  collective_use collective = collective_use::none;
  bool device = false;  ///< a CUDA driver (codec/pipeline.cuh, rowwise.cuh, cast.cuh, topk.cuh) runs it in the CUDA benchmark
  /// The CUDA driver decodes it, the host encodes it (the Huffman and VectorLZ pipelines): the CUDA
  /// benchmark's row says so.
  bool device_decode = false;
};

/// A string literal as a template argument: the registered name.
template <std::size_t N>
struct codec_name {
  char text[N] = {};
  constexpr codec_name(const char (&literal)[N]) { std::copy_n(literal, N, text); }
  constexpr std::string_view view() const { return {text, N - 1}; }
};

/// One line of the registry: the codec type, its name, its traits.
template <codec C, codec_name Name, codec_traits Traits = codec_traits{}>
struct registered_codec {
  using type = C;
  static constexpr std::string_view name = Name.view();
  static constexpr codec_traits traits = Traits;
};

template <class... Entries>
struct codec_list {
  static constexpr std::size_t size = sizeof...(Entries);
};

namespace registry_traits {
inline constexpr codec_traits on_rows_decoded_on_device{.input = codec_input::rows, .device_decode = true};
inline constexpr codec_traits collective{.collective = collective_use::every};
inline constexpr codec_traits collective_on_rows_device{.input = codec_input::rows, .collective = collective_use::every, .device = true};
inline constexpr codec_traits on_rows_device{.input = codec_input::rows, .device = true};
inline constexpr codec_traits device{.device = true};
}  // namespace registry_traits

// The ablation pipelines of zcoll-bench: fZ-light without prediction, and without bit-plane coding.
using LinearBitShuffle = Pipeline<quantize::Linear, predict::None, encode::BitShuffle>;
using LorenzoRaw = Pipeline<quantize::Linear, predict::Lorenzo1D, encode::Raw>;

/// Every codec, in the order `zcoll-bench codec all` runs them.
using codec_registry = codec_list<
    registered_codec<FZLight, "fzlight",
                     codec_traits{.collective = collective_use::every, .device = true}>,
    registered_codec<Identity, "identity", registry_traits::collective>,
    registered_codec<LinearBitShuffle, "linear-bitshuffle">,
    registered_codec<LorenzoRaw, "lorenzo-raw">,
    registered_codec<EmbeddingLZ, "embedding-lz", registry_traits::on_rows_decoded_on_device>,
    registered_codec<EmbeddingHuffman, "embedding-huffman", codec_traits{.device_decode = true}>,
    registered_codec<EmbeddingHybrid, "embedding-hybrid",
                     codec_traits{.input = codec_input::rows, .collective = collective_use::alltoall}>,
    registered_codec<Int8, "int8", registry_traits::collective_on_rows_device>,
    registered_codec<Int4, "int4", registry_traits::collective_on_rows_device>,
    registered_codec<Int2, "int2", registry_traits::on_rows_device>,
    registered_codec<HighRatio<1>, "highratio-1d">,
    registered_codec<HighRatio<2>, "highratio-2d">,
    registered_codec<HighRatio<3>, "highratio-3d">,
    registered_codec<LorenzoHuffman<2>, "lorenzo2d-huffman">,
    registered_codec<LorenzoHuffman<3>, "lorenzo3d-huffman">,
    registered_codec<TopK, "topk", registry_traits::device>,
    registered_codec<FP16, "fp16", registry_traits::device>,
    registered_codec<BF16, "bf16", registry_traits::device>,
    registered_codec<FP8E4M3, "fp8-e4m3", registry_traits::device>,
    registered_codec<FP8E5M2, "fp8-e5m2", registry_traits::device>>;

namespace detail {

template <class List>
struct registry_checks;

template <class... E>
struct registry_checks<codec_list<E...>> {
  static constexpr std::array<std::string_view, sizeof...(E)> names{E::name...};
  static constexpr std::array<codec_id, sizeof...(E)> ids{E::type::id...};
  static constexpr bool distinct() {
    for (std::size_t i = 0; i < names.size(); ++i) {
      for (std::size_t j = i + 1; j < names.size(); ++j) {
        if (names[i] == names[j] || ids[i] == ids[j]) return false;
      }
    }
    return true;
  }
};

}  // namespace detail

static_assert(detail::registry_checks<codec_registry>::distinct(),
              "codec_registry: every codec needs a name and a codec id of its own (a stream names its codec)");

/// Calls fn.template operator()<Entry>() for every registered codec, in registry order; with Parts > 1,
/// for every Parts-th one from index Part (the fuzz harness splits the list between translation units).
template <std::size_t Parts = 1, std::size_t Part = 0, class Fn>
constexpr void for_each_registered_codec(Fn&& fn) {
  static_assert(Parts >= 1 && Part < Parts, "for_each_registered_codec: Part must be below Parts");
  [&]<class... E, std::size_t... I>(codec_list<E...>, std::index_sequence<I...>) {
    const auto one = [&]<class Entry, std::size_t Index>() {
      if constexpr (Index % Parts == Part) fn.template operator()<Entry>();
    };
    (one.template operator()<E, I>(), ...);
  }(codec_registry{}, std::make_index_sequence<codec_registry::size>{});
}

/// The registered names, in registry order.
inline std::vector<std::string_view> registered_codec_names() {
  std::vector<std::string_view> names;
  for_each_registered_codec([&]<class Entry>() { names.push_back(Entry::name); });
  return names;
}

/// "fzlight, identity, ...": the names for an error message.
inline std::string registered_codec_list() {
  std::string list;
  for (const auto name : registered_codec_names()) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return list;
}

namespace detail {

template <class Fn, class Entry, class... Rest>
decltype(auto) dispatch_registered(std::string_view name, Fn& fn) {
  if (name == Entry::name) return fn.template operator()<Entry>();
  if constexpr (sizeof...(Rest) > 0) {
    return dispatch_registered<Fn, Rest...>(name, fn);
  } else {
    throw argument_error("codec '" + std::string(name) + "' is not registered (known: " + registered_codec_list() +
                         ")");
  }
}

template <class Fn, class Entry, class... Rest>
decltype(auto) dispatch_registered(const codec_id& id, Fn& fn) {
  if (id == Entry::type::id) return fn.template operator()<Entry>();
  if constexpr (sizeof...(Rest) > 0) {
    return dispatch_registered<Fn, Rest...>(id, fn);
  } else {
    throw format_error("stream was written by codec " + to_string(id) + ", which no registered codec is");
  }
}

}  // namespace detail

/// fn.template operator()<Entry>() for the codec registered as `name`, returning what it returns (the
/// same type for every codec); argument_error naming the known codecs when there is none.
template <class Fn>
decltype(auto) with_registered_codec(std::string_view name, Fn&& fn) {
  return [&]<class... E>(codec_list<E...>) -> decltype(auto) {
    return detail::dispatch_registered<Fn, E...>(name, fn);
  }(codec_registry{});
}

/// fn.template operator()<Entry>() for the registered codec that writes streams of codec `id` (what a
/// stream header names); format_error when no registered codec does.
template <class Fn>
decltype(auto) with_registered_codec(const codec_id& id, Fn&& fn) {
  return [&]<class... E>(codec_list<E...>) -> decltype(auto) {
    return detail::dispatch_registered<Fn, E...>(id, fn);
  }(codec_registry{});
}

}  // namespace zcoll
