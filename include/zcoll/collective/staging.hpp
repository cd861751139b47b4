#pragma once
/// staging_space: where a collective's values live when they are not the host's own memory — CUDA device
/// buffers (zcoll::cuda::Staging, collective/cuda_staging.cuh) — and the buffers that carry their
/// compressed bytes to and from the transport, kept from call to call.
///
///     zcoll::cuda::Staging staging{stream};                 // once: pinned host and device buffers grow here
///     zcoll::Compressed<zcoll::Pairwise, zcoll::Int8> coll{transport, {.shape = {rows, dim}}};
///     coll.alltoall(staging, d_in, d_out);                   // d_in, d_out: device memory
///
/// A staged call compresses all its outgoing blocks in the space (one batch launch for consecutive
/// blocks), copies the compressed bytes to host buffers for the transport, and decompresses everything
/// it received in the space at the end (collective/detail/staged_alltoall.hpp); a reduction's hops
/// compress, decode and reduce in the space (collective/detail/staged_reduction.hpp). zcoll::HostStaging runs
/// the same steps on host memory, with memcpy for the copies: it is how the staging logic is tested
/// without a GPU, and a way to batch a call's compression on the host.
///
/// How the compressed bytes reach the transport (device_transfer below): through the space's pinned host
/// buffers, which any transport reads, or — where the transport takes device memory, as CUDA-aware MPI
/// does (transport::Mpi::takes_device_memory) — straight from the space's device buffers, which saves the
/// two copies across PCIe and the host's part in every byte.
///
/// A space is lent to one call at a time: a call started while another one on the same space is in
/// flight is an argument_error (staging_in_use below; in verify mode every rank raises it).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "zcoll/core/error.hpp"

namespace zcoll {

/// The buffers a staged call uses. Device areas are in the space's memory, host areas in host memory the
/// transport can read and write (pinned for CUDA, so the copies run asynchronously).
enum class staging_area {
  device_out,   ///< the outgoing blocks' compressed streams, as the batches write them
  device_in,    ///< the received compressed streams, copied in for decompression
  device_work,  ///< the codec calls' workspaces, one slice per batch
  host_out,     ///< what goes to the transport: the outgoing blocks in rank order
  host_in,      ///< what the transport delivers, in rank order
  host_words,   ///< the compressed sizes a batch reports
  device_values,    ///< a reduction's values, reduced in place hop after hop
  device_incoming,  ///< a reduction hop's received values, decoded, before they are reduced
  device_wide_in,   ///< a call on 16-bit values: its input widened to float
  device_wide_out,  ///< a call on 16-bit values: its output in float, rounded to 16 bits at the end
  device_wire_out,  ///< host_out's bytes in the space's memory, for a transport that takes device memory
  device_wire_in,   ///< host_in's likewise
};

/// How many areas a space keeps.
inline constexpr std::size_t staging_areas = 12;

/// Where a staged call's compressed bytes meet the transport.
enum class device_transfer {
  automatic,     ///< the space's device buffers where the transport takes device memory, else through_host
  through_host,  ///< always copied to and from the space's pinned host buffers
  direct,        ///< always the device buffers; a transport that does not take device memory is an argument_error
};

inline const char* to_string(device_transfer transfer) {
  switch (transfer) {
    case device_transfer::automatic: return "automatic";
    case device_transfer::through_host: return "through_host";
    case device_transfer::direct: return "direct";
  }
  return "unknown";
}

/// A batch that did not decode: which of its streams, and the decoder's message.
struct batch_fault {
  std::size_t stream = 0;
  std::string message;
};

/// What every staging space provides; the codec calls (workspace_bytes, compress, check_compressed,
/// decompress) and the reductions' calls — extent(values, fill_bits) -> value_extent<double> (the
/// finite, non-fill values' smallest and largest, for a relative bound) and combine(op, target,
/// incoming, reduce) (target = op(target, incoming) element-wise, or a copy), both enqueued in the space
/// — the sums on compressed streams' add<T>(codec, a, b, out, count) (zcoll::add of two host streams into
/// host memory, made by the space; waits; needed wherever a staged sum with an addable codec such as
/// FZLight is compiled, homomorphic set or not) and the 16-bit values' widen(from, to) (enqueued) and
/// narrow(from, to) -> double (the largest rounding, after a wait) are checked where a call uses them
/// with its codec and value type.
template <class S>
concept staging_space = requires(S& s, staging_area area, std::size_t bytes, std::span<std::byte> to,
                                 std::span<const std::byte> from) {
  { s.area(area, bytes) } -> std::same_as<std::span<std::byte>>;  // `bytes` bytes, grown as needed, kept
  s.copy(to, from);                                                 // enqueued (any direction)
  s.wait();                                                         // until every enqueued step is done
  { s.max_batch_streams() } -> std::convertible_to<std::size_t>;
  { s.in_use() } -> std::same_as<bool&>;
  { std::as_const(s).transfer() } -> std::same_as<device_transfer>;
  { S::device_memory_is_host_memory } -> std::convertible_to<bool>;  // HostStaging: every transport takes it
};

/// Whether a call on `space` over a transport that does (`transport_takes_device_memory`) or does not take
/// device memory hands the transport the space's device buffers (device_wire_out / device_wire_in) rather
/// than its host buffers. `call` names the call in the argument_error of a direct transfer that the
/// transport cannot take.
template <staging_space S>
bool transfers_device_memory(const S& space, bool transport_takes_device_memory, const char* call) {
  switch (space.transfer()) {
    case device_transfer::through_host: return false;
    case device_transfer::automatic: return transport_takes_device_memory;
    case device_transfer::direct:
      if (transport_takes_device_memory || S::device_memory_is_host_memory) return true;
      throw argument_error(std::string(call) +
                           ": the staging space's transfer is device_transfer::direct, but the transport does not take "
                           "device memory (for MPI: MPIX_Query_cuda_support() is not 1); expected device_transfer::automatic "
                           "or through_host, or a CUDA-aware transport");
  }
  return false;
}

/// The argument_error a call raises when its space is lent to a call still in flight.
inline std::string staging_in_use(const char* call) {
  return std::string(call) + ": staging is lent to a call still in flight; give each call in flight a staging space of its own";
}

/// The argument_error a space's element-wise step (combine, widen, narrow) raises for spans of unequal
/// lengths; `call` names the space and the step.
inline void check_staging_lengths(const char* call, std::size_t from, std::size_t to) {
  if (from != to) throw argument_error(std::string(call) + ": " + std::to_string(from) + " values into " + std::to_string(to));
}

/// Marks a space lent to a call for as long as the claim lives (the call's coroutine frame); an empty
/// claim holds nothing (a call whose arguments were refused, which never runs).
class staging_claim {
 public:
  staging_claim() = default;
  template <staging_space S>
  explicit staging_claim(S& space) : in_use_(&space.in_use()) {
    *in_use_ = true;
  }
  staging_claim(staging_claim&& other) noexcept : in_use_(std::exchange(other.in_use_, nullptr)) {}
  staging_claim(const staging_claim&) = delete;
  staging_claim& operator=(const staging_claim&) = delete;
  staging_claim& operator=(staging_claim&&) = delete;
  ~staging_claim() {
    if (in_use_ != nullptr) *in_use_ = false;
  }

 private:
  bool* in_use_ = nullptr;
};

}  // namespace zcoll
