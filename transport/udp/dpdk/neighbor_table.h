// Which MAC an IPv4 neighbor on a rail has, for the DPDK io that frames its own packets: learned from ARP frames
// the rail receives and from the kernel's table (/proc/net/arp: with the af_packet device the kernel shares the
// interface and has usually resolved the peer already, for the job's setup connection). An address nobody has
// resolved yet is asked for by ARP, at most once per interval, while its packets are dropped (lost packets the
// transport retransmits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "transport/udp/dpdk/udp_frame.h"

namespace megascale::transport {

class NeighborTable {
 public:
  explicit NeighborTable(int64_t ask_interval_ns = 100'000'000) : ask_interval_ns_(ask_interval_ns) {}
  std::optional<udp_frame::Mac> find(uint32_t ipv4) const;
  void learn(uint32_t ipv4, const udp_frame::Mac& mac);
  /// Whether an ARP request for `ipv4` is due at `now_ns` (none sent within the interval); marks it sent.
  bool shouldAsk(uint32_t ipv4, int64_t now_ns);
  /// Learns the complete entries of `proc_net_arp` (the text of /proc/net/arp) on `interface`; returns how many.
  int learnFromKernel(const std::string& proc_net_arp, const std::string& interface);

 private:
  int64_t ask_interval_ns_;
  std::unordered_map<uint32_t, udp_frame::Mac> macs_;
  std::unordered_map<uint32_t, int64_t> asked_ns_;
};

}  // namespace megascale::transport
