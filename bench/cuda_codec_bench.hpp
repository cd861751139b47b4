#pragma once
/// zcoll-bench codec --device cuda: the codecs with a CUDA driver, timed on the device with CUDA events.
/// The declarations are plain C++; cuda_codec_bench.cu, compiled by nvcc, defines them (a build without a
/// CUDA compiler leaves it out and zcoll-bench refuses --device cuda).

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "zcoll/codec/codec_config.hpp"

namespace zcoll_bench {

/// The codec names of zcoll-bench codec that have a CUDA driver.
std::vector<std::string> cuda_codec_names();

/// The device's name and the median seconds of a device-to-device cudaMemcpy of `bytes` (the reference row).
double cuda_memcpy_seconds(std::size_t bytes, unsigned repeat, std::string& device_name);

template <class T>
struct cuda_codec_result {
  std::size_t compressed_bytes = 0;
  double compress_s = 0.0;    ///< median, CUDA events around the call, data and buffers on the device
  double decompress_s = 0.0;
  double error_bound = 0.0;   ///< the stream's header
  std::vector<T> restored;
};

/// One codec at one configuration on the device, the values copied there first (not timed).
template <class T>
cuda_codec_result<T> cuda_measure(const std::string& codec, const zcoll::codec_config& config, std::span<const T> values,
                                  unsigned repeat);

/// The DLRM paper's buffer optimisation: `values` cut into `blocks` equal blocks (an all-to-all's
/// per-destination blocks), compressed by one batch launch into one buffer, and one launch per block.
struct cuda_batch_result {
  double one_launch_s = 0.0;
  double launch_per_block_s = 0.0;
  std::size_t compressed_bytes = 0;
};
template <class T>
cuda_batch_result cuda_measure_batch(const std::string& codec, const zcoll::codec_config& config,
                                     std::span<const T> values, std::size_t blocks, unsigned repeat);

/// zcoll::add on the device beside decompress-add-compress (DOC) there, on the same two streams (given as
/// host bytes of `count` values each, copied to the device first, not timed).
struct cuda_add_result {
  double add_s = 0.0;         ///< median, CUDA events around zcoll::add
  double doc_s = 0.0;         ///< decompress both, add the values, compress the sum
  double decompress_s = 0.0;  ///< decompress one stream
  std::vector<std::byte> sum; ///< the device's sum, copied back
  std::size_t doc_bytes = 0;  ///< DOC's stream
};
template <class T>
cuda_add_result cuda_measure_add(const std::string& codec, const zcoll::codec_config& config, std::span<const std::byte> a,
                                 std::span<const std::byte> b, std::size_t count, unsigned repeat);

}  // namespace zcoll_bench
