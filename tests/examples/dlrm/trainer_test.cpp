// The DLRM example's trainer (examples/dlrm/trainer.hpp) on transport::Local: data parallelism changes
// nothing but the order of floating-point sums, and training learns the teacher's task.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "configurations.hpp"
#include "trainer.hpp"
#include "zcoll/transport/local.hpp"

namespace {

dlrm::train_result train_fp32(int ranks, dlrm::train_options options) {
  dlrm::train_result result;
  zcoll::transport::run_local(ranks, [&](zcoll::transport::Local& local) {
    zcoll::transport::AnyTransport t{local};
    dlrm::criteo_like data({.seed = 5, .test_samples = 2048});
    const dlrm::configuration_context ctx{};
    auto comm = dlrm::dense_only<zcoll::Ring, zcoll::Identity>(t, ctx);  // fp32, as zcoll-dlrm's "fp32"
    dlrm::trainer trainer(t, data, options, std::move(comm.exchange), std::move(comm.allreduce));
    auto mine = trainer.train();
    if (t.rank() == 0) result = std::move(mine);
  });
  return result;
}

}  // namespace

TEST_CASE("DLRM example: 1 and 4 ranks give the same FP32 loss curve", "[examples][dlrm]") {
  const dlrm::train_options options{.global_batch = 64, .steps = 60, .loss_every = 5};
  const auto one = train_fp32(1, options);
  const auto four = train_fp32(4, options);
  REQUIRE(one.losses.size() == 12);
  REQUIRE(four.losses.size() == one.losses.size());
  for (std::size_t i = 0; i < one.losses.size(); ++i) {
    INFO("recorded loss " << i);
    // Only the order of the sums differs (allreduce, loss): float rounding, ~1e-9 measured after 60 steps;
    // a sample or table routed wrongly moves the loss by far more.
    CHECK(std::abs(one.losses[i] - four.losses[i]) <= 1e-6);
  }
  CHECK(std::abs(one.test_accuracy - four.test_accuracy) <= 2.0 / static_cast<double>(one.test_samples));
}

TEST_CASE("DLRM example: a few hundred steps learn the teacher task", "[examples][dlrm]") {
  const auto r = train_fp32(4, {.global_batch = 128, .steps = 400, .loss_every = 20});
  REQUIRE(r.losses.size() == 20);
  const double first = r.losses.front();
  const double last = (r.losses[17] + r.losses[18] + r.losses[19]) / 3.0;
  INFO("loss " << first << " -> " << last << ", test AUC " << r.test_auc << ", accuracy " << r.test_accuracy);
  CHECK(first > 0.6);          // near log 2 at the start
  CHECK(last < first - 0.04);  // learning
  CHECK(r.test_auc > 0.70);    // better than chance on held-out samples
}
