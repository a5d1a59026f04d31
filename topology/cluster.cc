#include "topology/cluster.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_map>

namespace megascale::topology {
namespace {

template <typename Items>
int indexByName(const Items& items, std::string_view name) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// "0-3,6" for sorted ranks.
std::string rankRanges(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

Cluster Cluster::blocks(int hosts, int per_host) {
  Cluster cluster;
  cluster.hosts.resize(static_cast<size_t>(std::max(hosts, 0)));
  for (int h = 0, r = 0; h < hosts; ++h) {
    Host& host = cluster.hosts[static_cast<size_t>(h)];
    host.name = "host" + std::to_string(h);
    host.ranks.reserve(static_cast<size_t>(std::max(per_host, 0)));
    for (int l = 0; l < per_host; ++l) host.ranks.push_back(r++);
  }
  return cluster;
}

Cluster Cluster::fromHostKeys(const std::vector<uint64_t>& keys) {
  Cluster cluster;
  std::unordered_map<uint64_t, size_t> index;
  for (size_t r = 0; r < keys.size(); ++r) {
    const auto [it, fresh] = index.emplace(keys[r], cluster.hosts.size());
    if (fresh) {
      char name[17];
      std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(keys[r]));
      cluster.hosts.push_back(Host{name, {}, {}, {}});
    }
    cluster.hosts[it->second].ranks.push_back(static_cast<int>(r));
  }
  return cluster;
}

int Cluster::findHost(std::string_view name) const { return indexByName(hosts, name); }
int Cluster::findSwitch(std::string_view name) const { return indexByName(switches, name); }

int Cluster::railCount() const {
  size_t rails = 1;
  for (const Host& h : hosts) rails = std::max({rails, h.nics.size(), h.leaf_switches.size()});
  return static_cast<int>(rails);
}

int Cluster::distance(int host_a, int host_b, int rail) const {
  if (host_a == host_b) return 0;
  const auto leaf = [&](int h) {
    const auto& leaves = hosts[static_cast<size_t>(h)].leaf_switches;
    return rail < static_cast<int>(leaves.size()) ? leaves[static_cast<size_t>(rail)] : -1;
  };
  // Walk up from both leaves; the first common switch is where the paths meet. Links: host to leaf at each
  // end, plus one per level climbed on each side.
  std::vector<int> above_a;
  for (int s = leaf(host_a); s >= 0; s = switches[static_cast<size_t>(s)].parent) above_a.push_back(s);
  int climbed_b = 0;
  for (int s = leaf(host_b); s >= 0; s = switches[static_cast<size_t>(s)].parent, ++climbed_b) {
    const auto it = std::find(above_a.begin(), above_a.end(), s);
    if (it != above_a.end()) return 2 + static_cast<int>(it - above_a.begin()) + climbed_b;
  }
  return -1;
}

std::vector<int> Cluster::hostOfRanks(int world_size) const {
  std::vector<int> host_of(static_cast<size_t>(std::max(world_size, 0)), -1);
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int r : hosts[h].ranks) {
      if (r >= 0 && r < world_size) host_of[static_cast<size_t>(r)] = static_cast<int>(h);
    }
  }
  return host_of;
}

std::string Cluster::describe() const {
  std::ostringstream out;
  const int rails = railCount();
  out << "cluster: " << hosts.size() << (hosts.size() == 1 ? " host, " : " hosts, ") << rails
      << (rails == 1 ? " rail, " : " rails, ") << switches.size() << (switches.size() == 1 ? " switch" : " switches")
      << "\n";
  std::vector<std::pair<int, int>> stack;  // (switch, depth), depth first from the top switches
  for (int s = static_cast<int>(switches.size()) - 1; s >= 0; --s) {
    if (switches[static_cast<size_t>(s)].parent < 0) stack.emplace_back(s, 0);
  }
  while (!stack.empty()) {
    const auto [s, depth] = stack.back();
    stack.pop_back();
    const Switch& sw = switches[static_cast<size_t>(s)];
    out << "  " << std::string(static_cast<size_t>(2 * depth), ' ') << "switch " << sw.name;
    if (sw.rail >= 0) out << " (rail " << sw.rail << ")";
    if (!sw.link_speed.empty()) out << " link " << sw.link_speed;
    if (!sw.hosts.empty()) {
      out << ": hosts";
      for (int h : sw.hosts) out << " " << hosts[static_cast<size_t>(h)].name;
    }
    out << "\n";
    for (auto it = sw.children.rbegin(); it != sw.children.rend(); ++it) stack.emplace_back(*it, depth + 1);
  }
  for (const Host& h : hosts) {
    std::vector<int> ranks = h.ranks;
    std::sort(ranks.begin(), ranks.end());
    out << "  host " << h.name << ": ranks " << rankRanges(ranks) << "\n";
    const size_t host_rails = std::max(h.nics.size(), h.leaf_switches.size());
    for (size_t rail = 0; rail < host_rails; ++rail) {
      out << "    rail " << rail << ":";
      if (rail < h.nics.size()) {
        const Nic& nic = h.nics[rail];
        out << " " << nic.name;
        if (!nic.address.empty()) out << " " << nic.address;
        if (nic.speed_mbps > 0) out << " " << nic.speed_mbps << " Mbit/s";
      }
      const int leaf = rail < h.leaf_switches.size() ? h.leaf_switches[rail] : -1;
      out << " switch " << (leaf >= 0 ? switches[static_cast<size_t>(leaf)].name : "(not in the topology file)") << "\n";
    }
  }
  return out.str();
}

}  // namespace megascale::topology
