// The all-reduce algorithm by the cluster's shape (hosts, ranks per host) and message size, from a table that
// bench/tune.sh regenerates by timing every algorithm on a cluster (collectives/tuning_table.inc). The table
// answers only for the shapes it was measured on; the chooser (algorithm_choice.h) asks the cost model for any
// other. MEGASCALE_ALGO overrides both.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "collectives/schedule.h"

namespace megascale {

struct TuningRow {
  int hosts;
  int min_ranks_per_host;
  int max_ranks_per_host;
  size_t max_bytes;  // the row applies to messages up to this size
  Algorithm algorithm;
};

std::span<const TuningRow> allReduceTuningTable();
/// Where the table was measured ("AMD EPYC, 2 cores: 1 host x 2-8 ranks, shared memory").
const char* tuningTableMachine();

/// The first row covering (hosts, ranks_per_host, bytes); nullopt when the table has no row for the shape.
std::optional<Algorithm> tunedAllReduceAlgorithm(int hosts, int ranks_per_host, size_t bytes);

}  // namespace megascale
