// Staged collectives on device buffers (zcoll::cuda::Staging) over transport::Local, one CUDA stream per
// rank — the all-to-alls, allgather, bcast, gather and the reductions (sums on compressed streams too):
// the values are the host call's bit for bit (the device codecs write the host's bytes), within the
// bound, the own block exact; a damaged block is a format_error naming its sender on every rank.
// Runs where a device is present (the runner skips otherwise).
#include <catch2/catch.hpp>

#include "support/collective_data.hpp"
#include "support/cuda_aware_local.hpp"
#include "support/cuda_stream.hpp"
#include "support/device_bytes.hpp"
#include "support/faulty_transport.hpp"

#include <atomic>
#include <cmath>
#include <cstddef>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/collective/cuda_staging.cuh"
#include "zcoll/core/half_value.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

using zcoll::transport::Local;
using zcoll::transport::run_local;
using zcoll_test::contribution;
using zcoll_test::device_bytes;
using zcoll_test::eb;

namespace {

using rank_stream = zcoll_test::cuda_stream;  // one per rank's thread

/// alltoallv with `send`/`recv` counts, on device buffers and on the host: the same values.
template <class Codec, class T>
void check_device_alltoallv(Local& t, const Codec& codec, std::span<const std::size_t> send, std::span<const std::size_t> recv,
                            std::size_t min_compressed_bytes) {
  zcoll::Compressed<zcoll::Pairwise, Codec> coll{t, codec, {.min_compressed_bytes = min_compressed_bytes}};
  const auto in = contribution<T>(t.rank(), std::accumulate(send.begin(), send.end(), std::size_t{0}));
  const std::size_t received = std::accumulate(recv.begin(), recv.end(), std::size_t{0});
  rank_stream stream;
  zcoll::cuda::Staging staging{stream.get()};
  device_bytes d_in = device_bytes::from(std::span<const T>(in)), d_out(received * sizeof(T));
  for (int repeat = 0; repeat < 2; ++repeat) {  // the second call reuses the staging buffers
    coll.alltoallv(staging, std::span<const T>(d_in.as<T>(), in.size()), send, std::span<T>(d_out.as<T>(), received), recv);
  }
  const std::vector<T> device = d_out.to_host<T>(received);
  std::vector<T> host(received);
  coll.alltoallv(std::span<const T>(in), send, std::span<T>(host), recv);
  zcoll_test::require_equal<T>(device, host, std::string(Codec::name()) + " on device buffers, rank " + std::to_string(t.rank()));
}

template <class Codec, class T>
void check_device_alltoall(const Codec& codec, std::size_t n) {
  for (const int p : {1, 2, 3, 4, 7}) {
    run_local(p, [&](Local& t) {
      const std::vector<std::size_t> counts(static_cast<std::size_t>(p), n);
      check_device_alltoallv<Codec, T>(t, codec, counts, counts, 0);
    });
  }
}

}  // namespace

TEST_CASE("cuda::Staging: alltoall on device buffers gives the host call's values bit for bit, 1 to 7 ranks",
          "[cuda][collective]") {
  check_device_alltoall<zcoll::FZLight, float>(zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, 5000);
  check_device_alltoall<zcoll::FZLight, double>(zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}}, 9000);
  check_device_alltoall<zcoll::Int8, float>(zcoll::Int8{{.shape = {1, 64}}}, 64 * 40);
  check_device_alltoall<zcoll::FP16, float>(zcoll::FP16{}, 3001);
}

TEST_CASE("cuda::Staging: alltoallv with empty, raw and compressed blocks, and more blocks than a launch takes",
          "[cuda][collective]") {
  run_local(4, [](Local& t) {
    std::vector<std::size_t> send, recv;
    for (int b = 0; b < 4; ++b) {
      send.push_back(static_cast<std::size_t>((t.rank() * 3 + b * 5) % 7) * 300);
      recv.push_back(static_cast<std::size_t>((b * 3 + t.rank() * 5) % 7) * 300);
    }
    check_device_alltoallv<zcoll::FZLight, float>(t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, send, recv, 4000);
  });
  run_local(70, [](Local& t) {  // 69 outgoing blocks: two launches a side
    const std::vector<std::size_t> counts(70, 256);
    check_device_alltoallv<zcoll::FZLight, float>(t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, counts, counts, 0);
  });
}

