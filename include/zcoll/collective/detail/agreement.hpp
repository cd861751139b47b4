#pragma once
/// Verify mode's two agreements (collective_config::verify, docs/reliability.md): before a call the ranks
/// exchange their call signatures and argument errors, and all raise the same error; after it they
/// exchange the fault each held, and all raise the same one. Without verify mode neither exchanges
/// anything.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/codec_config.hpp"
#include "zcoll/collective/collective_config.hpp"
#include "zcoll/collective/detail/call.hpp"
#include "zcoll/collective/detail/task.hpp"
#include "zcoll/collective/detail/wire.hpp"
#include "zcoll/collective/verify.hpp"
#include "zcoll/core/error.hpp"

namespace zcoll::detail {

/// What a call was called with: the operation, the codec's settings and the collective's, every field
/// that must be equal on every rank.
struct call_description {
  const char* operation = "";
  std::size_t value_bytes = 0;
  std::size_t count = 0;  ///< the values per rank the operation's contract makes equal
  int root = 0;
  const char* reduction = nullptr;  ///< the reduction's name, none for data movement
};

inline verify::signature_builder signature_of(const call_description& call, std::string_view codec_name,
                                              const codec_config& codec, const collective_config& config) {
  verify::signature_builder b;
  b.add("operation", verify::name_code(call.operation));
  b.add("value type size", call.value_bytes);
  b.add("count", call.count);
  b.add("root", call.root);
  b.add("reduction", call.reduction ? verify::name_code(call.reduction) : 0);
  b.add("codec", verify::name_code(codec_name));
  b.add("error bound mode", codec.error_bound.mode);
  b.add("error bound", codec.error_bound.value);
  b.add("chunk_values", codec.chunk_values);
  b.add("fill value given", codec.fill_value.has_value());
  b.add("fill value", codec.fill_value.value_or(0.0));
  b.add("shape rank", codec.shape.size());
  for (const std::size_t extent : codec.shape) b.add("shape extent", extent);
  config.for_each_setting([&](const char* name, auto value) { b.add(name, value); });
  return b;
}

/// Before the operation, in verify mode: every rank sends its signature and any argument error (one exact
/// allgather), and all raise the same error: the first argument error, else the first rank whose call
/// differs from rank 0's. From here to settle_faults, errors are held.
inline task<> agree_on_call(call_context& call, verify::signature_builder signature,
                            std::optional<verify::fault_record> argument_fault) {
  call.fault.reset();
  call.holding_faults = false;  // a failure of the agreement itself is raised at once
  if (!call.config().verify) co_return;
  struct entry {
    verify::call_signature signature;
    verify::fault_record fault;
  };
  std::vector<entry> all(static_cast<std::size_t>(call.size()));
  entry& mine = all[static_cast<std::size_t>(call.rank())];
  mine.signature = signature.signature();
  if (argument_fault) mine.fault = *argument_fault;
  co_await call.exact_allgather(std::span<entry>(all), wire::verify_tag);
  std::vector<verify::fault_record> faults;
  std::vector<verify::call_signature> signatures;
  for (const auto& e : all) {
    faults.push_back(e.fault);
    signatures.push_back(e.signature);
  }
  const std::string operation = call.report.operation;
  if (const auto* f = verify::first_fault(faults)) verify::raise(*f, operation.c_str());
  if (const auto why = signature.first_mismatch(signatures)) throw argument_error(operation + " (verify): " + *why);
  call.holding_faults = true;
}

/// After the operation, in verify mode: the ranks exchange the fault each held (one exact allgather) and
/// every rank raises the same one, if any.
inline task<> settle_faults(call_context& call) {
  if (!call.config().verify) co_return;
  call.holding_faults = false;  // a failure of the agreement itself is raised at once
  std::vector<verify::fault_record> all(static_cast<std::size_t>(call.size()));
  if (call.fault) all[static_cast<std::size_t>(call.rank())] = *call.fault;
  call.fault.reset();
  const auto bytes_sent = call.report.bytes_sent;  // the agreement is not the operation's traffic
  co_await call.exact_allgather(std::span<verify::fault_record>(all), wire::verify_tag);
  call.report.bytes_sent = bytes_sent;
  if (const auto* f = verify::first_fault(all)) verify::raise(*f, call.report.operation.c_str());
}

}  // namespace zcoll::detail
