#include "collectives/tuning.h"

namespace megascale {

const std::vector<TuningRow>& allReduceTuningTable() {
  static const std::vector<TuningRow> table = {
#include "collectives/tuning_table.inc"
  };
  return table;
}

Algorithm tunedAllReduceAlgorithm(int nranks, size_t bytes) {
  for (const TuningRow& row : allReduceTuningTable()) {
    if (nranks < row.min_ranks || nranks > row.max_ranks || bytes > row.max_bytes) continue;
    // Direct keeps all n vectors in scratch; whatever a table says, it is never worth that beyond 1 MiB.
    if (row.algorithm == Algorithm::kDirect && bytes > kDirectMaxBytes) return Algorithm::kRecursiveHalvingDoubling;
    return row.algorithm;
  }
  return Algorithm::kRing;
}

}  // namespace megascale
