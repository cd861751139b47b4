// The CUDA decoder of Huffman pipelines (codec/detail/huffman_tile.hpp inside pipeline_tile.hpp's
// decompress_tile) run on a host team of std::threads: the stream's model read as the device reads it,
// then every chunk decoded by the team, one thread per Huffman stream. Its values must be the host
// decoder's bit for bit (EmbeddingHuffman and Lorenzo1D + Huffman, f32 and f64, chunks for both team
// sizes, fill values and exceptions, the bit-plane fallback), and it must refuse exactly the streams
// the host decoder refuses (every truncation, damaged bytes, hostile models), within its buffers (ASan).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "support/host_team.hpp"
#include "support/huffman_inputs.hpp"
#include "support/test_support.hpp"
#include "zcoll/codec/compress_to_vector.hpp"
#include "zcoll/codec/presets.hpp"

namespace {

using zcoll_test::host_team;
namespace detail = zcoll::detail;

/// Decodes one stream as decompress(exec::Cuda, ...) does: the model kernel, then the tiles on a team
/// (staging each chunk's values in a shared buffer as the 128-thread team does, or not, as the 1024).
template <class Codec, class T>
std::optional<std::vector<T>> team_decoded(const Codec& codec, std::span<const std::byte> stream, std::size_t count,
                                           bool staged, detail::decode_fault& fault) {
  const std::size_t counts[] = {count};
  detail::decompress_job<T> job;
  job.layout = detail::make_layout("team_decoded", counts, codec.config().chunk_values);
  std::vector<T> values(count, T(-7));
  job.in = stream.data();
  job.values = values.data();
  job.stream_offset[0] = 0;
  job.stream_bytes[0] = stream.size();
  detail::huffman_device_model model{};
  std::vector<std::uint8_t> lengths(zcoll::encode::detail::huffman_table_entries);
  fault = {};
  fault = detail::read_huffman_device_model(stream.data(), stream.size(), job.layout.chunks(0), 0, Codec::id,
                                            zcoll::value_type_of<T>, lengths.data(), model);
  job.models = &model;
  std::vector<T> staging(staged ? codec.config().chunk_values : 0);
  const auto tiles_fault = host_team::run(job.layout, [&](host_team& team, std::uint32_t t) {
    detail::decompress_tile<typename Codec::quantizer_type, typename Codec::predictor_type, zcoll::encode::Huffman>(
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

template <class Codec, class T>
void check_against_host(zcoll::codec_config config) {
  const Codec codec(config);
  int fallbacks = 0;
  for (const auto& x : zcoll_test::huffman_inputs<T>()) {
    INFO(codec.name() << " on " << zcoll_test::type_name<T>() << ", chunk " << config.chunk_values << ", n = " << x.size());
    const auto stream = zcoll::compress_to_vector(codec, std::span<const T>(x));
    const std::vector<T> host = codec.template decompress<T>(std::span<const std::byte>(stream));
    for (const bool staged : {true, false}) {
      detail::decode_fault fault{};
      const auto team = team_decoded<Codec, T>(codec, stream, x.size(), staged, fault);
      INFO("fault " << fault.code << " detail " << fault.detail);
      REQUIRE(team.has_value());
      REQUIRE(same_bits(*team, host));
    }
    const auto layout = zcoll::read_stream_layout(stream, true);
    fallbacks += !layout.parameters.empty() && layout.parameters[0] == std::byte{1};
  }
  CHECK(fallbacks >= 1);  // the bit-plane fallback was decoded too
}

}  // namespace

TEMPLATE_TEST_CASE("Huffman pipelines decode on a host team as on the host", "[pipeline][cuda-tile][huffman]", float, double) {
  zcoll_test::for_each_huffman_config([]<class Codec>(const zcoll::codec_config& config) { check_against_host<Codec, TestType>(config); });
}

TEST_CASE("Damaged Huffman streams are refused on a host team exactly when the host refuses them",
          "[pipeline][cuda-tile][huffman][corruption]") {
  std::mt19937_64 rng(zcoll_test::seed);
  int refused = 0, decoded = 0;
  for (const std::uint32_t chunk : {512u, 4096u}) {
    const zcoll::EmbeddingHuffman codec({.error_bound = zcoll::absolute(1e-3), .chunk_values = chunk, .fill_value = -999.0});
    for (const auto& x : zcoll_test::huffman_inputs<float>()) {
      if (x.size() < 100 || x.size() > 6000) continue;
      const auto stream = zcoll::compress_to_vector(codec, std::span<const float>(x));
      const auto agree = [&](std::span<const std::byte> s, bool staged) {
        std::optional<std::vector<float>> host;
        try {
          host = codec.decompress<float>(s);
          if (host->size() != x.size()) host.reset();
        } catch (const zcoll::format_error&) {
        }
        const std::vector<std::byte> own(s.begin(), s.end());  // a buffer of its own length: ASan sees overruns
        detail::decode_fault fault{};
        const auto team = team_decoded<zcoll::EmbeddingHuffman, float>(codec, own, x.size(), staged, fault);
        INFO("n = " << x.size() << ", chunk " << chunk << ", " << s.size() << " of " << stream.size()
                    << " bytes; device fault " << fault.code << " at chunk " << fault.chunk << ", detail " << fault.detail);
        // The device decodes with the codec's chunk length (its launch is laid out by it): a header that
        // states another is wrong_chunking there, where the host follows the header.
        zcoll::stream_header h;
        if (host && zcoll::parse_stream_header(own.data(), own.size(), h) == zcoll::header_fault::none &&
            h.chunk_values != chunk) {
          REQUIRE(fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::wrong_chunking));
          return;
        }
        REQUIRE(host.has_value() == team.has_value());
        if (host) REQUIRE(same_bits(*host, *team));
        (host ? decoded : refused) += 1;
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
  }
  CHECK(refused > 500);
  CHECK(decoded > 10);
}

TEST_CASE("A stream of another codec is wrong_codec to the Huffman device decoder, not a model fault",
          "[pipeline][cuda-tile][huffman][corruption]") {
  const zcoll::codec_config config{.error_bound = zcoll::absolute(1e-3), .chunk_values = 4096};
  const auto x = zcoll_test::mixed_input<float>(10000, -999.0f);
  const auto fzlight = zcoll::compress_to_vector(zcoll::FZLight(config), std::span<const float>(x));
  detail::decode_fault fault{};
  CHECK_FALSE(team_decoded<zcoll::EmbeddingHuffman, float>(zcoll::EmbeddingHuffman(config), fzlight, x.size(), true, fault));
  CHECK(fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::wrong_codec));
  const auto f64 = zcoll::compress_to_vector(zcoll::EmbeddingHuffman(config), std::span<const double>(std::vector<double>(x.begin(), x.end())));
  CHECK_FALSE(team_decoded<zcoll::EmbeddingHuffman, float>(zcoll::EmbeddingHuffman(config), f64, x.size(), true, fault));
  CHECK(fault.code == static_cast<std::uint32_t>(detail::decode_fault_code::wrong_codec));
}
