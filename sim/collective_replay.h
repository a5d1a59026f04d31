// Collectives in the simulator, from the collective library's own schedules (collectives/schedule.h), so what
// we simulate at scale is what we run: a rank's sends become messages on the connection (queue pair) from the
// rank to that peer (the j-th receive from a peer is that peer's j-th send to this rank), and the rank runs its
// schedule as the executor does, as data flow over a window of kDataFlowWindowPhases phases: a send starts once
// the earlier steps whose bytes it reads are done (and the earlier sends on its connection have started), a
// receive completes once its message has arrived and the earlier steps that touch its bytes are done. Local
// reductions and copies take no simulated time; they pass dependencies on. Host steps (the node engine's
// collectives inside a server: NVLink or shared memory, off the network) start when every rank of the host has
// reached its k-th one and take the bytes they move at the host's rate (setHostBandwidth; none: no time), one at a
// time as the host stage runs them, so a one-host job's schedule - a single host step - replays too.
//
// Several groups can run the same collective at once on one network - the 8 rails of a hierarchical all-reduce,
// each an all-reduce among the same GPU index of every server - each group with its own ranks.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "collectives/schedule.h"
#include "sim/network.h"

namespace megascale::sim {

struct CollectiveResult {
  bool finished = false;
  Picoseconds time = 0;   // from the start to the last rank's last phase
  double algbw_gbs = 0;   // nccl-tests' definitions for one group, GB/s = 1e9 B/s
  double busbw_gbs = 0;
  size_t messages = 0;
};

/// nccl-tests' algbw and busbw (GB/s) of a collective of `spec.count` elements on `spec.nranks` ranks.
void collectiveBandwidth(const ScheduleSpec& spec, size_t dtype_size, double seconds, double* algbw_gbs,
                         double* busbw_gbs);

class CollectiveReplay : private EventHandler {
 public:
  /// Rank r of group g runs on host groups[g][r]; every group runs `spec` (nranks = its size). spec.algorithm
  /// must be concrete (not kAuto); spec.rank is ignored.
  CollectiveReplay(Network& net, const std::vector<std::vector<int>>& groups, const ScheduleSpec& spec,
                   size_t dtype_size, ControlFactory control);
  /// One group.
  CollectiveReplay(Network& net, const std::vector<int>& rank_hosts, const ScheduleSpec& spec, size_t dtype_size,
                   ControlFactory control)
      : CollectiveReplay(net, std::vector<std::vector<int>>{rank_hosts}, spec, dtype_size, std::move(control)) {}
  /// Starts every rank at the network's current time and runs until all finish or `end`. Bandwidths are those
  /// of the first group.
  CollectiveResult run(Picoseconds end = kNever);
  /// Bytes per second each rank's host steps move (NVLink per GPU, a host's memory copy rate); 0: no time.
  void setHostBandwidth(double bytes_per_s) { host_bytes_per_s_ = bytes_per_s; }

 private:
  // What a rank does on the network: the schedule without its buffers, each transfer with the earlier transfers
  // whose data it needs (through local steps). Ranks of equal-sized groups share one; a ring over 1,536 ranks
  // has 3,070 phases per rank.
  struct Op {
    enum Kind : uint8_t { kSend, kRecv, kHost };
    int32_t peer;        // rank within the group; -1 for host steps
    Kind kind;
    uint32_t ordinal;    // the j-th send to (receive from) this peer; host steps: the j-th of the rank
    uint64_t bytes;      // sends; host steps: the bytes they move in or out of this rank's memory
    uint32_t deps_begin, deps_end;  // into CompactSchedule::deps: ops that must be done first
  };
  struct CompactSchedule {
    std::vector<uint32_t> phase_begin;  // ops of phase p: [phase_begin[p], phase_begin[p + 1])
    std::vector<Op> ops;
    std::vector<uint32_t> deps;
    size_t phases() const { return phase_begin.size() - 1; }
  };
  static CompactSchedule compact(const ScheduleSpec& spec, size_t dtype_size);
  enum OpState : uint8_t { kWaiting, kInFlight, kDone };
  struct RankState {
    const CompactSchedule* schedule = nullptr;
    int group_base = 0;  // global id of the group's rank 0
    size_t oldest = 0;   // oldest phase with an op not done
    uint32_t first_open = 0;  // every op before it is done
    uint32_t host_steps_started = 0;
    bool host_step_running = false;  // its host stage is in a call (the engine runs one at a time)
    std::vector<OpState> ops;
    Picoseconds done = kNever;
  };
  void messageDone(uint32_t flow);
  /// Starts and completes what rank's ops allow; ranks it woke go on the work list.
  void progress(int rank);
  void wake(int rank) { woken_.push_back(rank); }
  /// Rank's host step op_index is ready: it joins its host's call, which starts once every rank of the host has.
  void joinHostStep(int rank, uint32_t op_index);
  static constexpr int kHostStepDone = 1;
  void onEvent(int kind, uint64_t arg) override;
  void drain();
  uint32_t connection(int from, int to);

  // Messages per (from, to) pair of global ranks. Sparse: a rank talks to few peers (two in a ring), and n x n
  // counters would not fit at 12,288 ranks.
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
  std::vector<int> hosts_;  // per global rank
  ScheduleSpec spec_;       // of the first group
  size_t dtype_size_;
  ControlFactory control_;
  std::unordered_map<int, std::vector<CompactSchedule>> schedules_;  // per group size, per rank
  std::vector<RankState> ranks_;
  PairCounts delivered_, sent_;  // messages arrived / sends started so far
  std::unordered_map<uint64_t, std::deque<uint32_t>> in_flight_;  // (from, to) -> the sender's ops, oldest first
  std::vector<int> woken_;
  std::unordered_map<uint64_t, uint32_t> connections_;  // (from, to) -> flow
  std::vector<std::pair<int, int>> flow_ranks_;         // per flow id: (from, to); (-1, -1) for others' flows
  int unfinished_ = 0;
  size_t messages_ = 0;
  double host_bytes_per_s_ = 0;
  struct HostCall {
    uint32_t index = 0;  // into host_call_members_
    uint64_t bytes = 0;
  };
  std::unordered_map<uint64_t, HostCall> host_calls_;  // (group's first rank + host, ordinal) -> a call filling up
  std::vector<std::vector<std::pair<int, uint32_t>>> host_call_members_;  // per call: (rank, op) that joined
};

}  // namespace megascale::sim
