// What a simulation run is judged by: each flow's completion time against its ideal (the same flow alone on its
// path), slowdown percentiles by flow size as the HPCC paper plots them, and CSV for plotting.
#pragma once

#include <ostream>
#include <vector>

#include "sim/network.h"

namespace megascale::sim {

/// The flow's completion time alone on its path: every packet store-and-forwarded hop by hop behind the one
/// before it, the last ACK back; exactly what the simulator gives a lone flow at line rate.
Picoseconds idealFct(Network& net, int src, int dst, uint64_t bytes);

struct SlowdownBin {
  uint64_t max_bytes = 0;  // the largest flow in the bin
  size_t flows = 0;
  double p50 = 0, p95 = 0, p99 = 0;
};

/// Finished flows sorted by size and cut into `bins` bins of equal flow count (HPCC's 20 bins of 5%); in each,
/// the percentiles of FCT / ideal FCT (at least 1).
std::vector<SlowdownBin> slowdownBySize(Network& net, int bins);

/// The p-th percentile (0..100, nearest rank) of `values`; 0 for none.
double percentile(std::vector<double> values, double p);

/// One row a flow: id,src,dst,bytes,start_us,fct_us,ideal_us,slowdown,goodput_gbps,retransmissions (unfinished
/// flows have an empty FCT, slowdown and goodput).
void writeFctCsv(std::ostream& out, Network& net);

}  // namespace megascale::sim
