#include "transport/ibverbs/nic_locality.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace megascale::transport {

namespace {

// The path's components from the root complex down: "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0" ->
// {"pci0000:00", "0000:00:01.0", "0000:01:00.0"}. Empty when no component names a root complex.
std::vector<std::string> pciComponents(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  bool rooted = false;
  for (std::string part; std::getline(in, part, '/');) {
    if (!rooted && part.rfind("pci", 0) == 0) rooted = true;
    if (rooted && !part.empty()) parts.push_back(part);
  }
  return parts;
}

// The CPUs of a sysfs cpulist ("0-3,8,10-11") contain one of `allowed`.
bool listHasAllowedCpu(const std::string& list, const cpu_set_t& allowed) {
  std::stringstream in(list);
  for (std::string range; std::getline(in, range, ',');) {
    int first = -1, last = -1;
    const size_t dash = range.find('-');
    try {
      first = std::stoi(range.substr(0, dash));
      last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
    } catch (const std::exception&) {
      continue;
    }
    for (int cpu = std::max(first, 0); cpu <= last && cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) return true;
    }
  }
  return false;
}

}  // namespace

const char* pciDistanceName(PciDistance d) {
  switch (d) {
    case PciDistance::kSwitch: return "PIX/PXB: one PCIe switch";
    case PciDistance::kHostBridge: return "PHB: one host bridge";
    case PciDistance::kNumaNode: return "NODE: one NUMA node";
    case PciDistance::kSystem: return "SYS: across NUMA nodes";
    case PciDistance::kUnknown: break;
  }
  return "unknown";
}

PciDistance pciDistance(const std::string& a_path, int a_numa, const std::string& b_path, int b_numa) {
  const std::vector<std::string> a = pciComponents(a_path), b = pciComponents(b_path);
  if (a.empty() || b.empty()) return PciDistance::kUnknown;
  if (a[0] != b[0]) {
    return a_numa >= 0 && a_numa == b_numa ? PciDistance::kNumaNode : PciDistance::kSystem;
  }
  // Below the root complex: a shared root port, switch or bridge (or the same function).
  return a.size() > 1 && b.size() > 1 && a[1] == b[1] ? PciDistance::kSwitch : PciDistance::kHostBridge;
}

PortChoice choosePorts(const std::vector<PortLocality>& ports, const RankLocality& rank, size_t count) {
  count = std::clamp<size_t>(count, 1, ports.size());
  std::vector<size_t> tied;
  std::string basis;
  if (!rank.gpu_pci_path.empty()) {
    PciDistance best = PciDistance::kUnknown;
    for (const PortLocality& p : ports) {
      best = std::min(best, pciDistance(rank.gpu_pci_path, rank.gpu_numa_node, p.pci_path, p.numa_node));
    }
    if (best != PciDistance::kUnknown) {
      for (size_t i = 0; i < ports.size(); ++i) {
        if (pciDistance(rank.gpu_pci_path, rank.gpu_numa_node, ports[i].pci_path, ports[i].numa_node) == best) {
          tied.push_back(i);
        }
      }
      basis = std::string("nearest its GPU (") + pciDistanceName(best) + ")";
    }
  }
  if (tied.empty() && !rank.cpu_numa_nodes.empty()) {
    for (size_t i = 0; i < ports.size(); ++i) {
      const auto& nodes = rank.cpu_numa_nodes;
      if (std::find(nodes.begin(), nodes.end(), ports[i].numa_node) != nodes.end()) tied.push_back(i);
    }
    if (tied.size() == ports.size()) tied.clear();  // all equally near: nothing to go by
    if (!tied.empty()) basis = "on the NUMA node of its CPUs";
  }
  if (tied.empty()) {
    for (size_t i = 0; i < ports.size(); ++i) tied.push_back(i);
    basis = "no nearer port";
  }
  const size_t spread = rank.local_rank >= 0 ? static_cast<size_t>(rank.local_rank) * count % tied.size() : 0;
  PortChoice choice;
  for (size_t k = 0; k < tied.size() && choice.indices.size() < count; ++k) {
    choice.indices.push_back(tied[(spread + k) % tied.size()]);
  }
  for (size_t i = 0; i < ports.size() && choice.indices.size() < count; ++i) {
    if (std::find(tied.begin(), tied.end(), i) == tied.end()) choice.indices.push_back(i);  // then the others
  }
  choice.index = choice.indices.front();
  choice.basis = basis + ", " + std::to_string(spread + 1) + " of " + std::to_string(tied.size()) +
                 " equally near by local rank";
  if (count > 1) choice.basis += ", " + std::to_string(count) + " ports a rank";
  return choice;
}

PortChoice choosePort(const std::vector<PortLocality>& ports, const RankLocality& rank) {
  return choosePorts(ports, rank, 1);
}

int numaNodeOfPciPath(const std::string& pci_path) {
  if (pci_path.empty()) return -1;
  std::ifstream in(pci_path + "/numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  return node;
}

std::vector<int> allowedNumaNodes() {
  std::vector<int> nodes;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return nodes;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    std::ifstream in(entry.path() / "cpulist");
    std::string list;
    std::getline(in, list);
    if (listHasAllowedCpu(list, allowed)) nodes.push_back(std::atoi(name.c_str() + 4));
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

std::string pciPathOfBusId(const std::string& bus_id) {
  std::string id;
  for (char c : bus_id) id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // NVML and some drivers give an 8-digit domain ("00000000:3b:00.0"); sysfs names it with 4.
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  char resolved[PATH_MAX];
  if (id.empty() || realpath(("/sys/bus/pci/devices/" + id).c_str(), resolved) == nullptr) return "";
  return resolved;
}

}  // namespace megascale::transport
