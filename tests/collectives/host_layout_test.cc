// Host layouts derived from the cluster model: the launcher's blocks, the hosts ranks report, a topology file's
// hosts with the ranks placed on them, and a group's layout from its parent's.
#include "collectives/host_layout.h"

#include <gtest/gtest.h>

#include "common/status.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

TEST(HostLayout, FromAClusterHostsNumberedByTheirLowestRankRanksInOrder) {
  topology::Cluster cluster;
  cluster.hosts.push_back(topology::Host{"n0", {}, {3, 1}, {}});  // ranks as a placement listed them
  cluster.hosts.push_back(topology::Host{"n1", {}, {0, 2}, {}});
  cluster.hosts.push_back(topology::Host{"spare", {}, {}, {}});  // no rank: not a host of the layout
  const HostLayout layout = HostLayout::fromCluster(cluster, 4);
  EXPECT_EQ(layout.hosts(), 2);
  EXPECT_EQ(layout.host_of, (std::vector<int>{0, 1, 0, 1}));  // n1 holds rank 0: host 0
  EXPECT_EQ(layout.local_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(layout.ranks_of, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_TRUE(layout.hierarchical());
}

TEST(HostLayout, ARankNoHostHoldsIsNamed) {
  const topology::Cluster cluster = topology::Cluster::blocks(2, 2);
  try {
    (void)HostLayout::fromCluster(cluster, 5);
    FAIL() << "rank 4 has no host";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("rank 4 of 5 on no host"), std::string::npos) << e.what();
  }
}

TEST(HostLayout, BlocksAndHostKeysGoThroughTheClusterModel) {
  const topology::Cluster blocks = topology::Cluster::blocks(3, 2);
  ASSERT_EQ(blocks.hosts.size(), 3u);
  EXPECT_EQ(blocks.hosts[2].name, "host2");
  EXPECT_EQ(blocks.hosts[2].ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(HostLayout::blocks(3, 2).ranks_of, HostLayout::fromCluster(blocks, 6).ranks_of);
  const topology::Cluster reported = topology::Cluster::fromHostKeys({0xb, 0xa, 0xb, 0xa, 0xc});
  ASSERT_EQ(reported.hosts.size(), 3u);
  EXPECT_EQ(reported.hosts[0].name, "000000000000000b");
  EXPECT_EQ(reported.hosts[1].ranks, (std::vector<int>{1, 3}));
  const HostLayout layout = HostLayout::fromKeys({0xb, 0xa, 0xb, 0xa, 0xc});
  EXPECT_EQ(layout.ranks_of, (std::vector<std::vector<int>>{{0, 2}, {1, 3}, {4}}));
  EXPECT_EQ(layout.minRanksPerHost(), 1);
}

// Megatron's groups over 4 hosts of 2: a TP pair stays on its host, a DP group of every other rank spans the
// hosts with one rank each, and the layout says so without any exchange.
TEST(HostLayout, AGroupsLayoutFollowsFromItsParents) {
  const HostLayout world = HostLayout::blocks(4, 2);
  const HostLayout tp = HostLayout::ofMembers(world, [](int i) { return 4 + i; }, 2);
  EXPECT_EQ(tp.hosts(), 1);
  EXPECT_EQ(tp.ranks_of, (std::vector<std::vector<int>>{{0, 1}}));
  const HostLayout dp = HostLayout::ofMembers(world, [](int i) { return 1 + 2 * i; }, 4);
  EXPECT_EQ(dp.hosts(), 4);
  EXPECT_FALSE(dp.hierarchical());
  const HostLayout pair = HostLayout::ofMembers(world, [](int i) { return i * 3; }, 3);  // ranks 0, 3, 6
  EXPECT_EQ(pair.host_of, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace megascale
