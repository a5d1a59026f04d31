#include "launcher/host_plan.h"

#include <algorithm>

#include "topology/placement.h"

namespace megascale::launcher {

namespace {

std::string rankRange(int slot, int nproc) {
  const int first = slot * nproc, last = first + nproc - 1;
  return first == last ? "rank " + std::to_string(first) : "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

HostPlan firstPlan(int host_slots, const std::vector<int>& preferred, const std::vector<int>& fill_order) {
  HostPlan plan;
  plan.slots.assign(static_cast<size_t>(host_slots), -1);
  plan.replica_sources.assign(static_cast<size_t>(host_slots), -1);
  std::vector<bool> placed(preferred.size(), false);
  for (size_t e = 0; e < preferred.size(); ++e) {
    const int want = preferred[e];
    if (want >= 0 && want < host_slots && plan.slots[static_cast<size_t>(want)] < 0) {
      plan.slots[static_cast<size_t>(want)] = static_cast<int>(e);
      placed[e] = true;
    }
  }
  std::vector<int> order = fill_order;
  for (size_t e = 0; e < preferred.size(); ++e) {  // whoever the order leaves out, in join order
    if (std::find(order.begin(), order.end(), static_cast<int>(e)) == order.end()) order.push_back(static_cast<int>(e));
  }
  size_t next = 0;
  for (int& slot : plan.slots) {
    while (slot < 0 && next < order.size()) {
      const int e = order[next++];
      if (e >= 0 && static_cast<size_t>(e) < preferred.size() && !placed[static_cast<size_t>(e)]) {
        slot = e;
        placed[static_cast<size_t>(e)] = true;
      }
    }
  }
  if (std::count(plan.slots.begin(), plan.slots.end(), -1) > 0) {
    plan.problem = std::to_string(host_slots) + " host slots need as many executors; " +
                   std::to_string(preferred.size()) + " joined";
  }
  return plan;
}

std::vector<int> topologyFillOrder(const topology::Cluster& cluster, const std::vector<std::string>& executor_hosts) {
  std::vector<int> order;
  std::vector<bool> taken(executor_hosts.size(), false);
  for (int h : topology::hostOrder(cluster)) {
    for (size_t e = 0; e < executor_hosts.size(); ++e) {
      if (!taken[e] && executor_hosts[e] == cluster.hosts[static_cast<size_t>(h)].name) {
        order.push_back(static_cast<int>(e));
        taken[e] = true;
      }
    }
  }
  for (size_t e = 0; e < executor_hosts.size(); ++e) {
    if (!taken[e]) order.push_back(static_cast<int>(e));
  }
  return order;
}

HostPlan replan(const std::vector<int>& slots, const std::set<int>& evicted, std::vector<int> spares, int nproc) {
  HostPlan plan;
  plan.slots = slots;
  plan.replica_sources.assign(slots.size(), -1);
  std::erase_if(spares, [&](int e) { return evicted.count(e) > 0; });
  for (size_t s = 0; s < slots.size(); ++s) {
    if (evicted.count(slots[s]) == 0) continue;
    const std::string ranks = "slot " + std::to_string(s) + " (" + rankRange(static_cast<int>(s), nproc) + ")";
    if (spares.empty()) {
      plan.problem = ranks + " lost executor " + std::to_string(slots[s]) + " and no spare host is left";
      return plan;
    }
    const int holder = replicaHolder(slots, static_cast<int>(s));
    plan.replica_sources[s] = holder >= 0 && evicted.count(holder) == 0 ? holder : -1;
    plan.slots[s] = spares.front();
    spares.erase(spares.begin());
    plan.changes.push_back(ranks + ": spare executor " + std::to_string(plan.slots[s]) + " replaces executor " +
                           std::to_string(slots[s]) +
                           (plan.replica_sources[s] >= 0
                                ? ", with the checkpoints replicated to executor " +
                                      std::to_string(plan.replica_sources[s])
                                : ", without a replica in memory (disk is the fallback)"));
  }
  return plan;
}

int replicaHolder(const std::vector<int>& slots, int slot) {
  if (slots.size() < 2) return -1;
  return slots[(static_cast<size_t>(slot) + 1) % slots.size()];
}

}  // namespace megascale::launcher
