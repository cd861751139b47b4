#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "zcoll/core/exec.hpp"

namespace {

struct test_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

TEST_CASE("exec::for_each_range covers every item exactly once", "[core][exec]") {
  for (unsigned threads = 0; threads <= 5; ++threads) {
    for (std::size_t items = 0; items <= 9; ++items) {
      INFO(threads << " threads, " << items << " items");
      const std::size_t workers = zcoll::exec::worker_count(zcoll::exec::Host{threads}, items);
      CHECK(workers == std::min<std::size_t>(std::max(1u, threads), items));
      auto visits = std::make_unique<std::atomic<int>[]>(items + 1);
      auto worker_calls = std::make_unique<std::atomic<int>[]>(8);
      std::atomic<bool> bad_range{false};
      zcoll::exec::for_each_range(zcoll::exec::Host{threads}, items,
                                  [&](std::size_t w, std::size_t begin, std::size_t end) {
        if (w >= workers || begin > end || end > items) {
          bad_range = true;
          return;
        }
        worker_calls[w]++;
        // Ranges are contiguous and split evenly: worker w gets [items*w/workers, items*(w+1)/workers).
        if (begin != items * w / workers || end != items * (w + 1) / workers) bad_range = true;
        for (std::size_t i = begin; i < end; ++i) visits[i]++;
      });
      CHECK_FALSE(bad_range);
      for (std::size_t i = 0; i < items; ++i) CHECK(visits[i] == 1);
      for (std::size_t w = 0; w < workers; ++w) CHECK(worker_calls[w] == 1);
    }
  }
}

TEST_CASE("exec::for_each_range with no items calls nothing", "[core][exec]") {
  for (unsigned threads : {1u, 4u}) {
    bool called = false;
    zcoll::exec::for_each_range(zcoll::exec::Host{threads}, 0, [&](std::size_t, std::size_t, std::size_t) { called = true; });
    CHECK_FALSE(called);
  }
}

TEST_CASE("exec::for_each_range rethrows a worker's exception with its type", "[core][exec]") {
  for (unsigned threads = 1; threads <= 5; ++threads) {
    for (std::size_t throwing_item : {std::size_t{0}, std::size_t{4}, std::size_t{8}}) {
      INFO(threads << " threads, item " << throwing_item << " throws");
      std::atomic<int> finished_ranges{0};
      CHECK_THROWS_AS(zcoll::exec::for_each_range(zcoll::exec::Host{threads}, 9,
                                                  [&](std::size_t, std::size_t begin, std::size_t end) {
                                                    if (throwing_item >= begin && throwing_item < end) {
                                                      throw test_failure("item " + std::to_string(throwing_item));
                                                    }
                                                    finished_ranges++;
                                                  }),
                      test_failure);
      // Every other worker ran to completion before the exception was rethrown.
      CHECK(finished_ranges == static_cast<int>(zcoll::exec::worker_count(zcoll::exec::Host{threads}, 9)) - 1);
    }
  }
  SECTION("zcoll errors keep their type") {
    CHECK_THROWS_AS(zcoll::exec::for_each_range(zcoll::exec::Host{3}, 6,
                                                [](std::size_t w, std::size_t, std::size_t) {
                                                  if (w == 2) throw zcoll::format_error("worker 2");
                                                }),
                    zcoll::format_error);
  }
  SECTION("several workers throw: one of their exceptions is rethrown") {
    CHECK_THROWS_AS(zcoll::exec::for_each_range(zcoll::exec::Host{4}, 8,
                                                [](std::size_t w, std::size_t, std::size_t) {
                                                  throw test_failure("worker " + std::to_string(w));
                                                }),
                    test_failure);
  }
}
