#include "topology/hwloc_locality.h"

#ifdef MEGASCALE_WITH_HWLOC
#include <hwloc.h>

#include <cstdio>
#include <mutex>
#endif

namespace megascale::topology {

#ifdef MEGASCALE_WITH_HWLOC

namespace {

// One topology per process: loading it walks all of sysfs (tens of milliseconds).
class Topology {
 public:
  Topology() {
    if (hwloc_topology_init(&topology_) != 0) return;
    hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    // PCI comes from hwloc's Linux backend (sysfs); its libpciaccess component repeats that work and leaks at
    // exit (LeakSanitizer reports it).
    hwloc_topology_set_components(topology_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
    loaded_ = hwloc_topology_load(topology_) == 0;
  }
  ~Topology() { hwloc_topology_destroy(topology_); }
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  bool find(const std::string& name, NicLocality* out) {
    std::lock_guard lock(mutex_);
    if (!loaded_) return false;
    for (hwloc_obj_t dev = hwloc_get_next_osdev(topology_, nullptr); dev != nullptr;
         dev = hwloc_get_next_osdev(topology_, dev)) {
      if (dev->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || dev->name == nullptr || name != dev->name) continue;
      NicLocality l;
      hwloc_obj_t pci = dev->parent;
      while (pci != nullptr && pci->type != HWLOC_OBJ_PCI_DEVICE) pci = pci->parent;
      if (pci != nullptr) {
        char bus_id[16];
        std::snprintf(bus_id, sizeof(bus_id), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                      pci->attr->pcidev.dev, pci->attr->pcidev.func);
        l.pci_bus_id = bus_id;
        l.pci_link_gbps = pci->attr->pcidev.linkspeed;
      }
      hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topology_, dev);
      // A NIC attached below one NUMA node's package: that node; the whole machine's nodeset means unknown.
      if (cpu_side != nullptr && cpu_side->nodeset != nullptr && hwloc_bitmap_weight(cpu_side->nodeset) == 1) {
        l.numa_node = hwloc_bitmap_first(cpu_side->nodeset);
      }
      *out = l;
      return true;
    }
    return false;
  }

 private:
  std::mutex mutex_;
  hwloc_topology_t topology_ = nullptr;
  bool loaded_ = false;
};

}  // namespace

bool hwlocAvailable() { return true; }

bool hwlocLocality(const std::string& name, NicLocality* out) {
  static Topology topology;
  return topology.find(name, out);
}

#else

bool hwlocAvailable() { return false; }
bool hwlocLocality(const std::string&, NicLocality*) { return false; }

#endif

}  // namespace megascale::topology
