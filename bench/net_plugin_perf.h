// sendrecv_perf --net-plugin PATH: point-to-point latency and bandwidth through an NCCL net plugin next to the
// bare megascale transport, measured alternately in one run and printed side by side with their ratios.
#pragma once

#include "bench/perf_test.h"

namespace megascale::bench {

int runNetPluginPerf(const PerfOptions& options, mscComm_t comm);

}  // namespace megascale::bench
