// RTO estimation, selective repeat, the give-up budget and the verbs timeout encoding.
#include <gtest/gtest.h>

#include "congestion/retransmit_budget.h"
#include "congestion/rto_estimator.h"
#include "congestion/selective_repeat.h"
#include "control_events.h"

namespace megascale::congestion {
namespace {

using test_events::kUs;

TEST(RtoEstimator, FollowsRfc6298WithAMicrosecondFloorAndBacksOff) {
  RtoParams p;
  p.min = 1 * kUs;
  p.max = 1 * kMillisecond;
  RtoEstimator e(p);
  EXPECT_EQ(e.rto(), 1 * kMillisecond);  // no sample yet: the initial value
  e.onSample(10 * kUs);                  // srtt 10, rttvar 5: 10 + 4 x 5
  EXPECT_EQ(e.srtt(), 10 * kUs);
  EXPECT_EQ(e.rttvar(), 5 * kUs);
  EXPECT_EQ(e.rto(), 30 * kUs);
  e.onSample(20 * kUs);  // rttvar (3 x 5 + |10 - 20|) / 4 = 6.25, srtt (7 x 10 + 20) / 8 = 11.25
  EXPECT_EQ(e.rttvar(), 6250 * kNanosecond);
  EXPECT_EQ(e.srtt(), 11250 * kNanosecond);
  EXPECT_EQ(e.rto(), 36250 * kNanosecond);
  e.onTimeout();
  EXPECT_EQ(e.rto(), 72500 * kNanosecond);
  e.onTimeout();
  EXPECT_EQ(e.rto(), 145 * kUs);
  for (int i = 0; i < 10; ++i) e.onTimeout();
  EXPECT_EQ(e.rto(), 1 * kMillisecond);  // capped
  e.onProgress();
  EXPECT_EQ(e.rto(), 36250 * kNanosecond);
}

TEST(RtoEstimator, TheFloorHoldsForSteadyTinyRtts) {
  RtoEstimator e;  // min 100 us
  for (int i = 0; i < 100; ++i) e.onSample(5 * kUs);
  EXPECT_EQ(e.rto(), 100 * kUs);
}

TEST(SelectiveRepeat, ResendsOnlyWhatIsLostFastOrByTimeout) {
  SelectiveRepeat sr;  // reorder threshold 3
  for (uint64_t seq = 0; seq < 10; ++seq) sr.onSend(seq, static_cast<Picoseconds>(seq) * kUs);
  AckOutcome a = sr.onAck(0, 12 * kUs);
  EXPECT_TRUE(a.new_data && a.rtt_valid);
  EXPECT_EQ(a.rtt, 12 * kUs);
  sr.onAck(2, 13 * kUs);
  sr.onAck(3, 14 * kUs);
  EXPECT_TRUE(sr.lost(15 * kUs, 1 * kMillisecond).empty());  // 1 is overtaken by two: may be reordering
  sr.onAck(4, 15 * kUs);
  EXPECT_EQ(sr.lost(16 * kUs, 1 * kMillisecond), (std::vector<uint64_t>{1}));  // overtaken by three
  EXPECT_TRUE(sr.lost(17 * kUs, 1 * kMillisecond).empty());  // fast retransmit once per transmission
  EXPECT_EQ(sr.cumulativeAck(), 1u);
  sr.onSend(1, 17 * kUs);
  EXPECT_EQ(sr.nextTimeout(1 * kMillisecond), 5 * kUs + 1 * kMillisecond);  // packet 5 is now the oldest
  EXPECT_EQ(sr.lost(5 * kUs + 1 * kMillisecond, 1 * kMillisecond), (std::vector<uint64_t>{5}));
  // 1 was resent after 9: only packets after 9 can overtake it now; 5 and 6 time out.
  EXPECT_EQ(sr.lost(6 * kUs + 1 * kMillisecond, 1 * kMillisecond), (std::vector<uint64_t>{5, 6}));
  a = sr.onAck(1, 40 * kUs);
  EXPECT_TRUE(a.new_data);
  EXPECT_FALSE(a.rtt_valid);  // Karn: a retransmitted packet gives no RTT sample
  EXPECT_FALSE(sr.onAck(1, 41 * kUs).new_data);  // duplicate
  EXPECT_EQ(sr.cumulativeAck(), 5u);
  EXPECT_EQ(sr.outstanding(), 5u);
}

// Packets sprayed round robin over four lanes (seq % 4): the others overtaking lane 0 is reordering; three sent
// after a packet on its own lane arriving is loss.
TEST(SelectiveRepeat, OnlyPacketsOvertakenOnTheirOwnLaneAreLost) {
  SelectiveRepeat sr;
  for (uint64_t seq = 0; seq < 24; ++seq) sr.onSend(seq, 0, static_cast<uint16_t>(seq % 4));
  for (uint64_t seq = 0; seq < 12; ++seq) {
    if (seq % 4 != 0) sr.onAck(seq, kUs);
  }
  EXPECT_TRUE(sr.overtaken().empty()) << "lanes 1-3 passing lane 0 is not loss";
  sr.onAck(12, kUs);
  EXPECT_EQ(sr.overtaken(), (std::vector<uint64_t>{0})) << "12 left third after 0 on its lane, second after 4";
  for (uint64_t seq : {16, 20}) sr.onAck(seq, kUs);
  EXPECT_EQ(sr.overtaken(5), (std::vector<uint64_t>{4})) << "8 lies beyond what the acknowledgement could report";
  EXPECT_EQ(sr.overtaken(), (std::vector<uint64_t>{8}));
}

// A resent packet's acknowledgement may be its first copy's: it overtakes nothing sent before its resend.
TEST(SelectiveRepeat, AResentPacketsAcknowledgementOvertakesNothing) {
  SelectiveRepeat sr;
  for (uint64_t seq = 0; seq < 6; ++seq) sr.onSend(seq, 0);
  sr.onSend(5, kUs);  // resent (a timeout, say) after 0-4 left
  sr.onAck(5, 2 * kUs);
  EXPECT_TRUE(sr.overtaken().empty());
  for (uint64_t seq = 6; seq < 9; ++seq) sr.onSend(seq, 3 * kUs);
  sr.onAck(8, 4 * kUs);
  EXPECT_EQ(sr.overtaken(), (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

TEST(RetransmitBudget, ALinkFlapShorterThanTheBudgetIsRiddenOut) {
  RetransmitBudget budget(30 * kSecond);
  EXPECT_FALSE(budget.exhausted(100 * kSecond));
  budget.onTimeout(1 * kSecond);
  budget.onTimeout(2 * kSecond);  // the clock started at the first timeout
  EXPECT_FALSE(budget.exhausted(30 * kSecond));
  EXPECT_TRUE(budget.exhausted(31 * kSecond));
  budget.onProgress();
  EXPECT_FALSE(budget.exhausted(40 * kSecond));
}

}  // namespace
}  // namespace megascale::congestion
