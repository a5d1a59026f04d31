// The hybrid's control law against a hand-computed sequence of ACKs and CNPs.
#include "congestion/hybrid.h"

#include <gtest/gtest.h>

#include "control_events.h"

namespace megascale::congestion {
namespace {

using test_events::ack;
using test_events::kUs;
using test_events::smallWindow;

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

TEST(Hybrid, OnceAnRttCutsAtMostOncePerRoundTrip) {
  HybridParams p;
  p.swift = smallWindow();
  p.ecn_once_per_rtt = true;
  Hybrid h(p);
  h.onAck(ack(0, 300 * kUs, true));  // the first mark cuts at once
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5);
  h.onAck(ack(100 * kUs, 300 * kUs, true));  // 100 us later: past ecn_interval, within the 300 us RTT
  EXPECT_DOUBLE_EQ(h.windowPackets(), 5) << "the same queue's marks, one round trip";
  h.onAck(ack(301 * kUs, 300 * kUs, true));
  EXPECT_LT(h.windowPackets(), 5) << "a round trip later: cut again";
}

}  // namespace
}  // namespace megascale::congestion
