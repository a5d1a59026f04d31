#include "topology/hwloc_locality.h"
#include "topology/net_interfaces.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace megascale::topology {
namespace {

TEST(InterfaceSelection, FollowsNcclSocketIfnameSyntax) {
  EXPECT_TRUE(interfaceSelected("eth0", "eth"));
  EXPECT_TRUE(interfaceSelected("ib1", "eth,ib"));
  EXPECT_FALSE(interfaceSelected("enp3s0", "eth,ib"));
  EXPECT_TRUE(interfaceSelected("eth0", "=eth0"));
  EXPECT_FALSE(interfaceSelected("eth01", "=eth0"));
  EXPECT_FALSE(interfaceSelected("docker0", "^docker,lo"));
  EXPECT_TRUE(interfaceSelected("eth0", "^docker,lo"));
  EXPECT_FALSE(interfaceSelected("eth0", "^=eth0"));
  EXPECT_TRUE(interfaceSelected("eth00", "^=eth0"));
  // Default: everything but loopback and container bridges.
  EXPECT_TRUE(interfaceSelected("eth0", ""));
  EXPECT_FALSE(interfaceSelected("lo", ""));
  EXPECT_FALSE(interfaceSelected("docker0", ""));
  EXPECT_FALSE(interfaceSelected("virbr0", ""));
}

TEST(InterfaceDiscovery, FindsLoopbackWhenAskedAndNamesEachInterfaceOnce) {
  auto loopback = discoverInterfaces("=lo");
  ASSERT_EQ(loopback.size(), 1u);  // every Linux machine has lo up
  EXPECT_EQ(loopback[0].ipv4, "127.0.0.1");
  EXPECT_TRUE(loopback[0].loopback);
  EXPECT_EQ(loopback[0].pci_path, "");  // virtual
  EXPECT_GT(loopback[0].mtu, 0);
  auto all = discoverInterfaces("");
  ASSERT_FALSE(all.empty());  // the defaults fall back to loopback rather than nothing
  std::set<std::string> names;
  for (const auto& nic : all) {
    EXPECT_TRUE(names.insert(nic.name + "/" + nic.ipv4).second) << nic.name;
    EXPECT_FALSE(nic.ipv4.empty());
  }
  EXPECT_TRUE(discoverInterfaces("=no-such-interface").empty());
}

TEST(InterfaceDiscovery, GuidComesFromTheMacAddress) {
  EXPECT_EQ(guidFromMac("02:fc:00:00:00:01"), 0x02fc00000001ull);
  EXPECT_EQ(guidFromMac("ff:ff:ff:ff:ff:ff"), 0xffffffffffffull);
  EXPECT_EQ(guidFromMac(""), 0u);
  EXPECT_EQ(guidFromMac("02:fc:00:00:00"), 0u);
  EXPECT_EQ(guidFromMac("02-fc-00-00-00-01"), 0u);
  EXPECT_EQ(guidFromMac("0g:fc:00:00:00:01"), 0u);
}

TEST(InterfaceDiscovery, PciPathEndsAtThePciFunction) {
  EXPECT_EQ(pciFunctionPath("/sys/devices/pci0000:00/0000:00:03.0/virtio2"), "/sys/devices/pci0000:00/0000:00:03.0");
  EXPECT_EQ(pciFunctionPath("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.1"),
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.1");  // behind a bridge: the NIC's own function
  EXPECT_EQ(pciFunctionPath("/sys/devices/virtual/net/lo"), "");
  EXPECT_EQ(pciFunctionPath("/sys/devices/pci0000:00"), "");  // a root bus is not a function
}

// What the machine has: every interface's details agree with sysfs, read here independently.
TEST(InterfaceDiscovery, DetailsAgreeWithSysfs) {
  for (const auto& nic : discoverInterfaces("^")) {  // "^" excludes nothing: every interface that is up
    std::ifstream address("/sys/class/net/" + nic.name + "/address");
    std::string mac;
    address >> mac;
    EXPECT_EQ(nic.guid, guidFromMac(mac)) << nic.name;
    if (nic.pci_path.empty()) continue;  // virtual
    EXPECT_EQ(nic.pci_path.rfind("/sys/devices/", 0), 0u) << nic.pci_path;
    EXPECT_TRUE(std::filesystem::exists(nic.pci_path + "/vendor")) << nic.pci_path << " is not a PCI function";
    EXPECT_TRUE(nic.locality_source == "sysfs" || nic.locality_source == "hwloc") << nic.name;
    std::ifstream numa(nic.pci_path + "/numa_node");
    int node = -1;
    if (numa >> node && node >= 0) {
      EXPECT_EQ(nic.numa_node, node) << nic.name;
    }
  }
}

TEST(InterfaceDiscovery, HwlocFindsThePciFunctionSysfsFinds) {
  if (!hwlocAvailable()) GTEST_SKIP() << "built without hwloc [missing: libhwloc-dev]";
  for (const auto& nic : discoverInterfaces("^")) {
    NicLocality hw;
    const bool found = hwlocLocality(nic.name, &hw);
    if (nic.pci_path.empty()) continue;  // virtual: hwloc may or may not list it
    ASSERT_TRUE(found) << nic.name << " at " << nic.pci_path;
    EXPECT_TRUE(nic.pci_path.ends_with("/" + hw.pci_bus_id)) << nic.pci_path << " vs " << hw.pci_bus_id;
    EXPECT_EQ(nic.locality_source, "hwloc");
  }
  NicLocality none;
  EXPECT_FALSE(hwlocLocality("no-such-nic", &none));
}

}  // namespace
}  // namespace megascale::topology
