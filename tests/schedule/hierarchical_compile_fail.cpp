// Compile-fail test (KaMPIng style, registered in tests/schedule/CMakeLists.txt): Hierarchical names what a
// sub-schedule lacks in a static_assert. ZCOLL_COMPILE_FAIL_CASE selects the wrong one; without it the file
// must compile, which proves the failures come from the static_asserts and not from a broken test.
#include "zcoll/schedule/schedules.hpp"

namespace {

/// Not a schedule: no supports, rounds or at.
struct NotASchedule {
  static constexpr const char* name = "not-a-schedule";
};

}  // namespace

#if ZCOLL_COMPILE_FAIL_CASE == 1
using Tested = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::BinomialTree>;  // no allreduce across groups
#elif ZCOLL_COMPILE_FAIL_CASE == 2
using Tested = zcoll::Hierarchical<zcoll::Pairwise, zcoll::RecursiveDoubling>;  // no reduce or bcast in groups
#elif ZCOLL_COMPILE_FAIL_CASE == 3
using Tested = zcoll::Hierarchical<NotASchedule, zcoll::RecursiveDoubling>;
#else
using Tested = zcoll::Hierarchical<zcoll::BinomialTree, zcoll::RecursiveDoubling>;
#endif

int main() { return Tested::rounds(zcoll::schedule::collective_op::allreduce, 16) == 7 ? 0 : 1; }
