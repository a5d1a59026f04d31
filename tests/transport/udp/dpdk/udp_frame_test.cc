#include "transport/udp/dpdk/udp_frame.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace megascale::transport {
namespace {

using udp_frame::Addresses;

Addresses someAddresses() {
  Addresses a;
  a.source_mac = {0x02, 0, 0, 0, 0, 1};
  a.destination_mac = {0x02, 0, 0, 0, 0, 2};
  a.source_ipv4 = inet_addr("10.1.0.1");
  a.destination_ipv4 = inet_addr("10.1.0.2");
  a.source_port = htons(40000);
  a.destination_port = htons(50000);
  a.tos = 0x88;  // a DSCP class; the low bits are the frame's ECN
  return a;
}

std::vector<uint8_t> frameOf(const Addresses& a, const std::string& payload) {
  std::vector<uint8_t> frame(udp_frame::kHeadersBytes + payload.size());
  std::memcpy(frame.data() + udp_frame::kHeadersBytes, payload.data(), payload.size());
  udp_frame::writeUdp(frame.data(), a, payload.size(), 7);
  return frame;
}

TEST(UdpFrame, WhatIsWrittenParsesBackWithEct0AndTheKernelsChecksums) {
  const std::vector<uint8_t> frame = frameOf(someAddresses(), "hello, odd length");
  udp_frame::Datagram d;
  ASSERT_TRUE(udp_frame::parseUdp(frame.data(), frame.size(), &d));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.payload), d.payload_bytes), "hello, odd length");
  EXPECT_EQ(d.addresses.source_ipv4, someAddresses().source_ipv4);
  EXPECT_EQ(d.addresses.destination_port, htons(50000));
  EXPECT_EQ(d.addresses.source_mac, someAddresses().source_mac);
  EXPECT_EQ(d.addresses.tos, 0x8a) << "the class kept, ECT(0) set";
  // The IPv4 header sums to zero with its checksum, as a router checks it.
  EXPECT_EQ(udp_frame::internetChecksum(frame.data() + udp_frame::kEthernetBytes, udp_frame::kIpv4Bytes), 0);
  EXPECT_EQ(frame[udp_frame::kEthernetBytes + 6] & 0x40, 0x40) << "don't fragment";
}

TEST(UdpFrame, ACorruptedByteFailsAChecksumAndTheFrameIsDropped) {
  const std::vector<uint8_t> good = frameOf(someAddresses(), std::string(1000, 'x'));
  for (size_t at : {udp_frame::kEthernetBytes + 8, udp_frame::kHeadersBytes + 500}) {  // the TTL, the payload
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x10;
    udp_frame::Datagram d;
    EXPECT_FALSE(udp_frame::parseUdp(bad.data(), bad.size(), &d)) << "byte " << at;
  }
}

TEST(UdpFrame, HostileLengthsFragmentsAndOtherProtocolsAreDropped) {
  const std::vector<uint8_t> good = frameOf(someAddresses(), "payload");
  udp_frame::Datagram d;
  for (size_t cut = 0; cut < good.size(); ++cut) EXPECT_FALSE(udp_frame::parseUdp(good.data(), cut, &d)) << cut;
  std::vector<uint8_t> padded = good;  // Ethernet padding after the datagram is allowed
  padded.resize(good.size() + 20, 0);
  EXPECT_TRUE(udp_frame::parseUdp(padded.data(), padded.size(), &d));
  EXPECT_EQ(d.payload_bytes, 7u);
  auto rewritten = [&](size_t at, uint8_t value) {
    std::vector<uint8_t> f = good;
    f[at] = value;
    uint8_t* ip = f.data() + udp_frame::kEthernetBytes;  // a valid header checksum again: only the field is wrong
    ip[10] = ip[11] = 0;
    const uint16_t sum = udp_frame::internetChecksum(ip, udp_frame::kIpv4Bytes);
    ip[10] = static_cast<uint8_t>(sum >> 8);
    ip[11] = static_cast<uint8_t>(sum);
    return f;
  };
  const size_t ip = udp_frame::kEthernetBytes;
  for (auto [at, value] : std::vector<std::pair<size_t, uint8_t>>{
           {ip + 0, 0x65},   // IPv6 in an IPv4 frame
           {ip + 0, 0x44},   // a header shorter than 20 bytes
           {ip + 9, 6},      // TCP
           {ip + 6, 0x20},   // more fragments
           {ip + 2, 0xff}}) {  // a total length beyond the frame
    const std::vector<uint8_t> f = rewritten(at, value);
    EXPECT_FALSE(udp_frame::parseUdp(f.data(), f.size(), &d)) << "byte " << at << " = " << int{value};
  }
}

TEST(UdpFrame, ArpRequestsAndRepliesRoundTrip) {
  udp_frame::Arp request;
  request.operation = udp_frame::kArpRequest;
  request.sender_mac = {2, 0, 0, 0, 0, 1};
  request.sender_ipv4 = inet_addr("10.1.0.1");
  request.target_ipv4 = inet_addr("10.1.0.2");
  uint8_t frame[udp_frame::kArpFrameBytes];
  udp_frame::writeArp(frame, request, udp_frame::kBroadcast);
  udp_frame::Arp parsed;
  ASSERT_TRUE(udp_frame::parseArp(frame, sizeof(frame), &parsed));
  EXPECT_EQ(parsed.operation, udp_frame::kArpRequest);
  EXPECT_EQ(parsed.sender_mac, request.sender_mac);
  EXPECT_EQ(parsed.target_ipv4, request.target_ipv4);
  EXPECT_FALSE(udp_frame::parseArp(frame, 30, &parsed)) << "truncated";
  udp_frame::Datagram d;
  EXPECT_FALSE(udp_frame::parseUdp(frame, sizeof(frame), &d)) << "ARP is no datagram";
}

}  // namespace
}  // namespace megascale::transport
