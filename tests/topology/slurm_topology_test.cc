#include "topology/slurm_topology.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace megascale::topology {
namespace {

// Two rails, two ToR pairs under one spine: hosts n0-n1 under tor0a/tor0b, n2-n3 under tor1a/tor1b.
constexpr const char* kRailOptimized = R"(# a rail-optimized pod
SwitchName=tor0a Nodes=n[0-1] LinkSpeed=200
SwitchName=tor0b Nodes=n[0-1]
SwitchName=tor1a Nodes=n[2-3]
switchname=tor1b nodes=n[2-3]   # keys are case-insensitive
SwitchName=spine \
    Switches=tor[0-1]a,tor[0-1]b
)";

TEST(SlurmTopology, ParsesSwitchesHostsAndRails) {
  const Cluster c = parseSlurmTopology(kRailOptimized);
  ASSERT_EQ(c.switches.size(), 5u);
  ASSERT_EQ(c.hosts.size(), 4u);
  EXPECT_EQ(c.railCount(), 2);
  const Host& n2 = c.hosts[static_cast<size_t>(c.findHost("n2"))];
  ASSERT_EQ(n2.leaf_switches.size(), 2u);
  EXPECT_EQ(c.switches[static_cast<size_t>(n2.leaf_switches[0])].name, "tor1a");
  EXPECT_EQ(c.switches[static_cast<size_t>(n2.leaf_switches[1])].name, "tor1b");
  EXPECT_EQ(c.switches[static_cast<size_t>(c.findSwitch("tor1b"))].rail, 1);
  EXPECT_EQ(c.switches[static_cast<size_t>(c.findSwitch("spine"))].rail, -1);
  EXPECT_EQ(c.switches[static_cast<size_t>(c.findSwitch("tor0a"))].link_speed, "200");
  EXPECT_EQ(c.switches[static_cast<size_t>(c.findSwitch("tor1a"))].parent, c.findSwitch("spine"));
}

TEST(SlurmTopology, DistanceCountsLinksThroughTheFirstCommonSwitch) {
  const Cluster c = parseSlurmTopology(kRailOptimized);
  const int n0 = c.findHost("n0"), n1 = c.findHost("n1"), n3 = c.findHost("n3");
  EXPECT_EQ(c.distance(n0, n0, 0), 0);
  EXPECT_EQ(c.distance(n0, n1, 0), 2);
  EXPECT_EQ(c.distance(n0, n3, 1), 4);
  EXPECT_EQ(c.distance(n0, n3, 2), -1);  // no third rail
  const Cluster islands = parseSlurmTopology("SwitchName=a Nodes=x\nSwitchName=b Nodes=y\n");
  EXPECT_EQ(islands.distance(0, 1, 0), -1);
}

TEST(SlurmTopology, WritesWhatItReads) {
  const Cluster c = parseSlurmTopology(kRailOptimized);
  const Cluster again = parseSlurmTopology(toSlurmTopology(c));
  EXPECT_EQ(toSlurmTopology(again), toSlurmTopology(c));
  EXPECT_EQ(again.describe(), c.describe());
}

TEST(SlurmTopology, DescribesTheTreeAndEveryHostsRails) {
  const std::string text = parseSlurmTopology(kRailOptimized).describe();
  EXPECT_NE(text.find("cluster: 4 hosts, 2 rails, 5 switches"), std::string::npos) << text;
  EXPECT_NE(text.find("  switch spine\n    switch tor0a (rail 0) link 200: hosts n0 n1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  host n3: ranks none\n    rail 0: switch tor1a\n    rail 1: switch tor1b\n"), std::string::npos)
      << text;
}

void expectRefused(const std::string& text, const std::string& expected) {
  try {
    parseSlurmTopology(text, "cluster.conf");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("cluster.conf", 0), 0u) << e.what();
  }
}

TEST(SlurmTopology, RefusesBadFilesNamingTheLine) {
  expectRefused("SwitchName=a Nodes=x\nSwitchName=a Nodes=y\n", "cluster.conf:2: switch a is defined twice");
  expectRefused("SwitchName=a Nodes=x Color=red\n", "cluster.conf:1: unknown key 'Color'");
  expectRefused("Nodes=x\n", "without SwitchName");
  expectRefused("SwitchName=a\n", "exactly one of Nodes= and Switches=");
  expectRefused("SwitchName=a Nodes=x Switches=b\nSwitchName=b Nodes=y\n", "exactly one of");
  expectRefused("SwitchName=s Switches=t\n", "lists 't', which is no switch");
  expectRefused("SwitchName=a Nodes=x\nSwitchName=p Switches=a\nSwitchName=q Switches=a\n", "under both p and q");
  expectRefused("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "in a cycle");
  expectRefused("SwitchName=a Nodes=x,x\n", "lists host x twice");
  expectRefused("SwitchName=a Nodes=x\nSwitchName=b Nodes=x,y\n", "leaf switch b is rail 1 of host x but rail 0 of host y");
  expectRefused("SwitchName=a Nodes=n[1-\n", "hostlist 'n[1-'");
  expectRefused("SwitchName a\n", "expected Key=Value");
  EXPECT_THROW(loadSlurmTopology("/nonexistent/topology.conf"), std::runtime_error);
}

}  // namespace
}  // namespace megascale::topology
