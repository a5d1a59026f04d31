#include "transport/udp/dpdk/udp_frame.h"

#include <arpa/inet.h>

#include <cstring>

namespace megascale::transport::udp_frame {

namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherArp = 0x0806;
constexpr uint8_t kProtocolUdp = 17;
constexpr uint8_t kEct0 = 0x02;
constexpr uint8_t kTtl = 64;

void put16(uint8_t* p, uint16_t host) {
  const uint16_t v = htons(host);
  std::memcpy(p, &v, 2);
}
uint16_t get16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return ntohs(v);
}

uint32_t partialSum(const uint8_t* data, size_t bytes, uint32_t sum) {
  uint64_t wide = sum;
  size_t i = 0;
  for (; i + 1 < bytes; i += 2) wide += static_cast<uint32_t>(data[i] << 8 | data[i + 1]);
  if (i < bytes) wide += static_cast<uint32_t>(data[i] << 8);
  while (wide >> 16) wide = (wide & 0xffff) + (wide >> 16);
  return static_cast<uint32_t>(wide);
}

// The UDP pseudo-header's sum: addresses (network order bytes), protocol, UDP length.
uint32_t pseudoHeaderSum(uint32_t source, uint32_t destination, size_t udp_bytes) {
  uint8_t pseudo[12];
  std::memcpy(pseudo, &source, 4);
  std::memcpy(pseudo + 4, &destination, 4);
  pseudo[8] = 0;
  pseudo[9] = kProtocolUdp;
  put16(pseudo + 10, static_cast<uint16_t>(udp_bytes));
  return partialSum(pseudo, sizeof(pseudo), 0);
}

void writeEthernet(uint8_t* out, const Mac& destination, const Mac& source, uint16_t type) {
  std::memcpy(out, destination.data(), 6);
  std::memcpy(out + 6, source.data(), 6);
  put16(out + 12, type);
}

}  // namespace

uint16_t internetChecksum(const uint8_t* data, size_t bytes, uint32_t sum) {
  return static_cast<uint16_t>(~partialSum(data, bytes, sum) & 0xffff);
}

void writeUdp(uint8_t* out, const Addresses& a, size_t payload_bytes, uint16_t ip_id) {
  writeEthernet(out, a.destination_mac, a.source_mac, kEtherIpv4);
  uint8_t* ip = out + kEthernetBytes;
  const size_t udp_bytes = kUdpBytes + payload_bytes;
  ip[0] = 0x45;
  ip[1] = static_cast<uint8_t>((a.tos & ~0x3) | kEct0);
  put16(ip + 2, static_cast<uint16_t>(kIpv4Bytes + udp_bytes));
  put16(ip + 4, ip_id);
  put16(ip + 6, 0x4000);  // don't fragment
  ip[8] = kTtl;
  ip[9] = kProtocolUdp;
  put16(ip + 10, 0);
  std::memcpy(ip + 12, &a.source_ipv4, 4);
  std::memcpy(ip + 16, &a.destination_ipv4, 4);
  put16(ip + 10, internetChecksum(ip, kIpv4Bytes));
  uint8_t* udp = ip + kIpv4Bytes;
  std::memcpy(udp, &a.source_port, 2);
  std::memcpy(udp + 2, &a.destination_port, 2);
  put16(udp + 4, static_cast<uint16_t>(udp_bytes));
  put16(udp + 6, 0);
  uint16_t sum = internetChecksum(udp, udp_bytes, pseudoHeaderSum(a.source_ipv4, a.destination_ipv4, udp_bytes));
  put16(udp + 6, sum == 0 ? 0xffff : sum);  // 0 would mean "no checksum"
}

bool parseUdp(const uint8_t* frame, size_t bytes, Datagram* out) {
  if (bytes < kHeadersBytes || get16(frame + 12) != kEtherIpv4) return false;
  const uint8_t* ip = frame + kEthernetBytes;
  const size_t header_bytes = static_cast<size_t>(ip[0] & 0xf) * 4;
  const size_t total = get16(ip + 2);
  if ((ip[0] >> 4) != 4 || header_bytes < kIpv4Bytes || ip[9] != kProtocolUdp) return false;
  if (total < header_bytes + kUdpBytes || kEthernetBytes + total > bytes) return false;  // padding may follow
  if ((get16(ip + 6) & 0x3fff) != 0) return false;  // a fragment: never ours (we set DF)
  if (internetChecksum(ip, header_bytes) != 0) return false;
  const uint8_t* udp = ip + header_bytes;
  const size_t udp_bytes = get16(udp + 4);
  if (udp_bytes < kUdpBytes || udp_bytes != total - header_bytes) return false;
  Addresses& a = out->addresses;
  std::memcpy(&a.source_ipv4, ip + 12, 4);
  std::memcpy(&a.destination_ipv4, ip + 16, 4);
  if (get16(udp + 6) != 0 &&
      internetChecksum(udp, udp_bytes, pseudoHeaderSum(a.source_ipv4, a.destination_ipv4, udp_bytes)) != 0) {
    return false;
  }
  std::memcpy(a.destination_mac.data(), frame, 6);
  std::memcpy(a.source_mac.data(), frame + 6, 6);
  std::memcpy(&a.source_port, udp, 2);
  std::memcpy(&a.destination_port, udp + 2, 2);
  a.tos = ip[1];
  out->payload = udp + kUdpBytes;
  out->payload_bytes = udp_bytes - kUdpBytes;
  return true;
}

bool parseArp(const uint8_t* frame, size_t bytes, Arp* out) {
  if (bytes < kEthernetBytes + 28 || get16(frame + 12) != kEtherArp) return false;
  const uint8_t* arp = frame + kEthernetBytes;
  // Ethernet hardware, IPv4 protocol, 6- and 4-byte addresses.
  if (get16(arp) != 1 || get16(arp + 2) != kEtherIpv4 || arp[4] != 6 || arp[5] != 4) return false;
  out->operation = get16(arp + 6);
  if (out->operation != kArpRequest && out->operation != kArpReply) return false;
  std::memcpy(out->sender_mac.data(), arp + 8, 6);
  std::memcpy(&out->sender_ipv4, arp + 14, 4);
  std::memcpy(out->target_mac.data(), arp + 18, 6);
  std::memcpy(&out->target_ipv4, arp + 24, 4);
  return true;
}

void writeArp(uint8_t* out, const Arp& a, const Mac& destination) {
  std::memset(out, 0, kArpFrameBytes);
  writeEthernet(out, destination, a.sender_mac, kEtherArp);
  uint8_t* arp = out + kEthernetBytes;
  put16(arp, 1);
  put16(arp + 2, kEtherIpv4);
  arp[4] = 6;
  arp[5] = 4;
  put16(arp + 6, a.operation);
  std::memcpy(arp + 8, a.sender_mac.data(), 6);
  std::memcpy(arp + 14, &a.sender_ipv4, 4);
  std::memcpy(arp + 18, a.target_mac.data(), 6);
  std::memcpy(arp + 24, &a.target_ipv4, 4);
}

}  // namespace megascale::transport::udp_frame
