// Queue lengths over time: samples the data queue of a set of ports at a fixed interval of simulated time and
// writes the busiest ports' series as CSV and as a PNG chart. Samples are kept sparsely (only non-empty queues),
// so watching every switch port of a large network costs memory only where queues build.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/network.h"

namespace megascale::sim {

class QueueMonitor : public EventHandler {
 public:
  /// Samples `ports` every `interval` (> 0) from the network's current time until the run ends.
  QueueMonitor(Network& net, std::vector<const Port*> ports, Picoseconds interval);
  void onEvent(int kind, uint64_t arg) override;

  /// Indices (into the ports given) of the `k` ports with the highest sampled queue, highest first; ports whose
  /// queue was never seen non-empty are left out.
  std::vector<size_t> busiest(size_t k) const;
  /// "time_us" and one column of queued bytes per chosen port (named by Port::name), one row per sample.
  void writeCsv(std::ostream& out, const std::vector<size_t>& chosen) const;
  /// The same series as a line chart: x in microseconds, y in KB; colours in the order of `chosen`.
  void writePng(const std::string& path, const std::vector<size_t>& chosen) const;
  uint64_t peakBytes(size_t port) const { return peak_[port]; }
  size_t samples() const { return times_.size(); }

 private:
  std::vector<uint64_t> series(size_t port) const;

  Network& net_;
  std::vector<const Port*> ports_;
  Picoseconds interval_;
  std::vector<Picoseconds> times_;
  std::vector<size_t> sample_begin_;                      // non-empty queues of sample i: [begin[i], begin[i+1])
  std::vector<std::pair<uint32_t, uint64_t>> non_empty_;  // (port, bytes)
  std::vector<uint64_t> peak_;
};

}  // namespace megascale::sim
