#pragma once
// The communication configurations of the DLRM study, by name: which codec and schedule each of the
// three collectives uses. Each is compiled in; the study chooses among them at run time.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "communication.hpp"
#include "zcoll/codec/cast.hpp"
#include "zcoll/codec/error_feedback.hpp"
#include "zcoll/codec/presets.hpp"
#include "zcoll/codec/rowwise.hpp"
#include "zcoll/codec/topk.hpp"
#include "zcoll/schedule/recursive_doubling.hpp"
#include "zcoll/schedule/ring.hpp"

namespace dlrm {

/// DCT-DP's sparsifier with error feedback, its keep fraction and threshold life span its own settings.
inline zcoll::ErrorFeedback<zcoll::TopK> dct_topk(double keep_fraction, std::uint32_t life_span) {
  return zcoll::ErrorFeedback<zcoll::TopK>{zcoll::TopK{{}, {.keep_fraction = keep_fraction, .threshold_life_span = life_span}}};
}

/// What the configurations are built from.
struct configuration_context {
  std::size_t dim = 16;
  std::size_t tables = 26;
  zcoll::adapt::adaptive_config fixed, tablewise, tablewise_decay;  ///< the EmbeddingHybrid bounds
};

struct communication {
  std::unique_ptr<embedding_exchange> exchange;
  std::unique_ptr<gradient_allreduce> allreduce;
};

struct configuration {
  std::string name;
  std::string description;
  std::function<communication(zcoll::transport::AnyTransport&, const configuration_context&)> make;
};

template <zcoll::codec Forward, zcoll::codec Backward>
std::unique_ptr<embedding_exchange> pairwise(zcoll::transport::AnyTransport& t, const configuration_context& c) {
  return std::make_unique<pairwise_exchange<Forward, Backward>>(t, c.dim);
}

template <zcoll::schedule::schedule S, zcoll::codec C>
std::unique_ptr<gradient_allreduce> allreduce(zcoll::transport::AnyTransport& t, std::size_t row_length = 0) {
  zcoll::codec_config settings;
  if (row_length > 0) settings.shape = {row_length};  // row-wise codecs quantize rows; the others see a sequence
  return std::make_unique<compressed_allreduce<S, C>>(t, C{settings});
}

/// The allreduce over a codec value.
template <zcoll::schedule::schedule S, zcoll::codec C>
std::unique_ptr<gradient_allreduce> allreduce_of(zcoll::transport::AnyTransport& t, C codec) {
  return std::make_unique<compressed_allreduce<S, C>>(t, std::move(codec));
}

inline std::unique_ptr<embedding_exchange> hybrid(zcoll::transport::AnyTransport& t, const configuration_context& c,
                                                  const zcoll::adapt::adaptive_config& bounds) {
  return std::make_unique<tablewise_exchange<zcoll::EmbeddingHybrid>>(t, c.dim, bounds, c.tables);
}

/// Row length of the row-wise allreduces: Yang quantizes buckets of the flat gradient.
constexpr std::size_t allreduce_rows = 64;

/// Exact all-to-alls; only the dense gradients compressed.
template <zcoll::schedule::schedule S, zcoll::codec C>
communication dense_only(zcoll::transport::AnyTransport& t, const configuration_context& c, std::size_t row_length = 0) {
  return {pairwise<zcoll::Identity, zcoll::Identity>(t, c), allreduce<S, C>(t, row_length)};
}

inline std::vector<configuration> configurations() {
  using namespace zcoll;
  using ctx = configuration_context;
  using T = transport::AnyTransport;
  return {
      {"fp32", "no compression",
       [](T& t, const ctx& c) { return dense_only<Ring, Identity>(t, c); }},
      {"fp16", "FP16 all-to-alls and ring allreduce",
       [](T& t, const ctx& c) { return communication{pairwise<FP16, FP16>(t, c), allreduce<Ring, FP16>(t)}; }},
      {"hybrid-fixed", "EmbeddingHybrid forward all-to-all, one global bound",
       [](T& t, const ctx& c) { return communication{hybrid(t, c, c.fixed), allreduce<Ring, Identity>(t)}; }},
      {"hybrid-tablewise", "EmbeddingHybrid forward, table-wise bounds",
       [](T& t, const ctx& c) { return communication{hybrid(t, c, c.tablewise), allreduce<Ring, Identity>(t)}; }},
      {"hybrid-tablewise-decay", "EmbeddingHybrid forward, table-wise bounds, step decay",
       [](T& t, const ctx& c) { return communication{hybrid(t, c, c.tablewise_decay), allreduce<Ring, Identity>(t)}; }},
      {"int4-int2", "row-wise Int4 forward, Int2 backward all-to-all (Yang)",
       [](T& t, const ctx& c) { return communication{pairwise<Int4, Int2>(t, c), allreduce<Ring, Identity>(t)}; }},
      {"int4-ring", "Int4 ring allreduce, no error feedback",
       [](T& t, const ctx& c) { return dense_only<Ring, Int4>(t, c, allreduce_rows); }},
      {"int4-ring-ef", "Int4 ring allreduce with error feedback",
       [](T& t, const ctx& c) { return dense_only<Ring, ErrorFeedback<Int4>>(t, c, allreduce_rows); }},
      {"int4-rd", "Int4 recursive-doubling allreduce, no error feedback",
       [](T& t, const ctx& c) { return dense_only<RecursiveDoubling, Int4>(t, c, allreduce_rows); }},
      {"int4-rd-ef", "Int4 recursive-doubling allreduce with error feedback",
       [](T& t, const ctx& c) { return dense_only<RecursiveDoubling, ErrorFeedback<Int4>>(t, c, allreduce_rows); }},
      {"dct-90-l1", "DCT top-K 90 % sparsity, EF, threshold every step",
       [](T& t, const ctx& c) {
         return communication{pairwise<Identity, Identity>(t, c), allreduce_of<Ring>(t, dct_topk(0.1, 1))};
       }},
      {"dct-99-l1", "DCT top-K 99 % sparsity, EF, threshold every step",
       [](T& t, const ctx& c) {
         return communication{pairwise<Identity, Identity>(t, c), allreduce_of<Ring>(t, dct_topk(0.01, 1))};
       }},
      {"dct-99-l100", "DCT top-K 99 % sparsity, EF, threshold life-span 100",
       [](T& t, const ctx& c) {
         return communication{pairwise<Identity, Identity>(t, c), allreduce_of<Ring>(t, dct_topk(0.01, 100))};
       }},
      {"dct-99-l1000", "DCT top-K 99 % sparsity, EF, threshold life-span 1000",
       [](T& t, const ctx& c) {
         return communication{pairwise<Identity, Identity>(t, c), allreduce_of<Ring>(t, dct_topk(0.01, 1000))};
       }},
  };
}

}  // namespace dlrm
