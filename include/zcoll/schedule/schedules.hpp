#pragma once
/// Every schedule: Ring, RecursiveDoubling, BinomialTree, ScatterAllgather, Chain, Pairwise and
/// Hierarchical, with the contract.

#include "zcoll/schedule/binomial_tree.hpp"
#include "zcoll/schedule/chain.hpp"
#include "zcoll/schedule/concepts.hpp"
#include "zcoll/schedule/hierarchical.hpp"
#include "zcoll/schedule/pairwise.hpp"
#include "zcoll/schedule/recursive_doubling.hpp"
#include "zcoll/schedule/ring.hpp"
#include "zcoll/schedule/scatter_allgather.hpp"
