#pragma once
// The CUDA decoder of the chunk-encoder pipelines (Huffman, VectorLZ) run on a host team (fibers),
// as decompress(exec::Cuda, ...) runs it: the model kernel's reading of the stream's model, then the
// tiles; and its refusals held against the host decoder's. For the host-team tests of
// codec/detail/huffman_tile.hpp and vector_lz_tile.hpp.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include "support/host_team.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/detail/pipeline_tile.hpp"
#include "zcoll/core/value_type.hpp"

namespace zcoll_test {

/// Decodes one stream as decompress(exec::Cuda, ...) does: the model kernel, then the tiles on a team
/// (staging each chunk's values in a shared buffer as the 128-thread team does, or not, as the 1024).
template <class Codec, class T>
std::optional<std::vector<T>> team_decoded(const Codec& codec, std::span<const std::byte> stream, std::size_t count,
                                           bool staged, zcoll::detail::decode_fault& fault) {
  const std::size_t counts[] = {count};
  zcoll::detail::decompress_job<T> job;
  job.layout = zcoll::detail::make_layout("team_decoded", counts, codec.config().chunk_values);
  std::vector<T> values(count, T(-7));
  job.in = stream.data();
  job.values = values.data();
  job.stream_offset[0] = 0;
  job.stream_bytes[0] = stream.size();
  using E = typename Codec::encoder_type;
  zcoll::detail::huffman_device_model model{};
  std::vector<std::uint8_t> lengths(zcoll::encode::detail::huffman_table_entries);
  fault = {};
  fault = zcoll::detail::read_huffman_device_model(stream.data(), stream.size(), job.layout.chunks(0), 0, Codec::id,
                                                   zcoll::value_type_of<T>, lengths.data(), model,
                                                   std::is_same_v<E, zcoll::encode::VectorLZ>);
  job.models = &model;
  std::vector<T> staging(staged ? codec.config().chunk_values : 0);
  const auto tiles_fault = host_team::run(job.layout, [&](host_team& team, std::uint32_t t) {
    zcoll::detail::decompress_tile<typename Codec::quantizer_type, typename Codec::predictor_type, E>(
        team, job, t, staged ? staging.data() : nullptr);
  });
  if (fault.code == 0) fault = tiles_fault;
  if (fault.code != 0) return std::nullopt;
  return values;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// What refusing damaged streams came to: streams both decoders refused, and streams both decoded alike.
struct refusal_counts {
  int refused = 0;
  int decoded = 0;
};

/// Every truncation of the stream of `x` (each of its first 200 bytes, then 50 more) and 300 single-bit
/// damages: the team decoder refuses a stream exactly when the host decoder does and otherwise decodes
/// the host's values, within its buffers (each stream in a buffer of its own length, so that ASan sees
/// an overrun). A header that states another chunk length is wrong_chunking to the team (its launch is
/// laid out by the codec's), where the host follows the header.
template <class Codec>
void check_damaged_streams_on_team(const Codec& codec, const std::vector<float>& x, std::mt19937_64& rng, refusal_counts& counts) {
  const auto stream = zcoll::compress_to_vector(codec, std::span<const float>(x));
  const std::uint32_t chunk = codec.config().chunk_values;
  const auto agree = [&](std::span<const std::byte> s, bool staged) {
    std::optional<std::vector<float>> host;
    try {
      host = codec.template decompress<float>(s);
      if (host->size() != x.size()) host.reset();
    } catch (const zcoll::format_error&) {
    }
    const std::vector<std::byte> own(s.begin(), s.end());
    zcoll::detail::decode_fault fault{};
    const auto team = team_decoded<Codec, float>(codec, own, x.size(), staged, fault);
    INFO("n = " << x.size() << ", chunk " << chunk << ", " << s.size() << " of " << stream.size() << " bytes; device fault "
                << fault.code << " at chunk " << fault.chunk << ", detail " << fault.detail);
    zcoll::stream_header h;
    if (host && zcoll::parse_stream_header(own.data(), own.size(), h) == zcoll::header_fault::none && h.chunk_values != chunk) {
      REQUIRE(fault.code == static_cast<std::uint32_t>(zcoll::detail::decode_fault_code::wrong_chunking));
      return;
    }
    REQUIRE(host.has_value() == team.has_value());
    if (host) REQUIRE(same_bits(*host, *team));
    (host ? counts.decoded : counts.refused) += 1;
  };
  for (std::size_t cut = 0; cut < stream.size(); cut += cut < 200 ? 1 : 1 + stream.size() / 50) {
    agree(std::span(stream).first(cut), cut % 2 == 0);
  }
  for (int trial = 0; trial < 300; ++trial) {
    auto damaged = stream;
    const std::size_t at = trial < 150 ? rng() % std::min<std::size_t>(damaged.size(), 400) : rng() % damaged.size();
    damaged[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    agree(damaged, trial % 2 == 0);
  }
}

}  // namespace zcoll_test
