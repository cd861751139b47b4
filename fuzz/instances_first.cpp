// The fuzz targets of the first half of ZCOLL_FUZZ_CODECS (fuzz/instances.hpp).
#include "instances.hpp"

ZCOLL_FUZZ_CODECS_FIRST_HALF(ZCOLL_FUZZ_DEFINE_INSTANCES)
