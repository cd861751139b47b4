#pragma once
/// Exact all-to-all exchanges of trivially copyable records over any byte transport: what moves the
/// values no codec should touch (embedding ids, counts). Every rank calls it with the same tag; a pair of
/// ranks exchanges one message in each direction, none when the count is 0.
///
///     std::vector<std::size_t> recv_counts = zcoll::transport::exchange_counts(t, send_counts, 1, tag);
///     zcoll::transport::alltoallv_exact<std::uint64_t>(t, ids, send_counts, received, recv_counts, tag);

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "zcoll/core/checked_size.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/transport/concepts.hpp"

namespace zcoll::transport {

/// in holds send_counts[b] records for rank b, block after block in rank order; out receives
/// recv_counts[b] records from rank b likewise. recv_counts[b] must equal rank b's send_counts[rank()]
/// (a message of another size is a transport_error).
template <class Record, byte_transport T>
  requires std::is_trivially_copyable_v<Record>
void alltoallv_exact(T& t, std::span<const Record> in, std::span<const std::size_t> send_counts, std::span<Record> out,
                     std::span<const std::size_t> recv_counts, int tag) {
  const auto p = static_cast<std::size_t>(t.size());
  const auto me = static_cast<std::size_t>(t.rank());
  const auto check = [&](const char* counts, std::span<const std::size_t> c, const char* buffer, std::size_t size) {
    if (c.size() != p) {
      throw argument_error(std::string("alltoallv_exact: ") + counts + " has " + std::to_string(c.size()) +
                           " entries, not one per rank (" + std::to_string(p) + ")");
    }
    const std::size_t total = checked_sum(c, "alltoallv_exact", counts);
    if (total != size) {
      throw argument_error(std::string("alltoallv_exact: ") + buffer + " has " + std::to_string(size) + " records, " +
                           counts + " sum to " + std::to_string(total));
    }
  };
  check("send_counts", send_counts, "in", in.size());
  check("recv_counts", recv_counts, "out", out.size());
  if (send_counts[me] != recv_counts[me]) {
    throw argument_error("alltoallv_exact: send_counts[" + std::to_string(me) + "] = " + std::to_string(send_counts[me]) +
                         " and recv_counts[" + std::to_string(me) + "] = " + std::to_string(recv_counts[me]) +
                         " (this rank's own block) differ");
  }
  std::vector<typename T::request> requests;
  requests.reserve(2 * p);
  std::size_t send_at = 0, recv_at = 0;
  for (std::size_t b = 0; b < p; ++b) {
    const auto peer = static_cast<int>(b);
    if (b == me) {
      std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(send_at), send_counts[b],
                  out.begin() + static_cast<std::ptrdiff_t>(recv_at));
    } else {
      if (recv_counts[b] > 0) {
        requests.push_back(t.irecv_async(peer, tag, std::as_writable_bytes(out.subspan(recv_at, recv_counts[b]))));
      }
      if (send_counts[b] > 0) requests.push_back(t.isend_async(peer, tag, std::as_bytes(in.subspan(send_at, send_counts[b]))));
    }
    send_at += send_counts[b];
    recv_at += recv_counts[b];
  }
  for (auto& r : requests) t.wait(r);
}

/// all = every rank's `mine`, in rank order; mine.size() must be the same on every rank and
/// all.size() == size() * mine.size().
template <class Record, byte_transport T>
  requires std::is_trivially_copyable_v<Record>
void allgather_exact(T& t, std::span<const Record> mine, std::span<Record> all, int tag) {
  const auto p = static_cast<std::size_t>(t.size());
  std::vector<Record> out;
  out.reserve(mine.size() * p);
  for (std::size_t r = 0; r < p; ++r) out.insert(out.end(), mine.begin(), mine.end());
  const std::vector<std::size_t> counts(p, mine.size());
  alltoallv_exact<Record>(t, out, counts, all, counts, tag);
}

/// Every rank's counts for every other rank: row b of the result is what rank b's `send_counts` holds for
/// this rank. send_counts.size() must be size() * width (width counts per destination, e.g. one per
/// category); the result has the same shape, row b from rank b.
template <byte_transport T>
std::vector<std::size_t> exchange_counts(T& t, std::span<const std::size_t> send_counts, std::size_t width, int tag) {
  const auto p = static_cast<std::size_t>(t.size());
  if (width == 0 || send_counts.size() != p * width) {
    throw argument_error("exchange_counts: send_counts has " + std::to_string(send_counts.size()) +
                         " entries, not size() x width = " + std::to_string(p) + " x " + std::to_string(width));
  }
  std::vector<std::uint64_t> out(send_counts.begin(), send_counts.end()), in(send_counts.size());
  const std::vector<std::size_t> per_rank(p, width);
  alltoallv_exact<std::uint64_t>(t, out, per_rank, in, per_rank, tag);
  return {in.begin(), in.end()};
}

}  // namespace zcoll::transport
