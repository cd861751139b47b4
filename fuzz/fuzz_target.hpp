#pragma once
// The fuzz binary's command line. libFuzzer ignores flags that start with '--', so one binary serves
// every codec and both targets, each with a corpus of its own:
//
//   zcoll-fuzz --codec=NAME --target=decode|round-trip|add [libFuzzer flags] CORPUS_DIR...
//   zcoll-fuzz --write-seeds=OUT_DIR [FIELD.f32...]       (writes the seed corpora and exits)

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz_codecs.hpp"

namespace zcoll_fuzz {

enum class target { decode, round_trip, add };

/// The value of '--NAME=VALUE' among the arguments, or an empty view.
inline std::string_view flag(int argc, char** argv, std::string_view name) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument.size() > name.size() + 3 && argument.substr(0, 2) == "--" && argument.substr(2, name.size()) == name &&
        argument[name.size() + 2] == '=') {
      return argument.substr(name.size() + 3);
    }
  }
  return {};
}

[[noreturn]] inline void usage(const char* problem, const std::vector<fuzz_codec>& codecs) {
  std::fprintf(stderr,
               "zcoll-fuzz: %s\n"
               "usage: zcoll-fuzz --codec=NAME --target=decode|round-trip|add [libFuzzer flags] CORPUS_DIR...\n"
               "       zcoll-fuzz --write-seeds=OUT_DIR [FIELD.f32...]\ncodecs:",
               problem);
  for (const auto& c : codecs) std::fprintf(stderr, " %.*s", static_cast<int>(c.name.size()), c.name.data());
  std::fprintf(stderr, "\n");
  std::exit(2);
}

inline const fuzz_codec& codec_from_arguments(int argc, char** argv, const std::vector<fuzz_codec>& codecs) {
  const std::string_view name = flag(argc, argv, "codec");
  if (name.empty()) usage("give the codec to fuzz as --codec=NAME", codecs);
  for (const auto& c : codecs) {
    if (c.name == name) return c;
  }
  usage("unknown codec", codecs);
}

inline target target_from_arguments(int argc, char** argv, const std::vector<fuzz_codec>& codecs) {
  const std::string_view name = flag(argc, argv, "target");
  if (name == "decode") return target::decode;
  if (name == "round-trip") return target::round_trip;
  if (name == "add") return target::add;
  usage("give the target as --target=decode, --target=round-trip or --target=add", codecs);
}

}  // namespace zcoll_fuzz
