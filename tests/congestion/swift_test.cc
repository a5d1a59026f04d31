// Swift against hand-computed sequences of events.
#include "congestion/swift.h"

#include <gtest/gtest.h>

#include <cmath>

#include "control_events.h"

namespace megascale::congestion {
namespace {

using test_events::ack;
using test_events::kUs;
using test_events::smallWindow;

TEST(Swift, TargetDelayScalesWithHopsAndShrinkingWindows) {
  Swift s(smallWindow());
  // base 25 us + 6 hops x 1 us; flow scaling is 0 at fs_max_cwnd and the full 100 us at fs_min_cwnd.
  EXPECT_EQ(s.targetDelay(256), 31 * kUs);
  EXPECT_NEAR(static_cast<double>(s.targetDelay(0.1)), 131e6, 1);
  const double alpha = 100e6 / (1 / std::sqrt(0.1) - 1.0 / 16), beta = -alpha / 16;
  EXPECT_NEAR(static_cast<double>(s.targetDelay(4)), 31e6 + alpha / 2 + beta, 1);
  EXPECT_EQ(s.targetDelay(1000), 31 * kUs);  // clamped at 0 above fs_max_cwnd
}

TEST(Swift, TargetAboveTheFloorFollowsTheLowestRttSeen) {
  SwiftParams p = smallWindow();
  p.target_above_floor = true;
  Swift s(p);
  EXPECT_EQ(s.targetDelay(256), 31 * kUs) << "no sample yet: the floor is 0";
  s.onAck(ack(0, 500 * kUs));
  EXPECT_EQ(s.targetDelay(256), 531 * kUs);
  const double grown = s.windowPackets();
  EXPECT_GT(grown, 10) << "the first sample is at the floor: below target";
  s.onAck(ack(10 * kUs, 520 * kUs));
  EXPECT_GT(s.windowPackets(), grown) << "520 us is within 31 us of a 500 us floor";
  s.onAck(ack(20 * kUs, 300 * kUs));
  EXPECT_EQ(s.targetDelay(256), 331 * kUs) << "the floor only falls";
  s.onAck(ack(2000 * kUs, 900 * kUs));
  EXPECT_EQ(s.targetDelay(256), 331 * kUs);
  EXPECT_LT(s.windowPackets(), grown) << "900 us is far above it: a cut";
}

// A flow that saw the path empty (floor 100 us) while another keeps a queue at its own, higher target: every
// sample lies above this flow's target. After relearn_floor_after_rtts RTTs of that it aims above the lowest of
// them instead, and grows again; a sample under the target restarts the count; a lower sample lowers it.
TEST(Swift, AFlowHeldAboveItsTargetRelearnsItsFloorAfterTheSetNumberOfRtts) {
  SwiftParams p = smallWindow();
  p.initial_cwnd = 200;  // cut at most by half per RTT
  p.target_above_floor = true;
  p.relearn_floor_after_rtts = 4;
  Swift s(p);
  s.onAck(ack(0, 100 * kUs));
  EXPECT_EQ(s.targetDelay(256), 131 * kUs);
  Picoseconds now = 10 * kUs;
  for (int i = 0; i < 3; ++i, now += 1000 * kUs) s.onAck(ack(now, 1000 * kUs - i * kUs));  // 3 RTTs above
  s.onAck(ack(now, 120 * kUs));  // under the target: the run starts over
  now += 1000 * kUs;
  for (int i = 0; i < 4; ++i, now += 1000 * kUs) s.onAck(ack(now, 1000 * kUs - i * kUs));
  EXPECT_EQ(s.targetDelay(256), 131 * kUs) << "four samples span three RTTs: not yet";
  const double starved = s.windowPackets();
  s.onAck(ack(now, 990 * kUs));
  EXPECT_EQ(s.targetDelay(256), 990 * kUs + 31 * kUs) << "four RTTs above: the lowest sample of the run is the floor";
  s.onAck(ack(now + 1000 * kUs, 1000 * kUs));
  EXPECT_GT(s.windowPackets(), starved) << "1000 us is under the new target: the window grows";
  s.onAck(ack(now + 2000 * kUs, 200 * kUs));
  EXPECT_EQ(s.targetDelay(256), 231 * kUs) << "a lower sample lowers the floor again";
}

// What a raise added halves every floor_decay_rtts RTTs, back to the lowest sample ever, so raises on delay
// noise cannot pile up.
TEST(Swift, ARelearnedFloorDecaysBackToTheLowestSample) {
  SwiftParams p = smallWindow();
  p.initial_cwnd = 200;
  p.target_above_floor = true;
  p.relearn_floor_after_rtts = 2;
  p.floor_decay_rtts = 4;
  Swift s(p);
  s.onAck(ack(0, 100 * kUs));
  s.onAck(ack(1000 * kUs, 1000 * kUs));
  s.onAck(ack(2000 * kUs, 1000 * kUs));
  s.onAck(ack(3000 * kUs, 1000 * kUs));  // the floor is 100 us then 1000 us from here
  EXPECT_NEAR(static_cast<double>(s.targetDelay(256)), 1031e6, 1e6);
  s.onAck(ack(7000 * kUs, 1000 * kUs));  // four RTTs later: 900 us added, half of it left
  EXPECT_NEAR(static_cast<double>(s.targetDelay(256)), 100e6 + 450e6 + 31e6, 1e6);
  s.onAck(ack(15000 * kUs, 120 * kUs));  // eight ms later, at 120 us a round trip: 16 half-lives
  EXPECT_NEAR(static_cast<double>(s.targetDelay(256)), 131e6, 1e6)
      << "back at the lowest sample (a floor kept at 550 us would have fallen only to this 120 us)";
}

TEST(Swift, WithoutRelearningTheLowestFloorStaysHoweverLongTheFlowIsHeldAboveIt) {
  SwiftParams p = smallWindow();
  p.target_above_floor = true;
  Swift s(p);
  s.onAck(ack(0, 100 * kUs));
  for (int i = 1; i <= 100; ++i) s.onAck(ack(i * 1000 * kUs, 1000 * kUs));
  EXPECT_EQ(s.targetDelay(256), 131 * kUs);
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

}  // namespace
}  // namespace megascale::congestion
