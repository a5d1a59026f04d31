#include "topology/net_interfaces.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace megascale::topology
