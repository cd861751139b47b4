#pragma once
/// The value types a codec accepts, and their tags in the stream header.

#include <bit>
#include <concepts>
#include <cstdint>
#include <limits>

namespace zcoll {

/// Floating-point value types zcoll codecs compress.
template <class T>
concept floating_value = std::same_as<T, float> || std::same_as<T, double>;

/// Stream-header tag of a value type (byte 6 of the header).
enum class value_type : std::uint8_t { f32 = 1, f64 = 2 };

template <floating_value T>
inline constexpr value_type value_type_of = std::same_as<T, float> ? value_type::f32 : value_type::f64;

/// The unsigned integer with the bit pattern of T.
template <floating_value T>
using bits_of = std::conditional_t<std::same_as<T, float>, std::uint32_t, std::uint64_t>;

inline const char* to_string(value_type type) {
  switch (type) {
    case value_type::f32: return "f32";
    case value_type::f64: return "f64";
  }
  return "unknown";
}

}  // namespace zcoll
