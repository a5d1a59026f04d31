#include "transport/udp/dpdk/dpdk_port.h"

#include <net/if.h>
#include <rte_ethdev.h>
#include <sys/ioctl.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/status.h"
#include "transport/udp/udp_io.h"

namespace megascale::transport {

namespace {

constexpr uint16_t kDescriptors = 1024;
constexpr uint16_t kBurst = 32;
constexpr int kRingFrames = 2048;  // af_packet ring slots per direction

// The af_packet ring slot that holds a frame of the MTU with the kernel's packet header: a power of two.
int ringFrameBytes(int mtu) {
  const int needed = std::min(mtu, 9000) + static_cast<int>(udp_frame::kEthernetBytes) + 128;
  int bytes = 2048;
  while (bytes < needed) bytes *= 2;
  return bytes;
}

// Where the UDP header is, for the io (dpdk_udp_io.cc): the frame is parsed once, on arrival.
void markParsed(rte_mbuf* m, const udp_frame::Datagram& d) {
  const auto udp_offset = static_cast<size_t>(d.payload - rte_pktmbuf_mtod(m, const uint8_t*)) - udp_frame::kUdpBytes;
  m->l2_len = udp_frame::kEthernetBytes;
  m->l3_len = static_cast<uint16_t>(udp_offset - udp_frame::kEthernetBytes) & 0x1ff;
}

std::string dpdkError(const std::string& what) {
  return what + ": " + rte_strerror(rte_errno);
}

}  // namespace

DpdkPort::DpdkPort(const std::string& interface, uint32_t ipv4, int mtu, int index)
    : interface_(interface), ipv4_(ipv4), device_name_("net_af_packet" + std::to_string(index)),
      probe_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
  const int frame_bytes = ringFrameBytes(mtu);
  std::ostringstream args;
  args << device_name_ << ",iface=" << interface << ",qpairs=1,qdisc_bypass=0,framesz=" << frame_bytes
       << ",blocksz=" << std::max(frame_bytes, 4096) << ",framecnt=" << kRingFrames;
  const std::string where = "udp: DPDK af_packet device on " + interface;
  if (rte_dev_probe(args.str().c_str()) != 0) {
    throw Error(ErrorCode::kUnavailable, where + " (" + args.str() + ") did not start (needs root, or CAP_NET_RAW)");
  }
  rte_eth_dev_info info{};
  if (rte_eth_dev_get_port_by_name(device_name_.c_str(), &port_id_) != 0 || rte_eth_dev_info_get(port_id_, &info) != 0) {
    throw Error(ErrorCode::kUnavailable, where + ": no port named " + device_name_);
  }
  device_ = info.device;
  rte_ether_addr mac{};
  rte_eth_macaddr_get(port_id_, &mac);
  std::memcpy(mac_.data(), mac.addr_bytes, 6);
  // Frames live only between the device and an engine's round: a small pool does (16 MB of buffers).
  const unsigned count = static_cast<unsigned>(std::clamp((16 << 20) / (frame_bytes + 256), 1023, 8191));
  pool_ = rte_pktmbuf_pool_create(("megascale" + std::to_string(index)).c_str(), count, 0, 0,
                                  static_cast<uint16_t>(frame_bytes + RTE_PKTMBUF_HEADROOM), SOCKET_ID_ANY);
  if (pool_ == nullptr) {
    const std::string why = dpdkError(where + ": frame pool");
    closeDevice();
    throw Error(ErrorCode::kUnavailable, why);
  }
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(port_id_, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(port_id_, 0, kDescriptors, SOCKET_ID_ANY, nullptr, pool_) != 0 ||
      rte_eth_tx_queue_setup(port_id_, 0, kDescriptors, SOCKET_ID_ANY, nullptr) != 0 || rte_eth_dev_start(port_id_) != 0) {
    const std::string why = dpdkError(where + ": configuring its queues");
    closeDevice();
    throw Error(ErrorCode::kUnavailable, why);
  }
  learnKernelNeighbors();
}

DpdkPort::~DpdkPort() {
  rte_eth_dev_stop(port_id_);
  closeDevice();
}

void DpdkPort::closeDevice() {
  rte_dev_remove(device_);  // closes the port and gives the interface back
  rte_mempool_free(pool_);
}

void DpdkPort::claim(uint16_t port, DpdkInbox* inbox) {
  std::lock_guard<std::mutex> guard(mutex_);
  inboxes_[port] = inbox;
}

void DpdkPort::release(uint16_t port) {
  std::lock_guard<std::mutex> guard(mutex_);
  inboxes_.erase(port);
}

bool DpdkPort::claimed(uint16_t port) {
  std::lock_guard<std::mutex> guard(mutex_);
  return inboxes_.count(port) > 0;
}

void DpdkPort::poll(DpdkInbox& inbox, std::vector<rte_mbuf*>* out, size_t max) {
  std::lock_guard<std::mutex> guard(mutex_);
  while (out->size() < max && !inbox.frames.empty()) {
    out->push_back(inbox.frames.front());
    inbox.frames.pop_front();
  }
  if (out->size() >= max) return;
  rte_mbuf* burst[kBurst];
  const uint16_t n = rte_eth_rx_burst(port_id_, 0, burst, kBurst);
  for (uint16_t i = 0; i < n; ++i) dispatch(burst[i], inbox, out, max);
}

