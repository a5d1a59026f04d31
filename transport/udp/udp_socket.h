// One UDP flow's socket: bound to the transport's address on a port of its own (its source port is what a
// fabric's ECMP hashes), large buffers, ECN-capable transport (ECT(0)) in the TOS of every packet it sends, and
// the TOS of every packet received (IP_RECVTOS), so a switch's CE mark reaches the congestion control, and its
// kernel receive time (SO_TIMESTAMPNS), so a round trip does not include how late the engine got to it.
// Receives go in batches (recvmmsg); with GRO on, the kernel may hand several datagrams of one sender over as one
// (UDP_GRO), which the batch splits again.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/socket.h"

namespace megascale::transport {

/// Where a flow's socket is reached: IPv4 address and port, network order (as the setup blob carries it).
struct UdpEndpoint {
  uint32_t ipv4;
  uint16_t port;
  uint16_t reserved;
  sockaddr_in address() const;
};

/// Datagrams received in one call, each with its length, TOS byte and kernel receive time.
class ReceiveBatch {
 public:
  static constexpr int kMessages = 32;  // what one recvmmsg reads; a GRO message holds several datagrams
  static constexpr size_t kMessageBytes = 65536;
  ReceiveBatch();
  const uint8_t* data(int i) const { return datagrams_[static_cast<size_t>(i)].data; }
  size_t size(int i) const { return datagrams_[static_cast<size_t>(i)].size; }
  uint8_t tos(int i) const { return datagrams_[static_cast<size_t>(i)].tos; }
  /// When the kernel received it (SO_TIMESTAMPNS, CLOCK_REALTIME in ns); 0 when it gave no time.
  int64_t arrivedRealtimeNs(int i) const { return datagrams_[static_cast<size_t>(i)].arrived_realtime_ns; }
  /// How many messages the last receive read (fewer than its datagrams where GRO coalesced some).
  int messages() const { return messages_read_; }
  /// The last receive filled every message: the socket may hold more.
  bool mayHoldMore() const { return messages_read_ == kMessages; }

 private:
  friend class UdpSocket;
  struct Datagram {
    const uint8_t* data;
    size_t size;
    uint8_t tos;
    int64_t arrived_realtime_ns;
  };
  /// Message i's datagrams: one, or its GRO segments of `segment_bytes` (the last may be shorter).
  void addMessage(size_t i, size_t segment_bytes, uint8_t tos, int64_t arrived_realtime_ns);

  std::vector<uint8_t> buffers_;
  std::vector<mmsghdr> messages_;
  std::vector<iovec> iovecs_;
  std::vector<sockaddr_in> from_;
  std::vector<uint8_t> control_;
  std::vector<Datagram> datagrams_;
  int messages_read_ = 0;
};

class UdpSocket {
 public:
  /// Binds to `ipv4`:0. `traffic_class`: DSCP << 2, or -1 for none. Throws Error naming the address.
  UdpSocket(const std::string& ipv4, int traffic_class);
  int fd() const { return fd_.get(); }
  const UdpEndpoint& endpoint() const { return endpoint_; }
  /// One datagram of `head` then `payload` to `to`. False when the socket's buffer is full (retry later) or
  /// the network refused it now (an unreachable peer: the retransmission timer takes over).
  bool send(const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload, size_t payload_bytes);
  /// One sendmmsg of up to `count` prepared messages: how many left (> 0), or -errno of the first one's
  /// refusal (-EAGAIN: the socket's buffer is full).
  int sendSome(mmsghdr* messages, int count);
  /// Lets the kernel hand several datagrams from one sender over together (UDP_GRO); false where it cannot.
  bool acceptCoalesced();
  /// The datagrams of up to ReceiveBatch::kMessages messages waiting now; 0 when none.
  int receive(ReceiveBatch& batch);

 private:
  Fd fd_;
  UdpEndpoint endpoint_{};
};

/// The name of the interface holding `ipv4`; empty when none does.
std::string interfaceOf(const std::string& ipv4);
/// The MTU of the interface holding `ipv4` (65536 for loopback), 1500 when it cannot be found.
int interfaceMtu(const std::string& ipv4);
/// The speed in Mb/s sysfs gives that interface; 0 when it has none (loopback, some virtual interfaces).
int64_t interfaceSpeedMbps(const std::string& ipv4);

}  // namespace megascale::transport
