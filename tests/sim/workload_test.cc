// Workload generators, the flow file, and the metrics that judge a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "congestion/line_rate.h"
#include "sim/metrics.h"
#include "sim/topology.h"
#include "sim/workload.h"

namespace megascale::sim {
namespace {

TEST(Workload, PermutationSendsAndReceivesOncePerHostNeverToItself) {
  const auto flows = permutation(64, 1000, 7);
  ASSERT_EQ(flows.size(), 64u);
  std::set<int> receivers;
  for (const auto& f : flows) {
    EXPECT_NE(f.src, f.dst);
    receivers.insert(f.dst);
  }
  EXPECT_EQ(receivers.size(), 64u);
  auto destinations = [](const std::vector<FlowSpec>& fs) {
    std::vector<int> d;
    for (const auto& f : fs) d.push_back(f.dst);
    return d;
  };
  EXPECT_NE(destinations(permutation(64, 1000, 8)), destinations(flows));  // another seed, another permutation
  EXPECT_EQ(destinations(permutation(64, 1000, 7)), destinations(flows));  // the same seed, the same one
}

TEST(Workload, IncastAndAllToAll) {
  EXPECT_EQ(incast({1, 2, 3, 0}, 0, 5).size(), 3u);  // the receiver does not send to itself
  const auto all = allToAll(5, 10);
  EXPECT_EQ(all.size(), 20u);
}

TEST(Workload, DistributionsHaveThePublishedMeans) {
  EXPECT_NEAR(SizeDistribution::webSearch().mean(), 1.71e6, 0.01e6);
  EXPECT_NEAR(SizeDistribution::fbHadoop().mean(), 120e3, 15e3);
  const SizeDistribution web = SizeDistribution::webSearch();
  EXPECT_EQ(web.sample(0.15), 10000u);   // a CDF point
  EXPECT_EQ(web.sample(0.175), 15000u);  // halfway between (10 KB, 15%) and (20 KB, 20%)
  EXPECT_EQ(web.sample(0.9999999), 29999933u);  // 10 MB + (0.9999999 - 0.97) / 0.03 x 20 MB
  EXPECT_THROW(SizeDistribution({{0, 0}, {10, 50}}), std::invalid_argument);
  EXPECT_THROW(SizeDistribution({{0, 0}, {10, 60}, {5, 100}}), std::invalid_argument);
}

TEST(Workload, PoissonArrivalsOfferTheRequestedLoad) {
  const SizeDistribution sizes = SizeDistribution::fbHadoop();
  const Picoseconds duration = 100 * kMillisecond;
  const auto flows = poissonLoad(16, sizes, 0.3, 100e9, duration, 3);
  double bytes = 0;
  for (const auto& f : flows) {
    bytes += static_cast<double>(f.bytes);
    EXPECT_NE(f.src, f.dst);
    EXPECT_LT(f.start, duration);
  }
  const double offered = bytes * 8 / 0.1 / (16 * 100e9);
  EXPECT_NEAR(offered, 0.3, 0.03);
  EXPECT_TRUE(std::is_sorted(flows.begin(), flows.end(), [](auto& a, auto& b) { return a.start < b.start; }));
}

TEST(Workload, FlowFilesRoundTripAndBadLinesAreNamed) {
  const std::vector<FlowSpec> flows = {{0, 3, 2000000, 0}, {2, 1, 1500, 12 * kMicrosecond + 500}};
  std::stringstream file;
  writeFlowFile(file, flows);
  const auto back = readFlowFile(file, 4);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].src, 2);
  EXPECT_EQ(back[1].bytes, 1500u);
  EXPECT_EQ(back[1].start, 12 * kMicrosecond + 500);
  for (const char* bad : {"0 1 100", "0 9 100 0", "1 1 100 0", "0 1 -5 0", "0 1 100 0 extra", "0 1 1.5 0"}) {
    std::stringstream in(std::string("# header\n\n") + bad + "\n");
    try {
      readFlowFile(in, 4);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    }
  }
}

TEST(Metrics, ALoneFlowTakesExactlyItsIdealTime) {
  for (uint64_t bytes : {1ull, 4096ull, 4097ull, 2000000ull}) {
    Network net;
    buildFatTree(net, 4, LinkSpec{});
    net.addFlow(0, 13, bytes, 5 * kMicrosecond, [] { return std::make_unique<congestion::LineRate>(100e9); });
    ASSERT_TRUE(net.run());
    const FlowResult& r = net.results()[0];
    EXPECT_EQ(r.finish - r.start, idealFct(net, 0, 13, bytes)) << bytes << " bytes";
  }
  Network net;
  buildFatTree(net, 4, LinkSpec{});
  EXPECT_EQ(net.path(0, 13).size(), 6u);
  EXPECT_EQ(net.path(0, 1).size(), 2u);  // same edge switch
}

TEST(Metrics, PercentilesAndSlowdownBins) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 50), 2);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 99), 4);
  Network net;
  buildStar(net, 4, LinkSpec{});
  for (int src = 1; src < 4; ++src) net.addFlow(src, 0, 100000 * static_cast<uint64_t>(src), 0, [] {
      return std::make_unique<congestion::LineRate>(100e9);
    });
  ASSERT_TRUE(net.run());
  const auto bins = slowdownBySize(net, 3);
  ASSERT_EQ(bins.size(), 3u);
  EXPECT_EQ(bins[0].max_bytes, 100000u);
  EXPECT_EQ(bins[2].max_bytes, 300000u);
  for (const auto& b : bins) EXPECT_GT(b.p50, 1.0);  // three flows share one receiver: all slowed
  std::stringstream csv;
  writeFctCsv(csv, net);
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "id,src,dst,bytes,start_us,fct_us,ideal_us,slowdown,goodput_gbps,retransmissions");
  int rows = 0;
  for (std::string row; std::getline(csv, row);) {
    ++rows;
    // The flows share the receiver's 100G link: each gets less than the link, none resends.
    const double goodput = std::stod(row.substr(row.rfind(',', row.rfind(',') - 1) + 1));
    EXPECT_GT(goodput, 20.0) << row;
    EXPECT_LT(goodput, 100.0) << row;
    EXPECT_EQ(row.substr(row.rfind(',') + 1), "0") << row;
  }
  EXPECT_EQ(rows, 3);
}

}  // namespace
}  // namespace megascale::sim

namespace megascale::sim {
namespace {

TEST(Topology, RailOptimizedKeepsSameRailTrafficBelowTheCores) {
  Network net;
  RailSpec spec;  // 16 servers x 8 rails, groups of 4, 2 aggregations per rail, 2 cores
  const RailOptimized t = buildRailOptimized(net, spec);
  EXPECT_EQ(net.hostCount(), 128);
  EXPECT_EQ(t.tors.size(), 32u);  // 4 groups x 8 rails
  EXPECT_EQ(t.aggregations.size(), 16u);
  const int rails = spec.rails;
  EXPECT_EQ(net.path(0 * rails + 3, 1 * rails + 3).size(), 2u);  // same group, same rail: through the ToR
  EXPECT_EQ(net.path(0 * rails + 3, 4 * rails + 3).size(), 4u);  // same rail, other group: via the rail's plane
  EXPECT_EQ(net.path(0 * rails + 3, 4 * rails + 5).size(), 6u);  // another rail: via a core
  EXPECT_DOUBLE_EQ(railOversubscription(spec), 4 * 200e9 / (2 * 400e9));
  RailSpec bad = spec;
  bad.servers = 10;  // not a multiple of the group size
  Network other;
  EXPECT_THROW(buildRailOptimized(other, bad), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::sim
