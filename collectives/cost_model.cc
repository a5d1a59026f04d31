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
  // Two passes over the rows, pricing each twice (a few multiplications), instead of a list allocated on every
  // operation's choice.
  const auto price = [&](const algorithms::AlgorithmRow* row) {
    if (!row->priced(collective) || row->preferred_from_bytes != SIZE_MAX) return algorithms::kNever;
    return row->seconds(collective, shape, links, count, dtype_size);
  };
  double cheapest = algorithms::kNever;
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) cheapest = std::min(cheapest, price(row));
  if (cheapest == algorithms::kNever) return std::nullopt;
  std::optional<Algorithm> best;
  double best_seconds = algorithms::kNever;
  int best_peers = std::numeric_limits<int>::max();
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
    const double seconds = price(row);
    if (seconds == algorithms::kNever || seconds > cheapest * (1 + kNearTie)) continue;
    const int peers = row->peerCount(shape.ranks);
    if (peers < best_peers || (peers == best_peers && seconds < best_seconds)) {
      best = row->id;
      best_seconds = seconds;
      best_peers = peers;
    }
  }
  return best;
}

Algorithm modelAllReduceAlgorithm(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  return modelAlgorithm(Collective::kAllReduce, shape, links, count, dtype_size).value_or(Algorithm::kRing);
}

}  // namespace megascale
