#include "launcher/host_plan.h"

#include <algorithm>

namespace megascale::launcher {

namespace {

std::string rankRange(int slot, int nproc) {
  const int first = slot * nproc, last = first + nproc - 1;
  return first == last ? "rank " + std::to_string(first) : "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

HostPlan firstPlan(int host_slots, const std::vector<int>& preferred) {
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
  size_t next = 0;
  for (int& slot : plan.slots) {
    while (slot < 0 && next < preferred.size()) {
      if (!placed[next]) {
        slot = static_cast<int>(next);
        placed[next] = true;
      }
      ++next;
    }
  }
  if (std::count(plan.slots.begin(), plan.slots.end(), -1) > 0) {
    plan.problem = std::to_string(host_slots) + " host slots need as many executors; " +
                   std::to_string(preferred.size()) + " joined";
  }
  return plan;
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
