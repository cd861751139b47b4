// Compile-fail cases for Compressed<Schedule, Codec>: an operation the schedule does not serve must stop
// the build with the static_assert that names a schedule that does. ZCOLL_COMPILE_FAIL_CASE selects the
// case; without it the file is the control and must compile.
#include <span>
#include <vector>

#include "zcoll/collective/compressed.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

void use(zcoll::transport::Local& t) {
  std::vector<float> data(8), all(16);
#if ZCOLL_COMPILE_FAIL_CASE == 1
  zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> coll{t};
  coll.allreduce(std::span<float>(data), zcoll::op::sum);
#elif ZCOLL_COMPILE_FAIL_CASE == 2
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t};
  coll.bcast(std::span<float>(data), 0);
#elif ZCOLL_COMPILE_FAIL_CASE == 3
  zcoll::Compressed<zcoll::ScatterAllgather, zcoll::FZLight> coll{t};  // bcast only
  coll.scatter(std::span<const float>(all), std::span<float>(data), 0);
#else
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> coll{t};
  coll.allgather(std::span<const float>(data), std::span<float>(all));
  coll.allreduce(std::span<float>(data), zcoll::op::sum);
  zcoll::Compressed<zcoll::ScatterAllgather, zcoll::FZLight> pieces{t};
  pieces.bcast(std::span<float>(data), 0);
#endif
}
