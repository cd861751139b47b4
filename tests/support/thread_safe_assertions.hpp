#pragma once
// Catch2 v2's assertions are not thread-safe, and the transport::Local tests assert on every rank's
// thread. Including this header after catch.hpp makes REQUIRE, CHECK, REQUIRE_FALSE and FAIL take one
// process-wide lock. Do not use INFO/CAPTURE on rank threads (put the context into the FAIL message), and
// keep REQUIRE_THROWS_AS(run_local(...)) as it is: it is not redefined, so it does not hold the lock while
// the ranks run.
#include <catch2/catch.hpp>

#include <mutex>

namespace zcoll_test {
inline std::mutex& assertion_mutex() {
  static std::mutex mutex;
  return mutex;
}
}  // namespace zcoll_test

#define ZCOLL_LOCKED(...)                                                        \
  do {                                                                           \
    std::lock_guard<std::mutex> zcoll_assertion_lock(zcoll_test::assertion_mutex()); \
    __VA_ARGS__;                                                                 \
  } while (false)

#undef REQUIRE
#undef REQUIRE_FALSE
#undef CHECK
#undef FAIL
#define REQUIRE(...) ZCOLL_LOCKED(INTERNAL_CATCH_TEST("REQUIRE", Catch::ResultDisposition::Normal, __VA_ARGS__))
#define REQUIRE_FALSE(...) \
  ZCOLL_LOCKED(INTERNAL_CATCH_TEST("REQUIRE_FALSE", Catch::ResultDisposition::Normal | Catch::ResultDisposition::FalseTest, __VA_ARGS__))
#define CHECK(...) ZCOLL_LOCKED(INTERNAL_CATCH_TEST("CHECK", Catch::ResultDisposition::ContinueOnFailure, __VA_ARGS__))
#define FAIL(...) ZCOLL_LOCKED(INTERNAL_CATCH_MSG("FAIL", Catch::ResultWas::ExplicitFailure, Catch::ResultDisposition::Normal, __VA_ARGS__))
