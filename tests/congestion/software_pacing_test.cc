// The pacing rule of a software sender (congestion/software_pacing.h): early by at most the slack, a late
// wake-up made up for by a burst of at most kCatchUpPackets, and the gap the law sets now, not when the last
// packet left.
#include "congestion/software_pacing.h"

#include <gtest/gtest.h>

namespace megascale::congestion {
namespace {

constexpr Picoseconds kGap = 144 * kMicrosecond;  // a 9000-byte packet at 500 Mbit/s

TEST(SoftwarePacing, APacketLeavesAtMostTheSlackEarly) {
  EXPECT_TRUE(SoftwarePacing::due(1000 * kMicrosecond, 1000 * kMicrosecond - SoftwarePacing::kSlack));
  EXPECT_FALSE(SoftwarePacing::due(1000 * kMicrosecond, 1000 * kMicrosecond - SoftwarePacing::kSlack - 1));
}

TEST(SoftwarePacing, APunctualSenderSpacesItsPacketsOneGapApart) {
  const Picoseconds due = 1000 * kMicrosecond;
  EXPECT_EQ(SoftwarePacing::after(due, due, kGap), due + kGap);
  EXPECT_EQ(SoftwarePacing::after(due, due - 10 * kMicrosecond, kGap), due + kGap);  // early within the slack
}

// Woken 10 gaps late, the sender sends the packet that was due and kCatchUpPackets more, then keeps its pace:
// 4 packets of the lost time come back, the rest is gone.
TEST(SoftwarePacing, ALateWakeUpBuysABurstOfAtMostTheCatchUpPackets) {
  const Picoseconds due = 1000 * kMicrosecond, now = due + 10 * kGap;
  Picoseconds next = due;
  int burst = 0;
  while (SoftwarePacing::due(next, now)) {
    next = SoftwarePacing::after(next, now, kGap);
    ++burst;
  }
  EXPECT_EQ(burst, 1 + SoftwarePacing::kCatchUpPackets);
  EXPECT_EQ(next, now + kGap);
}

// A window far below one packet paces one packet a round trip over the window (300 ms); once the law allows the
// line rate again, the next packet is one line-rate gap after the last, not 300 ms after it. A law that allows
// less since does not hold back a packet already due.
TEST(SoftwarePacing, TheNextPacketIsDueOneGapAsTheLawSetsItNowAfterTheLast) {
  const Picoseconds sent = 1000 * kMicrosecond, starved = 300 * kMillisecond;
  const Picoseconds from = SoftwarePacing::from(sent, sent, starved);
  EXPECT_EQ(from, sent);
  const Picoseconds next = from + starved;
  EXPECT_EQ(SoftwarePacing::reconsidered(next, from, kGap), sent + kGap);
  EXPECT_EQ(SoftwarePacing::reconsidered(next, from, starved), next);
  EXPECT_EQ(SoftwarePacing::reconsidered(sent + kGap, from, starved), sent + kGap);
}

}  // namespace
}  // namespace megascale::congestion
