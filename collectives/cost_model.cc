#include "collectives/cost_model.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "collectives/algorithms/registry.h"

namespace megascale {

double collectiveSeconds(Collective collective, Algorithm algorithm, const ClusterShape& shape,
                         const LinkCosts& links, size_t count, size_t dtype_size) {
  const algorithms::AlgorithmRow* row = algorithms::rowOf(algorithm);
  return row != nullptr ? row->seconds(collective, shape, links, count, dtype_size) : algorithms::kNever;
}

int algorithmPeers(Algorithm algorithm, int nranks) {
  const algorithms::AlgorithmRow* row = algorithms::rowOf(algorithm);
  return row != nullptr ? row->peerCount(nranks) : nranks - 1;
}

std::optional<Algorithm> modelAlgorithm(Collective collective, const ClusterShape& shape, const LinkCosts& links,
                                        size_t count, size_t dtype_size) {
  struct Candidate {
    const algorithms::AlgorithmRow* row;
    double seconds;
  };
  std::vector<Candidate> candidates;
  double cheapest = algorithms::kNever;
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
    if (!row->priced(collective) || row->preferred_from_bytes != SIZE_MAX) continue;
    candidates.push_back(Candidate{row, row->seconds(collective, shape, links, count, dtype_size)});
    cheapest = std::min(cheapest, candidates.back().seconds);
  }
  if (cheapest == algorithms::kNever) return std::nullopt;
  std::optional<Algorithm> best;
  double best_seconds = algorithms::kNever;
  int best_peers = std::numeric_limits<int>::max();
  for (const Candidate& c : candidates) {
    if (c.seconds > cheapest * (1 + kNearTie)) continue;
    const int peers = c.row->peerCount(shape.ranks);
    if (peers < best_peers || (peers == best_peers && c.seconds < best_seconds)) {
      best = c.row->id;
      best_seconds = c.seconds;
      best_peers = peers;
    }
  }
  return best;
}

Algorithm modelAllReduceAlgorithm(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  return modelAlgorithm(Collective::kAllReduce, shape, links, count, dtype_size).value_or(Algorithm::kRing);
}

}  // namespace megascale
