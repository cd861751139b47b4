// zcoll._zcoll_cuda's device faces (python/src/cuda/device_faces.hpp) without Python: what the module
// does with a CUDA tensor's address and torch's stream handle. The codecs write the host face's bytes
// (16-bit values too, widened on the device) and decode to the host's values with the host's rounding;
// codecs the device only decodes refuse to encode; a damaged stream is a format_error; the stream may
// change between calls. The collectives over transport::Local on 1 to 7 ranks give the host calls'
// values bit for bit. Runs where a device is present (the runner skips otherwise).
#include <catch2/catch.hpp>

#include "support/thread_safe_assertions.hpp"
// after it:
#include "support/collective_data.hpp"
#include "support/cuda_stream.hpp"
#include "support/device_bytes.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "cuda/device_faces.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/registry.hpp"
#include "zcoll/collective/compressed.hpp"
#include "zcoll/core/half_value.hpp"
#include "zcoll/schedule/schedules.hpp"
#include "zcoll/transport/local.hpp"

namespace face = zcoll::python::cuda_face;
using zcoll::python::dtype;
using zcoll::transport::Local;
using zcoll_test::device_bytes;

namespace {

using owned_stream = zcoll_test::cuda_stream;

std::uintptr_t address(device_bytes& d) { return reinterpret_cast<std::uintptr_t>(d.span().data()); }

/// Values with a smooth part, specials and a spread of magnitudes.
template <class T>
std::vector<T> field(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(0.01 * static_cast<double>(i)) * 40.0 + static_cast<double>(i % 7));
  if (n > 10) {
    v[3] = std::numeric_limits<T>::quiet_NaN();
    v[5] = std::numeric_limits<T>::infinity();
    v[9] = -std::numeric_limits<T>::infinity();
  }
  return v;
}

template <class H>
std::vector<H> halves_of(const std::vector<float>& values) {
  std::vector<H> out;
  for (const float v : values) out.push_back(H(v));
  return out;
}

/// Compresses `values` by the face and by the host driver, compares the bytes, decodes on both sides
/// and compares the values and the reported rounding.
template <class Codec, class T>
void check_codec(const zcoll::codec_config& config, dtype d, const std::vector<T>& values, face::device_codec& codec,
                 const owned_stream& stream) {
  const Codec host_codec{config};
  const std::size_t n = values.size();
  std::vector<std::byte> host_stream(codec.max_compressed_size(d, n));
  const auto host_bytes = zcoll::compress(zcoll::exec::Host{}, host_codec, std::span<const T>(values), std::span<std::byte>(host_stream));

  device_bytes d_values = device_bytes::from(std::span<const T>(values)), d_out(host_stream.size());
  const std::size_t written = codec.compress(d, address(d_values), n, address(d_out), d_out.span().size(), 0, stream.handle());
  REQUIRE(written == host_bytes.size());
  const std::vector<std::byte> device_stream = d_out.to_host<std::byte>(written);
  REQUIRE(std::equal(device_stream.begin(), device_stream.end(), host_bytes.begin()));

  std::vector<T> host_values(n);
  double host_rounding = 0.0;
  if constexpr (zcoll::half_value<T>) {
    host_rounding = zcoll::decompress(zcoll::exec::Host{}, host_codec, host_bytes, std::span<T>(host_values));
  } else {
    zcoll::decompress(zcoll::exec::Host{}, host_codec, host_bytes, std::span<T>(host_values));
  }
  device_bytes d_decoded(n * sizeof(T));
  const double rounding = codec.decompress(d, address(d_out), written, address(d_decoded), n, 0, stream.handle());
  const std::vector<T> decoded = d_decoded.to_host<T>(n);
  REQUIRE(std::memcmp(decoded.data(), host_values.data(), n * sizeof(T)) == 0);
  REQUIRE(rounding == host_rounding);

  // A truncated stream: a format_error, never a fault.
  if (written > 1) {
    REQUIRE_THROWS_AS(codec.decompress(d, address(d_out), written - 1, address(d_decoded), n, 0, stream.handle()), zcoll::format_error);
  }
}

}  // namespace

