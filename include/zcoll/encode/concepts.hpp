#pragma once
/// What an encoder is: block functions over 32 integer residuals, or chunk functions with a stream model.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/stream_header.hpp"

namespace zcoll::encode {

/// What a chunk encoder's model may depend on besides its own settings: the pipeline's chunk length and
/// the data's row length (the last extent of its shape; 0 for a flat sequence).
struct chunk_layout {
  std::uint32_t chunk_values = 0;
  std::size_t row_length = 0;
};

/// The settings of an encoder that has none of its own.
struct no_settings {
  friend bool operator==(const no_settings&, const no_settings&) = default;
};

/// An encoder's settings type: E::settings (VectorLZ's match window), or no_settings.
template <class E>
struct settings_of {
  using type = no_settings;
};
template <class E>
  requires requires { typename E::settings; }
struct settings_of<E> {
  using type = typename E::settings;
};
template <class E>
using settings_t = typename settings_of<E>::type;

/// A block encoder packs blocks of 32 residuals into bytes and back. encode_block is given room for
/// max_block_bytes and returns the size of the block; it may use the room past that size as scratch
/// (the next block overwrites it). decode_block validates what it reads, raises format_error on a
/// malformed block, and reads nothing past the block.
template <class E>
concept encoder = requires(const std::int32_t* residuals, std::byte* out, std::span<const std::byte> in,
                           std::uint32_t* decoded) {
  { E::id } -> std::convertible_to<std::uint8_t>;
  { E::name } -> std::convertible_to<const char*>;
  { E::max_block_bytes } -> std::convertible_to<std::size_t>;
  { E::encode_block(residuals, out) } -> std::same_as<std::size_t>;
  { E::decode_block(in, decoded) } -> std::same_as<std::size_t>;
};

/// A chunk encoder codes a whole chunk of residuals at once, with a model shared by every chunk of a
/// stream (a Huffman code; vector-LZ's vector length), so chunks still encode and decode in parallel.
///
/// - `statistics` gathers what the model is built from: the pipeline calls add() on every chunk's
///   residuals (in parallel, one object per worker) and merge()s them, but only when
///   `needs_statistics` is true; otherwise the model is built from an empty one.
/// - make_model(statistics, settings, layout) builds the model from the encoder's own settings
///   (settings_t<E>) and the pipeline's chunk layout (argument_error if they do not suit it);
///   write_model / model_size_bytes / read_model put it in the stream's parameter section; read_model
///   validates and raises format_error. No model takes more than `max_model_bytes`.
/// - encode_chunk(model, residuals, out) writes the chunk into `out` and returns its size, or nothing
///   when it does not fit (the pipeline then stores the chunk verbatim). It writes nothing past `out`.
/// - decode_chunk(model, in, residuals) fills `residuals` (one per value of the chunk), returns the bytes
///   read, reads nothing past `in`, and raises format_error on anything malformed.
template <class E>
concept chunk_encoder =
    std::default_initializable<typename E::statistics> && std::copyable<typename E::model> &&
    std::regular<settings_t<E>> &&
    requires(typename E::statistics& s, const typename E::statistics& cs, const typename E::model& m,
             const settings_t<E>& settings, const chunk_layout& layout, byte_writer& writer, byte_reader& reader,
             std::span<const std::int32_t> residuals, std::span<std::byte> out, std::span<const std::byte> in,
             std::span<std::uint32_t> decoded) {
      { E::id } -> std::convertible_to<std::uint8_t>;
      { E::name } -> std::convertible_to<const char*>;
      { E::needs_statistics } -> std::convertible_to<bool>;
      { E::max_model_bytes } -> std::convertible_to<std::size_t>;
      s.add(residuals);
      s.merge(cs);
      { E::make_model(cs, settings, layout) } -> std::same_as<typename E::model>;
      { E::model_size_bytes(m) } -> std::same_as<std::size_t>;
      E::write_model(m, writer);
      { E::read_model(reader) } -> std::same_as<typename E::model>;
      { E::encode_chunk(m, residuals, out) } -> std::same_as<std::optional<std::size_t>>;
      { E::decode_chunk(m, in, decoded) } -> std::same_as<std::size_t>;
    };

/// The longest chunk an encoder codes: E::max_chunk_values where it declares one (the context coder,
/// whose chunk sections have 32-bit sizes), else zcoll::common_max_chunk_values.
template <class E>
inline constexpr std::uint32_t max_chunk_values_of = [] {
  if constexpr (requires { E::max_chunk_values; }) {
    static_assert(E::max_chunk_values <= zcoll::max_chunk_values, "an encoder's chunks fit the stream format");
    return std::uint32_t{E::max_chunk_values};
  } else {
    return zcoll::common_max_chunk_values;
  }
}();

}  // namespace zcoll::encode
