// Writes every preset codec's stream of one raw f32 file, at one relative bound, into a folder:
// bench/compare-versions builds it against two versions of the headers and compares the streams byte for
// byte after their headers (what a change of the stream header must leave alone).
//
//   stream_bytes FILE D0,D1,... REL OUT_DIR
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "zcoll/zcoll.hpp"

namespace {

std::vector<float> read_floats(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

template <class Codec>
void write_stream(const std::string& name, const zcoll::codec_config& config, std::span<const float> values,
                  const std::string& dir) {
  const Codec codec{config};
  std::vector<std::byte> stream(codec.template max_compressed_size<float>(values.size()));
  try {
    const auto written = codec.compress(zcoll::exec::Host{}, values, std::span<std::byte>(stream));
    std::ofstream(dir + "/" + name + ".zc", std::ios::binary)
        .write(reinterpret_cast<const char*>(written.data()), static_cast<std::streamsize>(written.size()));
  } catch (const zcoll::argument_error& e) {  // a codec that cannot hold this field (Int4 and a -1e10 fill)
    std::ofstream(dir + "/" + name + ".refused") << e.what() << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: stream_bytes FILE D0,D1,... REL OUT_DIR\n");
    return 2;
  }
  const auto values = read_floats(argv[1]);
  zcoll::codec_config config{.error_bound = zcoll::relative(std::atof(argv[3]))};
  std::stringstream dims(argv[2]);
  for (std::string d; std::getline(dims, d, ',');) config.shape.push_back(std::stoul(d));
  auto rows = config;
  rows.chunk_values = static_cast<std::uint32_t>(config.shape.back() * 32);  // whole vectors (vector-LZ)
  const std::string dir = argv[4];
  write_stream<zcoll::FZLight>("fzlight", config, values, dir);
  write_stream<zcoll::Identity>("identity", config, values, dir);
  write_stream<zcoll::HighRatio<1>>("highratio-1d", config, values, dir);
  write_stream<zcoll::HighRatio<2>>("highratio-2d", config, values, dir);
  write_stream<zcoll::HighRatio<3>>("highratio-3d", config, values, dir);
  write_stream<zcoll::EmbeddingHuffman>("embedding-huffman", config, values, dir);
  write_stream<zcoll::EmbeddingLZ>("embedding-lz", rows, values, dir);
  write_stream<zcoll::Int8>("int8", config, values, dir);
  write_stream<zcoll::Int4>("int4", config, values, dir);
  write_stream<zcoll::Int2>("int2", config, values, dir);
  write_stream<zcoll::TopK>("topk", config, values, dir);
  write_stream<zcoll::FP16>("fp16", config, values, dir);
  write_stream<zcoll::BF16>("bf16", config, values, dir);
  write_stream<zcoll::FP8E4M3>("fp8-e4m3", config, values, dir);
  write_stream<zcoll::FP8E5M2>("fp8-e5m2", config, values, dir);
  return 0;
}
