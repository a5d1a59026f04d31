#include "topology/placement.h"

#include <stdexcept>
#include <string>

namespace megascale::topology {

std::vector<int> hostOrder(const Cluster& cluster) {
  std::vector<int> order;
  std::vector<bool> placed(cluster.hosts.size(), false);
  const auto place = [&](int h) {
    if (!placed[static_cast<size_t>(h)]) placed[static_cast<size_t>(h)] = true, order.push_back(h);
  };
  std::vector<int> stack;
  for (int s = static_cast<int>(cluster.switches.size()) - 1; s >= 0; --s) {
    if (cluster.switches[static_cast<size_t>(s)].parent < 0) stack.push_back(s);
  }
  while (!stack.empty()) {
    const Switch& sw = cluster.switches[static_cast<size_t>(stack.back())];
    stack.pop_back();
    if (sw.rail <= 0) {  // rail 0's leaves (and every switch above the leaves) decide the order
      for (int h : sw.hosts) place(h);
    }
    for (auto it = sw.children.rbegin(); it != sw.children.rend(); ++it) stack.push_back(*it);
  }
  for (int h = 0; h < static_cast<int>(cluster.hosts.size()); ++h) place(h);
  return order;
}

std::vector<int> parallelRankOrder(const Cluster& cluster, int world_size, int tp) {
  if (tp < 1) throw std::invalid_argument("tensor-parallel size must be at least 1, got " + std::to_string(tp));
  std::vector<int> order;
  std::vector<bool> seen(static_cast<size_t>(world_size), false);
  for (int h : hostOrder(cluster)) {
    const Host& host = cluster.hosts[static_cast<size_t>(h)];
    const int count = static_cast<int>(host.ranks.size());
    if (count == 0) continue;
    if (count % tp != 0 && tp % count != 0) {
      throw std::invalid_argument("host " + host.name + " has " + std::to_string(count) + " ranks: tensor-parallel groups of " +
                                  std::to_string(tp) + " would straddle it and another host");
    }
    for (int r : host.ranks) {
      if (r < 0 || r >= world_size || seen[static_cast<size_t>(r)]) {
        throw std::invalid_argument("host " + host.name + " lists rank " + std::to_string(r) + ", outside the " +
                                    std::to_string(world_size) + " ranks or already placed");
      }
      seen[static_cast<size_t>(r)] = true;
      order.push_back(r);
    }
  }
  for (int r = 0; r < world_size; ++r) {
    if (!seen[static_cast<size_t>(r)]) throw std::invalid_argument("rank " + std::to_string(r) + " is on no host");
  }
  return order;
}

}  // namespace megascale::topology
