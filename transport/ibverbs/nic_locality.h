// Which of a host's RDMA ports a rank takes: the one nearest its GPU, else nearest the CPUs it may run on, as
// NCCL pairs each GPU with its closest NIC. Distance is the PCI tree's (the device paths in sysfs, the tree
// hwloc builds its PCI distances from): under one PCIe switch beats one host bridge beats one NUMA node beats
// the other socket. Ranks tied between equally near ports spread over them by local rank, so a host's ranks
// cover its rails when nothing says otherwise (the emulated device has no PCI path: every port ties).
#pragma once

#include <string>
#include <vector>

namespace megascale::transport {

enum class PciDistance {
  kSwitch = 0,      // share a PCIe switch or bridge below the host bridge (NCCL's PIX/PXB)
  kHostBridge = 1,  // share the root complex only (PHB)
  kNumaNode = 2,    // different root complexes, one NUMA node (NODE)
  kSystem = 3,      // across NUMA nodes / sockets (SYS)
  kUnknown = 4,     // a side without a PCI path (virtual or emulated NICs, no GPU)
};
const char* pciDistanceName(PciDistance d);

/// How far apart two PCI functions are, from their sysfs paths (/sys/devices/pci0000:00/0000:00:01.0/...) and
/// NUMA nodes (-1: unknown).
PciDistance pciDistance(const std::string& a_path, int a_numa, const std::string& b_path, int b_numa);

struct PortLocality {
  std::string pci_path;  // the NIC's PCI function in sysfs; empty when it has none
  int numa_node = -1;
};

/// Where the rank runs: its GPU's PCI function (empty without one) and the NUMA nodes of the CPUs it may run on.
struct RankLocality {
  std::string gpu_pci_path;
  int gpu_numa_node = -1;
  std::vector<int> cpu_numa_nodes;
  int local_rank = -1;  // -1: unknown (the first of the nearest)
};

struct PortChoice {
  size_t index = 0;             // into the candidates: the first of `indices`
  std::vector<size_t> indices;  // every port taken, nearest first
  std::string basis;            // why, for the INFO log: "nearest the GPU (PIX), 1 of 2 tied"
};

/// The port for this rank among `ports` (not empty): the nearest its GPU; without one, those on its CPUs' NUMA
/// nodes; ties (and no locality at all) spread by local rank.
PortChoice choosePort(const std::vector<PortLocality>& ports, const RankLocality& rank);

/// `count` ports for a rank that owns several NICs (at most all of them): the nearest, local ranks taking
/// consecutive runs of the equally near (rank r the ones from r x count on), then the others in port order.
PortChoice choosePorts(const std::vector<PortLocality>& ports, const RankLocality& rank, size_t count);

/// The NUMA node sysfs gives a PCI function (its numa_node file); -1 when unknown.
int numaNodeOfPciPath(const std::string& pci_path);

/// The NUMA nodes holding the CPUs this process may run on (sched_getaffinity and /sys/devices/system/node);
/// empty when the machine does not say.
std::vector<int> allowedNumaNodes();

/// The sysfs PCI function of a PCI bus id ("0000:3b:00.0", as cuDeviceGetPCIBusId gives it); empty if absent.
std::string pciPathOfBusId(const std::string& bus_id);

}  // namespace megascale::transport
