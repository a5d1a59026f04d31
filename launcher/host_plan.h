// Which executor runs which host slot of a job that spans hosts (slot s runs ranks s * nproc ... s * nproc +
// nproc - 1), and how that changes when hosts are evicted: a spare takes the slot, and fetches its checkpoints in
// host memory from the replica, which slot s's executor pushed to the executor of slot s + 1. Pure logic, tested
// without processes (tests/launcher/host_plan_test.cc).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "topology/cluster.h"

namespace megascale::launcher {

struct HostPlan {
  std::vector<int> slots;            // executor of each slot
  std::vector<int> replica_sources;  // executor that holds slot s's replicas for its new executor, or -1
  std::vector<std::string> changes;  // "slot 1 (ranks 2-3): spare executor 4 replaces executor 1"
  std::string problem;               // why no plan could be made ("" when slots is complete)
};

/// The first plan: executors that asked for a slot (preferred, -1 for none) get it; the others fill the free
/// slots in `fill_order` (executor indices; empty: the order they joined); the rest are spares. Executors are
/// 0 .. preferred.size() - 1.
HostPlan firstPlan(int host_slots, const std::vector<int>& preferred, const std::vector<int>& fill_order = {});

/// The executors in placement order for a cluster's switch tree: by their host's place in topology::hostOrder
/// (hosts under one leaf switch take consecutive slots, so the consecutive ranks of a data-parallel group stay
/// under one ToR before crossing a spine, MegaScale §3.6), then executors whose host the tree lacks, in the
/// order they joined. `executor_hosts` holds each executor's host name.
std::vector<int> topologyFillOrder(const topology::Cluster& cluster, const std::vector<std::string>& executor_hosts);

/// After a fault: every slot whose executor is in `evicted` goes to the first of `spares` (executors ready to
/// run, in the order they joined), with the executor of the next slot as its replica source unless that one is
/// evicted as well (then disk is the fallback). `nproc` numbers the ranks in `changes`.
HostPlan replan(const std::vector<int>& slots, const std::set<int>& evicted, std::vector<int> spares, int nproc);

/// The executor slot s pushes its replicas to: the next slot's, or -1 for a job of one slot.
int replicaHolder(const std::vector<int>& slots, int slot);

}  // namespace megascale::launcher
