// An algorithm is one row: its id and name, the schedule builder of each collective it implements, its price
// in the alpha-beta model for the collectives the cost model compares, and the limits of where the chooser may
// take it. Each algorithm's file defines its row (`const AlgorithmRow& fooRow()`), and registry.cc lists it
// once; everything else (names for MEGASCALE_ALGO and error texts, schedule building, the chooser's candidates,
// the cost model's prices and peer counts) reads the rows.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>

#include "collectives/link_costs.h"
#include "collectives/schedule.h"

namespace megascale::algorithms {

using Builder = Schedule (*)(const ScheduleSpec&);
/// Predicted seconds of one operation: `count` elements per rank as in ScheduleSpec, of `dtype_size` bytes each;
/// infinity where the algorithm does not fit the shape.
using CostFunction = double (*)(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size);

inline constexpr double kNever = std::numeric_limits<double>::infinity();

template <typename T>
using PerCollective = std::array<T, kCollectiveCount>;

/// {collective, value} pairs as an array indexed by Collective (the rest value-initialized: nullptr).
template <typename T>
PerCollective<T> byCollective(std::initializer_list<std::pair<Collective, T>> entries) {
  PerCollective<T> table{};
  for (const auto& [c, value] : entries) table[static_cast<size_t>(c)] = value;
  return table;
}

constexpr uint32_t collectiveBit(Collective c) { return uint32_t{1} << static_cast<unsigned>(c); }

struct AlgorithmRow {
  Algorithm id;            // stable: flight records and the tuning table hold it
  const char* name;        // MEGASCALE_ALGO, megascale-sim --algo, flight records
  PerCollective<Builder> builders{};     // nullptr: not implemented
  PerCollective<CostFunction> costs{};   // nullptr: not priced (left to the tuning table)
  /// The collectives it serves when neither the tuning table nor a price decides (a collectiveBit mask).
  uint32_t default_for = 0;
  /// Taken ahead of the tuning table and the cost model for messages of at least this many bytes per rank
  /// where several hosts hold several ranks each (the hierarchy); SIZE_MAX: never.
  size_t preferred_from_bytes = SIZE_MAX;
  /// The collectives (a collectiveBit mask) it serves at every size on a communicator whose ranks share one host
  /// with a node engine (ScheduleSpec::host_steps): its schedule there is the engine's collective.
  uint32_t whole_host_for = 0;
  /// The largest message (bytes per rank) the chooser gives it, whatever a table says.
  size_t max_bytes = SIZE_MAX;
  /// Connections one rank of n opens; nullptr: all n-1 others.
  int (*peers)(int nranks) = nullptr;

  bool implements(Collective c) const { return builders[static_cast<size_t>(c)] != nullptr; }
  Builder builder(Collective c) const { return builders[static_cast<size_t>(c)]; }
  bool priced(Collective c) const { return costs[static_cast<size_t>(c)] != nullptr; }
  double seconds(Collective c, const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) const {
    const CostFunction cost = costs[static_cast<size_t>(c)];
    if (cost == nullptr || count * dtype_size > max_bytes) return kNever;
    return shape.ranks <= 1 ? 0 : cost(shape, links, count, dtype_size);
  }
  int peerCount(int nranks) const { return nranks <= 1 ? 0 : peers != nullptr ? peers(nranks) : nranks - 1; }
  bool servesByDefault(Collective c) const { return (default_for & collectiveBit(c)) != 0; }
  bool servesWholeHost(Collective c) const { return (whole_host_for & collectiveBit(c)) != 0; }
};

/// The largest power of two <= n (n >= 1): halving-doubling's participants, the double tree's shape.
int largestPowerOfTwoAtMost(int n);
/// ceil(log2 n) for n >= 1: the rounds of the dissemination and Bruck patterns.
int log2Ceiling(int n);
/// The peers of a pattern whose round k pairs rank r with r + 2^k and r - 2^k (dissemination, Bruck): two a round.
inline int doublingDistancePeers(int nranks) { return std::min(nranks - 1, 2 * log2Ceiling(nranks)); }

}  // namespace megascale::algorithms
