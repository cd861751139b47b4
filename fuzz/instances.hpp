// The per-codec functions of the fuzz binary, instantiated explicitly: `extern` in fuzz_main.cpp, defined
// in instances_first.cpp and instances_second.cpp (one half of ZCOLL_FUZZ_CODECS each), so the binary
// compiles on two cores instead of in one 75-second translation unit.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

#include "fuzz_codecs.hpp"
#include "seed_corpus.hpp"

// ZCOLL_FUZZ_INSTANCES(extern, type, name) declares, ZCOLL_FUZZ_INSTANCES(, type, name) defines.
#define ZCOLL_FUZZ_INSTANCES(prefix, type, name)                                                              \
  prefix template void zcoll_fuzz::decode<type>(std::span<const std::byte>);                                  \
  prefix template zcoll_fuzz::violation zcoll_fuzz::round_trip<type, float>(std::span<const float>, double);   \
  prefix template zcoll_fuzz::violation zcoll_fuzz::round_trip<type, double>(std::span<const double>, double); \
  prefix template int zcoll_fuzz::seeds::seeds_for<type>(const std::filesystem::path&,                        \
                                                         const std::vector<std::filesystem::path>&);
#define ZCOLL_FUZZ_DECLARE_INSTANCES(type, name) ZCOLL_FUZZ_INSTANCES(extern, type, name)
#define ZCOLL_FUZZ_DEFINE_INSTANCES(type, name) ZCOLL_FUZZ_INSTANCES(, type, name)
