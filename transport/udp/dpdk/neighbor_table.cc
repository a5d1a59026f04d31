#include "transport/udp/dpdk/neighbor_table.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace megascale::transport {

namespace {
constexpr int kArpFlagComplete = 0x2;  // ATF_COM
}

std::optional<udp_frame::Mac> NeighborTable::find(uint32_t ipv4) const {
  auto it = macs_.find(ipv4);
  if (it == macs_.end()) return std::nullopt;
  return it->second;
}

void NeighborTable::learn(uint32_t ipv4, const udp_frame::Mac& mac) {
  macs_[ipv4] = mac;
  asked_ns_.erase(ipv4);
}

bool NeighborTable::shouldAsk(uint32_t ipv4, int64_t now_ns) {
  auto [it, first] = asked_ns_.try_emplace(ipv4, now_ns);
  if (first) return true;
  if (now_ns - it->second < ask_interval_ns_) return false;
  it->second = now_ns;
  return true;
}

int NeighborTable::learnFromKernel(const std::string& proc_net_arp, const std::string& interface) {
  // "IP address  HW type  Flags  HW address  Mask  Device", one entry per line after the heading.
  std::istringstream lines(proc_net_arp);
  std::string line;
  std::getline(lines, line);
  int learned = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string ip, type, flags, mac, mask, device;
    if (!(fields >> ip >> type >> flags >> mac >> mask >> device) || device != interface) continue;
    in_addr address{};
    unsigned m[6];
    if (inet_pton(AF_INET, ip.c_str(), &address) != 1) continue;
    if ((std::strtol(flags.c_str(), nullptr, 16) & kArpFlagComplete) == 0) continue;
    if (std::sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) continue;
    udp_frame::Mac bytes;
    for (int i = 0; i < 6; ++i) bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(m[i]);
    learn(address.s_addr, bytes);
    ++learned;
  }
  return learned;
}

}  // namespace megascale::transport
