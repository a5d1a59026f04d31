#include "collectives/tuning.h"

#include <iterator>

namespace megascale {

namespace {
#include "collectives/tuning_table.inc"  // kTunedOn, kTuningRows
}  // namespace

std::span<const TuningRow> allReduceTuningTable() { return {std::begin(kTuningRows), std::end(kTuningRows)}; }

const char* tuningTableMachine() { return kTunedOn; }

std::optional<Algorithm> tunedAllReduceAlgorithm(int hosts, int ranks_per_host, size_t bytes) {
  for (const TuningRow& row : allReduceTuningTable()) {
    if (hosts != row.hosts || ranks_per_host < row.min_ranks_per_host || ranks_per_host > row.max_ranks_per_host ||
        bytes > row.max_bytes) {
      continue;
    }
    return row.algorithm;
  }
  return std::nullopt;
}

}  // namespace megascale
