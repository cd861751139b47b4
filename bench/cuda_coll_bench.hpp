#pragma once
/// zcoll-bench coll --staging cuda: the compressed call on device buffers through zcoll::cuda::Staging (the
/// codec on the GPU, bytes through pinned host buffers of the space). The declarations are plain C++;
/// cuda_coll_bench.cu, compiled by nvcc, defines them for the pairs cuda_staged_pair lists (a build
/// without a CUDA compiler leaves it out and zcoll-bench refuses --staging cuda).

#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "zcoll/codec/presets.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/collective_report.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"

namespace zcoll_bench {

/// The (value type, schedule, codec) triples cuda_coll_bench.cu builds: FZLight on the schedules of the
/// staged reductions (ring, recursive doubling) and of the all-to-all (pairwise), f32 and f64; the row-wise
/// quantizers on the all-to-all, f32 (their DLRM use).
template <class T, class S, class Codec>
inline constexpr bool cuda_staged_pair =
    (std::is_same_v<Codec, zcoll::FZLight> &&
     (std::is_same_v<S, zcoll::Ring> || std::is_same_v<S, zcoll::RecursiveDoubling> || std::is_same_v<S, zcoll::Pairwise>)) ||
    ((std::is_same_v<Codec, zcoll::Int8> || std::is_same_v<Codec, zcoll::Int4>) && std::is_same_v<S, zcoll::Pairwise> &&
     std::is_same_v<T, float>);

/// One rank's side of the staged calls: a CUDA stream of its own, a cuda::Staging on it (its buffers kept
/// between calls, as a user keeps one), and the call's input and output in device memory.
template <class T>
class cuda_staged_rank {
 public:
  cuda_staged_rank(std::size_t in_values, std::size_t out_values);
  ~cuda_staged_rank();
  cuda_staged_rank(const cuda_staged_rank&) = delete;
  cuda_staged_rank& operator=(const cuda_staged_rank&) = delete;

  /// Copies `in` and `out` (an in-place call's starting values) to the device; waits.
  void upload(std::span<const T> in, std::span<const T> out);
  /// Copies the device output back to `out`; waits.
  void download(std::span<T> out) const;

  /// The staged call of `op` on the device buffers (alltoallv when counts are given; sums for the
  /// reductions, allreduce in place on the output), waited for: the request, then the rank's stream.
  /// Returns the call's report.
  template <class S, class Codec>
  zcoll::collective_report call(zcoll::Compressed<S, Codec>& coll, zcoll::schedule::collective_op op,
                                const std::vector<std::size_t>* send_counts, const std::vector<std::size_t>* recv_counts);

 private:
  struct device_state;
  std::unique_ptr<device_state> state_;
};

}  // namespace zcoll_bench
