// The fuzz targets of the registered codecs at even places (fuzz/instances.hpp).
#include "instances.hpp"

std::vector<zcoll_fuzz::fuzz_codec> zcoll_fuzz::first_half_codecs() { return registered_fuzz_codecs<2, 0>(); }
