// The all-reduce of a rail-optimized cluster, as NCCL runs it there: a reduce-scatter over NVLink inside each
// server, one all-reduce per rail across the servers (GPU r of every server, on NIC r) on the simulated network,
// and an all-gather over NVLink. The NVLink phases are not simulated: each moves (g - 1) / g of the data at the
// given NVLink bandwidth and overlaps the network phase, as NCCL's pipelined chunks overlap them, so the step
// takes the longer of the two.
#pragma once

#include <cstdint>

#include "collectives/cost_model.h"
#include "sim/collective_replay.h"

namespace megascale::sim {

struct RailAllReduceSpec {
  int rails = 8;                  // GPUs (and NICs) per server; host s * rails + r is GPU r of server s
  uint64_t bytes_per_gpu = 0;     // the all-reduce's size, float32 elements
  Algorithm algorithm = Algorithm::kAuto;  // across servers; kAuto: the library's choice
  double nvlink_bytes_per_s = 300e9;       // per GPU, each way
  LinkCost network{8e-6, 25e9};            // what kAuto's cost model assumes: a message's round trip, the NIC rate
};

struct RailAllReduceResult {
  CollectiveResult network;  // the per-rail all-reduces (bandwidths of one rail: the NIC's busbw)
  Algorithm algorithm = Algorithm::kAuto;
  double nvlink_s = 0, step_s = 0;
  double busbw_gbs = 0;      // nccl-tests' busbw of the whole all-reduce over every GPU
};

/// Runs on `net` (rails x servers hosts) until done or `end`.
RailAllReduceResult runRailAllReduce(Network& net, const RailAllReduceSpec& spec, const ControlFactory& control,
                                     Picoseconds end = kNever);

}  // namespace megascale::sim
