#include "transport/udp/udp_socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/status.h"

namespace megascale::transport {

namespace {

constexpr uint8_t kEct0 = 0x02;  // ECN-capable transport, codepoint ECT(0)
// The TOS, the receive time and a GRO message's segment size.
constexpr size_t kControlBytes = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(sizeof(int));

}  // namespace

sockaddr_in UdpEndpoint::address() const {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = ipv4;
  a.sin_port = port;
  return a;
}

ReceiveBatch::ReceiveBatch()
    : buffers_(static_cast<size_t>(kMessages) * kMessageBytes), messages_(kMessages), iovecs_(kMessages),
      from_(kMessages), control_(static_cast<size_t>(kMessages) * kControlBytes) {
  datagrams_.reserve(kMessages);
}

void ReceiveBatch::addMessage(size_t i, size_t segment_bytes, uint8_t tos, int64_t arrived_realtime_ns) {
  const uint8_t* data = buffers_.data() + i * kMessageBytes;
  size_t left = messages_[i].msg_len;
  if (segment_bytes == 0) segment_bytes = left;
  do {
    const size_t size = left < segment_bytes ? left : segment_bytes;
    datagrams_.push_back({data, size, tos, arrived_realtime_ns});
    data += size;
    left -= size;
  } while (left > 0);
}

UdpSocket::UdpSocket(const std::string& ipv4, int traffic_class) {
  fd_ = Fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_.valid()) throw Error(ErrorCode::kSystem, "udp: socket(): " + errnoText(errno));
  // A burst of a window's packets must not overflow the kernel's queue on either side.
  const int buffer_bytes = 16 << 20;
  for (int option : {SO_RCVBUFFORCE, SO_SNDBUFFORCE}) {
    if (setsockopt(fd_.get(), SOL_SOCKET, option, &buffer_bytes, sizeof(buffer_bytes)) != 0) {
      const int fallback = option == SO_RCVBUFFORCE ? SO_RCVBUF : SO_SNDBUF;
      setsockopt(fd_.get(), SOL_SOCKET, fallback, &buffer_bytes, sizeof(buffer_bytes));
    }
  }
  const int on = 1;
  setsockopt(fd_.get(), IPPROTO_IP, IP_RECVTOS, &on, sizeof(on));
  setsockopt(fd_.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
  const int tos = (traffic_class >= 0 ? traffic_class & 0xfc : 0) | kEct0;
  setsockopt(fd_.get(), IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  if (inet_pton(AF_INET, ipv4.c_str(), &local.sin_addr) != 1) {
    throw Error(ErrorCode::kInvalidArgument, "udp: '" + ipv4 + "' is not an IPv4 address");
  }
  if (bind(fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    throw Error(ErrorCode::kSystem, "udp: binding a socket to " + ipv4 + ": " + errnoText(errno));
  }
  socklen_t length = sizeof(local);
  getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&local), &length);
  endpoint_ = UdpEndpoint{local.sin_addr.s_addr, local.sin_port, 0};
}

bool UdpSocket::send(const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                     size_t payload_bytes) {
  iovec parts[2] = {{const_cast<void*>(head), head_bytes}, {const_cast<void*>(payload), payload_bytes}};
  msghdr message{};
  message.msg_name = const_cast<sockaddr_in*>(&to);
  message.msg_namelen = sizeof(to);
  message.msg_iov = parts;
  message.msg_iovlen = payload_bytes > 0 ? 2 : 1;
  return sendmsg(fd_.get(), &message, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0;
}

int UdpSocket::sendSome(mmsghdr* messages, int count) {
  const int n = sendmmsg(fd_.get(), messages, static_cast<unsigned>(count), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n > 0) return n;
  if (n == 0 || errno == EWOULDBLOCK) return -EAGAIN;
  return -errno;
}

bool UdpSocket::acceptCoalesced() {
  const int on = 1;
  return setsockopt(fd_.get(), SOL_UDP, UDP_GRO, &on, sizeof(on)) == 0;
}

int UdpSocket::receive(ReceiveBatch& b) {
  b.datagrams_.clear();
  b.messages_read_ = 0;
  for (int i = 0; i < ReceiveBatch::kMessages; ++i) {
    const auto k = static_cast<size_t>(i);
    b.iovecs_[k] = iovec{b.buffers_.data() + k * ReceiveBatch::kMessageBytes, ReceiveBatch::kMessageBytes};
    msghdr& h = b.messages_[k].msg_hdr;
    h = msghdr{};
    h.msg_name = &b.from_[k];
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_iov = &b.iovecs_[k];
    h.msg_iovlen = 1;
    h.msg_control = b.control_.data() + k * kControlBytes;
    h.msg_controllen = kControlBytes;
  }
  const int n = recvmmsg(fd_.get(), b.messages_.data(), ReceiveBatch::kMessages, MSG_DONTWAIT, nullptr);
  if (n <= 0) return 0;
  b.messages_read_ = n;
  for (int i = 0; i < n; ++i) {
    msghdr& h = b.messages_[static_cast<size_t>(i)].msg_hdr;
    uint8_t tos = 0;
    int64_t arrived = 0;
    size_t segment_bytes = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
        tos = *CMSG_DATA(c);
      } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
        timespec t;
        std::memcpy(&t, CMSG_DATA(c), sizeof(t));
        arrived = static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
      } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        int segment = 0;
        std::memcpy(&segment, CMSG_DATA(c), sizeof(segment));
        segment_bytes = segment > 0 ? static_cast<size_t>(segment) : 0;
      }
    }
    if (h.msg_flags & MSG_TRUNC) continue;  // larger than any datagram of ours: not ours
    b.addMessage(static_cast<size_t>(i), segment_bytes, tos, arrived);
  }
  return static_cast<int>(b.datagrams_.size());
}

std::string interfaceOf(const std::string& ipv4) {
  in_addr wanted{};
  if (inet_pton(AF_INET, ipv4.c_str(), &wanted) != 1) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i != nullptr && name.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == wanted.s_addr) name = i->ifa_name;
  }
  freeifaddrs(list);
  return name;
}

int interfaceMtu(const std::string& ipv4) {
  const std::string name = interfaceOf(ipv4);
  if (name.empty()) return 1500;
  Fd probe(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq request{};
  std::strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (!probe.valid() || ioctl(probe.get(), SIOCGIFMTU, &request) != 0) return 1500;
  return request.ifr_mtu;
}

int64_t interfaceSpeedMbps(const std::string& ipv4) {
  const std::string name = interfaceOf(ipv4);
  if (name.empty()) return 0;
  std::ifstream in("/sys/class/net/" + name + "/speed");
  int64_t speed = 0;
  if (!(in >> speed) || speed <= 0) return 0;
  return speed;
}

}  // namespace megascale::transport
