// The simulator against expectations with known answers (docs/congestion.md has the table and the sources):
// one 2 MB flow across a fat tree, and a 15-to-1 incast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "congestion/dcqcn.h"
#include "congestion/hybrid.h"
#include "congestion/line_rate.h"
#include "congestion/software_pacing.h"
#include "congestion/swift.h"
#include "congestion/starved_law.h"
#include "sim/topology.h"

namespace megascale::sim {
namespace {

constexpr uint64_t k2MB = 2'000'000;

ControlFactory dcqcn(const congestion::DcqcnParams& p) {
  return [p] { return std::make_unique<congestion::Dcqcn>(p); };
}

void markLikeHpcc(Network& net) {
  net.configureSwitchPorts([](Port& port) {
    port.marks_ecn = true;
    port.ecn = congestion::EcnThresholds::scaledTo(port.rateBps());
  });
}

TEST(SimValidation, OneTwoMegabyteFlowAcrossTheFatTree) {
  Network net;
  buildFatTree(net, 4, LinkSpec{});  // 16 hosts, 100G, 1 us links: 6 hops each way, RTT ~12 us
  markLikeHpcc(net);
  net.addFlow(0, 13, k2MB, 0, dcqcn(congestion::DcqcnParams::paper(100e9)));  // host 13 is in another pod
  ASSERT_TRUE(net.run(1 * kSecond));
  const double fct_us = static_cast<double>(net.results()[0].finish) / kMicrosecond;
  std::printf("one 2 MB flow: %.1f us (expected 172-190 us; htsim's EQDS/UEC runs: 176.2 us)\n", fct_us);
  EXPECT_GE(fct_us, 172);
  EXPECT_LE(fct_us, 190);
  EXPECT_EQ(net.drops(), 0u);
}

TEST(SimValidation, FifteenToOneIncastCompletesWithinSixPercentOfIdeal) {
  Network net;
  buildFatTree(net, 4, LinkSpec{});
  markLikeHpcc(net);
  for (int src = 1; src < 16; ++src) net.addFlow(src, 0, k2MB, 0, dcqcn(congestion::DcqcnParams::firmware(100e9)));
  ASSERT_TRUE(net.run(1 * kSecond));
  Picoseconds last = 0;
  for (const auto& r : net.results()) last = std::max(last, r.finish);
  const double us = static_cast<double>(last) / kMicrosecond;
  uint64_t max_queue = 0, marks = 0;
  for (Port* p : net.allPorts()) {
    max_queue = std::max(max_queue, p->stats.max_queue_bytes);
    marks += p->stats.marks;
  }
  std::printf("15-to-1 incast of 2 MB: last flow done at %.1f us (ideal 2400 us); max queue %.2f MB, %llu marks\n", us,
              max_queue / 1e6, static_cast<unsigned long long>(marks));
  EXPECT_LE(us, 2400 * 1.06);
  EXPECT_GT(marks, 0u);  // the bottleneck queue did build up and DCQCN heard about it
  EXPECT_EQ(net.drops(), 0u);
}

// Two long flows into one receiver: the second starts 1 ms late; from 6 to 10 ms each must get its share of
// the bottleneck (within 15% of half), and together they must keep it busy.
void expectFairShares(const char* name, const ControlFactory& control, double min_utilization) {
  Network net;
  buildStar(net, 3, LinkSpec{});
  markLikeHpcc(net);
  const uint64_t huge = 1'000'000'000;
  net.addFlow(1, 0, huge, 0, control);
  net.addFlow(2, 0, huge, 1 * kMillisecond, control);
  net.run(6 * kMillisecond);
  const uint64_t a0 = net.flow(0).acked, b0 = net.flow(1).acked;
  net.run(10 * kMillisecond);
  const double seconds = 4e-3;
  const double a = (net.flow(0).acked - a0) * 8 / seconds, b = (net.flow(1).acked - b0) * 8 / seconds;
  std::printf("%s, 2-to-1 from 6 to 10 ms: %.1f and %.1f Gb/s of goodput\n", name, a / 1e9, b / 1e9);
  EXPECT_NEAR(a / (a + b), 0.5, 0.075) << name;
  EXPECT_GT(a + b, min_utilization * 100e9 * 4096 / 4160) << name;  // how busy the bottleneck stays
  EXPECT_EQ(net.drops(), 0u) << name;
}

TEST(SimValidation, DcqcnAndSwiftConvergeToFairSharesOnATwoToOneBottleneck) {
  // DCQCN recovers slowly after its cuts (R_AI is 5-40 Mb/s per increase event), so it leaves the link
  // partly idle here; the delay-based controls hold a small standing queue instead.
  expectFairShares("dcqcn (firmware)", dcqcn(congestion::DcqcnParams::firmware(100e9)), 0.7);
  expectFairShares("dcqcn (paper)", dcqcn(congestion::DcqcnParams::paper(100e9)), 0.7);
  congestion::SwiftParams swift;
  swift.hops = 2;
  expectFairShares("swift", [swift] { return std::make_unique<congestion::Swift>(swift); }, 0.95);
  congestion::HybridParams hybrid;
  hybrid.swift = swift;
  expectFairShares("hybrid", [hybrid] { return std::make_unique<congestion::Hybrid>(hybrid); }, 0.95);
}

// 15-to-1 at line rate with no congestion control and 1 MB of buffer per port: without PFC the bottleneck
// drops and selective repeat recovers; with PFC nothing is lost, the incast still finishes near the ideal, and
// pauses are counted.
TEST(SimValidation, PfcKeepsTheIncastLossless) {
  for (bool pfc : {false, true}) {
    NetworkParams params;
    params.pfc = pfc;
    // PFC holds packets for long (RoCE's timeouts are milliseconds to seconds): no false losses.
    if (pfc) params.rto.min = 10 * kMillisecond;
    Network net(params);
    buildFatTree(net, 4, LinkSpec{});
    net.configureSwitchPorts([](Port& port) { port.buffer_bytes = 1'000'000; });
    for (int src = 1; src < 16; ++src) {
      net.addFlow(src, 0, k2MB, 0, [] { return std::make_unique<congestion::LineRate>(100e9); });
    }
    const bool finished = net.run(1 * kSecond);
    uint64_t pauses = 0;
    Picoseconds paused = 0;
    for (Port* p : net.allPorts()) {
      pauses += p->stats.pauses_sent;
      paused += p->stats.paused_time;
    }
    Picoseconds last = 0;
    uint64_t resent = 0;
    for (const auto& r : net.results()) {
      last = std::max(last, r.finish);
      resent += r.retransmissions;
    }
    std::printf("no CC, 1 MB buffers, PFC %s: %llu drops, %llu resent, %llu pauses (%.0f us paused in all), %s\n",
                pfc ? "on" : "off", static_cast<unsigned long long>(net.drops()),
                static_cast<unsigned long long>(resent),
                static_cast<unsigned long long>(pauses), static_cast<double>(paused) / kMicrosecond,
                finished ? ("done at " + std::to_string(static_cast<double>(last) / kMicrosecond) + " us").c_str()
                         : "unfinished");
    EXPECT_TRUE(finished);
    if (pfc) {
      EXPECT_EQ(net.drops(), 0u);
      EXPECT_EQ(resent, 0u);
      EXPECT_GT(pauses, 0u);
      EXPECT_LE(static_cast<double>(last) / kMicrosecond, 2400 * 1.06);
    } else {
      EXPECT_GT(net.drops(), 0u);  // the same traffic does overflow without PFC; selective repeat recovers
      EXPECT_GE(resent, net.drops());
    }
  }
}

// A 16-host permutation of 2 MB flows on the k=4 fat tree: ECMP by flow lets flows collide on a link; spraying
// each packet over all paths spreads them, so its slowest flow finishes close to a lone flow's 176 us.
TEST(SimValidation, SprayingBeatsEcmpOnAPermutation) {
  double tail[2] = {0, 0};
  for (bool spray : {false, true}) {
    NetworkParams params;
    params.spraying = spray;
    params.pfc = true;
    Network net(params);
    buildFatTree(net, 4, LinkSpec{});
    markLikeHpcc(net);
    for (int src = 0; src < 16; ++src) {  // each host to one in another pod, every host receiving once
      net.addFlow(src, (src + 4) % 16, k2MB, 0, dcqcn(congestion::DcqcnParams::firmware(100e9)));
    }
    ASSERT_TRUE(net.run(1 * kSecond));
    for (const auto& r : net.results()) tail[spray] = std::max(tail[spray], static_cast<double>(r.finish) / kMicrosecond);
    EXPECT_EQ(net.drops(), 0u);
  }
  std::printf("16-host permutation of 2 MB: slowest flow %.1f us with ECMP, %.1f us with spraying\n", tail[0], tail[1]);
  EXPECT_LT(tail[1], tail[0] * 0.8);
  EXPECT_LT(tail[1], 176.2 * 1.25);
}

// A link that goes down for a few milliseconds mid-transfer (a flapping NIC cable): the flow's retransmit timer
// backs off and the flow completes after the link returns - unless its give-up budget is shorter than the flap.
TEST(SimValidation, AFlappingLinkIsRiddenOutUnlessTheBudgetIsShorter) {
  for (Picoseconds give_up : {30 * kSecond, 2 * kMillisecond}) {
    NetworkParams params;
    params.give_up_after = give_up;
    Network net(params);
    buildFatTree(net, 4, LinkSpec{});
    net.addFlow(0, 13, k2MB, 0, dcqcn(congestion::DcqcnParams::firmware(100e9)));
    const Port& nic = *net.node(net.hostNode(13)).ports[0];
    Port& last_hop = *nic.peer->ports[static_cast<size_t>(nic.peer_port)];  // the switch port facing host 13
    net.run(50 * kMicrosecond);
    last_hop.setDown(true);
    net.run(5 * kMillisecond);
    last_hop.setDown(false);
    net.run(1 * kSecond);
    const FlowResult& r = net.results()[0];
    std::printf("2 MB flow, last hop down from 50 us to 5 ms, give up after %.0f ms: %s, %llu resent\n",
                static_cast<double>(give_up) / kMillisecond,
                r.failed ? "gave up"
                         : ("done at " + std::to_string(static_cast<double>(r.finish) / kMicrosecond) + " us").c_str(),
                static_cast<unsigned long long>(r.retransmissions));
    if (give_up > 5 * kMillisecond) {
      EXPECT_FALSE(r.failed);
      EXPECT_GT(r.finish, 5 * kMillisecond);
      EXPECT_LT(r.finish, 20 * kMillisecond);  // backoff doubles the RTO: recovery follows the flap closely
      EXPECT_GT(r.retransmissions, 0u);
    } else {
      EXPECT_TRUE(r.failed);
    }
  }
}

// A lone flow paced at its bottleneck's rate on the test bed's shape (500 Mbit/s, jumbo packets, an unshaped
// uplink): a NIC's exact pacing never queues more than the packet on the wire; a software sender's starting
// burst (the packet due and kCatchUpPackets of credit) stands in the queue, since nothing sends slower than the
// link drains to empty it, as on the test bed (bench/udp_vs_sim.sh).
uint64_t loneFlowPeakQueue(Picoseconds wake_lateness) {
  NetworkParams params;
  params.mtu_payload = 8916;
  params.wake_lateness = wake_lateness;
  Network net(params);
  LinkSpec links;
  links.host_bps = 500e6;
  links.uplink_bps = 10e9;
  links.delay = 18 * kMicrosecond;
  buildStar(net, 2, links);
  net.addFlow(1, 0, 8'000'000, 0, [] { return std::make_unique<congestion::LineRate>(500e6); });
  EXPECT_TRUE(net.run(1 * kSecond));
  const double ideal_us = 8e6 * (8916.0 + 64) / 8916 * 8 / 500e6 * 1e6;
  EXPECT_LE(static_cast<double>(net.results()[0].finish) / kMicrosecond, ideal_us * 1.01);
  uint64_t peak = 0;
  for (const Port* p : net.switchPorts()) peak = std::max(peak, p->stats.max_queue_bytes);
  return peak;
}

TEST(SimValidation, ASoftwareSendersStartingBurstStandsInTheQueueANicsDoesNot) {
  constexpr uint64_t kPacket = 8916 + 64;
  EXPECT_LE(loneFlowPeakQueue(0), kPacket);
  const uint64_t software = loneFlowPeakQueue(30 * kMicrosecond);
  EXPECT_GE(software, 4 * kPacket);
  EXPECT_LE(software, (2 + congestion::SoftwarePacing::kCatchUpPackets) * kPacket);
}

// A window of eight packets and no other control: throughput is the window over the round trip.
class FixedWindow : public congestion::LineRate {
 public:
  FixedWindow() : LineRate(500e6) {}
  double windowPackets() const override { return 8; }
};

// The test bed's switch is a process that stalls now and then (bench/udp_vs_sim.sh measures how often and how
// long): modelled, what it would have sent meanwhile leaves in order when it runs again, so nothing is resent,
// and a window-limited sender, its acknowledgements held up too, loses the time.
FlowResult flowThroughASwitchThatStalls(double stalls_per_second) {
  NetworkParams params;
  params.mtu_payload = 8916;
  params.switch_stalls_per_second = stalls_per_second;
  params.switch_stall_mean = 2 * kMillisecond;
  params.rto.min = 100 * kMillisecond;  // the stalls, not the timer, are under test
  Network net(params);
  LinkSpec links;
  links.host_bps = 500e6;
  links.delay = 18 * kMicrosecond;
  buildStar(net, 2, links);
  net.addFlow(1, 0, 8'000'000, 0, [] { return std::make_unique<FixedWindow>(); });
  EXPECT_TRUE(net.run(10 * kSecond));
  return net.results()[0];
}

TEST(SimValidation, ASwitchThatStallsDeliversInOrderWhenItRunsAgainAndAWindowLimitedFlowLosesTheTime) {
  const FlowResult steady = flowThroughASwitchThatStalls(0);
  const FlowResult stalled = flowThroughASwitchThatStalls(50);  // 10% of the time, 2 ms at a time
  EXPECT_EQ(steady.retransmissions, 0u);
  EXPECT_EQ(stalled.retransmissions, 0u);
  const double slower = static_cast<double>(stalled.finish) / static_cast<double>(steady.finish);
  EXPECT_GT(slower, 1.03);  // the link idles through most of each stall
  EXPECT_LT(slower, 1.15);  // and no more than the stalls themselves
}

// A software host's sender goes by the gap its law sets now, not the one it set when the last packet left: a
// law starved to one packet in 100 ms that opens at its fifth acknowledgement sends the rest at the line rate at
// once (128 packets at 500 Mbit/s: 18 ms), not after 100 ms of the old gap. (The first five go on the credit a
// software sender starts with: SoftwarePacing's catch-up is four gaps.)
TEST(SimValidation, ASoftwareSenderGoesByThePacingGapItsLawSetsNow) {
  NetworkParams params;
  params.mtu_payload = 8916;
  params.wake_lateness = 30 * kMicrosecond;
  Network net(params);
  LinkSpec links;
  links.host_bps = 500e6;
  links.delay = 18 * kMicrosecond;
  buildStar(net, 2, links);
  net.addFlow(1, 0, 128 * 8916, 0,
              [] { return std::make_unique<testing::StarvedLaw>(500e6, 100 * kMillisecond, 5); });
  ASSERT_TRUE(net.run(1 * kSecond));
  EXPECT_LT(net.results()[0].finish, 25 * kMillisecond);
  EXPECT_GT(net.results()[0].finish, 18 * kMillisecond);
}

}  // namespace
}  // namespace megascale::sim
