// Where a NIC sits, from hwloc when megascale is built with it: its PCI function, NUMA node and PCIe link
// bandwidth. discoverInterfaces() prefers this over its own sysfs reading; without hwloc it returns false.
#pragma once

#include <string>

namespace megascale::topology {

struct NicLocality {
  std::string pci_bus_id;  // "0000:00:03.0"
  int numa_node = -1;
  double pci_link_gbps = 0;
};

/// Whether hwloc is compiled in (MEGASCALE_WITH_HWLOC).
bool hwlocAvailable();

/// The locality of network interface `name` as hwloc sees it; false when hwloc is not built in, its topology
/// cannot be loaded, or it has no such network device (virtual interfaces have none).
bool hwlocLocality(const std::string& name, NicLocality* out);

}  // namespace megascale::topology
