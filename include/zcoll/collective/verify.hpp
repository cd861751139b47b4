#pragma once
/// What the verify mode of the compressed collectives (collective_config::verify) exchanges: each rank's
/// call signature before the operation, and the fault each rank met during it, so that every rank can
/// raise the same error.
///
///     std::vector<zcoll::verify::call_signature> all = ...;        // one per rank, exchanged exactly
///     if (auto why = zcoll::verify::first_mismatch(all)) throw zcoll::argument_error(*why);
///     std::vector<zcoll::verify::fault_record> faults = ...;       // likewise
///     if (const auto* f = zcoll::verify::first_fault(faults)) zcoll::verify::raise(*f, "allreduce");

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "zcoll/core/error.hpp"

namespace zcoll::verify {

/// A stable 64-bit code of a name (FNV-1a): the same on every rank, whatever the build.
constexpr std::uint64_t name_code(std::string_view name) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h;
}

/// What a rank called a collective with: every field must be equal on every rank.
struct call_signature {
  std::uint64_t operation = 0;    ///< name_code of the operation
  std::uint64_t value_bytes = 0;  ///< sizeof(T)
  std::uint64_t count = 0;        ///< the values per rank the operation's contract makes equal
  std::uint64_t root = 0;         ///< the root of a rooted operation, else 0
  std::uint64_t reduction = 0;    ///< name_code of the reduction, 0 for data movement
  std::uint64_t bound_mode = 0;
  std::uint64_t bound_bits = 0;   ///< the error bound's value, as bits
  std::uint64_t chunk_values = 0;
  std::uint64_t min_compressed_bytes = 0;
  std::uint64_t row_length = 0;
  std::uint64_t pipeline_values = 0;
};
static_assert(std::is_trivially_copyable_v<call_signature>);

/// The name of each field of call_signature, in its order, for the message.
inline constexpr const char* signature_fields[] = {
    "operation", "value type size", "count", "root", "reduction", "error bound mode", "error bound",
    "chunk_values", "min_compressed_bytes", "row_length", "pipeline_values"};
static_assert(sizeof(call_signature) == sizeof(std::uint64_t) * std::size(signature_fields));

/// "rank R passed FIELD A where rank 0 passed B" for the first rank whose signature differs from rank
/// 0's, or nothing when all agree.
inline std::optional<std::string> first_mismatch(std::span<const call_signature> all) {
  if (all.empty()) return std::nullopt;
  const auto fields = [](const call_signature& s) {
    std::uint64_t f[std::size(signature_fields)];
    std::memcpy(f, &s, sizeof s);
    return std::to_array(f);
  };
  const auto first = fields(all[0]);
  for (std::size_t r = 1; r < all.size(); ++r) {
    const auto mine = fields(all[r]);
    for (std::size_t k = 0; k < mine.size(); ++k) {
      if (mine[k] == first[k]) continue;
      const auto value = [&](std::uint64_t v) {
        if (k != 6) return std::to_string(v);
        char text[32];  // the bound as a number, every digit
        std::snprintf(text, sizeof text, "%.17g", std::bit_cast<double>(v));
        return std::string(text);
      };
      return "rank " + std::to_string(r) + " passed " + signature_fields[k] + " " + value(mine[k]) + " where rank 0 passed " +
             value(first[k]);
    }
  }
  return std::nullopt;
}

/// The kinds of error a rank may hold until the ranks agree, in the order they are reported: a rank's
/// own arguments or values first (the cause), then damaged blocks, then failed messages (often effects).
enum class fault_kind : std::uint8_t { none = 0, argument = 1, format = 2, transport = 3 };

/// The first error one rank met during an operation: fixed-size, so the ranks can exchange it.
struct fault_record {
  fault_kind kind = fault_kind::none;
  std::int32_t seen_by = -1;  ///< the rank that met it
  std::int32_t from = -1;     ///< the rank whose message it was in, or -1 (the rank's own)
  char message[244] = {};     ///< its text, cut to fit

  static fault_record of(fault_kind kind, int seen_by, int from, std::string_view text) {
    fault_record f;
    f.kind = kind;
    f.seen_by = seen_by;
    f.from = from;
    const std::size_t n = std::min(text.size(), sizeof f.message - 1);
    std::memcpy(f.message, text.data(), n);
    return f;
  }
};
static_assert(std::is_trivially_copyable_v<fault_record> && sizeof(fault_record) == 256);

/// The fault every rank reports: of the first kind in fault_kind's order; among those, one whose sender
/// met no fault itself (data movement forwards blocks unchanged, so a damaged block is met by its
/// receiver and by every rank downstream of it; the first receiver names the rank that damaged it);
/// then the lowest rank that met it.
inline const fault_record* first_fault(std::span<const fault_record> all) {
  const auto sender_clean = [&](const fault_record& f) {
    return f.from < 0 || static_cast<std::size_t>(f.from) >= all.size() || all[static_cast<std::size_t>(f.from)].kind == fault_kind::none;
  };
  const auto order = [&](const fault_record& f) { return std::tuple{f.kind, !sender_clean(f), f.seen_by}; };
  const fault_record* chosen = nullptr;
  for (const auto& f : all) {
    if (f.kind != fault_kind::none && (chosen == nullptr || order(f) < order(*chosen))) chosen = &f;
  }
  return chosen;
}

/// Throws `f` as the exception of its kind, naming the operation and the rank that met it.
[[noreturn]] inline void raise(const fault_record& f, const char* operation) {
  const char* end = std::find(f.message, f.message + sizeof f.message, '\0');
  const std::string text = std::string(operation) + " (verify): rank " + std::to_string(f.seen_by) + " failed: " +
                           std::string(f.message, end);
  switch (f.kind) {
    case fault_kind::argument: throw argument_error(text);
    case fault_kind::format: throw format_error(text);
    default: throw transport_error(text);
  }
}

}  // namespace zcoll::verify
