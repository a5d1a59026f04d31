// Which executor runs which host slot of a job that spans hosts (slot s runs ranks s * nproc ... s * nproc +
// nproc - 1), and how that changes when hosts are evicted: a spare takes the slot, and fetches its checkpoints in
// host memory from the replica, which slot s's executor pushed to the executor of slot s + 1. Pure logic, tested
// without processes (tests/launcher/host_plan_test.cc).
#pragma once

#include <set>
#include <string>
#include <vector>

namespace megascale::launcher {

struct HostPlan {
  std::vector<int> slots;            // executor of each slot
  std::vector<int> replica_sources;  // executor that holds slot s's replicas for its new executor, or -1
  std::vector<std::string> changes;  // "slot 1 (ranks 2-3): spare executor 4 replaces executor 1"
  std::string problem;               // why no plan could be made ("" when slots is complete)
};

/// The first plan: executors that asked for a slot (preferred, -1 for none) get it; the others fill the free
/// slots in the order they joined; the rest are spares. Executors are 0 .. preferred.size() - 1.
HostPlan firstPlan(int host_slots, const std::vector<int>& preferred);

/// After a fault: every slot whose executor is in `evicted` goes to the first of `spares` (executors ready to
/// run, in the order they joined), with the executor of the next slot as its replica source unless that one is
/// evicted as well (then disk is the fallback). `nproc` numbers the ranks in `changes`.
HostPlan replan(const std::vector<int>& slots, const std::set<int>& evicted, std::vector<int> spares, int nproc);

/// The executor slot s pushes its replicas to: the next slot's, or -1 for a job of one slot.
int replicaHolder(const std::vector<int>& slots, int slot);

}  // namespace megascale::launcher
