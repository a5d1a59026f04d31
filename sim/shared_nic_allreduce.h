// The all-reduce of servers whose GPUs share one NIC (a star or fat tree of hosts, several ranks each), as the
// library runs it: its hierarchical schedule, replayed whole. Host steps (the node engine's reduce-scatter and
// all-gather over NVLink or shared memory) take their bytes at the host's rate, and each rank's shard crosses
// the simulated network through its server's one NIC, so the host's ranks contend for it.
#pragma once

#include <cstdint>

#include "collectives/cost_model.h"
#include "sim/collective_replay.h"

namespace megascale::sim {

struct SharedNicAllReduceSpec {
  int ranks_per_host = 2;            // host h carries ranks h * ranks_per_host .. + ranks_per_host - 1
  uint64_t bytes_per_rank = 0;       // the all-reduce's size, float32 elements (whole multiples of ranks_per_host)
  double host_bytes_per_s = 300e9;   // a rank's host-step rate (NVLink per GPU each way; a host's memory copy)
};

struct SharedNicAllReduceResult {
  CollectiveResult run;      // the whole all-reduce, every rank (bandwidths: nccl-tests' over all ranks)
  Algorithm algorithm = Algorithm::kHierarchical;
  double host_step_s = 0;    // of that time, the host steps' bytes at the host's rate (a lower bound on them)
};

/// Runs on `net` (every host a server) until done or `end`. Throws std::invalid_argument for fewer than 2 ranks
/// per host.
SharedNicAllReduceResult runSharedNicAllReduce(Network& net, const SharedNicAllReduceSpec& spec,
                                               const ControlFactory& control, Picoseconds end = kNever);

}  // namespace megascale::sim
