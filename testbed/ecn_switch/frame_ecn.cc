#include "testbed/ecn_switch/frame_ecn.h"

namespace megascale::testbed {
namespace {

constexpr size_t kEthernetHeader = 14;
constexpr uint16_t kIpv4 = 0x0800, kIpv6 = 0x86dd;
constexpr int kCongestionExperienced = 3;

uint16_t etherType(const uint8_t* frame, size_t size) {
  if (size < kEthernetHeader + 20) return 0;  // not even a minimal IP header after it
  return static_cast<uint16_t>(frame[12] << 8 | frame[13]);
}

// The 8-bit traffic class (IPv4's TOS byte, IPv6's Traffic Class), or -1 without IP.
int trafficClass(const uint8_t* frame, size_t size) {
  const uint8_t* ip = frame + kEthernetHeader;
  switch (etherType(frame, size)) {
    case kIpv4: return (ip[0] >> 4) == 4 ? ip[1] : -1;
    case kIpv6: return (ip[0] >> 4) == 6 ? ((ip[0] & 0x0f) << 4 | ip[1] >> 4) : -1;
    default: return -1;
  }
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word of the header changing from m to m'.
uint16_t updatedChecksum(uint16_t checksum, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = static_cast<uint16_t>(~checksum) + static_cast<uint32_t>(static_cast<uint16_t>(~old_word)) + new_word;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace

FrameClass classify(const uint8_t* frame, size_t size) {
  const int tc = trafficClass(frame, size);
  return tc < 0 || (tc & 0x80) ? FrameClass::kControl : FrameClass::kData;
}

int ecnCodepoint(const uint8_t* frame, size_t size) {
  const int tc = trafficClass(frame, size);
  return tc < 0 ? -1 : tc & 3;
}

bool markCongestionExperienced(uint8_t* frame, size_t size) {
  const int ecn = ecnCodepoint(frame, size);
  if (ecn <= 0 || ecn == kCongestionExperienced) return false;
  uint8_t* ip = frame + kEthernetHeader;
  if (etherType(frame, size) == kIpv6) {
    ip[1] |= kCongestionExperienced << 4;  // the traffic class's low two bits sit in the second byte's high nibble
    return true;
  }
  const uint16_t old_word = static_cast<uint16_t>(ip[0] << 8 | ip[1]);
  ip[1] |= kCongestionExperienced;
  const uint16_t new_word = static_cast<uint16_t>(ip[0] << 8 | ip[1]);
  const uint16_t checksum = updatedChecksum(static_cast<uint16_t>(ip[10] << 8 | ip[11]), old_word, new_word);
  ip[10] = static_cast<uint8_t>(checksum >> 8);
  ip[11] = static_cast<uint8_t>(checksum);
  return true;
}

}  // namespace megascale::testbed
