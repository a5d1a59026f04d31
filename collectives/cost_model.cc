#include "collectives/cost_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "collectives/algorithms/algorithms.h"
#include "collectives/tuning.h"

namespace megascale {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// Halving-doubling's rounds pair every rank with a far partner at once, so across hosts all of its flows cross
// the fabric together and collide under ECMP hashing. The simulator's 12,288-GPU rails (Swift, 128 MiB per
// rail) took 2.2x the bandwidth term; this is the model's only contention term (docs/congestion.md).
constexpr double kFarPartnerCollision = 2.0;

double transfer(const LinkCost& link, double bytes) { return link.latency_s + bytes / link.bytes_per_s; }

}  // namespace

LinkReport LinkReport::of(const LinkCost& link) {
  return LinkReport{static_cast<uint64_t>(link.bytes_per_s), static_cast<uint64_t>(link.latency_s * 1e9)};
}

LinkCost agreedNetwork(const std::vector<LinkReport>& reports) {
  uint64_t rate = UINT64_MAX, latency_ns = 0;
  for (const LinkReport& r : reports) {
    if (r.bytes_per_s > 0) rate = std::min(rate, r.bytes_per_s);
    latency_ns = std::max(latency_ns, r.latency_ns);
  }
  LinkCost link = LinkCosts{}.network;  // no rank reported a rate: the default's
  if (rate != UINT64_MAX) link.bytes_per_s = static_cast<double>(rate);
  if (!reports.empty()) link.latency_s = static_cast<double>(latency_ns) * 1e-9;
  return link;
}

double allReduceSeconds(Algorithm algorithm, const ClusterShape& shape, const LinkCosts& links, size_t count,
                        size_t dtype_size) {
  const int n = shape.ranks;
  const double bytes = static_cast<double>(count * dtype_size);
  if (n <= 1) return 0;
  // A flat algorithm's phase waits for its slowest pair: across hosts some pair always crosses the network.
  const LinkCost& flat = shape.hosts > 1 ? links.network : links.local;
  switch (algorithm) {
    case Algorithm::kRing: return 2.0 * (n - 1) * transfer(flat, bytes / n);
    case Algorithm::kRecursiveHalvingDoubling: {
      const int p = algorithms::largestPowerOfTwoAtMost(n);
      const double rounds = std::log2(p);
      const double fold = n > p ? 2 * transfer(flat, bytes) : 0;  // the extra ranks hand over and take back
      const double collision = shape.hosts > 1 ? kFarPartnerCollision : 1;
      return fold + 2 * rounds * flat.latency_s + collision * 2.0 * (p - 1) / p * bytes / flat.bytes_per_s;
    }
    case Algorithm::kDirect:
      if (count * dtype_size > kDirectMaxBytes || n - 1 > kDirectMaxPeers) return kNever;
      // n-1 copies leave through one link, each posted by the sender in turn.
      return flat.latency_s + (n - 1) * (flat.send_overhead_s + bytes / flat.bytes_per_s);
    case Algorithm::kDoubleBinaryTree: {
      // K + 2D - 1 phases; in each, the busiest rank receives four chunks of half / K (two from its children,
      // one from its parent in each tree) and sends as many.
      const size_t half = (count + 1) / 2;
      const double chunks = static_cast<double>(algorithms::doubleTreeChunks(half));
      const double phases = chunks + 2.0 * algorithms::doubleTreeDepth(n) - 1;
      return phases * transfer(flat, 4 * (bytes / 2) / chunks);
    }
    case Algorithm::kHierarchical: {
      const int h = shape.hosts, l = shape.ranks_per_host;
      if (h <= 1 || l <= 1) return kNever;
      // Reduce to the l owners and spread back inside the host; a ring of h per rail over bytes / l.
      const double inside = 2 * transfer(links.local, bytes * (l - 1) / l);
      return inside + 2.0 * (h - 1) * transfer(links.network, bytes / l / h);
    }
    default: return kNever;
  }
}

int allReducePeers(Algorithm algorithm, int nranks) {
  if (nranks <= 1) return 0;
  switch (algorithm) {
    case Algorithm::kRing: return std::min(nranks - 1, 2);
    case Algorithm::kRecursiveHalvingDoubling: {
      const int p = algorithms::largestPowerOfTwoAtMost(nranks);
      return static_cast<int>(std::log2(p)) + (nranks > p ? 1 : 0);
    }
    case Algorithm::kDirect: return nranks - 1;
    case Algorithm::kDoubleBinaryTree: return std::min(nranks - 1, 6);  // a parent and two children in each tree
    default: return nranks - 1;
  }
}

Algorithm modelAllReduceAlgorithm(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  constexpr Algorithm kCandidates[] = {Algorithm::kRing, Algorithm::kRecursiveHalvingDoubling, Algorithm::kDirect,
                                       Algorithm::kDoubleBinaryTree};
  constexpr size_t kCount = std::size(kCandidates);
  double seconds_of[kCount];
  double cheapest = kNever;
  for (size_t i = 0; i < kCount; ++i) {
    seconds_of[i] = allReduceSeconds(kCandidates[i], shape, links, count, dtype_size);
    cheapest = std::min(cheapest, seconds_of[i]);
  }
  Algorithm best = Algorithm::kRing;
  double best_seconds = kNever;
  int best_peers = std::numeric_limits<int>::max();
  for (size_t i = 0; i < kCount; ++i) {
    const Algorithm a = kCandidates[i];
    const double seconds = seconds_of[i];
    if (seconds > cheapest * (1 + kNearTie)) continue;
    const int peers = allReducePeers(a, shape.ranks);
    if (peers < best_peers || (peers == best_peers && seconds < best_seconds)) {
      best = a;
      best_seconds = seconds;
      best_peers = peers;
    }
  }
  return best;
}

}  // namespace megascale
