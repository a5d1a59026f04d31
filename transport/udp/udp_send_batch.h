// Datagrams queued on one flow's socket during an engine round and sent together by one sendmmsg: a paced burst
// or a receive batch's acknowledgements cost one system call instead of one each. With GSO on, consecutive
// datagrams of one size to one address go as one message the kernel cuts again (UDP_SEGMENT): one trip through
// the stack for up to kMaxSegments packets. The payload is referenced, not copied (a send's buffer stays valid
// until its packets are acknowledged, long after the round); the header is copied (the sender builds it on its
// stack).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/udp/udp_socket.h"
#include "transport/udp/udp_wire.h"

namespace megascale::transport {

class UdpSendBatch {
 public:
  static constexpr size_t kMaxHeadBytes = 128;
  static_assert(udp_wire::kDataHeaderBytes <= kMaxHeadBytes && udp_wire::kAckBytes <= kMaxHeadBytes);
  static constexpr int kMaxSegments = 64;           // what every kernel with UDP_SEGMENT accepts in one message
  static constexpr size_t kMaxMessageBytes = 65507;  // an IPv4 datagram's largest payload

  /// `capacity` datagrams; `gso`: coalesce them where the kernel allows.
  UdpSendBatch(int capacity, bool gso);
  bool full() const { return count_ == capacity_; }
  bool empty() const { return count_ == 0; }
  /// Whether datagrams are still coalesced (off after the kernel refused a coalesced message).
  bool gso() const { return gso_; }
  /// Why the kernel refused to coalesce ("" while it has not).
  const std::string& gsoRefusal() const { return gso_refusal_; }
  /// Queues one datagram (the batch must not be full).
  void add(const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload, size_t payload_bytes);
  /// Sends what is queued; returns how many datagrams could not leave (the socket's buffer is full, or the
  /// network refused them): they are lost, as on a wire, and the batch is empty again. A coalesced message the
  /// kernel refuses (no GSO on the way out) leaves datagram by datagram, and coalescing stops for good.
  int flush(UdpSocket& socket);

 private:
  struct Message {
    sockaddr_in to;
    int first_datagram;
    int datagrams;
    size_t segment_bytes;  // every datagram's but the last's
    size_t bytes;
    bool closed;  // its last datagram was shorter: nothing more joins it
  };
  bool joins(const Message& m, const sockaddr_in& to, size_t bytes) const;
  void prepare(size_t message);
  int sendOneByOne(UdpSocket& socket, const Message& m);

  int capacity_;
  bool gso_;
  std::string gso_refusal_;
  int count_ = 0;                    // datagrams queued
  std::vector<Message> messages_;    // as queued
  std::vector<mmsghdr> headers_;     // one per message, built at flush
  std::vector<iovec> parts_;         // two per datagram (head, payload), in order
  std::vector<std::array<uint8_t, kMaxHeadBytes>> heads_;
  std::vector<std::array<uint8_t, CMSG_SPACE(sizeof(uint16_t))>> controls_;  // one per message
};

}  // namespace megascale::transport
