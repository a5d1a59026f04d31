// Pairwise all-to-all: in round k every rank sends to rank+k and receives from rank-k, so each round is a
// perfect matching of senders to receivers and no link carries two flows. n-1 rounds.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

Schedule pairwiseAllToAll(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  const size_t c = spec.count, total = c * static_cast<size_t>(n);
  Schedule s;
  // In place, the blocks still to send would be overwritten by blocks arriving: send from a copy.
  uint16_t source = kInput;
  if (spec.in_place && n > 1) {
    s.scratch_count = total;
    s.phases.push_back(Phase{{}, {copy(in(0, total), scratch(0, total))}});
    source = kScratch;
  }
  s.phases.push_back(copyPhase(Slice{source, c * r, c}, out(c * r, c)));
  for (int k = 1; k < n; ++k) {
    int to = (r + k) % n, from = (r - k + n) % n;
    s.phases.push_back(Phase{{send(to, Slice{source, c * to, c}), recv(from, out(c * from, c))}, {}});
  }
  return s;
}

// n-1 rounds, one block each way per round.
double pairwiseAllToAllSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  const LinkCost& link = shape.flatLink(links);
  return (shape.ranks - 1) * (link.send_overhead_s + link.transfer(static_cast<double>(count * dtype_size)));
}

}  // namespace

const AlgorithmRow& pairwiseRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kPairwise,
      .name = "pairwise",
      .builders = byCollective<Builder>({{Collective::kAllToAll, pairwiseAllToAll}}),
      .costs = byCollective<CostFunction>({{Collective::kAllToAll, pairwiseAllToAllSeconds}}),
      .default_for = collectiveBit(Collective::kAllToAll)};
  return row;
}

}  // namespace megascale::algorithms
