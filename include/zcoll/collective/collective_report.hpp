#pragma once
/// What one collective call did on one rank: bytes, time split, and the error bound that holds.

#include <cstddef>
#include <string>

namespace zcoll {

struct collective_report {
  std::string operation;  ///< "allreduce", "allgather", ...
  std::string schedule;
  std::string codec;
  int ranks = 0;
  /// False when the message was below collective_config::min_compressed_bytes (or the codec is
  /// Identity): the values travelled as raw bytes, exactly.
  bool compressed = false;

  std::size_t input_bytes = 0;      ///< this rank's input
  std::size_t bytes_sent = 0;       ///< everything this rank put on the wire, size messages included
  std::size_t raw_bytes_sent = 0;   ///< what the same schedule would have sent uncompressed
  double ratio = 1.0;               ///< raw_bytes_sent / bytes_sent

  double compress_s = 0;
  double communicate_s = 0;  ///< posting and waiting for messages
  double decompress_s = 0;
  double reduce_s = 0;
  double total_s = 0;

  /// Worst case |x - x'| on every element of this rank's result: eb for data movement (each block is
  /// compressed once), compressions_in_chain × eb for reductions (each hop decompresses, reduces and
  /// compresses again).
  double error_bound = 0;
  /// ZCCL's statistical bound for sums (§3.2): errors of k compressions, each normal with σ = eb/3, sum to
  /// within (2/3)·sqrt(k)·eb with probability 95.44 %. Equal to error_bound for data movement.
  double statistical_error_bound = 0;
  int compressions_in_chain = 0;
};

}  // namespace zcoll
