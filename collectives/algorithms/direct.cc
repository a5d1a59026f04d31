// Direct all-reduce: every rank sends its whole vector to every other rank in one round and reduces the
// n vectors locally in rank order (so all ranks compute bit-identical results). n-1 times the bytes of a
// ring, but one network latency instead of 2(n-1): the choice for messages of a few KiB.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

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

// Direct keeps all n vectors in scratch and connects every rank to all n-1 others: beyond 1 MiB the memory, and
// beyond 15 peers the connections (their setup at the first operation, descriptors, buffers, NIC queue pairs),
// cost more than the latencies it saves.
constexpr int kMaxPeers = 15;

double directAllReduceSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  const int n = shape.ranks;
  if (n - 1 > kMaxPeers) return kNever;
  // n-1 copies leave through one link, each posted by the sender in turn.
  const LinkCost& link = shape.flatLink(links);
  return link.latency_s + (n - 1) * (link.send_overhead_s + static_cast<double>(count * dtype_size) / link.bytes_per_s);
}

}  // namespace

const AlgorithmRow& directRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kDirect,
      .name = "direct",
      .builders = byCollective<Builder>({{Collective::kAllReduce, directAllReduce}}),
      .costs = byCollective<CostFunction>({{Collective::kAllReduce, directAllReduceSeconds}}),
      .max_bytes = size_t{1} << 20};
  return row;
}

}  // namespace megascale::algorithms
