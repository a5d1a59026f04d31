// The emulated switch's output port on virtual time: the rate it sends at, strict priority for control frames,
// RED marking on the queue left behind, tail drop at the buffer, and what CE marking does to an IP header.
#include "testbed/ecn_switch/egress_queue.h"

#include <gtest/gtest.h>

#include "testbed/ecn_switch/frame_ecn.h"

namespace megascale::testbed {
namespace {

// An Ethernet frame of `size` bytes carrying IPv4 with TOS byte `tos` and a valid header checksum.
Frame ipv4Frame(size_t size, uint8_t tos) {
  Frame f(size, 0);
  f[12] = 0x08, f[13] = 0x00;
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45, ip[1] = tos;
  ip[2] = static_cast<uint8_t>((size - 14) >> 8), ip[3] = static_cast<uint8_t>(size - 14);
  ip[8] = 64, ip[9] = 17;
  ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<uint8_t>(~sum >> 8), ip[11] = static_cast<uint8_t>(~sum);
  return f;
}

bool checksumValid(const Frame& f) {
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<uint32_t>(f[14 + i] << 8 | f[15 + i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

constexpr uint8_t kEct0 = 0x02;

EgressConfig port(uint64_t buffer_bytes, bool marks_ecn = false, congestion::EcnThresholds ecn = {}, uint64_t seed = 1) {
  EgressConfig config;
  config.rate_bps = 1e9;
  config.buffer_bytes = buffer_bytes;
  config.marks_ecn = marks_ecn;
  config.ecn = ecn;
  config.seed = seed;
  return config;
}

TEST(FrameEcn, MarksEcnCapableIpv4AndKeepsTheChecksumValid) {
  for (int tos : {0x02, 0x01, 0x2a, 0xfe & ~1}) {
    Frame f = ipv4Frame(1000, static_cast<uint8_t>(tos));
    ASSERT_TRUE(checksumValid(f));
    EXPECT_TRUE(markCongestionExperienced(f.data(), f.size())) << tos;
    EXPECT_EQ(ecnCodepoint(f.data(), f.size()), 3);
    EXPECT_EQ(f[15] & 0xfc, tos & 0xfc) << "the DSCP is kept";
    EXPECT_TRUE(checksumValid(f)) << tos;
    EXPECT_FALSE(markCongestionExperienced(f.data(), f.size())) << "already marked";
  }
}

TEST(FrameEcn, LeavesNotEctAndNonIpAlone) {
  Frame not_ect = ipv4Frame(200, 0x00);
  EXPECT_FALSE(markCongestionExperienced(not_ect.data(), not_ect.size()));
  EXPECT_EQ(not_ect, ipv4Frame(200, 0x00));
  Frame arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  EXPECT_EQ(ecnCodepoint(arp.data(), arp.size()), -1);
  EXPECT_FALSE(markCongestionExperienced(arp.data(), arp.size()));
  EXPECT_EQ(classify(arp.data(), arp.size()), FrameClass::kControl);
  Frame runt(20, 0);
  runt[12] = 0x08;
  EXPECT_EQ(ecnCodepoint(runt.data(), runt.size()), -1) << "too short for an IP header";
}

TEST(FrameEcn, MarksIpv6TrafficClass) {
  Frame f(100, 0);
  f[12] = 0x86, f[13] = 0xdd;
  f[14] = 0x60 | 0x0b, f[15] = 0xa0 | 0x05;  // traffic class 0xba (DSCP 46, ECT(0)), then the flow label
  EXPECT_EQ(ecnCodepoint(f.data(), f.size()), 2);
  EXPECT_EQ(classify(f.data(), f.size()), FrameClass::kControl) << "DSCP 46";
  EXPECT_TRUE(markCongestionExperienced(f.data(), f.size()));
  EXPECT_EQ(ecnCodepoint(f.data(), f.size()), 3);
  EXPECT_EQ(f[14], 0x6b);
  EXPECT_EQ(f[15], 0xb5) << "the flow label is kept";
}

TEST(EgressQueue, SendsAtItsRateStoreAndForward) {
  EgressQueue q(port(1 << 20));
  const size_t size = 1000 - EgressQueue::kWireOverhead;  // 1000 bytes on the wire: 8 us at 1 Gbit/s
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.push(ipv4Frame(size, 0), 0));
  EXPECT_EQ(q.nextDeparture(), 8000);
  EXPECT_FALSE(q.pop(7999));
  int64_t last_departure = 0;
  for (int64_t now = 0; q.nextDeparture() != INT64_MAX; now += 1000) {
    while (q.pop(now)) last_departure = now;
  }
  EXPECT_EQ(q.stats().frames, 10u);
  EXPECT_EQ(q.stats().bytes, 10'000u);
  EXPECT_EQ(last_departure, 80'000) << "ten 8 us frames back to back";
}

TEST(EgressQueue, ALateCallerCatchesUpWithoutExceedingTheRate) {
  EgressQueue q(port(1 << 20));
  for (int i = 0; i < 5; ++i) q.push(ipv4Frame(1000 - EgressQueue::kWireOverhead, 0), 0);
  int popped = 0;
  while (q.pop(24'000)) ++popped;  // woke late: the three whose time has come leave together
  EXPECT_EQ(popped, 3);
  EXPECT_EQ(q.nextDeparture(), 32'000);
  // A frame arriving at an idle wire leaves one serialization after it arrived, not after the wire went idle.
  while (q.pop(1'000'000)) {}
  q.push(ipv4Frame(1000 - EgressQueue::kWireOverhead, 0), 2'000'000);
  EXPECT_EQ(q.nextDeparture(), 2'008'000);
}

TEST(EgressQueue, ControlFramesGoFirstAndAreNeverMarkedOrDropped) {
  EgressQueue q(port(5000, true, {.k_min_bytes = 0, .k_max_bytes = 1, .p_max = 1}));
  for (int i = 0; i < 4; ++i) q.push(ipv4Frame(976, kEct0), 0);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(q.push(ipv4Frame(976, 0x80 | kEct0), 10));
  std::vector<int> order;
  for (int64_t now = 0; q.nextDeparture() != INT64_MAX; now += 1000) {
    while (auto f = q.pop(now)) order.push_back((*f)[15] & 0x80 ? 1 : 0);
  }
  ASSERT_EQ(order.size(), 24u);
  EXPECT_EQ(order[0], 0) << "the data frame already on the wire finishes";
  for (int i = 1; i <= 20; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], 1) << i;
  EXPECT_EQ(q.stats().drops, 0u);
  EXPECT_LE(q.stats().marks, 4u) << "only data frames are marked";
}

TEST(EgressQueue, DropsAtTheTailWhenTheBufferIsFull) {
  EgressQueue q(port(3000));
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += q.push(ipv4Frame(976, 0), 0);
  EXPECT_EQ(accepted, 4) << "one on the wire and three waiting (3000 bytes)";
  EXPECT_EQ(q.stats().drops, 6u);
  EXPECT_EQ(q.stats().peak_queue_bytes, 3000u) << "the one on the wire has left the buffer";
  EXPECT_EQ(q.dataQueueBytes(), 3000u);
}

TEST(EgressQueue, ReportsEachIntervalsPeakFromWhereTheLastEnded) {
  EgressQueue q(port(1 << 20));
  for (int i = 0; i < 3; ++i) q.push(ipv4Frame(1000 - EgressQueue::kWireOverhead, 0), 0);
  EXPECT_EQ(q.takeIntervalPeak(), 2000u) << "one on the wire, two waiting";
  while (q.pop(100'000)) {}
  EXPECT_EQ(q.takeIntervalPeak(), 2000u) << "the interval began with 2000 bytes waiting";
  EXPECT_EQ(q.takeIntervalPeak(), 0u) << "empty throughout";
  q.push(ipv4Frame(1000 - EgressQueue::kWireOverhead, 0), 200'000);
  q.pop(300'000);
  EXPECT_EQ(q.takeIntervalPeak(), 1000u) << "a frame that came and went between two samples";
}

TEST(EgressQueue, MarksLikeRedOnTheQueueLeftBehind) {
  // K_min 10 frames, K_max 30 frames, P_max 0.5: a standing queue of 20 frames marks about a quarter.
  const uint64_t frame = 1000;
  const congestion::EcnThresholds red{.k_min_bytes = 10 * frame, .k_max_bytes = 30 * frame, .p_max = 0.5};
  EgressQueue q(port(1 << 20, true, red, 7));
  for (int i = 0; i < 21; ++i) q.push(ipv4Frame(frame - EgressQueue::kWireOverhead, kEct0), 0);
  int marked = 0, total = 0;
  for (int64_t now = 8000; total < 20000; now += 8000) {
    auto f = q.pop(now);
    ASSERT_TRUE(f);
    marked += ecnCodepoint(f->data(), f->size()) == 3;
    ++total;
    q.push(ipv4Frame(frame - EgressQueue::kWireOverhead, kEct0), now);  // keeps 20 behind the head
  }
  EXPECT_NEAR(static_cast<double>(marked) / total, 0.25, 0.02);
  EXPECT_EQ(q.stats().marks, static_cast<uint64_t>(marked));
  // An empty queue behind it marks nothing.
  EgressQueue idle(port(1 << 20, true, red));
  idle.push(ipv4Frame(500, kEct0), 0);
  EXPECT_EQ(ecnCodepoint(idle.pop(1'000'000)->data(), 500), 2);
}

}  // namespace
}  // namespace megascale::testbed
