// Ethernet, IPv4 and UDP framing for the DPDK io, which has no kernel to do it: the headers of a frame it sends
// (IPv4 header checksum, UDP checksum, ECT(0) in the TOS as the kernel socket sets it), the checks on a frame it
// receives (hostile bytes are dropped, never trusted: lengths, versions, fragments and both checksums), and ARP,
// which answers for the rail's address and learns peers' MACs. Addresses and ports are in network order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace megascale::transport::udp_frame {

using Mac = std::array<uint8_t, 6>;
inline constexpr size_t kEthernetBytes = 14;
inline constexpr size_t kIpv4Bytes = 20;
inline constexpr size_t kUdpBytes = 8;
inline constexpr size_t kHeadersBytes = kEthernetBytes + kIpv4Bytes + kUdpBytes;
inline constexpr size_t kArpFrameBytes = 60;  // the 42 bytes of an ARP frame padded to Ethernet's minimum

struct Addresses {
  Mac source_mac{};
  Mac destination_mac{};
  uint32_t source_ipv4 = 0;
  uint32_t destination_ipv4 = 0;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  uint8_t tos = 0;
};

/// Writes the kHeadersBytes of headers in front of `payload` (already at out + kHeadersBytes), checksums
/// included. `ip_id`: the IPv4 identification (DF is set, so it only tells frames apart).
void writeUdp(uint8_t* out, const Addresses& a, size_t payload_bytes, uint16_t ip_id);

/// A received frame's UDP payload, when it is a well-formed IPv4 UDP datagram (no options beyond a valid IHL, no
/// fragment, lengths that fit the frame, a valid header checksum, and a valid UDP checksum unless it is 0).
struct Datagram {
  Addresses addresses;
  const uint8_t* payload = nullptr;
  size_t payload_bytes = 0;
};
bool parseUdp(const uint8_t* frame, size_t bytes, Datagram* out);

inline constexpr uint16_t kArpRequest = 1;
inline constexpr uint16_t kArpReply = 2;
struct Arp {
  uint16_t operation = 0;
  Mac sender_mac{};
  uint32_t sender_ipv4 = 0;
  Mac target_mac{};
  uint32_t target_ipv4 = 0;
};
/// An Ethernet/IPv4 ARP request or reply.
bool parseArp(const uint8_t* frame, size_t bytes, Arp* out);
/// Writes kArpFrameBytes: `arp` in an Ethernet frame to `destination` (broadcast for a request).
void writeArp(uint8_t* out, const Arp& arp, const Mac& destination);
inline constexpr Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/// The Internet checksum (RFC 1071) of `bytes` starting from a partial sum `sum`.
uint16_t internetChecksum(const uint8_t* data, size_t bytes, uint32_t sum = 0);

}  // namespace megascale::transport::udp_frame
