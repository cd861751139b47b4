// The fuzz targets of the second half of ZCOLL_FUZZ_CODECS (fuzz/instances.hpp).
#include "instances.hpp"

ZCOLL_FUZZ_CODECS_SECOND_HALF(ZCOLL_FUZZ_DEFINE_INSTANCES)
