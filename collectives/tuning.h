// The all-reduce algorithm by the cluster's shape (hosts, ranks per host) and message size, from a table that
// bench/tune.sh regenerates by timing every algorithm on a cluster (collectives/tuning_table.inc). The table
// answers only for the shapes it was measured on; chooseAlgorithm asks the cost model (cost_model.h) for any
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

constexpr size_t kDirectMaxBytes = 1 << 20;
/// Direct connects every rank to all n-1 others: beyond this many peers the connections (their setup at the first
/// operation, descriptors, buffers, NIC queue pairs) cost more than the latencies it saves; the model leaves it out.
constexpr int kDirectMaxPeers = 15;

/// Across hosts (ranks of some host sharing it), all-reduce, all-gather and reduce-scatter of at least this
/// many bytes per rank go hierarchical: every rank drives its own rail and traffic inside a host stays in
/// memory. Below it, the hierarchy's extra intra-host stages cost more latency than they save.
constexpr size_t kHierarchicalMinBytes = 256 << 10;

/// The first row covering (hosts, ranks_per_host, bytes); nullopt when the table has no row for the shape.
std::optional<Algorithm> tunedAllReduceAlgorithm(int hosts, int ranks_per_host, size_t bytes);

}  // namespace megascale
