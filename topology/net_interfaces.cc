#include "topology/net_interfaces.h"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "common/config.h"
#include "common/ipv4_interfaces.h"
#include "topology/hwloc_locality.h"

namespace megascale::topology {

namespace {

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

NetInterface describe(const Ipv4Interface& address) {
  NetInterface nic;
  nic.name = address.name;
  nic.ipv4 = address.address;
  nic.prefix_length = address.prefix_length;
  nic.loopback = address.loopback;
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

std::vector<NetInterface> discoverInterfaces(const std::string& spec) {
  std::vector<NetInterface> nics;
  for (const Ipv4Interface& address : selectedIpv4Interfaces(spec)) nics.push_back(describe(address));
  return nics;
}

std::string configuredInterfaceSpec() {
  std::string spec = config::getString("MEGASCALE_NET_IF");
  if (spec.empty() && std::getenv("NCCL_SOCKET_IFNAME") != nullptr) spec = std::getenv("NCCL_SOCKET_IFNAME");
  return spec;
}

}  // namespace megascale::topology
