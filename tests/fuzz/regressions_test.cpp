// Every input the fuzz targets (fuzz/) ever failed on, replayed on every build: fuzz/regressions/<codec>/
// decode/* through the decoder (values or format_error, nothing else) and fuzz/regressions/<codec>/
// round-trip/* through compress and decompress (every element within the stated bound).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "seed_corpus.hpp"

namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const zcoll_fuzz::fuzz_codec* codec_named(const std::string& name) {
  static const std::vector<zcoll_fuzz::fuzz_codec> codecs = zcoll_fuzz::registered_fuzz_codecs();
  for (const auto& c : codecs) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Fuzz regressions: every input a fuzz target failed on passes now", "[fuzz]") {
  const fs::path root = ZCOLL_FUZZ_REGRESSIONS_DIR;
  REQUIRE(fs::is_directory(root));
  int replayed = 0;
  for (const auto& codec_dir : fs::directory_iterator(root)) {
    const std::string name = codec_dir.path().filename().string();
    INFO("fuzz/regressions/" << name);
    const auto* codec = codec_named(name);
    REQUIRE(codec != nullptr);  // a folder for a codec the targets no longer know
    for (const auto& target_dir : fs::directory_iterator(codec_dir)) {
      const std::string target = target_dir.path().filename().string();
      REQUIRE((target == "decode" || target == "round-trip" || (target == "add" && codec->add != nullptr)));
      for (const auto& file : fs::directory_iterator(target_dir)) {
        INFO(target << "/" << file.path().filename().string());
        const auto bytes = read_bytes(file.path());
        if (target == "add") {
          zcoll_fuzz::add_input(*codec, std::as_bytes(std::span(bytes)));
        } else if (target == "decode") {
          try {
            codec->decode(std::as_bytes(std::span(bytes)));
          } catch (const zcoll::format_error&) {
            // the expected answer to a damaged stream
          }
        } else {
          const auto found = zcoll_fuzz::round_trip_input(*codec, bytes);
          INFO(zcoll_fuzz::describe(found, codec->name));
          REQUIRE_FALSE(found);
        }
        ++replayed;
      }
    }
  }
  CHECK(replayed > 0);
}
