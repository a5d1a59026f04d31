// Collectives in the simulator, from the collective library's own schedules (collectives/schedule.h), so what
// we simulate at scale is what we run: every rank walks its phases; a phase's sends become flows to their peers,
// and the phase ends once its sends are acknowledged and the messages it receives have arrived (the j-th receive
// from a peer is that peer's j-th send to this rank). Local reductions and copies take no simulated time.
#pragma once

#include <unordered_map>
#include <vector>

#include "collectives/schedule.h"
#include "congestion/sim/network.h"

namespace megascale::congestion::sim {

struct CollectiveResult {
  bool finished = false;
  Picoseconds time = 0;   // from the start to the last rank's last phase
  double algbw_gbs = 0;   // nccl-tests' definitions, GB/s = 1e9 B/s
  double busbw_gbs = 0;
  size_t flows = 0;
};

class CollectiveReplay {
 public:
  /// Rank r runs on host rank_hosts[r]. spec.algorithm must be concrete (not kAuto); spec.rank is ignored.
  CollectiveReplay(Network& net, std::vector<int> rank_hosts, const ScheduleSpec& spec, size_t dtype_size,
                   ControlFactory control);
  /// Starts every rank at the network's current time and runs until all finish or `end`.
  CollectiveResult run(Picoseconds end = kNever);

 private:
  struct RankState {
    Schedule schedule;
    size_t phase = 0;
    int sends_in_flight = 0;
    std::vector<std::pair<int, uint32_t>> awaited;  // (peer, how many messages from it must have arrived)
    Picoseconds done = kNever;
  };
  void enterPhase(int rank);
  void flowDone(uint32_t flow);
  bool phaseComplete(int rank) const;
  void advance(int rank);

  // Messages per (from, to) pair. Sparse: a rank talks to few peers (two in a ring), and n x n counters would
  // not fit at 12,288 ranks.
  class PairCounts {
   public:
    uint32_t get(int from, int to) const {
      const auto it = counts_.find(key(from, to));
      return it == counts_.end() ? 0 : it->second;
    }
    void increment(int from, int to) { ++counts_[key(from, to)]; }

   private:
    static uint64_t key(int from, int to) { return static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to); }
    std::unordered_map<uint64_t, uint32_t> counts_;
  };

  Network& net_;
  std::vector<int> hosts_;
  ScheduleSpec spec_;
  size_t dtype_size_;
  ControlFactory control_;
  std::vector<RankState> ranks_;
  PairCounts delivered_, posted_;  // messages arrived / receives posted so far
  std::vector<std::pair<int, int>> flow_ranks_;   // per flow id: (from, to); (-1, -1) for others' flows
  int unfinished_ = 0;
  size_t flows_ = 0;
};

}  // namespace megascale::congestion::sim
