// The fuzz targets of the registered codecs at odd places (fuzz/instances.hpp).
#include "instances.hpp"

std::vector<zcoll_fuzz::fuzz_codec> zcoll_fuzz::second_half_codecs() { return registered_fuzz_codecs<2, 1>(); }