TEST_CASE("cuda::Staging: allgather, bcast and gather on device buffers give the host calls' values bit for bit",
          "[cuda][collective]") {
  constexpr std::size_t n = 4000;
  for (const int p : {1, 2, 3, 4, 7}) {
    run_local(p, [&](Local& t) {
      const auto total = n * static_cast<std::size_t>(p);
      const auto mine = contribution<float>(t.rank(), n);
      rank_stream stream;
      zcoll::cuda::Staging staging{stream.get()};
      device_bytes d_mine = device_bytes::from(std::span<const float>(mine)), d_all(total * sizeof(float));
      const std::span<float> all_on_device(d_all.as<float>(), total);
      std::vector<float> host(total);
      const std::string rank = " rank " + std::to_string(t.rank()) + " of " + std::to_string(p);

      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      ring.allgather(staging, std::span<const float>(d_mine.as<float>(), n), all_on_device);
      ring.allgather(std::span<const float>(mine), std::span<float>(host));
      zcoll_test::require_equal<float>(d_all.to_host<float>(total), host, "allgather" + rank);

      zcoll::Compressed<zcoll::ScatterAllgather, zcoll::FZLight> pieces{t, zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}};
      const auto sent = contribution<float>(50, total);
      zcoll::cuda::check_call(cudaMemcpy(d_all.as<float>(), sent.data(), total * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
      pieces.bcast(staging, all_on_device, 0);
      host = sent;
      pieces.bcast(std::span<float>(host), 0);
      zcoll_test::require_equal<float>(d_all.to_host<float>(total), host, "bcast" + rank);

      zcoll::Compressed<zcoll::BinomialTree, zcoll::Int8> tree{t, zcoll::Int8{{.shape = {1, 40}}}};
      const int root = p - 1;
      const bool at_root = t.rank() == root;
      tree.gather(staging, std::span<const float>(d_mine.as<float>(), n), at_root ? all_on_device : std::span<float>{}, root);
      tree.gather(std::span<const float>(mine), at_root ? std::span<float>(host) : std::span<float>{}, root);
      if (at_root) zcoll_test::require_equal<float>(d_all.to_host<float>(total), host, "gather" + rank);
    });
  }
}

/// allreduce, reduce_scatter and reduce of `Op` with `codec` on device buffers and on the host: the same values.
template <class S, class Codec, class T, class Op>
void check_device_reductions(const Codec& codec, std::size_t per_rank, Op op,
                             zcoll::collective_config config = {.pipeline_values = 1000},  // several segments a hop
                             bool off_grid = false) {
  for (const int p : {1, 2, 3, 4, 7}) {
    run_local(p, [&](Local& t) {
      zcoll::Compressed<S, Codec> coll{t, codec, config};
      const std::size_t n = per_rank * static_cast<std::size_t>(p);
      auto in = contribution<T>(t.rank(), n);
      // Off the quantizer's grid, where sums on compressed streams and the chain give different values.
      for (std::size_t i = 0; off_grid && i < n; ++i) in[i] += static_cast<T>(std::sin(1e-3 * static_cast<double>(i) * (t.rank() + 1)));
      rank_stream stream;
      zcoll::cuda::Staging staging{stream.get()};
      device_bytes d_in = device_bytes::from(std::span<const T>(in)), d_data = device_bytes::from(std::span<const T>(in));
      device_bytes d_out(n * sizeof(T));
      const std::string what = std::string(S::name) + " " + Codec::name() + " rank " + std::to_string(t.rank()) + " of " + std::to_string(p);

      coll.allreduce(staging, std::span<T>(d_data.as<T>(), n), op);
      std::vector<T> host = in;
      coll.allreduce(std::span<T>(host), op);
      zcoll_test::require_equal<T>(d_data.to_host<T>(n), host, "allreduce " + what);

      if constexpr (S::supports(zcoll::schedule::collective_op::reduce_scatter)) {
        coll.reduce_scatter(staging, std::span<const T>(d_in.as<T>(), n), std::span<T>(d_out.as<T>(), per_rank), op);
        std::vector<T> block(per_rank);
        coll.reduce_scatter(std::span<const T>(in), std::span<T>(block), op);
        zcoll_test::require_equal<T>(d_out.to_host<T>(per_rank), block, "reduce_scatter " + what);
      }

      const bool at_root = t.rank() == 0;
      const std::vector<T> sentinel(n, T(-12345));  // the reduce must write every value
      zcoll::cuda::check_call(cudaMemcpy(d_out.as<T>(), sentinel.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
      coll.reduce(staging, std::span<const T>(d_in.as<T>(), n), at_root ? std::span<T>(d_out.as<T>(), n) : std::span<T>{}, op, 0);
      std::vector<T> reduced(at_root ? n : 0);
      coll.reduce(std::span<const T>(in), std::span<T>(reduced), op, 0);
      if (at_root) zcoll_test::require_equal<T>(d_out.to_host<T>(n), reduced, "reduce " + what);
    });
  }
}

TEST_CASE("cuda::Staging: reductions on device buffers give the host calls' values bit for bit, 1 to 7 ranks",
          "[cuda][collective]") {
  check_device_reductions<zcoll::Ring, zcoll::FZLight, float>(zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, 3000, zcoll::op::sum);
  check_device_reductions<zcoll::Ring, zcoll::FZLight, double>(zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}}, 2000,
                                                                zcoll::op::max);
  check_device_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, float>(zcoll::FZLight{{.error_bound = zcoll::relative(1e-3)}},
                                                                            2500, zcoll::op::sum);
  check_device_reductions<zcoll::Ring, zcoll::Int8, float>(zcoll::Int8{{.shape = {1, 64}}}, 64 * 30, zcoll::op::min);
}

TEST_CASE("cuda::Staging: sums on compressed streams on device buffers give the host calls' values bit for bit, 1 to 7 "
          "ranks",
          "[cuda][collective][homomorphic]") {
  const zcoll::collective_config homomorphic{.pipeline_values = 1000, .homomorphic = true};
  check_device_reductions<zcoll::Ring, zcoll::FZLight, float>(zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, 3000, zcoll::op::sum,
                                                               homomorphic, true);
  check_device_reductions<zcoll::RecursiveDoubling, zcoll::FZLight, double>(zcoll::FZLight{{.error_bound = zcoll::relative(1e-4)}},
                                                                             2500, zcoll::op::sum, homomorphic, true);
}

TEST_CASE("cuda::Staging: bf16 allreduce and fp16 alltoall on device buffers give the host calls' bits and bound",
          "[cuda][collective][half]") {
  for (const int p : {1, 2, 3, 4, 7}) {
    run_local(p, [&](Local& t) {
      const std::size_t n = 3000 * static_cast<std::size_t>(p);
      rank_stream stream;
      zcoll::cuda::Staging staging{stream.get()};
      const std::string what = " rank " + std::to_string(t.rank()) + " of " + std::to_string(p);
      std::vector<zcoll::bfloat16> grad(n);
      for (std::size_t i = 0; i < n; ++i) grad[i] = zcoll::bfloat16(static_cast<float>(std::sin(0.01 * static_cast<double>(i) + t.rank())));
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1.0 / 256)}}};
      device_bytes d_grad = device_bytes::from(std::span<const zcoll::bfloat16>(grad));
      ring.allreduce(staging, std::span<zcoll::bfloat16>(d_grad.as<zcoll::bfloat16>(), n), zcoll::op::sum);
      const double device_bound = ring.last_report().error_bound;
      ring.allreduce(std::span<zcoll::bfloat16>(grad), zcoll::op::sum);
      const std::vector<zcoll::bfloat16> device = d_grad.to_host<zcoll::bfloat16>(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (!(device[i] == grad[i])) FAIL("bf16 allreduce" << what << ": element " << i << " differs from the host call's");
      }
      REQUIRE(device_bound == ring.last_report().error_bound);

      std::vector<zcoll::float16> send(n), host(n);
      for (std::size_t i = 0; i < n; ++i) send[i] = zcoll::float16(static_cast<float>(std::cos(0.02 * static_cast<double>(i)) * t.rank()));
      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{t, zcoll::FZLight{{.error_bound = zcoll::absolute(1.0 / 256)}}};
      device_bytes d_send = device_bytes::from(std::span<const zcoll::float16>(send)), d_out(n * sizeof(zcoll::float16));
      pairwise.alltoall(staging, std::span<const zcoll::float16>(d_send.as<zcoll::float16>(), n),
                        std::span<zcoll::float16>(d_out.as<zcoll::float16>(), n));
      pairwise.alltoall(std::span<const zcoll::float16>(send), std::span<zcoll::float16>(host));
      const std::vector<zcoll::float16> received = d_out.to_host<zcoll::float16>(n);
      for (std::size_t i = 0; i < n; ++i) {
        if (!(received[i] == host[i])) FAIL("fp16 alltoall" << what << ": element " << i << " differs from the host call's");
      }
    });
  }
}

