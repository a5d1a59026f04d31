// Datagrams queued on one flow's socket during an engine round and sent together by one sendmmsg: a paced burst
// or a receive batch's acknowledgements cost one system call instead of one each. The payload is referenced, not
// copied (a send's buffer stays valid until its packets are acknowledged, long after the round); the header is
// copied (the sender builds it on its stack).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/udp/udp_socket.h"
#include "transport/udp/udp_wire.h"

namespace megascale::transport {

class UdpSendBatch {
 public:
  static constexpr size_t kMaxHeadBytes = 128;
  static_assert(udp_wire::kDataHeaderBytes <= kMaxHeadBytes && udp_wire::kAckBytes <= kMaxHeadBytes);

  explicit UdpSendBatch(int capacity);
  bool full() const { return count_ == capacity_; }
  bool empty() const { return count_ == 0; }
  /// Queues one datagram (the batch must not be full).
  void add(const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload, size_t payload_bytes);
  /// Sends what is queued; returns how many datagrams could not leave (the socket's buffer is full, or the
  /// network refused them): they are lost, as on a wire, and the batch is empty again.
  int flush(UdpSocket& socket);

 private:
  int capacity_;
  int count_ = 0;
  std::vector<mmsghdr> messages_;
  std::vector<std::array<iovec, 2>> parts_;
  std::vector<std::array<uint8_t, kMaxHeadBytes>> heads_;
  std::vector<sockaddr_in> to_;
};

}  // namespace megascale::transport
