#pragma once
/// The settings of a compressed collective that are not the codec's: {.pipeline_values = 1 << 18}.
/// The codec (its bound, chunk length, fill value, shape and stage settings) is a value of its own,
/// passed beside: Compressed<Ring, FZLight> coll{transport, FZLight{{.error_bound = ...}}, {...}}.

#include <cstddef>

namespace zcoll {

struct collective_config {
  unsigned threads = 1;  ///< host threads for compression and decompression
  /// Inputs smaller than this travel uncompressed (compression does not pay for small messages).
  std::size_t min_compressed_bytes = 0;
  /// The segment length of the reduction hops' pipeline (PIPE-fZ-light, ZCCL §3.5.2): each hop compresses
  /// its block segment by segment, sends each segment as soon as it is compressed, and between segments
  /// polls the transport, decompressing and reducing the segments that have arrived; compression,
  /// transfer and decompression of one hop overlap. 0 sends each hop as one stream.
  std::size_t pipeline_values = std::size_t{1} << 18;
  /// Verify mode (docs/reliability.md): before each call the ranks exchange what they were called with
  /// (operation, value type, counts, root, reduction, the codec's settings and these) and any argument
  /// error, and every rank raises the same argument_error when one rank's call differs; during the call,
  /// an error a rank meets (a damaged or wrongly sized block from a peer, a codec refusing this rank's
  /// values) is held instead of thrown and the rank goes on with the schedule, so nobody waits for it;
  /// after the call the ranks exchange what they held and every rank raises the same error, naming the
  /// rank that met it and the rank whose block it was. Costs two small exact allgathers per call.
  bool verify = false;
  /// A thread of the collective's own that progresses its non-blocking calls while the caller computes
  /// (without it they progress inside request::test() and wait()). It makes every transport call of the
  /// collective from that thread, so over MPI it needs MPI_THREAD_MULTIPLE (checked at construction).
  bool progress_thread = false;
  /// Sums on compressed streams (collective/detail/homomorphic.hpp, hZCCL): for op::sum with a codec
  /// whose streams add (zcoll::addable_codec, FZLight among them) each rank compresses its input once,
  /// hops add streams without decompressing, and each result is decompressed once; the reported bound
  /// is never larger than the chain's. Off (the default): every hop decompresses, reduces and compresses
  /// again (min and max always do). Off by default because on the CPUs measured so far the chain is
  /// faster: FZLight compresses at 7-10 GB/s a core, and adding two streams (two decodes and an encode)
  /// costs as much as decompressing one and compressing the sum (docs/performance.md, issue 19).
  bool homomorphic = false;

  /// Calls f(name, value) for every setting, in declaration order: verify mode's call signature is made
  /// from this list, so a new setting is checked across ranks once it is added here.
  template <class F>
  void for_each_setting(F&& f) const {
    f("threads", threads);
    f("min_compressed_bytes", min_compressed_bytes);
    f("pipeline_values", pipeline_values);
    f("verify", verify);
    f("progress_thread", progress_thread);
    f("homomorphic", homomorphic);
  }
};

}  // namespace zcoll
