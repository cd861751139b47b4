#pragma once
// Staging spaces for the staged-call tests (collective/staging.hpp).
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "zcoll/collective/host_staging.hpp"

namespace zcoll_test {

/// HostStaging with batches of at most two streams: runs (and a hop's segments) are cut as a GPU's
/// 64-stream launches are.
class TwoStreamBatches : public zcoll::HostStaging {
 public:
  static constexpr std::size_t max_batch_streams() { return 2; }
};

/// HostStaging that hands the transport its device wire areas, as a space over CUDA-aware MPI does.
class DirectHostStaging : public zcoll::HostStaging {
 public:
  DirectHostStaging() : HostStaging({}, zcoll::device_transfer::direct) {}
};

/// HostStaging that remembers the spans of each area it handed out (since the last forget()), so a test
/// can tell which of its buffers met the transport.
class AreaRecordingStaging : public zcoll::HostStaging {
 public:
  explicit AreaRecordingStaging(zcoll::device_transfer transfer = zcoll::device_transfer::automatic) : HostStaging({}, transfer) {}

  std::span<std::byte> area(zcoll::staging_area which, std::size_t bytes) {
    const std::span<std::byte> given = HostStaging::area(which, bytes);
    if (!given.empty()) handed_[static_cast<std::size_t>(which)].push_back(given);
    return given;
  }
  /// Whether `which` was handed out (with bytes) since the last forget().
  bool handed(zcoll::staging_area which) const { return !handed_[static_cast<std::size_t>(which)].empty(); }
  /// Whether [bytes.data(), + bytes.size()) lies in a span of `which` handed out since the last forget().
  bool holds(zcoll::staging_area which, std::span<const std::byte> bytes) const {
    for (const std::span<std::byte> area : handed_[static_cast<std::size_t>(which)]) {
      if (bytes.data() >= area.data() && bytes.data() + bytes.size() <= area.data() + area.size()) return true;
    }
    return false;
  }
  void forget() {
    for (auto& spans : handed_) spans.clear();
  }

 private:
  std::array<std::vector<std::span<std::byte>>, zcoll::staging_areas> handed_{};
};

/// A space whose device memory the host cannot read, as a GPU's (its steps are HostStaging's): what a
/// direct transfer over a transport without device memory is refused for.
class DeviceOnlyStaging : public zcoll::HostStaging {
 public:
  static constexpr bool device_memory_is_host_memory = false;
  DeviceOnlyStaging() : HostStaging({}, zcoll::device_transfer::direct) {}
};

}  // namespace zcoll_test
