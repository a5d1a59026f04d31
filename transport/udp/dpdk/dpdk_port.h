// One rail's interface under DPDK: the af_packet device on it (qdisc_bypass=0, so tc shaping and the test bed's
// switch still apply; the kernel keeps the interface and its address), one receive and one transmit queue, a pool
// of frames, the rail's neighbors (ARP), and the UDP ports the process's ios hold on it. Every io of the process
// with a flow on this rail shares it: whichever polls takes the device's frames and hands each to the inbox of
// the io holding its destination port; a frame to an address of the process itself is handed over without the
// wire. The ios hold their ports with kernel sockets (dpdk_udp_io.h), so no one else takes them.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <optional>

#include "common/socket.h"
#include "transport/udp/dpdk/neighbor_table.h"
#include "transport/udp/dpdk/udp_frame.h"

struct rte_device;
struct rte_mbuf;
struct rte_mempool;

namespace megascale::transport {

/// Frames waiting for one io on one port (guarded by the port's lock).
struct DpdkInbox {
  std::deque<rte_mbuf*> frames;
};

class DpdkPort {
 public:
  /// Attaches the af_packet device to `interface` (address `ipv4`, network order). Throws Error naming both.
  DpdkPort(const std::string& interface, uint32_t ipv4, int mtu, int index);
  ~DpdkPort();
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;

  uint32_t ipv4() const { return ipv4_; }
  const std::string& interface() const { return interface_; }
  /// Frames to UDP `port` (network order) go to `inbox` until released.
  void claim(uint16_t port, DpdkInbox* inbox);
  void release(uint16_t port);
  /// Whether an inbox holds `port` (a frame to it can be delivered without the wire).
  bool claimed(uint16_t port);
  /// Moves up to `max` frames for `inbox` into `out`: those already waiting, then from one burst of the device
  /// (others' frames go to their inboxes, ARP is answered and learned, the rest dropped). The caller frees them.
  void poll(DpdkInbox& inbox, std::vector<rte_mbuf*>* out, size_t max);
  /// A frame carrying `head` and `payload` from `from_port` to `to`; null when the peer's MAC is not known yet
  /// (it is asked for) or the pool is empty: the datagram is lost. `local`: to this process, no MAC needed.
  rte_mbuf* frame(const sockaddr_in& to, uint16_t from_port, uint8_t tos, const void* head, size_t head_bytes,
                  const void* payload, size_t payload_bytes, bool local);
  /// Sends `frames` in order; returns how many the device took (the caller frees the rest).
  int transmit(rte_mbuf** frames, int count);
  /// Hands a frame to the inbox holding its destination port, as if it had arrived (a peer in this process);
  /// frees it when no inbox holds the port.
  void deliverLocally(rte_mbuf* frame);

 private:
  void closeDevice();
  bool interfaceUp();  // lock held
  bool handleArp(const uint8_t* frame, size_t bytes);  // lock held
  void sendArp(const udp_frame::Arp& arp, const udp_frame::Mac& destination);  // lock held
  void dispatch(rte_mbuf* frame, DpdkInbox& poller, std::vector<rte_mbuf*>* out, size_t max);  // lock held
  std::optional<udp_frame::Mac> macOf(uint32_t ipv4);  // lock held; asks when unknown
  void learnKernelNeighbors();  // from /proc/net/arp

  std::string interface_;
  uint32_t ipv4_;
  uint16_t port_id_ = 0;
  std::string device_name_;
  rte_device* device_ = nullptr;
  udp_frame::Mac mac_{};
  rte_mempool* pool_ = nullptr;
  std::mutex mutex_;
  NeighborTable neighbors_;
  std::unordered_map<uint16_t, DpdkInbox*> inboxes_;  // by UDP port
  uint16_t ip_id_ = 0;
  Fd probe_;  // for the interface's flags
};

}  // namespace megascale::transport
