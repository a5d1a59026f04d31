// The one place an operation's algorithm is decided, once per operation, when it starts: an explicit request
// (MEGASCALE_ALGO) where the algorithm implements the collective; otherwise the row that serves a one-host
// communicator through its node engine, a row whose size rule holds (the hierarchy across hosts), the tuning table where it measured this shape, the cost model over the rows' prices,
// and last the row that serves the collective by default.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "collectives/schedule.h"

namespace megascale {

/// MEGASCALE_ALGO: the algorithm asked for per collective (kAuto: choose).
struct AlgorithmRequest {
  std::array<Algorithm, kCollectiveCount> by_collective{};
  std::string text = "auto";  // as given, for descriptions

  Algorithm of(Collective c) const { return by_collective[static_cast<size_t>(c)]; }
};
/// Entries separated by ',' or ';': NAME asks for the algorithm in every collective it implements ("ring":
/// all-reduce, all-gather, reduce-scatter), COLLECTIVE:NAME in that one ("alltoall:bruck"; NCCL's spellings such
/// as "allreduce" too); later entries win; "" and "auto" ask for nothing. Throws Error(kInvalidArgument) naming
/// the entry and what would be valid.
AlgorithmRequest parseAlgorithmRequest(const std::string& text);

/// The algorithm for `spec` (spec.algorithm itself unless kAuto). spec.hosts, when set, gives the cluster's
/// shape; spec.links the link rates (LinkCosts' defaults when null).
Algorithm chooseAlgorithm(const ScheduleSpec& spec, size_t dtype_size);

/// Whether the choice for `collective` depends on which ranks share a host (a row's size rule, a price, the
/// tuning table's shapes): the communicator learns its host layout before choosing.
bool choiceNeedsHostLayout(Collective collective);

/// Whether some row serves `collective` on a one-host communicator through its node engine (whole_host_for).
bool someRowServesWholeHost(Collective collective);

}  // namespace megascale
