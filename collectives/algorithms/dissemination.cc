// Dissemination barrier: in round k each rank signals rank+2^k and waits for rank-2^k. After ceil(log2 n)
// rounds every rank has transitively heard from every other, so none leaves before all have arrived.
#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

Schedule disseminationBarrier(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  Schedule s;
  for (int dist = 1; dist < n; dist *= 2) {
    s.phases.push_back(Phase{{send((r + dist) % n, in(0, 0)), recv((r - dist + n) % n, out(0, 0))}, {}});
  }
  return s;
}

}  // namespace

const AlgorithmRow& disseminationRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kDissemination,
      .name = "dissemination",
      .builders = byCollective<Builder>({{Collective::kBarrier, disseminationBarrier}}),
      .default_for = collectiveBit(Collective::kBarrier),
      .peers = doublingDistancePeers};
  return row;
}

}  // namespace megascale::algorithms