TEST_CASE("device codec faces write the host face's bytes and decode to its values", "[python-cuda]") {
  face::use_device(0);
  owned_stream first, second;
  const zcoll::codec_config fz{.error_bound = zcoll::absolute(1e-3)};
  auto fzlight = face::make_device_codec("fzlight", fz);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{70001}}) {
    CAPTURE(n);
    check_codec<zcoll::FZLight, float>(fz, dtype::float32, field<float>(n), *fzlight, first);
    check_codec<zcoll::FZLight, double>(fz, dtype::float64, field<double>(n), *fzlight, second);
    check_codec<zcoll::FZLight, zcoll::bfloat16>(fz, dtype::bfloat16,
                                                                                  halves_of<zcoll::bfloat16>(field<float>(n)), *fzlight, first);
    check_codec<zcoll::FZLight, zcoll::float16>(fz, dtype::float16,
                                                                                 halves_of<zcoll::float16>(field<float>(n)), *fzlight, second);
  }
  const zcoll::codec_config relative{.error_bound = zcoll::relative(1e-4), .fill_value = 7.0};
  auto fz_relative = face::make_device_codec("fzlight", relative);
  check_codec<zcoll::FZLight, float>(relative, dtype::float32, field<float>(5000), *fz_relative, first);

  const zcoll::codec_config rows{.shape = {64, 32}};
  auto int8 = face::make_device_codec("int8", rows);
  std::vector<float> table = field<float>(64 * 32);
  table[3] = 1.0f, table[5] = 2.0f, table[9] = 3.0f;  // row-wise codecs refuse NaN rows (below)
  check_codec<zcoll::Int8, float>(rows, dtype::float32, table, *int8, first);
  table[70] = std::numeric_limits<float>::quiet_NaN();
  device_bytes d_table = device_bytes::from(std::span<const float>(table)), d_out(int8->max_compressed_size(dtype::float32, table.size()));
  REQUIRE_THROWS_AS(int8->compress(dtype::float32, address(d_table), table.size(), address(d_out), d_out.span().size(), 0, first.handle()),
                    zcoll::argument_error);

  const zcoll::codec_config cast{};
  auto fp16 = face::make_device_codec("fp16", cast);
  check_codec<zcoll::FP16, float>(cast, dtype::float32, field<float>(3000), *fp16, second);
  auto topk = face::make_device_codec("topk", cast);
  check_codec<zcoll::TopK, float>(cast, dtype::float32, field<float>(3000), *topk, first);
}

TEST_CASE("device codec faces refuse what the device does not do, naming what it does", "[python-cuda]") {
  face::use_device(0);
  {
    // A codec's workspace stays on its first call's device; the thread's device is restored after a call.
    auto fzlight = face::make_device_codec("fzlight", {.error_bound = zcoll::absolute(1e-3)});
    const std::vector<float> values = field<float>(1000);
    owned_stream stream;
    device_bytes d_values = device_bytes::from(std::span<const float>(values)), d_out(fzlight->max_compressed_size(dtype::float32, 1000));
    fzlight->compress(dtype::float32, address(d_values), 1000, address(d_out), d_out.span().size(), 0, stream.handle());
    REQUIRE_THROWS_WITH(fzlight->compress(dtype::float32, address(d_values), 1000, address(d_out), d_out.span().size(), 1, stream.handle()),
                        Catch::Contains("make a Codec per device"));
    int current = -1;
    zcoll::cuda::check_call(cudaGetDevice(&current), "cudaGetDevice");
    REQUIRE(current == 0);
  }
  REQUIRE_THROWS_WITH(face::make_device_codec("highratio-1d", {}), Catch::Contains("no device driver") && Catch::Contains("fzlight"));
  REQUIRE_THROWS_WITH(face::use_device(1 << 20), Catch::Contains("cuda:1048576"));

  // EmbeddingHuffman and EmbeddingLZ: the host encodes, the device decodes the host's stream.
  const zcoll::codec_config config{.error_bound = zcoll::absolute(1e-2), .shape = {16}};
  std::vector<float> values = field<float>(4096);
  std::copy(values.begin(), values.begin() + 2048, values.begin() + 2048);  // repeated vectors for vector-lz
  owned_stream stream;
  const auto check_host_encoded = [&]<class Codec>(const char* name) {
    auto device = face::make_device_codec(name, config);
    device_bytes d_values = device_bytes::from(std::span<const float>(values)), d_out(device->max_compressed_size(dtype::float32, 4096));
    REQUIRE_THROWS_WITH(device->compress(dtype::float32, address(d_values), 4096, address(d_out), d_out.span().size(), 0, stream.handle()),
                        Catch::Contains("encoded on the host"));
    const Codec host_codec{config};
    std::vector<std::byte> host_stream(host_codec.template max_compressed_size<float>(4096));
    const auto bytes = zcoll::compress(zcoll::exec::Host{}, host_codec, std::span<const float>(values), std::span<std::byte>(host_stream));
    std::vector<float> host_values(4096);
    zcoll::decompress(zcoll::exec::Host{}, host_codec, bytes, std::span<float>(host_values));
    device_bytes d_stream = device_bytes::from(std::span<const std::byte>(bytes)), d_decoded(4096 * sizeof(float));
    device->decompress(dtype::float32, address(d_stream), bytes.size(), address(d_decoded), 4096, 0, stream.handle());
    const std::vector<float> decoded = d_decoded.to_host<float>(4096);
    REQUIRE(std::memcmp(decoded.data(), host_values.data(), sizeof(float) * 4096) == 0);
  };
  check_host_encoded.template operator()<zcoll::EmbeddingHuffman>("embedding-huffman");
  check_host_encoded.template operator()<zcoll::EmbeddingLZ>("embedding-lz");
}