TEST_CASE("cuda::Staging: a damaged block is a format_error naming its sender on every rank (verify mode)",
          "[cuda][collective]") {
  std::atomic<int> raised{0};
  run_local(3, [&](Local& t) {
    zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{zcoll_test::Faulty<Local>(t, 1, zcoll_test::retype),
                                                            zcoll::FZLight{{.error_bound = zcoll::absolute(eb)}}, {.verify = true}};
    const auto in = contribution<float>(t.rank(), 3 * 2000);
    rank_stream stream;
    zcoll::cuda::Staging staging{stream.get()};
    device_bytes d_in = device_bytes::from(std::span<const float>(in)), d_out(in.size() * sizeof(float));
    const std::string error = zcoll_test::error_of<zcoll::format_error>([&] {
      coll.alltoall(staging, std::span<const float>(d_in.as<float>(), in.size()), std::span<float>(d_out.as<float>(), in.size()));
    });
    if (error.find("block from rank 1") != std::string::npos) ++raised;
  });
  REQUIRE(raised == 3);
}

TEST_CASE("cuda::Staging over a CUDA-aware transport: alltoallv, allgather and the reductions move device memory and "
          "give the host calls' values bit for bit, 1 to 7 ranks; direct over a host-only transport is refused",
          "[cuda][collective][device-transfer]") {
  using Aware = zcoll_test::CudaAwareLocal<Local>;
  const zcoll::FZLight codec{{.error_bound = zcoll::absolute(eb)}};
  std::atomic<int> refused{0};
  for (const int p : {1, 2, 3, 4, 7}) {
    run_local(p, [&](Local& t) {
      const std::string rank = " rank " + std::to_string(t.rank()) + " of " + std::to_string(p);
      rank_stream stream;
      zcoll::cuda::Staging staging{stream.get()};  // automatic: the device wire, as the transport takes device memory
      constexpr std::size_t n = 3000;
      const auto total = n * static_cast<std::size_t>(p);

      zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{Aware(t), codec, {.min_compressed_bytes = 4000}};
      std::vector<std::size_t> send, recv;
      for (int b = 0; b < p; ++b) {
        send.push_back(static_cast<std::size_t>((t.rank() * 3 + b * 5) % 7) * 300);
        recv.push_back(static_cast<std::size_t>((b * 3 + t.rank() * 5) % 7) * 300);
      }
      const auto in = contribution<float>(t.rank(), std::accumulate(send.begin(), send.end(), std::size_t{0}));
      const std::size_t received = std::accumulate(recv.begin(), recv.end(), std::size_t{0});
      device_bytes d_in = device_bytes::from(std::span<const float>(in)), d_out(received * sizeof(float));
      pairwise.alltoallv(staging, std::span<const float>(d_in.as<float>(), in.size()), std::span<const std::size_t>(send),
                         std::span<float>(d_out.as<float>(), received), std::span<const std::size_t>(recv));
      std::vector<float> host(received);
      pairwise.alltoallv(std::span<const float>(in), std::span<const std::size_t>(send), std::span<float>(host),
                         std::span<const std::size_t>(recv));
      zcoll_test::require_equal<float>(d_out.to_host<float>(received), host, "alltoallv" + rank);

      zcoll::Compressed<zcoll::RecursiveDoubling, zcoll::FZLight> doubling{Aware(t), codec};
      const auto mine = contribution<float>(t.rank(), n);
      device_bytes d_mine = device_bytes::from(std::span<const float>(mine)), d_all(total * sizeof(float));
      doubling.allgather(staging, std::span<const float>(d_mine.as<float>(), n), std::span<float>(d_all.as<float>(), total));
      host.assign(total, 0.0f);
      doubling.allgather(std::span<const float>(mine), std::span<float>(host));
      zcoll_test::require_equal<float>(d_all.to_host<float>(total), host, "allgather" + rank);

      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{Aware(t), codec, {.pipeline_values = 1000}};
      const auto values = contribution<float>(t.rank(), total);
      for (const bool raw : {false, true}) {
        zcoll::Compressed<zcoll::Ring, zcoll::FZLight> raw_ring{Aware(t), codec, {.min_compressed_bytes = 1 << 30}};
        auto& coll = raw ? raw_ring : ring;
        device_bytes d_values = device_bytes::from(std::span<const float>(values));
        coll.allreduce(staging, std::span<float>(d_values.as<float>(), total), zcoll::op::sum);
        host = values;
        coll.allreduce(std::span<float>(host), zcoll::op::sum);
        zcoll_test::require_equal<float>(d_values.to_host<float>(total), host, (raw ? "raw allreduce" : "allreduce") + rank);
      }

      zcoll::cuda::Staging direct{stream.get(), zcoll::device_transfer::direct};
      zcoll::Compressed<zcoll::Ring, zcoll::FZLight> host_only{t, codec};
      device_bytes d_values = device_bytes::from(std::span<const float>(values));
      try {
        host_only.allreduce(direct, std::span<float>(d_values.as<float>(), total), zcoll::op::sum);
      } catch (const zcoll::argument_error&) {
        ++refused;
      }
    });
    REQUIRE(refused.exchange(0) == p);
  }
}
