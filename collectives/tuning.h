// The all-reduce algorithm by rank count and message size, from a table that bench/tune.sh regenerates by
// timing every algorithm on this machine class (collectives/tuning_table.inc). MEGASCALE_ALGO overrides it.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/schedule.h"

namespace megascale {

struct TuningRow {
  int min_ranks;
  int max_ranks;
  size_t max_bytes;  // the row applies to messages up to this size
  Algorithm algorithm;
};

const std::vector<TuningRow>& allReduceTuningTable();

constexpr size_t kDirectMaxBytes = 1 << 20;

/// Across hosts (ranks of some host sharing it), all-reduce, all-gather and reduce-scatter of at least this
/// many bytes per rank go hierarchical: every rank drives its own rail and traffic inside a host stays in
/// memory. Below it, the hierarchy's extra intra-host stages cost more latency than they save.
constexpr size_t kHierarchicalMinBytes = 256 << 10;

/// The first row covering (nranks, bytes); ring when none does (large messages).
Algorithm tunedAllReduceAlgorithm(int nranks, size_t bytes);

}  // namespace megascale
