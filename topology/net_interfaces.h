// Network interfaces for transports and the NCCL net plugin: which ones are up with an IPv4 address, their
// speed, MTU and PCI path from sysfs, filtered by a selection in NCCL_SOCKET_IFNAME's syntax.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace megascale::topology {

struct NetInterface {
  std::string name;      // "eth0"
  std::string ipv4;      // "10.0.0.5"
  int speed_mbps = 0;    // /sys/class/net/<name>/speed; 0 when the device does not say (virtual, loopback)
  int mtu = 0;
  std::string pci_path;  // realpath of /sys/class/net/<name>/device; "" for virtual devices
  bool loopback = false;
};

/// Whether `name` is selected by `spec`: a comma-separated list of name prefixes ("eth,ib"), "=name" for an
/// exact name, and a leading "^" that turns the whole list into exclusions ("^docker,lo"). An empty spec
/// selects everything except loopback, docker* and virbr* (discoverInterfaces falls back to loopback when
/// nothing else is up).
bool interfaceSelected(const std::string& name, const std::string& spec);

/// The interfaces that are up, have an IPv4 address and are selected by `spec`, in the kernel's order.
/// With an empty spec and no other interface, the loopback interface.
std::vector<NetInterface> discoverInterfaces(const std::string& spec);

/// The selection users configure: MEGASCALE_NET_IF, else NCCL_SOCKET_IFNAME, else "" (the default).
std::string configuredInterfaceSpec();

}  // namespace megascale::topology
