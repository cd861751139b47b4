// The fuzz binary's codec list in two halves, one translation unit each (instances_first.cpp: the codecs
// at even places of the registry, instances_second.cpp: the odd ones), so that the binary compiles on two
// cores instead of in one long translation unit.
#pragma once

#include <vector>

#include "seed_corpus.hpp"

namespace zcoll_fuzz {

std::vector<fuzz_codec> first_half_codecs();
std::vector<fuzz_codec> second_half_codecs();

}  // namespace zcoll_fuzz
