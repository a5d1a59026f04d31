#include "topology/net_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/config.h"
#include "topology/hwloc_locality.h"

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

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool isPciAddress(const std::string& c) {  // dddd:bb:dd.f
  if (c.size() != 12 || c[4] != ':' || c[7] != ':' || c[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!std::isxdigit(static_cast<unsigned char>(c[i]))) return false;
  }
  return true;
}

NetInterface describe(const ifaddrs* entry) {
  NetInterface nic;
  nic.name = entry->ifa_name;
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr, text, sizeof(text));
  nic.ipv4 = text;
  if (entry->ifa_netmask != nullptr) {
    nic.prefix_length = __builtin_popcount(reinterpret_cast<const sockaddr_in*>(entry->ifa_netmask)->sin_addr.s_addr);
  }
  nic.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
  const std::string sys = "/sys/class/net/" + nic.name;
  nic.speed_mbps = readIntFile(sys + "/speed");
  nic.mtu = readIntFile(sys + "/mtu");
  std::unique_ptr<char, decltype(&std::free)> real(realpath((sys + "/device").c_str(), nullptr), &std::free);
  if (real != nullptr) nic.pci_path = pciFunctionPath(real.get());
  nic.guid = guidFromMac(readLine(sys + "/address"));
  if (!nic.pci_path.empty()) {
    const std::string numa = readLine(nic.pci_path + "/numa_node");
    nic.numa_node = numa.empty() ? -1 : std::atoi(numa.c_str());
    nic.locality_source = "sysfs";
  }
  if (NicLocality hw; hwlocLocality(nic.name, &hw)) {  // hwloc's view wins where it has one
    if (!hw.pci_bus_id.empty() && !nic.pci_path.empty() && !nic.pci_path.ends_with("/" + hw.pci_bus_id)) {
      nic.pci_path.clear();  // sysfs and hwloc disagree: report no PCI path rather than a wrong one
    }
    if (hw.numa_node >= 0) nic.numa_node = hw.numa_node;
    nic.pci_link_gbps = hw.pci_link_gbps;
    nic.locality_source = "hwloc";
  }
  return nic;
}

}  // namespace

uint64_t guidFromMac(const std::string& mac) {
  if (mac.size() != 17) return 0;
  uint64_t guid = 0;
  for (size_t i = 0; i < 17; i += 3) {
    if (!std::isxdigit(static_cast<unsigned char>(mac[i])) || !std::isxdigit(static_cast<unsigned char>(mac[i + 1])) ||
        (i + 2 < 17 && mac[i + 2] != ':')) {
      return 0;
    }
    guid = guid << 8 | std::stoul(mac.substr(i, 2), nullptr, 16);
  }
  return guid;
}

std::string pciFunctionPath(const std::string& device_path) {
  size_t end = std::string::npos;
  for (size_t start = 0; start < device_path.size();) {
    size_t slash = device_path.find('/', start);
    if (slash == std::string::npos) slash = device_path.size();
    if (isPciAddress(device_path.substr(start, slash - start))) end = slash;
    start = slash + 1;
  }
  return end == std::string::npos ? "" : device_path.substr(0, end);
}

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
