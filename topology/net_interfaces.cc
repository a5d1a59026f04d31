#include "topology/net_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/config.h"

namespace megascale::topology {

namespace {

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

bool matchesOne(const std::string& name, const std::string& pattern) {
  if (!pattern.empty() && pattern[0] == '=') return name == pattern.substr(1);
  return name.compare(0, pattern.size(), pattern) == 0;
}

int readIntFile(const std::string& path) {
  std::ifstream in(path);
  long value = 0;
  if (!(in >> value) || value < 0 || value > INT_MAX) return 0;  // "-1" or EINVAL for virtual devices
  return static_cast<int>(value);
}

NetInterface describe(const ifaddrs* entry) {
  NetInterface nic;
  nic.name = entry->ifa_name;
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr, text, sizeof(text));
  nic.ipv4 = text;
  nic.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
  const std::string sys = "/sys/class/net/" + nic.name;
  nic.speed_mbps = readIntFile(sys + "/speed");
  nic.mtu = readIntFile(sys + "/mtu");
  std::unique_ptr<char, decltype(&std::free)> real(realpath((sys + "/device").c_str(), nullptr), &std::free);
  if (real != nullptr) nic.pci_path = real.get();
  return nic;
}

}  // namespace

bool interfaceSelected(const std::string& name, const std::string& spec) {
  if (spec.empty()) {
    return !(matchesOne(name, "lo") || matchesOne(name, "docker") || matchesOne(name, "virbr"));
  }
  const bool exclude = spec[0] == '^';
  for (const std::string& pattern : split(exclude ? spec.substr(1) : spec)) {
    if (matchesOne(name, pattern)) return !exclude;
  }
  return exclude;
}

std::vector<NetInterface> discoverInterfaces(const std::string& spec) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::vector<NetInterface> selected, loopback;
  for (const ifaddrs* e = list; e != nullptr; e = e->ifa_next) {
    if (e->ifa_addr == nullptr || e->ifa_addr->sa_family != AF_INET || (e->ifa_flags & IFF_UP) == 0) continue;
    NetInterface nic = describe(e);
    if (interfaceSelected(nic.name, spec)) {
      selected.push_back(nic);
    } else if (nic.loopback) {
      loopback.push_back(nic);
    }
  }
  freeifaddrs(list);
  return selected.empty() && spec.empty() ? loopback : selected;
}

std::string configuredInterfaceSpec() {
  std::string spec = config::getString("MEGASCALE_NET_IF");
  if (spec.empty() && std::getenv("NCCL_SOCKET_IFNAME") != nullptr) spec = std::getenv("NCCL_SOCKET_IFNAME");
  return spec;
}

}  // namespace megascale::topology
