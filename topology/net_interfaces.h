// Network interfaces for transports and the NCCL net plugin: which ones are up with an IPv4 address, their
// speed, MTU and PCI path from sysfs, filtered by a selection in NCCL_SOCKET_IFNAME's syntax.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ipv4_interfaces.h"

namespace megascale::topology {

struct NetInterface {
  std::string name;      // "eth0"
  std::string ipv4;      // "10.0.0.5"
  int prefix_length = 32;  // of the IPv4 netmask: 24 for 255.255.255.0
  int speed_mbps = 0;    // /sys/class/net/<name>/speed; 0 when the device does not say (virtual, loopback)
  int mtu = 0;
  std::string pci_path;  // sysfs path of the NIC's PCI function (/sys/devices/pci0000:00/0000:00:03.0); "" if virtual
  uint64_t guid = 0;     // the MAC address as a number (ports of one NIC, e.g. VLANs, share it); 0 if none
  int numa_node = -1;    // NUMA node of the PCI function; -1 when unknown
  double pci_link_gbps = 0;   // PCIe link bandwidth in GB/s, from hwloc when built with it; 0 when unknown
  std::string locality_source;  // "hwloc" or "sysfs": who supplied pci_path / numa_node
  bool loopback = false;
};

/// "02:fc:00:00:00:01" -> 0x02fc00000001; 0 for anything that is not six hex pairs.
uint64_t guidFromMac(const std::string& mac);

/// The PCI function a sysfs device path belongs to: the path cut after its last "dddd:bb:dd.f" component
/// (a virtio NIC's device link ends in .../0000:00:03.0/virtio2). "" when no component is a PCI address.
std::string pciFunctionPath(const std::string& device_path);

/// The selection syntax of NCCL_SOCKET_IFNAME (common/ipv4_interfaces.h).
using ::megascale::interfaceSelected;

/// The interfaces that are up, have an IPv4 address and are selected by `spec`, in the kernel's order.
/// With an empty spec and no other interface, the loopback interface.
std::vector<NetInterface> discoverInterfaces(const std::string& spec);

/// The selection users configure: MEGASCALE_NET_IF, else NCCL_SOCKET_IFNAME, else "" (the default).
std::string configuredInterfaceSpec();

}  // namespace megascale::topology
