#include "topology/placement.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "topology/slurm_topology.h"

namespace megascale::topology {
namespace {

// The launcher numbered hosts a, c, b, d (2 ranks each), but a and b share a ToR, as do c and d.
Cluster interleavedCluster() {
  Cluster c = parseSlurmTopology("SwitchName=tor0 Nodes=a,b\nSwitchName=tor1 Nodes=c,d\nSwitchName=spine Switches=tor[0-1]\n");
  const char* launch_order[] = {"a", "c", "b", "d"};
  for (int i = 0; i < 4; ++i) {
    Host& h = c.hosts[static_cast<size_t>(c.findHost(launch_order[i]))];
    h.ranks = {2 * i, 2 * i + 1};
  }
  return c;
}

TEST(Placement, HostsUnderOneLeafSwitchComeTogether) {
  const Cluster c = interleavedCluster();
  std::vector<std::string> names;
  for (int h : hostOrder(c)) names.push_back(c.hosts[static_cast<size_t>(h)].name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(Placement, TensorGroupsStayOnAHostAndDataGroupsUnderAToR) {
  const Cluster c = interleavedCluster();
  const std::vector<int> order = parallelRankOrder(c, 8, 2);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 4, 5, 2, 3, 6, 7}));
  // tp2 x dp2 x pp2: position = tp + 2 * (dp + 2 * pp). Every TP pair is one host; every DP pair one ToR.
  const std::vector<int> host_of = c.hostOfRanks(8);
  for (int pp = 0; pp < 2; ++pp) {
    for (int dp = 0; dp < 2; ++dp) {
      const int first = 2 * (dp + 2 * pp);
      EXPECT_EQ(host_of[static_cast<size_t>(order[static_cast<size_t>(first)])],
                host_of[static_cast<size_t>(order[static_cast<size_t>(first + 1)])]);
    }
    for (int tp = 0; tp < 2; ++tp) {
      const int a = host_of[static_cast<size_t>(order[static_cast<size_t>(tp + 4 * pp)])];
      const int b = host_of[static_cast<size_t>(order[static_cast<size_t>(tp + 2 + 4 * pp)])];
      EXPECT_EQ(c.distance(a, b, 0), 2) << "DP peers should share a ToR";
    }
  }
}

TEST(Placement, HostsNoSwitchNamesFollowInTheirOrder) {
  Cluster c;
  for (const char* name : {"x", "y"}) c.hosts.push_back(Host{name, {}, {}, {}});
  c.hosts[0].ranks = {1};
  c.hosts[1].ranks = {0};
  EXPECT_EQ(parallelRankOrder(c, 2, 1), (std::vector<int>{1, 0}));
}

TEST(Placement, RefusesTensorGroupsThatStraddleHostsAndMissingRanks) {
  Cluster c = interleavedCluster();
  EXPECT_THROW(parallelRankOrder(c, 8, 3), std::invalid_argument);
  EXPECT_NO_THROW(parallelRankOrder(c, 8, 4));  // two whole hosts per group
  EXPECT_THROW(parallelRankOrder(c, 9, 1), std::invalid_argument);
  EXPECT_THROW(parallelRankOrder(c, 8, 0), std::invalid_argument);
  c.hosts[0].ranks.push_back(1);
  EXPECT_THROW(parallelRankOrder(c, 8, 1), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::topology
