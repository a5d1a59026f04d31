// Which executor runs which host slot, first and after evictions, and where each slot's replica comes from.
#include "launcher/host_plan.h"

#include <gtest/gtest.h>

#include "topology/slurm_topology.h"

namespace megascale::launcher {
namespace {

TEST(HostPlan, ExecutorsFillSlotsInJoinOrderAfterThoseThatAskedForOne) {
  const HostPlan plan = firstPlan(3, {-1, 0, -1, -1});
  EXPECT_TRUE(plan.problem.empty());
  EXPECT_EQ(plan.slots, (std::vector<int>{1, 0, 2}));  // executor 3 is the spare
  EXPECT_EQ(plan.replica_sources, (std::vector<int>{-1, -1, -1}));
}

// Executors joined in an order that interleaves two ToRs; slots follow the switch tree instead, so consecutive
// slots (a data-parallel group's consecutive ranks) share a ToR; a host the file lacks comes last.
TEST(HostPlan, SlotsFollowTheSwitchTree) {
  const topology::Cluster cluster = topology::parseSlurmTopology(
      "SwitchName=tor0 Nodes=a,b\nSwitchName=tor1 Nodes=c,d\nSwitchName=spine Switches=tor0,tor1\n");
  const std::vector<std::string> joined = {"c", "a", "x", "d", "b"};
  const std::vector<int> order = topologyFillOrder(cluster, joined);
  EXPECT_EQ(order, (std::vector<int>{1, 4, 0, 3, 2}));  // a b c d, then x
  const HostPlan plan = firstPlan(4, {-1, -1, -1, -1, -1}, order);
  ASSERT_TRUE(plan.problem.empty()) << plan.problem;
  EXPECT_EQ(plan.slots, (std::vector<int>{1, 4, 0, 3}));  // x is the spare
  // An executor that asked for a slot keeps it; the order fills the rest.
  EXPECT_EQ(firstPlan(4, {-1, -1, -1, -1, 0}, order).slots, (std::vector<int>{4, 1, 0, 3}));
}

TEST(HostPlan, TwoExecutorsAskingForOneSlot) {
  const HostPlan plan = firstPlan(2, {1, 1});
  EXPECT_EQ(plan.slots, (std::vector<int>{1, 0}));
}

TEST(HostPlan, TooFewExecutorsIsAProblem) {
  const HostPlan plan = firstPlan(3, {-1, -1});
  EXPECT_NE(plan.problem.find("3 host slots need as many executors; 2 joined"), std::string::npos) << plan.problem;
}

TEST(HostPlan, ASpareTakesTheEvictedSlotWithTheNextSlotsReplica) {
  const HostPlan plan = replan({0, 1, 2}, {1}, {3, 4}, 8);
  ASSERT_TRUE(plan.problem.empty()) << plan.problem;
  EXPECT_EQ(plan.slots, (std::vector<int>{0, 3, 2}));
  EXPECT_EQ(plan.replica_sources, (std::vector<int>{-1, 2, -1}));
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0],
            "slot 1 (ranks 8-15): spare executor 3 replaces executor 1, with the checkpoints replicated to executor 2");
}

TEST(HostPlan, NeighboursEvictedTogetherLoseTheFirstOnesReplica) {
  const HostPlan plan = replan({0, 1, 2}, {1, 2}, {5, 6}, 1);
  ASSERT_TRUE(plan.problem.empty());
  EXPECT_EQ(plan.slots, (std::vector<int>{0, 5, 6}));
  EXPECT_EQ(plan.replica_sources, (std::vector<int>{-1, -1, 0}));  // slot 2's replica was on slot 0
  EXPECT_NE(plan.changes[0].find("without a replica in memory (disk is the fallback)"), std::string::npos);
}

TEST(HostPlan, AnEvictedSpareIsNotUsedAndNoSpareLeftIsAProblem) {
  const HostPlan plan = replan({0, 1}, {0, 3}, {3}, 2);
  EXPECT_EQ(plan.problem, "slot 0 (ranks 0-1) lost executor 0 and no spare host is left");
}

TEST(HostPlan, ReplicasGoToTheNextSlotAndNowhereForOneSlot) {
  EXPECT_EQ(replicaHolder({4, 7, 9}, 2), 4);
  EXPECT_EQ(replicaHolder({4, 7, 9}, 0), 7);
  EXPECT_EQ(replicaHolder({4}, 0), -1);
}

}  // namespace
}  // namespace megascale::launcher
