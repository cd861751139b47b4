#pragma once
/// zcoll: error-bounded lossy compression for collective communication. Umbrella header: the host codecs.
/// (transport/mpi.hpp and the .cuh drivers are included on their own.)

#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/codec_config.hpp"
#include "zcoll/codec/compress.hpp"
#include "zcoll/codec/concepts.hpp"
#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/hybrid.hpp"
#include "zcoll/codec/pipeline.hpp"
#include "zcoll/codec/presets.hpp"
#include "zcoll/codec/report.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/codec/topk.hpp"
#include "zcoll/core/bit_io.hpp"
#include "zcoll/core/byte_io.hpp"
#include "zcoll/core/error.hpp"
#include "zcoll/core/error_bound.hpp"
#include "zcoll/core/error_stats.hpp"
#include "zcoll/core/exec.hpp"
#include "zcoll/core/fill_value.hpp"
#include "zcoll/core/stream_header.hpp"
#include "zcoll/core/value_range.hpp"
