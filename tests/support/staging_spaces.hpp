#pragma once
// Staging spaces for the staged-call tests (collective/staging.hpp).
#include <cstddef>

#include "zcoll/collective/host_staging.hpp"

namespace zcoll_test {

/// HostStaging with batches of at most two streams: runs (and a hop's segments) are cut as a GPU's
/// 64-stream launches are.
class TwoStreamBatches : public zcoll::HostStaging {
 public:
  static constexpr std::size_t max_batch_streams() { return 2; }
};

}  // namespace zcoll_test
