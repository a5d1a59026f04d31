// A DPDK frame's arrival time is its doorbell's (transport/udp/dpdk/arrival_stamps.h).
#include "transport/udp/dpdk/arrival_stamps.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace megascale::transport {
namespace {

std::vector<uint8_t> datagram(uint64_t seq, size_t payload_bytes = 100) {
  const udp_wire::Header h{udp_wire::kMagic, udp_wire::kData, 0, 1, 42, seq, 1'000'000};
  std::vector<uint8_t> bytes(sizeof(h) + payload_bytes, 0xab);
  std::memcpy(bytes.data(), &h, sizeof(h));
  return bytes;
}

TEST(ArrivalStamps, AFrameGetsTheTimeOfTheDoorbellItRangOnce) {
  ArrivalStamps stamps;
  const std::vector<uint8_t> first = datagram(7), second = datagram(8);
  stamps.onDoorbell(first.data(), ArrivalStamps::kDoorbellBytes, 1000);
  stamps.onDoorbell(second.data(), ArrivalStamps::kDoorbellBytes, 2000);
  EXPECT_EQ(stamps.take(second.data(), second.size()), 2000);  // frames may come in another order
  EXPECT_EQ(stamps.take(first.data(), first.size()), 1000);
  EXPECT_EQ(stamps.take(first.data(), first.size()), 0);  // taken: a duplicate frame gets no stale time
  EXPECT_EQ(stamps.remembered(), 0u);
}

TEST(ArrivalStamps, AFrameWhoseDoorbellIsNotReadYetHasNoTime) {
  ArrivalStamps stamps;
  const std::vector<uint8_t> rang = datagram(7), silent = datagram(9);
  stamps.onDoorbell(rang.data(), ArrivalStamps::kDoorbellBytes, 1000);
  EXPECT_EQ(stamps.take(silent.data(), silent.size()), 0);
}

// A datagram the socket kept whole (another process of this host) or a stranger's short one is no doorbell, and
// a frame too short to be ours is never matched.
TEST(ArrivalStamps, OnlyDoorbellSizedBytesRingAndOnlyLongerDatagramsAnswer) {
  ArrivalStamps stamps;
  const std::vector<uint8_t> whole = datagram(7);
  stamps.onDoorbell(whole.data(), whole.size(), 1000);
  stamps.onDoorbell(whole.data(), 3, 1000);
  stamps.onDoorbell(whole.data(), ArrivalStamps::kDoorbellBytes, 0);  // the kernel gave no time
  EXPECT_EQ(stamps.remembered(), 0u);
  stamps.onDoorbell(whole.data(), ArrivalStamps::kDoorbellBytes, 1000);
  EXPECT_EQ(stamps.take(whole.data(), ArrivalStamps::kDoorbellBytes), 0);
  EXPECT_EQ(stamps.take(whole.data(), sizeof(udp_wire::Header)), 1000);  // a header-only probe is ours
}

TEST(ArrivalStamps, DoorbellsWhoseFramesNeverCameDoNotPileUp) {
  ArrivalStamps stamps;
  for (uint64_t seq = 0; seq < 200'000; ++seq) {
    const std::vector<uint8_t> d = datagram(seq, 0);
    stamps.onDoorbell(d.data(), ArrivalStamps::kDoorbellBytes, 1000 + static_cast<int64_t>(seq));
  }
  EXPECT_LE(stamps.remembered(), size_t{1} << 16);
  const std::vector<uint8_t> last = datagram(199'999);
  EXPECT_EQ(stamps.take(last.data(), last.size()), 1000 + 199'999);
}

}  // namespace
}  // namespace megascale::transport
