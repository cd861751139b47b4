#pragma once
// The performance model of zcoll's collectives, for `zcoll-bench model` and the model columns of
// `zcoll-bench coll`: the α–β time of the schedule's own rounds (zcoll/schedule/cost.hpp) with the
// compressed bytes, plus the codec's time at given throughputs, next to the least time any algorithm
// needs on the wire (what the native call is held against) and the DLRM paper's Eq. 2.
//
// Assumptions, so that a reader can hold a measurement against them: one full-duplex link per rank into
// a non-blocking switch; a round lasts as long as its busiest rank's messages; every compressed block
// has the given ratio; a rank's compression and decompression do not overlap its transfers, except in
// the pipelined reduction hops (PIPE-fZ-light), where a hop of m segments takes the longest of its
// three stages plus 1/m of the other two; reductions' arithmetic and the size words' bytes are left out.

#include <algorithm>
#include <cmath>
#include <optional>

#include "zcoll/schedule/cost.hpp"

namespace zcoll_bench {

struct codec_speed {
  double ratio = 1.0;
  double compress_bytes_per_s = 0.0;    ///< of raw input
  double decompress_bytes_per_s = 0.0;  ///< of raw output
};

struct model_times {
  double lower_bound_s = 0.0;   ///< the wire time of the best algorithm: the native reference
  double uncompressed_s = 0.0;  ///< zcoll's schedule, raw bytes
  double compressed_s = 0.0;    ///< zcoll's schedule, compressed (0 without a codec)
};

/// DLRM paper Eq. 2: the speed-up of compressing a transfer, 1 / (1/CR + B·(1/Tc + 1/Td)).
inline double eq2_speedup(const codec_speed& c, double link_bytes_per_s) {
  return 1.0 / (1.0 / c.ratio + link_bytes_per_s * (1.0 / c.compress_bytes_per_s + 1.0 / c.decompress_bytes_per_s));
}

namespace model_detail {

using zcoll::schedule::collective_op;

/// The raw bytes the busiest rank compresses and decompresses in a data-movement operation whose
/// blocks are `block` bytes and whose buffer is `bytes` (each block compressed once by its owner,
/// decompressed once where it is kept).
struct codec_bytes {
  double compressed = 0.0, decompressed = 0.0;
};
inline codec_bytes data_movement_codec_bytes(collective_op op, int ranks, double bytes, double block) {
  const double others = static_cast<double>(ranks - 1) * block;
  switch (op) {
    case collective_op::allgather: return {block, others};
    case collective_op::bcast: return {bytes, bytes};
    case collective_op::scatter: return {others, block};
    case collective_op::gather: return {block, others};
    default: return {others, others};  // alltoall
  }
}

/// Data movement: compress once, the size words (a latency per round), the compressed blocks, decompress.
template <class S>
double compressed_data_movement(collective_op op, int ranks, double bytes, double block, zcoll::schedule::link_cost link,
                                const codec_speed& c) {
  const codec_bytes work = data_movement_codec_bytes(op, ranks, bytes, block);
  const double size_words = zcoll::schedule::transfer_seconds<S>(op, ranks, 8.0, link);
  return work.compressed / c.compress_bytes_per_s + size_words +
         zcoll::schedule::transfer_seconds<S>(op, ranks, block / c.ratio, link) +
         work.decompressed / c.decompress_bytes_per_s;
}

/// Reduction hops: per round, compress what is sent, transfer, decompress what is received; pipelined
/// in segments of `segment_bytes` (0: one stream per hop).
template <class S>
double compressed_reduction(collective_op op, int ranks, double block, zcoll::schedule::link_cost link,
                            const codec_speed& c, double segment_bytes) {
  double seconds = 0.0;
  for (int r = 0; r < S::rounds(op, ranks); ++r) {
    const int blocks = zcoll::schedule::busiest_blocks<S>(op, ranks, r);
    if (blocks == 0) continue;
    const double hop = blocks * block;
    const double stages[] = {hop / c.compress_bytes_per_s, link.latency_s + hop / c.ratio / link.bytes_per_s,
                             hop / c.decompress_bytes_per_s};
    const double longest = *std::max_element(std::begin(stages), std::end(stages));
    const double segments = segment_bytes > 0.0 ? std::max(1.0, std::ceil(hop / segment_bytes)) : 1.0;
    seconds += longest + (stages[0] + stages[1] + stages[2] - longest) / segments;
  }
  return seconds;
}

}  // namespace model_detail

/// The model of `op` over schedule S on `ranks` ranks for a buffer of `bytes` (the operation's large
/// buffer, as zcoll-bench coll --sizes), with a codec or without.
template <class S>
model_times predict(zcoll::schedule::collective_op op, int ranks, double bytes, zcoll::schedule::link_cost link,
                    std::optional<codec_speed> codec, double segment_bytes) {
  using zcoll::schedule::collective_op;
  using zcoll::schedule::transfer_seconds;
  model_times t;
  t.lower_bound_s = zcoll::schedule::lower_bound_seconds(op, ranks, bytes, link);
  if (ranks <= 1) return t;
  const auto p = static_cast<double>(ranks);
  const bool reduction = op == collective_op::allreduce || op == collective_op::reduce_scatter;
  const bool direct_allreduce = op == collective_op::allreduce && S::supports(collective_op::allreduce);
  if (direct_allreduce) {
    t.uncompressed_s = transfer_seconds<S>(op, ranks, bytes, link);
    if (codec) t.compressed_s = model_detail::compressed_reduction<S>(op, ranks, bytes, link, *codec, segment_bytes);
  } else if (reduction) {
    // reduce_scatter over p blocks of n/p; allreduce adds the allgather of the reduced blocks.
    const double block = bytes / p;
    t.uncompressed_s = transfer_seconds<S>(collective_op::reduce_scatter, ranks, block, link);
    if (codec) {
      t.compressed_s =
          model_detail::compressed_reduction<S>(collective_op::reduce_scatter, ranks, block, link, *codec, segment_bytes);
    }
    if (op == collective_op::allreduce) {
      t.uncompressed_s += transfer_seconds<S>(collective_op::allgather, ranks, block, link);
      if (codec) {
        t.compressed_s += model_detail::compressed_data_movement<S>(collective_op::allgather, ranks, bytes, block, link,
                                                                    *codec);
      }
    }
  } else {
    const double block = bytes / zcoll::schedule::blocks_of<S>(op, ranks);
    t.uncompressed_s = transfer_seconds<S>(op, ranks, block, link);
    if (codec) t.compressed_s = model_detail::compressed_data_movement<S>(op, ranks, bytes, block, link, *codec);
  }
  return t;
}

}  // namespace zcoll_bench
