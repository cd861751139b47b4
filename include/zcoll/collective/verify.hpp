#pragma once
/// What the verify mode of the compressed collectives (collective_config::verify) exchanges: each rank's
/// call signature before the operation, and the fault each rank met during it, so that every rank can
/// raise the same error.
///
///     std::vector<zcoll::verify::call_signature> all = ...;        // one per rank, exchanged exactly
///     if (auto why = builder.first_mismatch(all)) throw zcoll::argument_error(*why);
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

/// The most words a call signature holds.
inline constexpr std::size_t max_signature_fields = 32;

/// What a rank called a collective with, as words that must be equal on every rank: this is what
/// travels. What each word is (its name, and whether it is a double's bits) is the same on every rank,
/// made by the same code (signature_builder), so it stays local.
struct call_signature {
  std::array<std::uint64_t, max_signature_fields> words{};
};
static_assert(std::is_trivially_copyable_v<call_signature>);

/// Builds a call signature field by field, and says which field of which rank differs.
///
///     verify::signature_builder b;
///     b.add("operation", verify::name_code("allreduce"));
///     config.for_each_setting([&](const char* name, auto value) { b.add(name, value); });
///     if (auto why = b.first_mismatch(all)) throw zcoll::argument_error(*why);
class signature_builder {
 public:
  /// An integer, bool or enum field.
  template <class V>
    requires(std::is_integral_v<V> || std::is_enum_v<V>)
  void add(const char* name, V value) {
    push(name, static_cast<std::uint64_t>(value), false);
  }
  /// A floating-point field, compared bit for bit and printed with every digit.
  void add(const char* name, double value) { push(name, std::bit_cast<std::uint64_t>(value), true); }

  const call_signature& signature() const { return signature_; }
  std::size_t size() const { return count_; }

  /// "rank R passed FIELD A where rank 0 passed B" for the first rank whose signature differs from rank
  /// 0's, or nothing when all agree.
  std::optional<std::string> first_mismatch(std::span<const call_signature> all) const {
    if (all.empty()) return std::nullopt;
    const auto& first = all[0].words;
    for (std::size_t r = 1; r < all.size(); ++r) {
      const auto& mine = all[r].words;
      for (std::size_t k = 0; k < count_; ++k) {
        if (mine[k] == first[k]) continue;
        const auto value = [&](std::uint64_t v) {
          if (!real_[k]) return std::to_string(v);
          char text[32];  // the number, every digit
          std::snprintf(text, sizeof text, "%.17g", std::bit_cast<double>(v));
          return std::string(text);
        };
        return "rank " + std::to_string(r) + " passed " + names_[k] + " " + value(mine[k]) + " where rank 0 passed " +
               value(first[k]);
      }
    }
    return std::nullopt;
  }

 private:
  void push(const char* name, std::uint64_t word, bool real) {
    if (count_ == max_signature_fields) {
      throw argument_error("verify: a call signature holds at most " + std::to_string(max_signature_fields) + " fields");
    }
    names_[count_] = name;
    real_[count_] = real;
    signature_.words[count_++] = word;
  }

  call_signature signature_;
  std::array<const char*, max_signature_fields> names_{};
  std::array<bool, max_signature_fields> real_{};
  std::size_t count_ = 0;
};

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
