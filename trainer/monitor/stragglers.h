// Stragglers from the per-rank timers: each rank's compute time per step (its forward, backward and optimizer
// spans, the waits for communication taken out), compared with the ranks that do the same work (the same
// pipeline stage: the first and last stages also run the embedding and the head). A rank whose median step
// takes much longer than its peers' is slow on its own (a weak or shared core, thermal throttling, a noisy
// neighbour), not because it waited for others. Pure: the times in, the report out.
#pragma once

#include <string>
#include <vector>

namespace megascale::trainer {

struct StragglerInput {
  std::vector<std::vector<double>> compute_s;  // by rank, then by step
  std::vector<int> peer_group;                 // by rank: ranks with the same value do the same work
  std::vector<std::string> names;              // by rank: "rank 5 (tp 1 pp 0 dp 2)"
};

struct Straggler {
  int rank = 0;
  double median_s = 0;       // its median compute time per step
  double peers_median_s = 0;  // the median of its peer group's medians
  double ratio = 0;          // median_s / peers_median_s
};

struct StragglerReport {
  std::vector<Straggler> ranks;  // every rank, slowest (highest ratio) first
  /// Ranks at least `threshold` times their peers' median, slowest first.
  std::vector<Straggler> slow(double threshold) const;
};

StragglerReport findStragglers(const StragglerInput& input);

/// "rank,step,compute_ms" rows, one per rank and step.
std::string heatmapCsv(const StragglerInput& input);

/// The slowest ranks as lines: "rank 5 (tp 1 pp 0 dp 2): 412.3 ms per step, 1.84x its peers' 224.1 ms".
std::string describeStragglers(const StragglerInput& input, const StragglerReport& report, size_t count);

}  // namespace megascale::trainer
