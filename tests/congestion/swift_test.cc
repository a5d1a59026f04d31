// Swift, the hybrid and TIMELY against hand-computed sequences.
#include <gtest/gtest.h>

#include <cmath>

#include "congestion/hybrid.h"
#include "congestion/swift.h"
#include "congestion/timely.h"

namespace megascale::congestion {
namespace {

constexpr Picoseconds kUs = kMicrosecond;

SwiftParams smallWindow() {
  SwiftParams p;
  p.initial_cwnd = 10;
  return p;
}

AckEvent ack(Picoseconds now, Picoseconds rtt, bool ecn = false) {
  AckEvent a;
  a.now = now;
  a.rtt = rtt;
  a.acked_bytes = 4096;
  a.acked_packets = 1;
  a.ecn_echo = ecn;
  return a;
}

TEST(Swift, TargetDelayScalesWithHopsAndShrinkingWindows) {
  Swift s(smallWindow());
  // base 25 us + 6 hops x 1 us; flow scaling is 0 at fs_max_cwnd and the full 100 us at fs_min_cwnd.
  EXPECT_EQ(s.targetDelay(256), 31 * kUs);
  EXPECT_NEAR(static_cast<double>(s.targetDelay(0.1)), 131e6, 1);
  const double alpha = 100e6 / (1 / std::sqrt(0.1) - 1.0 / 16), beta = -alpha / 16;
  EXPECT_NEAR(static_cast<double>(s.targetDelay(4)), 31e6 + alpha / 2 + beta, 1);
  EXPECT_EQ(s.targetDelay(1000), 31 * kUs);  // clamped at 0 above fs_max_cwnd
}

TEST(Swift, AdditiveIncreaseBelowTargetAndOneBoundedCutPerRtt) {
  Swift s(smallWindow());
  s.onAck(ack(0, 20 * kUs));
  EXPECT_DOUBLE_EQ(s.windowPackets(), 10.1);  // + ai / cwnd
  const double target = static_cast<double>(s.targetDelay(10.1));
  s.onAck(ack(1 * kUs, 100 * kUs));  // above target: cwnd * (1 - beta (d - t) / d)
  const double cut = 10.1 * std::max(1 - 0.8 * (100e6 - target) / 100e6, 0.5);
  EXPECT_DOUBLE_EQ(s.windowPackets(), cut);
  s.onAck(ack(50 * kUs, 1000 * kUs));  // within one RTT (now 1 ms) of the last cut: no second cut
  EXPECT_DOUBLE_EQ(s.windowPackets(), cut);
  s.onAck(ack(1100 * kUs, 1000 * kUs));  // an RTT later: cut, at most by max_mdf
  EXPECT_DOUBLE_EQ(s.windowPackets(), cut * 0.5);
}

TEST(Swift, TimeoutsEscalateToTheMinimumWindowAndPacingTakesOver) {
  Swift s(smallWindow());
  s.onAck(ack(0, 20 * kUs));  // cwnd 10.1, RTT 20 us
  s.onTimeout(1 * kMillisecond);
  EXPECT_DOUBLE_EQ(s.windowPackets(), 5.05);
  s.onTimeout(2 * kMillisecond);
  EXPECT_DOUBLE_EQ(s.windowPackets(), 2.525);
  s.onTimeout(3 * kMillisecond);  // the third in a row
  EXPECT_DOUBLE_EQ(s.windowPackets(), 0.01);
  EXPECT_EQ(s.pacingGap(4096), 2 * kMillisecond);  // RTT / cwnd = 20 us / 0.01
  s.onAck(ack(4 * kMillisecond, 20 * kUs));  // below one packet the increase is ai per ACK
  EXPECT_DOUBLE_EQ(s.windowPackets(), 1.01);
  EXPECT_EQ(s.pacingGap(4096), serializationTime(4096, 100e9));  // a window >= 1 is not paced
}

TEST(Swift, ALossCutsByMaxMdfOncePerRtt) {
  Swift s(smallWindow());
  s.onAck(ack(0, 20 * kUs));
  s.onLoss(100 * kUs);
  EXPECT_DOUBLE_EQ(s.windowPackets(), 5.05);
  s.onLoss(110 * kUs);
  EXPECT_DOUBLE_EQ(s.windowPackets(), 5.05);
  s.onCnp(120 * kUs);  // Swift does not listen to ECN
  EXPECT_DOUBLE_EQ(s.windowPackets(), 5.05);
}

TEST(Hybrid, ReactsToEcnAtOnceAndNeverGrowsOnAMarkedAck) {
  HybridParams p;
  p.swift = smallWindow();
  Hybrid h(p);
  h.onAck(ack(0, 20 * kUs, true));  // alpha (15/16) 1 + 1/16 = 1: cut by half at once
  EXPECT_DOUBLE_EQ(h.ecnAlpha(), 1.0);
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5);
  h.onAck(ack(2 * kUs, 20 * kUs, true));  // within 4 us of the last ECN cut: neither cut nor growth
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5);
  h.onAck(ack(5 * kUs, 20 * kUs));  // unmarked, below target: Swift's increase
  EXPECT_DOUBLE_EQ(h.ecnAlpha(), 15.0 / 16);
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5.2);
  h.onAck(ack(10 * kUs, 20 * kUs, true));  // no RTT wait, unlike Swift's delay cut
  const double alpha = (15.0 / 16) * (15.0 / 16) + 1.0 / 16;
  EXPECT_DOUBLE_EQ(h.ecnAlpha(), alpha);
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5.2 * (1 - alpha / 2));
  h.onCnp(20 * kUs);  // a CNP is the same signal
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5.2 * (1 - alpha / 2) * (1 - alpha / 2));
}

TEST(Timely, FollowsTheGradientRulesInOrder) {
  TimelyParams p;  // 100G, ewma 0.02, beta 0.8, T_low 50 us, T_high 1 ms, min RTT 20 us, step 100 Mb/s
  Timely t(p);
  t.onAck(ack(0, 100 * kUs));  // reference only
  EXPECT_DOUBLE_EQ(t.rateBps(), 100e9);
  t.onAck(ack(100 * kUs, 2000 * kUs));  // above T_high: R (1 - beta (1 - T_high / rtt)) = 0.6 R
  EXPECT_DOUBLE_EQ(t.rateBps(), 60e9);
  t.onAck(ack(200 * kUs, 30 * kUs));  // below T_low: + step
  EXPECT_DOUBLE_EQ(t.rateBps(), 60.1e9);
  t.onAck(ack(300 * kUs, 100 * kUs));  // avg diff: 38, -2.16, -0.7168 us: falling, + step
  EXPECT_NEAR(t.normalizedGradient(), -0.7168e6 / 20e6, 1e-12);
  EXPECT_DOUBLE_EQ(t.rateBps(), 60.2e9);
  t.onAck(ack(400 * kUs, 200 * kUs));  // avg diff 1.297536 us: rising, R (1 - beta g)
  const double g = 1.297536 / 20;
  EXPECT_NEAR(t.rateBps(), 60.2e9 * (1 - 0.8 * g), 1e3);
  t.onAck(ack(405 * kUs, 20 * kUs));  // 5 us after the last update: a quarter of the step
  EXPECT_NEAR(t.rateBps(), 60.2e9 * (1 - 0.8 * g) + 25e6, 1e3);
}

}  // namespace
}  // namespace megascale::congestion
