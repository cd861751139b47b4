// zcoll-bench coll --staging cuda (cuda_coll_bench.hpp): one rank's device buffers, stream and staging
// space, and the staged calls the benchmark times.

#include "cuda_coll_bench.hpp"
#include "device_buffer.cuh"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "zcoll/collective/cuda_staging.cuh"

namespace zcoll_bench {

using zcoll::cuda::check_call;
using op_kind = zcoll::schedule::collective_op;

/// A CUDA stream of the benchmark's own, destroyed last (after the staging space and buffers that use it).
class owned_stream {
 public:
  owned_stream() { check_call(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~owned_stream() { cudaStreamDestroy(stream_); }
  owned_stream(const owned_stream&) = delete;
  owned_stream& operator=(const owned_stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

template <class T>
struct cuda_staged_rank<T>::device_state {
  device_state(std::size_t in_count, std::size_t out_count)
      : staging(stream.get()), in(in_count * sizeof(T)), out(out_count * sizeof(T)), in_values(in_count), out_values(out_count) {}

  owned_stream stream;  // first: constructed first, destroyed last
  zcoll::cuda::Staging staging;
  device_buffer in, out;
  std::size_t in_values, out_values;
};

template <class T>
cuda_staged_rank<T>::cuda_staged_rank(std::size_t in_values, std::size_t out_values)
    : state_(std::make_unique<device_state>(in_values, out_values)) {}

template <class T>
cuda_staged_rank<T>::~cuda_staged_rank() = default;

template <class T>
void cuda_staged_rank<T>::upload(std::span<const T> in, std::span<const T> out) {
  device_state& s = *state_;
  if (in.size() != s.in_values || out.size() != s.out_values) throw std::logic_error("cuda_staged_rank::upload: sizes differ");
  check_call(cudaMemcpyAsync(s.in.data(), in.data(), in.size_bytes(), cudaMemcpyHostToDevice, s.stream.get()), "upload in");
  check_call(cudaMemcpyAsync(s.out.data(), out.data(), out.size_bytes(), cudaMemcpyHostToDevice, s.stream.get()), "upload out");
  check_call(cudaStreamSynchronize(s.stream.get()), "upload");
}

template <class T>
void cuda_staged_rank<T>::download(std::span<T> out) const {
  const device_state& s = *state_;
  if (out.size() != s.out_values) throw std::logic_error("cuda_staged_rank::download: sizes differ");
  check_call(cudaMemcpyAsync(out.data(), s.out.data(), out.size_bytes(), cudaMemcpyDeviceToHost, s.stream.get()), "download");
  check_call(cudaStreamSynchronize(s.stream.get()), "download");
}

template <class T>
template <class S, class Codec>
zcoll::collective_report cuda_staged_rank<T>::call(zcoll::Compressed<S, Codec>& coll, op_kind op,
                                                   const std::vector<std::size_t>* send_counts,
                                                   const std::vector<std::size_t>* recv_counts) {
  using zcoll::cuda::Staging;
  device_state& s = *state_;
  const std::span<const T> in(reinterpret_cast<const T*>(s.in.data()), s.in_values);
  const std::span<T> out(reinterpret_cast<T*>(s.out.data()), s.out_values);
  const auto start = [&]() -> zcoll::request {
    if constexpr (S::supports(op_kind::alltoall)) {
      if (send_counts != nullptr) return coll.template alltoallv_async<Staging, T>(s.staging, in, *send_counts, out, *recv_counts);
      if (op == op_kind::alltoall) return coll.template alltoall_async<Staging, T>(s.staging, in, out);
    }
    // Ring has no allreduce of its own: Compressed builds it from reduce_scatter and allgather.
    if constexpr (S::supports(op_kind::allreduce) ||
                  (S::supports(op_kind::reduce_scatter) && S::supports(op_kind::allgather))) {
      if (op == op_kind::allreduce) return coll.template allreduce_async<Staging, T>(s.staging, out, zcoll::op::sum);
    }
    if constexpr (S::supports(op_kind::reduce_scatter)) {
      if (op == op_kind::reduce_scatter) return coll.template reduce_scatter_async<Staging, T>(s.staging, in, out, zcoll::op::sum);
    }
    throw std::logic_error("zcoll-bench coll --staging cuda: no staged call of this operation on this schedule");
  };
  zcoll::request r = start();
  r.wait();
  check_call(cudaStreamSynchronize(s.stream.get()), "the staged call's stream");
  return r.report();
}

template class cuda_staged_rank<float>;
template class cuda_staged_rank<double>;

#define ZCOLL_BENCH_STAGED_CALL(T, S, Codec)                                                                      \
  static_assert(cuda_staged_pair<T, S, Codec>);                                                                   \
  template zcoll::collective_report cuda_staged_rank<T>::call<S, Codec>(                                          \
      zcoll::Compressed<S, Codec>&, op_kind, const std::vector<std::size_t>*, const std::vector<std::size_t>*);
ZCOLL_BENCH_STAGED_CALL(float, zcoll::Ring, zcoll::FZLight)
ZCOLL_BENCH_STAGED_CALL(double, zcoll::Ring, zcoll::FZLight)
ZCOLL_BENCH_STAGED_CALL(float, zcoll::RecursiveDoubling, zcoll::FZLight)
ZCOLL_BENCH_STAGED_CALL(double, zcoll::RecursiveDoubling, zcoll::FZLight)
ZCOLL_BENCH_STAGED_CALL(float, zcoll::Pairwise, zcoll::FZLight)
ZCOLL_BENCH_STAGED_CALL(double, zcoll::Pairwise, zcoll::FZLight)
ZCOLL_BENCH_STAGED_CALL(float, zcoll::Pairwise, zcoll::Int8)
ZCOLL_BENCH_STAGED_CALL(float, zcoll::Pairwise, zcoll::Int4)
#undef ZCOLL_BENCH_STAGED_CALL

}  // namespace zcoll_bench
