#include "topology/rails.h"

#include <arpa/inet.h>

#include <algorithm>
#include <set>

namespace megascale::topology {
namespace {

uint32_t subnetOf(const NetInterface& nic) {
  in_addr address{};
  if (inet_pton(AF_INET, nic.ipv4.c_str(), &address) != 1) return 0;
  const uint32_t host_order = ntohl(address.s_addr);
  const uint32_t mask = nic.prefix_length <= 0 ? 0 : ~uint32_t{0} << (32 - std::min(nic.prefix_length, 32));
  return host_order & mask;
}

}  // namespace

void sortIntoRails(std::vector<NetInterface>& nics) {
  std::stable_sort(nics.begin(), nics.end(), [](const NetInterface& a, const NetInterface& b) {
    return a.pci_path != b.pci_path ? a.pci_path < b.pci_path : a.name < b.name;
  });
}

std::vector<NetInterface> railInterfaces(const std::string& spec) {
  std::vector<NetInterface> nics = discoverInterfaces(spec);
  nics.erase(std::remove_if(nics.begin(), nics.end(), [](const NetInterface& n) { return n.loopback; }), nics.end());
  if (nics.size() < 2) return {};
  std::set<uint32_t> subnets;
  for (const NetInterface& n : nics) {
    if (n.speed_mbps != nics.front().speed_mbps || !subnets.insert(subnetOf(n)).second) return {};
  }
  sortIntoRails(nics);
  return nics;
}

std::string railAddress(int local_rank, const std::string& spec) {
  if (local_rank < 0) return "";
  const std::vector<NetInterface> rails = railInterfaces(spec);
  return rails.empty() ? "" : rails[static_cast<size_t>(local_rank) % rails.size()].ipv4;
}

}  // namespace megascale::topology
