// Direct all-reduce: every rank sends its whole vector to every other rank in one round and reduces the
// n vectors locally in rank order (so all ranks compute bit-identical results). n-1 times the bytes of a
// ring, but one network latency instead of 2(n-1): the choice for messages of a few KiB.
#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

Schedule directAllReduce(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  const size_t c = spec.count;
  if (n == 1) return singleRankReduction(c);
  Schedule s;
  s.result = out(0, c);
  // Scratch holds every rank's vector at its rank's position; this rank's own slot is never written.
  s.scratch_count = c * static_cast<size_t>(n);
  Phase exchange;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    exchange.comm.push_back(send(peer, in(0, c)));
    exchange.comm.push_back(recv(peer, scratch(c * peer, c)));
  }
  auto vectorOf = [&](int rank) { return rank == r ? in(0, c) : scratch(c * rank, c); };
  // v0 op v1 op ... op v(n-1), left to right, accumulated in the scratch slot of rank 0 or 1 (whichever was
  // already consumed); the output is written only by the last reduction, so an in-place input stays intact
  // until then.
  Slice acc = scratch(c * (r == 0 ? 1 : 0), c);
  for (int rank = 1; rank < n; ++rank) {
    Slice left = rank == 1 ? vectorOf(0) : acc;
    exchange.local.push_back(reduce(left, vectorOf(rank), rank == n - 1 ? out(0, c) : acc));
  }
  s.phases.push_back(std::move(exchange));
  return s;
}

}  // namespace megascale::algorithms
