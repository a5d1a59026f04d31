#include "topology/host_record.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <stdexcept>

#include "topology/slurm_topology.h"

namespace megascale::topology {
namespace {

HostRecord record(const std::string& host, int rank, int rails) {
  HostRecord r{host, rank, {}};
  for (int i = 0; i < rails; ++i) r.nics.push_back(Nic{"r" + std::to_string(i), i, 10000, "10.0." + std::to_string(i) + ".1"});
  return r;
}

TEST(HostRecord, RoundTripsThroughItsEncoding) {
  HostRecord r = record("n7", 13, 2);
  r.nics[1].address.clear();
  r.nics[1].speed_mbps = 0;
  const HostRecord back = decodeHostRecord(encodeHostRecord(r), "test");
  EXPECT_EQ(back.host, "n7");
  EXPECT_EQ(back.rank, 13);
  ASSERT_EQ(back.nics.size(), 2u);
  EXPECT_EQ(back.nics[0].name, "r0");
  EXPECT_EQ(back.nics[0].address, "10.0.0.1");
  EXPECT_EQ(back.nics[0].speed_mbps, 10000);
  EXPECT_EQ(back.nics[1].rail, 1);
  EXPECT_EQ(back.nics[1].address, "");
}

TEST(HostRecord, RefusesHostileBytesNamingTheSender) {
  const std::string head = "megascale-host-record 1\n";
  std::string many = head + "host a\nrank 0\n";
  for (int i = 0; i < 65; ++i) many += "nic e" + std::to_string(i) + " 1 -\n";
  for (const std::string& bad :
       {std::string("garbage"), head + "host a\n", head + "rank 1\n", head + "host a b\nrank 1\n",
        head + "host a\nrank -1\n", head + "host a\nrank 99999999999\n", head + "host a\nrank 1\nnic e0 fast -\n",
        head + "host a\nrank 1\nnic e0 1 - extra\n", head + "host a\nhost b\nrank 1\n", head + "host \x01\nrank 1\n",
        head + "host a\nrank 1\nwhat\n", many}) {
    try {
      decodeHostRecord(bad, "rank 5");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("host record from rank 5: ", 0), 0u) << e.what();
    }
  }
}

TEST(HostRecord, MergesRanksIntoTheFilesHostsAndAppendsUnknownHosts) {
  Cluster c = parseSlurmTopology("SwitchName=tor Nodes=a,b\n");
  mergeHostRecords(c, {record("b", 2, 1), record("a", 0, 1), record("b", 3, 1), record("a", 1, 1), record("z", 4, 1)});
  ASSERT_EQ(c.hosts.size(), 3u);
  EXPECT_EQ(c.hosts[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.hosts[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(c.hosts[2].name, "z");
  EXPECT_TRUE(c.hosts[2].leaf_switches.empty());
  EXPECT_EQ(c.hostOfRanks(6), (std::vector<int>{0, 0, 1, 1, 2, -1}));
  EXPECT_NE(c.describe().find("host z: ranks 4\n    rail 0: r0 10.0.0.1 10000 Mbit/s switch (not in the topology file)"),
            std::string::npos)
      << c.describe();
}

TEST(HostRecord, RefusesRanksOfOneHostThatDisagree) {
  Cluster c;
  EXPECT_THROW(mergeHostRecords(c, {record("a", 0, 1), record("a", 1, 2)}), std::invalid_argument);
  Cluster twice;
  EXPECT_THROW(mergeHostRecords(twice, {record("a", 0, 1), record("b", 0, 1)}), std::invalid_argument);
}

TEST(HostRecord, DiscoversThisHostUnderTheConfiguredName) {
  setenv("MEGASCALE_HOST_NAME", "emulated-7", 1);
  const HostRecord mine = discoverHostRecord(3, "");
  unsetenv("MEGASCALE_HOST_NAME");
  EXPECT_EQ(mine.host, "emulated-7");
  EXPECT_EQ(mine.rank, 3);
  ASSERT_FALSE(mine.nics.empty());  // loopback at least
  for (size_t i = 0; i < mine.nics.size(); ++i) EXPECT_EQ(mine.nics[i].rail, static_cast<int>(i));
  EXPECT_EQ(decodeHostRecord(encodeHostRecord(mine), "self").nics.size(), mine.nics.size());
  EXPECT_NE(thisHostName(), "emulated-7");
}

}  // namespace
}  // namespace megascale::topology
