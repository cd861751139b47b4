#pragma once
// What every rank raised in a verify-mode call on transport::Local: each rank's thread adds its error's
// text; the main thread then asks for the one text they all agree on. Call agreed() outside an
// assertion: it asserts itself (and the assertions of thread_safe_assertions.hpp share one lock).
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"

#include <mutex>
#include <set>
#include <string>

namespace zcoll_test {

class raised_by_ranks {
 public:
  void add(const std::string& what) {
    std::lock_guard lock(mutex_);
    texts_.insert(what);
  }
  /// The one text every rank raised (fails when ranks differ or one raised nothing).
  std::string agreed() const {
    std::string all;
    for (const auto& t : texts_) all += "\n  '" + t + "'";
    INFO("distinct errors raised: " << texts_.size() << all);
    REQUIRE(texts_.size() == 1);
    REQUIRE_FALSE(texts_.begin()->empty());
    return *texts_.begin();
  }
  /// Every distinct text raised.
  std::set<std::string> all() const { return texts_; }

 private:
  std::mutex mutex_;
  std::set<std::string> texts_;
};

}  // namespace zcoll_test
