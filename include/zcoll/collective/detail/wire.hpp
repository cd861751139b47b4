#pragma once
/// What the compressed collectives put on the wire besides the codec's streams (whose format the codec
/// headers document): the tags, the size words of data movement and the header before each segment of a
/// reduction hop. Every word is little-endian as the hosts are (zcoll's collectives run between ranks of
/// one architecture, as MPI_BYTE messages do).
///
/// Tags (on the collective's own communicator: transport::Mpi duplicates the user's, so no tag of the
/// user's can match these):
///   7001  size words and hop headers
///   7002  the blocks' bytes: codec streams, or raw values when the call travels uncompressed
///   7003  verify mode's agreements (call signatures before a call, held faults after it)
///
/// Size words (data movement: allgather, bcast, scatter, gather, alltoall): before the bytes, the same
/// schedule moves one word per block,
///   bytes 0-7   u64  the size in bytes of the block's compressed stream
/// and alltoallv sends two per block: u64 the block's values, u64 its bytes.
///
/// Hop header (reduction hops, one per segment of PIPE-fZ-light), 40 bytes:
///   bytes  0-7   u64  size_bytes      the segment's stream that follows on tag 7002
///   bytes  8-15  f64  error_bound     the worst-case error its values carry, this compression included
///   bytes 16-23  f64  compressions    how many compressions contributed to that error (a whole number)
///   bytes 24-31  u64  segment_values  the values of this segment, as the sender cut the hop
///   bytes 32-39  u64  hop_values      the values of the whole hop
/// A receiver checks each field before it trusts it: a size beyond what the codec may write for the
/// segment, a bound that is not a finite non-negative number, a count that is not a whole number of at
/// most 4 × ranks, or segments cut otherwise than it cut them are a format_error naming the sender.

#include <cstdint>
#include <type_traits>

namespace zcoll::detail::wire {

inline constexpr int size_tag = 7001;
inline constexpr int data_tag = 7002;
inline constexpr int verify_tag = 7003;  // verify mode's own exchanges: damage on the others cannot reach them

struct hop_header {
  std::uint64_t size_bytes = 0;
  double error_bound = 0.0;
  double compressions = 0.0;
  std::uint64_t segment_values = 0;  // what the sender cut: a receiver that expects other segments
  std::uint64_t hop_values = 0;      // (ranks called with other counts) fails at once, never waits
};
static_assert(sizeof(hop_header) == 40 && std::is_trivially_copyable_v<hop_header>);

/// alltoallv's per-block header: {values, bytes}.
struct block_words {
  std::uint64_t values = 0;
  std::uint64_t size_bytes = 0;
};
static_assert(sizeof(block_words) == 16 && std::is_trivially_copyable_v<block_words>);

}  // namespace zcoll::detail::wire
