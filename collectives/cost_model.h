// What a collective costs on a cluster of a given shape, in the alpha-beta model (link_costs.h): each algorithm's
// row prices its own schedules, phase by phase, and the model compares the prices. Why: the tuning table holds
// measurements of the shapes it was made on; on any other shape (thousands of ranks, hosts with another number
// of ranks, other links) the choice follows from the link rates instead of from a 2-core VM's table.
#pragma once

#include <cstddef>
#include <optional>

#include "collectives/link_costs.h"
#include "collectives/schedule.h"

namespace megascale {

/// Predicted seconds of `collective` by `algorithm` on `count` elements of `dtype_size` bytes; infinity for an
/// algorithm that does not price it or does not fit (hierarchical on one host or one rank per host, direct above
/// 1 MiB or 15 peers).
double collectiveSeconds(Collective collective, Algorithm algorithm, const ClusterShape& shape,
                         const LinkCosts& links, size_t count, size_t dtype_size);
inline double allReduceSeconds(Algorithm algorithm, const ClusterShape& shape, const LinkCosts& links, size_t count,
                               size_t dtype_size) {
  return collectiveSeconds(Collective::kAllReduce, algorithm, shape, links, count, dtype_size);
}

/// The peers one rank of `nranks` exchanges with by `algorithm`: its connections.
int algorithmPeers(Algorithm algorithm, int nranks);

/// The cheapest algorithm whose row prices `collective` (the rows a size rule takes, the hierarchy, are not
/// weighed: their rule decides); among those within kNearTie of the cheapest, the one with the fewest peers:
/// connections cost setup time, memory and NIC queue pairs that one operation's time does not show, and at
/// thousands of ranks an 8-byte all-reduce costs the tree and halving-doubling the same 2 log2(n) latencies.
/// nullopt where no row prices the collective or none fits.
constexpr double kNearTie = 0.05;
std::optional<Algorithm> modelAlgorithm(Collective collective, const ClusterShape& shape, const LinkCosts& links,
                                        size_t count, size_t dtype_size);
/// The model's all-reduce (ring where nothing fits).
Algorithm modelAllReduceAlgorithm(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size);

}  // namespace megascale