namespace {

/// The device face's calls of a collective beside the host engine's, on one rank.
template <class T>
void check_collective_rank(Local& t, const std::string& codec_name, std::size_t n) {
  const zcoll::python::collective_settings settings{
      .codec = codec_name, .codec_settings = {.error_bound = zcoll::absolute(zcoll_test::eb)}, .config = {.pipeline_values = 4096}};
  face::device_collective device(zcoll::python::transport_maker([t](int) { return zcoll::transport::AnyTransport(t); }), settings);
  zcoll::Compressed<zcoll::Ring, zcoll::FZLight> ring{t, zcoll::FZLight{settings.codec_settings}, settings.config};
  zcoll::Compressed<zcoll::Pairwise, zcoll::FZLight> pairwise{t, zcoll::FZLight{settings.codec_settings}, settings.config};
  owned_stream stream;
  const auto p = static_cast<std::size_t>(t.size());
  const std::vector<T> mine = zcoll_test::contribution<T>(t.rank(), n * p);
  const auto d = std::is_same_v<T, float> ? dtype::float32 : dtype::float64;
  const auto view = [](device_bytes& b) { return zcoll::python::value_view{b.span().data(), b.span().size()}; };
  const std::string where = codec_name + " rank " + std::to_string(t.rank()) + " of " + std::to_string(p);

  // allreduce in place, twice (the second reuses the staging buffers)
  std::vector<T> host = mine;
  ring.allreduce(std::span<T>(host), zcoll::op::sum);
  for (int repeat = 0; repeat < 2; ++repeat) {
    device_bytes d_data = device_bytes::from(std::span<const T>(mine));
    device.on_stream(0, stream.handle()).allreduce(d, nullptr, view(d_data), zcoll::python::reduction::sum).wait();
    zcoll_test::require_equal<T>(d_data.to_host<T>(host.size()), host, "allreduce, " + where);
  }

  // reduce_scatter, allgather, alltoall
  device_bytes d_in = device_bytes::from(std::span<const T>(mine)), d_block(n * sizeof(T)), d_all(n * p * sizeof(T));
  device.on_stream(0, stream.handle()).reduce_scatter(d, view(d_in), view(d_block), zcoll::python::reduction::max).wait();
  std::vector<T> block(n);
  ring.reduce_scatter(std::span<const T>(mine), std::span<T>(block), zcoll::op::max);
  zcoll_test::require_equal<T>(d_block.to_host<T>(n), block, "reduce_scatter, " + where);

  device.on_stream(0, stream.handle()).allgather(d, view(d_block), view(d_all)).wait();
  std::vector<T> all(n * p);
  ring.allgather(std::span<const T>(block), std::span<T>(all));
  zcoll_test::require_equal<T>(d_all.to_host<T>(n * p), all, "allgather, " + where);

  device.on_stream(0, stream.handle()).alltoall(d, view(d_in), view(d_all)).wait();
  pairwise.alltoall(std::span<const T>(mine), std::span<T>(all));
  zcoll_test::require_equal<T>(d_all.to_host<T>(n * p), all, "alltoall, " + where);
}

}  // namespace

TEST_CASE("device collective faces give the host calls' values on 1 to 7 ranks", "[python-cuda]") {
  face::use_device(0);
  for (const int ranks : {1, 2, 3, 4, 7}) {
    zcoll::transport::run_local(ranks, [](Local& t) {
      face::use_device(0);  // each rank's thread
      check_collective_rank<float>(t, "fzlight", 3000);
      check_collective_rank<double>(t, "fzlight", 700);
    });
  }
  zcoll::python::collective_settings identity;
  identity.codec = "identity";
  std::string refusal;
  zcoll::transport::run_local(1, [&](Local& t) {
    try {
      face::device_collective refused(zcoll::python::transport_maker([t](int) { return zcoll::transport::AnyTransport(t); }), identity);
    } catch (const zcoll::argument_error& e) {
      refusal = e.what();
    }
  });
  REQUIRE_THAT(refusal, Catch::Contains("fzlight, int8 and int4"));
}