void DpdkPort::dispatch(rte_mbuf* m, DpdkInbox& poller, std::vector<rte_mbuf*>* out, size_t max) {
  const uint8_t* bytes = rte_pktmbuf_mtod(m, const uint8_t*);
  const size_t length = rte_pktmbuf_data_len(m);
  udp_frame::Datagram d;
  DpdkInbox* owner = nullptr;
  if (m->nb_segs == 1 && udp_frame::parseUdp(bytes, length, &d) && d.addresses.destination_ipv4 == ipv4_) {
    auto it = inboxes_.find(d.addresses.destination_port);
    if (it != inboxes_.end()) owner = it->second;
    markParsed(m, d);
  } else if (m->nb_segs == 1) {
    handleArp(bytes, length);
  }
  if (owner == &poller && out->size() < max) {
    out->push_back(m);
  } else if (owner != nullptr) {
    owner->frames.push_back(m);
  } else {
    rte_pktmbuf_free(m);
  }
}

bool DpdkPort::handleArp(const uint8_t* bytes, size_t length) {
  udp_frame::Arp arp;
  if (!udp_frame::parseArp(bytes, length, &arp) || arp.sender_ipv4 == 0) return false;
  if (arp.operation == udp_frame::kArpReply || arp.target_ipv4 == ipv4_) neighbors_.learn(arp.sender_ipv4, arp.sender_mac);
  if (arp.operation != udp_frame::kArpRequest || arp.target_ipv4 != ipv4_) return true;
  // Answered for the rail's address: the kernel answers too where it shares the interface; a second answer is
  // harmless, and a device the kernel does not see has no other.
  udp_frame::Arp reply;
  reply.operation = udp_frame::kArpReply;
  reply.sender_mac = mac_;
  reply.sender_ipv4 = ipv4_;
  reply.target_mac = arp.sender_mac;
  reply.target_ipv4 = arp.sender_ipv4;
  sendArp(reply, arp.sender_mac);
  return true;
}

void DpdkPort::sendArp(const udp_frame::Arp& arp, const udp_frame::Mac& destination) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) return;
  auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, udp_frame::kArpFrameBytes));
  udp_frame::writeArp(bytes, arp, destination);
  if (!interfaceUp() || rte_eth_tx_burst(port_id_, 0, &m, 1) != 1) rte_pktmbuf_free(m);
}

void DpdkPort::learnKernelNeighbors() {
  std::ifstream kernel_table("/proc/net/arp");
  std::stringstream text;
  text << kernel_table.rdbuf();
  neighbors_.learnFromKernel(text.str(), interface_);
}

std::optional<udp_frame::Mac> DpdkPort::macOf(uint32_t ipv4) {
  std::optional<udp_frame::Mac> mac = neighbors_.find(ipv4);
  if (mac || !neighbors_.shouldAsk(ipv4, monotonicNowNs())) return mac;
  learnKernelNeighbors();  // the kernel may have resolved it meanwhile
  if ((mac = neighbors_.find(ipv4))) return mac;
  udp_frame::Arp request;
  request.operation = udp_frame::kArpRequest;
  request.sender_mac = mac_;
  request.sender_ipv4 = ipv4_;
  request.target_ipv4 = ipv4;
  sendArp(request, udp_frame::kBroadcast);
  return std::nullopt;
}

rte_mbuf* DpdkPort::frame(const sockaddr_in& to, uint16_t from_port, uint8_t tos, const void* head, size_t head_bytes,
                          const void* payload, size_t payload_bytes, bool local) {
  udp_frame::Addresses a;
  uint16_t ip_id;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    ip_id = ip_id_++;
    if (!local) {
      std::optional<udp_frame::Mac> mac = macOf(to.sin_addr.s_addr);
      if (!mac) return nullptr;
      a.destination_mac = *mac;
    }
    a.source_mac = mac_;
    a.source_ipv4 = ipv4_;
    a.destination_ipv4 = to.sin_addr.s_addr;
  }
  a.source_port = from_port;
  a.destination_port = to.sin_port;
  a.tos = tos;
  const size_t bytes = udp_frame::kHeadersBytes + head_bytes + payload_bytes;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) return nullptr;
  auto* out = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(bytes)));
  if (out == nullptr) {  // larger than a frame of the interface's MTU
    rte_pktmbuf_free(m);
    return nullptr;
  }
  std::memcpy(out + udp_frame::kHeadersBytes, head, head_bytes);
  if (payload_bytes > 0) std::memcpy(out + udp_frame::kHeadersBytes + head_bytes, payload, payload_bytes);
  udp_frame::writeUdp(out, a, head_bytes + payload_bytes, ip_id);
  return m;
}

int DpdkPort::transmit(rte_mbuf** frames, int count) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!interfaceUp()) return 0;
  return rte_eth_tx_burst(port_id_, 0, frames, static_cast<uint16_t>(count));
}

bool DpdkPort::interfaceUp() {
  // The af_packet device waits without end for a free slot of its ring, and the kernel empties none while the
  // interface is down: frames meant for a downed interface are lost here instead (ridden out like any loss).
  ifreq request{};
  std::strncpy(request.ifr_name, interface_.c_str(), IFNAMSIZ - 1);
  return ioctl(probe_.get(), SIOCGIFFLAGS, &request) != 0 || (request.ifr_flags & IFF_UP) != 0;
}

void DpdkPort::deliverLocally(rte_mbuf* m) {
  std::lock_guard<std::mutex> guard(mutex_);
  udp_frame::Datagram d;
  const bool ours = udp_frame::parseUdp(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), &d);
  auto it = ours ? inboxes_.find(d.addresses.destination_port) : inboxes_.end();
  if (it == inboxes_.end()) {
    rte_pktmbuf_free(m);
    return;
  }
  markParsed(m, d);
  it->second->frames.push_back(m);
}

}  // namespace megascale::transport
