// TIMELY's gradient rules against a hand-computed sequence of RTTs.
#include "congestion/timely.h"

#include <gtest/gtest.h>

#include "control_events.h"

namespace megascale::congestion {
namespace {

using test_events::ack;
using test_events::kUs;

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
