// Which port a rank takes: the nearest its GPU by the PCI tree (a dual-socket 8-GPU, 8-NIC server's sysfs
// paths), else those on its CPUs' NUMA nodes, ties spread by local rank; and the sysfs readers on this machine.
#include "transport/ibverbs/nic_locality.h"

#include <gtest/gtest.h>

namespace megascale::transport {
namespace {

// Socket 0: root complex pci0000:00 (NUMA 0) with two PCIe switches behind root ports 01.0 and 02.0, each
// holding a GPU and a NIC; root complex pci0000:20 (NUMA 0 too) with a NIC alone. Socket 1: pci0000:80 (NUMA 1).
const std::string kGpuA = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
const std::string kNicA = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0";
const std::string kNicB = "/sys/devices/pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:01.0/0000:14:00.0";
const std::string kNicC = "/sys/devices/pci0000:20/0000:20:01.0/0000:21:00.0";
const std::string kNicD = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";

TEST(PciDistance, FollowsThePciTree) {
  EXPECT_EQ(pciDistance(kGpuA, 0, kNicA, 0), PciDistance::kSwitch);
  EXPECT_EQ(pciDistance(kGpuA, 0, kNicB, 0), PciDistance::kHostBridge);
  EXPECT_EQ(pciDistance(kGpuA, 0, kNicC, 0), PciDistance::kNumaNode);
  EXPECT_EQ(pciDistance(kGpuA, 0, kNicD, 1), PciDistance::kSystem);
  EXPECT_EQ(pciDistance(kGpuA, 0, kNicC, -1), PciDistance::kSystem) << "unknown NUMA nodes are not assumed equal";
  EXPECT_EQ(pciDistance(kGpuA, 0, "", -1), PciDistance::kUnknown);
  EXPECT_EQ(pciDistance("/megascale-emulated/emroce0", -1, kNicA, 0), PciDistance::kUnknown);
  EXPECT_EQ(pciDistance(kNicA, 0, kNicA, 0), PciDistance::kSwitch) << "the same function";
}

TEST(ChoosePort, TheNearestTheGpuWins) {
  const std::vector<PortLocality> ports = {{kNicD, 1}, {kNicC, 0}, {kNicB, 0}, {kNicA, 0}};
  RankLocality rank;
  rank.gpu_pci_path = kGpuA;
  rank.gpu_numa_node = 0;
  rank.local_rank = 5;  // no spreading away from the one nearest NIC
  const PortChoice choice = choosePort(ports, rank);
  EXPECT_EQ(choice.index, 3u);
  EXPECT_NE(choice.basis.find("nearest its GPU (PIX/PXB"), std::string::npos) << choice.basis;
  EXPECT_NE(choice.basis.find("1 of 1"), std::string::npos) << choice.basis;
}

TEST(ChoosePort, PortsOfOneNicUnderTheGpusSwitchShareTheRanks) {
  const std::vector<PortLocality> ports = {{kNicA, 0}, {kNicA, 0}, {kNicD, 1}};  // a dual-port NIC, and one far
  RankLocality rank;
  rank.gpu_pci_path = kGpuA;
  rank.gpu_numa_node = 0;
  rank.local_rank = 0;
  EXPECT_EQ(choosePort(ports, rank).index, 0u);
  rank.local_rank = 1;
  EXPECT_EQ(choosePort(ports, rank).index, 1u);
  rank.local_rank = 2;
  EXPECT_EQ(choosePort(ports, rank).index, 0u);
}

TEST(ChoosePort, WithoutAGpuThePortsOnItsNumaNode) {
  const std::vector<PortLocality> ports = {{kNicA, 0}, {kNicD, 1}, {kNicC, 0}, {"", -1}};
  RankLocality rank;
  rank.cpu_numa_nodes = {1};
  rank.local_rank = 3;
  EXPECT_EQ(choosePort(ports, rank).index, 1u);
  rank.cpu_numa_nodes = {0};
  rank.local_rank = 0;
  EXPECT_EQ(choosePort(ports, rank).index, 0u);
  rank.local_rank = 1;
  const PortChoice second = choosePort(ports, rank);
  EXPECT_EQ(second.index, 2u);
  EXPECT_NE(second.basis.find("on the NUMA node of its CPUs, 2 of 2"), std::string::npos) << second.basis;
}

TEST(ChoosePort, WithNoLocalityLocalRanksSpreadOverEveryPort) {
  // The emulated device (no PCI path), or an unbound process on a machine whose every port is equally near.
  const std::vector<PortLocality> ports = {{"", -1}, {"", -1}, {"", -1}};
  RankLocality rank;
  rank.cpu_numa_nodes = {0};
  for (int local_rank = 0; local_rank < 6; ++local_rank) {
    rank.local_rank = local_rank;
    EXPECT_EQ(choosePort(ports, rank).index, static_cast<size_t>(local_rank % 3));
  }
  rank.local_rank = -1;
  const PortChoice first = choosePort(ports, rank);
  EXPECT_EQ(first.index, 0u);
  EXPECT_NE(first.basis.find("no nearer port"), std::string::npos) << first.basis;
  rank.gpu_pci_path = kGpuA;  // a GPU, but no port with a PCI path: the same spread
  rank.local_rank = 2;
  EXPECT_EQ(choosePort(ports, rank).index, 2u);
}

TEST(ChoosePorts, RanksOwningSeveralNicsTakeConsecutiveRunsOfTheEquallyNear) {
  // Four ports on no known locality, two ranks with two NICs each: rank 0 takes ports 0 and 1, rank 1 ports 2, 3.
  const std::vector<PortLocality> ports(4, PortLocality{"", -1});
  RankLocality rank;
  rank.local_rank = 0;
  EXPECT_EQ(choosePorts(ports, rank, 2).indices, (std::vector<size_t>{0, 1}));
  rank.local_rank = 1;
  const PortChoice second = choosePorts(ports, rank, 2);
  EXPECT_EQ(second.indices, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(second.index, 2u);
  EXPECT_NE(second.basis.find("2 ports a rank"), std::string::npos) << second.basis;
  EXPECT_EQ(choosePorts(ports, rank, 9).indices.size(), 4u) << "never more than the host has";
  EXPECT_EQ(choosePorts(ports, rank, 0).indices.size(), 1u) << "at least one";
}

TEST(ChoosePorts, TheNearestFirstThenTheOthers) {
  // The GPU shares a switch with NIC A alone: a rank owning two NICs takes A, then the next in port order.
  const std::vector<PortLocality> ports = {{kNicD, 1}, {kNicC, 0}, {kNicB, 0}, {kNicA, 0}};
  RankLocality rank;
  rank.gpu_pci_path = kGpuA;
  rank.gpu_numa_node = 0;
  rank.local_rank = 0;
  EXPECT_EQ(choosePorts(ports, rank, 2).indices, (std::vector<size_t>{3, 0}));
}

TEST(NicLocality, ReadsThisMachinesSysfs) {
  const std::vector<int> nodes = allowedNumaNodes();
  for (int node : nodes) EXPECT_GE(node, 0);
  EXPECT_EQ(numaNodeOfPciPath(""), -1);
  EXPECT_EQ(numaNodeOfPciPath("/nonexistent/pci0000:00/0000:00:01.0"), -1);
  EXPECT_EQ(pciPathOfBusId("0000:ff:1f.7-not-a-device"), "");
  // Uppercase and an 8-digit domain (as drivers print them) name the same function as sysfs's spelling.
  const std::string host_bridge = pciPathOfBusId("0000:00:00.0");
  if (!host_bridge.empty()) {
    EXPECT_EQ(pciPathOfBusId("00000000:00:00.0"), host_bridge);
    EXPECT_NE(host_bridge.find("/sys/devices/pci"), std::string::npos) << host_bridge;
  }
}

}  // namespace
}  // namespace megascale::transport
