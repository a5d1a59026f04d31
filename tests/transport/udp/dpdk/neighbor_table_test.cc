#include "transport/udp/dpdk/neighbor_table.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace megascale::transport {
namespace {

TEST(NeighborTable, LearnsCompleteKernelEntriesOfItsInterfaceOnly) {
  const std::string proc_net_arp =
      "IP address       HW type     Flags       HW address            Mask     Device\n"
      "10.214.0.2       0x1         0x2         8e:8c:0d:21:94:42     *        rail0\n"
      "10.214.0.3       0x1         0x0         00:00:00:00:00:00     *        rail0\n"  // incomplete
      "10.215.0.2       0x1         0x2         aa:bb:cc:dd:ee:ff     *        rail1\n"
      "garbage line\n";
  NeighborTable table;
  EXPECT_EQ(table.learnFromKernel(proc_net_arp, "rail0"), 1);
  ASSERT_TRUE(table.find(inet_addr("10.214.0.2")));
  EXPECT_EQ(*table.find(inet_addr("10.214.0.2")), (udp_frame::Mac{0x8e, 0x8c, 0x0d, 0x21, 0x94, 0x42}));
  EXPECT_FALSE(table.find(inet_addr("10.214.0.3")));
  EXPECT_FALSE(table.find(inet_addr("10.215.0.2"))) << "another interface's neighbor";
}

TEST(NeighborTable, AsksForAnUnknownAddressAtMostOncePerIntervalUntilItIsLearned) {
  NeighborTable table(100);
  const uint32_t peer = inet_addr("10.0.0.9");
  EXPECT_TRUE(table.shouldAsk(peer, 1000));
  EXPECT_FALSE(table.shouldAsk(peer, 1050));
  EXPECT_TRUE(table.shouldAsk(peer, 1100));
  table.learn(peer, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(table.find(peer));
}

}  // namespace
}  // namespace megascale::transport
