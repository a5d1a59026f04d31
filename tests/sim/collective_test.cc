// The collective library's schedules replayed on the simulated network.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

#include "collectives/host_layout.h"
#include "congestion/dcqcn.h"
#include "congestion/line_rate.h"
#include "sim/collective_replay.h"
#include "sim/topology.h"

namespace megascale::sim {
namespace {

constexpr double kPayloadGbs = 100e9 * 4096 / 4160 / 8 / 1e9;  // 100G less 64 B of header per 4 KiB packet

std::vector<int> firstHosts(int n) {
  std::vector<int> hosts(static_cast<size_t>(n));
  std::iota(hosts.begin(), hosts.end(), 0);
  return hosts;
}

CollectiveResult replay(Collective collective, Algorithm algorithm, int ranks, size_t count) {
  Network net;
  buildStar(net, ranks, LinkSpec{});
  ScheduleSpec spec;
  spec.collective = collective;
  spec.algorithm = algorithm;
  spec.count = count;
  CollectiveReplay run(net, firstHosts(ranks), spec, 4, [] { return std::make_unique<congestion::Dcqcn>(congestion::DcqcnParams::firmware(100e9)); });
  return run.run(1 * kSecond);
}

TEST(CollectiveReplay, RingAllReduceRunsAtTheLinksBusBandwidth) {
  const CollectiveResult r = replay(Collective::kAllReduce, Algorithm::kRing, 8, 16 << 20);  // 64 MiB of floats
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.messages, 8u * 2 * 7);  // every rank sends once per phase, 2(n-1) phases
  std::printf("ring all-reduce, 8 ranks on one 100G switch, 64 MiB: %.2f ms, busbw %.2f GB/s (link payload %.2f)\n",
              r.time / 1e9, r.busbw_gbs, kPayloadGbs);
  EXPECT_GT(r.busbw_gbs, 0.95 * kPayloadGbs);
  EXPECT_LE(r.busbw_gbs, kPayloadGbs);
}

TEST(CollectiveReplay, HalvingDoublingAndRingAllGatherFinish) {
  const CollectiveResult hd = replay(Collective::kAllReduce, Algorithm::kRecursiveHalvingDoubling, 8, 4 << 20);
  ASSERT_TRUE(hd.finished);
  EXPECT_GT(hd.busbw_gbs, 0.8 * kPayloadGbs);
  const CollectiveResult ag = replay(Collective::kAllGather, Algorithm::kRing, 6, 1 << 20);
  ASSERT_TRUE(ag.finished);
  EXPECT_GT(ag.busbw_gbs, 0.9 * kPayloadGbs);
  std::printf("halving-doubling all-reduce 16 MiB x 8: busbw %.2f GB/s; ring all-gather 4 MiB x 6: busbw %.2f GB/s\n",
              hd.busbw_gbs, ag.busbw_gbs);
}

// A hierarchical all-reduce over 4 servers x 2 ranks (each rank its own NIC on one switch): with the node engine
// as the host stage, only the rails' rings reach the network; with transfers inside the server, they do too.
TEST(CollectiveReplay, HostStepsStayOffTheNetwork) {
  const HostLayout layout = HostLayout::blocks(4, 2);
  const auto run = [&](bool host_steps) {
    Network net;
    buildStar(net, 8, LinkSpec{});
    ScheduleSpec spec{Collective::kAllReduce, Algorithm::kHierarchical, 4096, 0, 8, 0, false, &layout};
    spec.host_steps = host_steps;
    CollectiveReplay replay(net, firstHosts(8), spec, 4, [] { return std::make_unique<congestion::Dcqcn>(congestion::DcqcnParams::firmware(100e9)); });
    return replay.run(1 * kSecond);
  };
  const CollectiveResult staged = run(true), transfers = run(false);
  ASSERT_TRUE(staged.finished);
  ASSERT_TRUE(transfers.finished);
  EXPECT_EQ(staged.messages, 8u * 2 * 3);  // one chunk: each rank's ring of 4 hosts, 2(4-1) sends
  EXPECT_EQ(transfers.messages, staged.messages + 8u * 2);  // plus a send to the host's other owner and one back
}

// A one-host job: its schedule is the node engine's all-reduce, a single host step, which replays as one call of
// the host's 8 ranks moving 2 x 7/8 of the vector each at the host's rate, with nothing on the network.
TEST(CollectiveReplay, AOneHostJobReplaysAsItsEnginesCollective) {
  const HostLayout layout = HostLayout::blocks(1, 8);
  Network net;
  buildStar(net, 1, LinkSpec{});
  ScheduleSpec spec{Collective::kAllReduce, Algorithm::kHierarchical, 16 << 20, 0, 8, 0, false, &layout};
  spec.host_steps = true;
  CollectiveReplay replay(net, std::vector<int>(8, 0), spec, 4, [] { return std::make_unique<congestion::LineRate>(100e9); });
  replay.setHostBandwidth(20e9);
  const CollectiveResult r = replay.run(1 * kSecond);
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.messages, 0u);
  const double expected_s = 2.0 * 7 / 8 * (64 << 20) / 20e9;
  EXPECT_NEAR(static_cast<double>(r.time) / 1e12, expected_s, expected_s * 1e-6);
}

// Across hosts the host stages add their time to the rails' rings, and an engine call waits for the host's
// slowest rank: with a host rate the all-reduce takes longer than with free host steps, by at most the stages'
// time (their chunks overlap the rings).
TEST(CollectiveReplay, HostStepsTakeTheirTimeAndWaitForTheirHost) {
  const HostLayout layout = HostLayout::blocks(4, 2);
  const auto run = [&](double host_rate) {
    Network net;
    buildStar(net, 8, LinkSpec{});
    ScheduleSpec spec{Collective::kAllReduce, Algorithm::kHierarchical, 4 << 20, 0, 8, 0, false, &layout};
    spec.host_steps = true;
    CollectiveReplay replay(net, firstHosts(8), spec, 4, [] { return std::make_unique<congestion::Dcqcn>(congestion::DcqcnParams::firmware(100e9)); });
    replay.setHostBandwidth(host_rate);
    return replay.run(1 * kSecond);
  };
  const CollectiveResult free_steps = run(0), timed = run(5e9);
  ASSERT_TRUE(free_steps.finished);
  ASSERT_TRUE(timed.finished);
  EXPECT_EQ(timed.messages, free_steps.messages);
  const double stages_s = 2.0 * (1.0 / 2) * (16 << 20) / 5e9;  // every chunk's reduce-scatter and all-gather
  EXPECT_GT(timed.time, free_steps.time);
  EXPECT_LE(static_cast<double>(timed.time - free_steps.time) / 1e12, stages_s * 1.01);
  std::printf("hierarchical all-reduce 16 MiB over 4 x 2: %.3f ms with free host steps, %.3f ms at 5 GB/s host copies\n",
              free_steps.time / 1e9, timed.time / 1e9);
}

TEST(CollectiveReplay, ASingleRankFinishesAtOnce) {
  const CollectiveResult r = replay(Collective::kAllReduce, Algorithm::kRing, 1, 1000);
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.time, 0);
  EXPECT_EQ(r.messages, 0u);
}

}  // namespace
}  // namespace megascale::sim
