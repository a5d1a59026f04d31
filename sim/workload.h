// Workloads for the simulator: flows read from a file or made by generators (permutation, incast, all-to-all,
// Poisson arrivals with a flow-size distribution at a target load).
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <utility>
#include <vector>

#include "congestion/sender_control.h"

namespace megascale::sim {

struct FlowSpec {
  int src = 0, dst = 0;
  uint64_t bytes = 0;
  Picoseconds start = 0;
};

/// A flow-size distribution given as a piecewise-linear CDF: (bytes, cumulative percent) points, percents rising
/// from 0 to 100.
class SizeDistribution {
 public:
  /// Throws std::invalid_argument when the points do not form a CDF.
  explicit SizeDistribution(std::vector<std::pair<double, double>> points);
  /// Web search (DCTCP, SIGCOMM'10) as the HPCC paper used it: mean ~1.71 MB.
  static SizeDistribution webSearch();
  /// Facebook Hadoop (Roy et al., SIGCOMM'15) as the HPCC paper used it: mean ~120 KB.
  static SizeDistribution fbHadoop();

  /// The size at uniform draw u in [0, 1) (at least 1 byte).
  uint64_t sample(double u) const;
  double mean() const;

 private:
  std::vector<std::pair<double, double>> points_;  // (bytes, cumulative fraction)
};

/// Every host sends `bytes` to a different host and every host receives once (a random derangement).
std::vector<FlowSpec> permutation(int hosts, uint64_t bytes, uint64_t seed, Picoseconds start = 0);
/// Each sender sends `bytes` to `receiver`.
std::vector<FlowSpec> incast(const std::vector<int>& senders, int receiver, uint64_t bytes, Picoseconds start = 0);
/// Every host sends `bytes` to every other host.
std::vector<FlowSpec> allToAll(int hosts, uint64_t bytes, Picoseconds start = 0);
/// Each host a Poisson source for `duration` with sizes from `sizes`, to uniformly chosen other hosts, at `load`
/// of its link: mean inter-arrival = mean size x 8 / (host_bps x load). Sorted by start time.
std::vector<FlowSpec> poissonLoad(int hosts, const SizeDistribution& sizes, double load, double host_bps,
                                  Picoseconds duration, uint64_t seed);

/// Flow file: one flow a line, "src dst bytes start_us"; '#' starts a comment. Throws std::runtime_error naming
/// the line for anything malformed or a host outside [0, hosts).
std::vector<FlowSpec> readFlowFile(std::istream& in, int hosts);
void writeFlowFile(std::ostream& out, const std::vector<FlowSpec>& flows);

}  // namespace megascale::sim
