// The udp engine's datagrams through DPDK (udp_io.h): each flow's frames built here (udp_frame.h) and sent in
// bursts on its rail's port (dpdk_port.h), frames received by polling the rails' ports. Each flow also holds a
// kernel UDP socket bound to its port: it keeps the port the flow's own, it carries the datagrams between two
// processes on one host (to an address of this host that no io of this process holds, as a kernel socket
// would), and a filter leaves one byte of each frame the rail brings as a doorbell. The engine's thread polls
// for MEGASCALE_UDP_DPDK_SPIN_US after the last frame, then sleeps in epoll until a doorbell, a timer or a
// post: an idle transport costs no core, and engines sharing cores do not take turns polling.
#pragma once

#include <memory>
#include <vector>

#include "transport/udp/dpdk/arrival_stamps.h"
#include "transport/udp/dpdk/dpdk_port.h"
#include "transport/udp/socket_waiter.h"
#include "transport/udp/udp_io.h"

namespace megascale::transport {

class DpdkUdpIo : public UdpIo {
 public:
  /// Starts DPDK if needed and claims `setup.flows` ports on each rail. Throws Error naming the address.
  explicit DpdkUdpIo(const UdpIoSetup& setup);
  ~DpdkUdpIo() override;
  const std::vector<UdpEndpoint>& endpoints() const override { return endpoints_; }
  bool send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
            size_t payload_bytes) override;
  void endRound() override;
  uint64_t lostSends() const override { return lost_sends_; }
  void wait(int64_t timeout_ns) override;
  std::span<const ArrivedDatagram> receive(bool* pass_ended) override;
  void wake() override;

 private:
  struct Rail {
    std::shared_ptr<DpdkPort> port;
    DpdkInbox inbox;
  };
  void release();  // every port given back, every frame freed
  void flush(size_t flow);
  void freeHeld();
  bool pollRails();  // frames into staged_; whether any came

  std::vector<std::unique_ptr<Rail>> rails_;
  std::vector<Rail*> rail_of_flow_;
  std::vector<std::unique_ptr<UdpSocket>> kernel_sockets_;  // per flow
  std::vector<UdpEndpoint> endpoints_;
  uint8_t tos_;
  int send_batch_;
  int64_t spin_ns_;
  std::vector<std::vector<rte_mbuf*>> pending_;  // per flow, sent at a full batch or the round's end
  std::vector<char> full_;                        // per flow: the device refused frames this round
  uint64_t lost_sends_ = 0;
  SocketWaiter waiter_;
  std::vector<uint32_t> readable_;  // kernel sockets the last wait found readable
  std::vector<rte_mbuf*> staged_;   // frames polled, not handed out yet
  std::vector<rte_mbuf*> held_;     // frames the last receive() handed out
  std::vector<ArrivedDatagram> arrived_;
  ReceiveBatch kernel_batch_;
  ArrivalStamps stamps_;
  uint64_t frames_received_ = 0, frames_stamped_ = 0;
  int budget_ = 0;              // receive() batches left this wait
  int64_t last_frame_ns_ = 0;   // when a poll last found frames (the sleep grows from then)
};

}  // namespace megascale::transport
