// The udp engine's datagrams through kernel sockets: a socket per flow (udp_socket.h), sends queued per socket and
// left in one sendmmsg per batch (udp_send_batch.h), receives in recvmmsg batches from the sockets epoll says are
// readable, and an eventfd to wake the wait.
#pragma once

#include <memory>
#include <vector>

#include "transport/udp/socket_waiter.h"
#include "transport/udp/udp_io.h"
#include "transport/udp/udp_send_batch.h"

namespace megascale::transport {

class KernelUdpIo : public UdpIo {
 public:
  /// Binds the flows' sockets. Throws Error naming the address.
  explicit KernelUdpIo(const UdpIoSetup& setup);
  const std::vector<UdpEndpoint>& endpoints() const override { return endpoints_; }
  bool send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
            size_t payload_bytes) override;
  void endRound() override;
  uint64_t lostSends() const override { return lost_sends_; }
  void wait(int64_t timeout_ns) override;
  std::span<const ArrivedDatagram> receive(bool* pass_ended) override;
  void wake() override;

 private:
  void flush(size_t flow);

  std::vector<std::unique_ptr<UdpSocket>> sockets_;
  std::vector<UdpEndpoint> endpoints_;
  int send_batch_;
  std::vector<UdpSendBatch> batches_;  // per socket
  std::vector<char> socket_full_;      // per socket: a flush this round left datagrams behind
  uint64_t lost_sends_ = 0;
  SocketWaiter waiter_;
  std::vector<uint32_t> readable_;  // sockets the last wait found readable and not yet drained
  size_t cursor_ = 0;               // the one receive() reads next: one batch from each per pass
  int passes_ = 0;                  // passes this wait
  ReceiveBatch batch_;
  std::vector<ArrivedDatagram> arrived_;
};

}  // namespace megascale::transport
