#include "testbed/ecn_switch/packet_port.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace megascale::testbed {
namespace {

constexpr size_t kLargestFrame = 65536;  // above any MTU the test bed sets
constexpr int kSocketBuffer = 8 << 20;   // a burst of every host's window arriving at once

[[noreturn]] void fail(const std::string& interface, const char* what) {
  throw std::runtime_error("ecn switch: port " + interface + ": " + what + ": " + std::strerror(errno));
}

int64_t clockNs(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

PacketPort::PacketPort(std::string interface) : name_(std::move(interface)), buffer_(kLargestFrame) {
  const unsigned index = if_nametoindex(name_.c_str());
  if (index == 0) fail(name_, "no such interface");
  fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
  if (fd_ < 0) fail(name_, "socket(AF_PACKET)");
  const int one = 1;
  // Our own sends would come back as PACKET_OUTGOING frames; receive() also skips them where this is missing.
  setsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
  setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &kSocketBuffer, sizeof(kSocketBuffer));
  setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &kSocketBuffer, sizeof(kSocketBuffer));
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = static_cast<int>(index);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) fail(name_, "bind");
  // Frames for the other hosts' addresses are the point of a switch port.
  packet_mreq promiscuous{};
  promiscuous.mr_ifindex = static_cast<int>(index);
  promiscuous.mr_type = PACKET_MR_PROMISC;
  if (setsockopt(fd_, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promiscuous, sizeof(promiscuous)) != 0) {
    fail(name_, "promiscuous mode");
  }
}

PacketPort::~PacketPort() {
  if (fd_ >= 0) close(fd_);
}

std::vector<ReceivedFrame> PacketPort::receive(int max, int64_t now_ns) {
  std::vector<ReceivedFrame> frames;
  // The kernel stamps frames on the real-time clock; the switch runs on the monotonic one.
  const int64_t realtime_ahead_ns = clockNs(CLOCK_REALTIME) - clockNs(CLOCK_MONOTONIC);
  while (static_cast<int>(frames.size()) < max) {
    sockaddr_ll from{};
    iovec data{buffer_.data(), buffer_.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr message{};
    message.msg_name = &from;
    message.msg_namelen = sizeof(from);
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t got = recvmsg(fd_, &message, MSG_TRUNC);
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      fail(name_, "receive");  // ENETDOWN once the interface is deleted
    }
    if (from.sll_pkttype == PACKET_OUTGOING || static_cast<size_t>(got) > buffer_.size()) continue;
    int64_t arrived_ns = now_ns;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
      timespec stamp;
      std::memcpy(&stamp, CMSG_DATA(c), sizeof(stamp));
      arrived_ns = std::min(now_ns, stamp.tv_sec * 1'000'000'000 + stamp.tv_nsec - realtime_ahead_ns);
    }
    frames.push_back({Frame(buffer_.begin(), buffer_.begin() + got), arrived_ns});
  }
  return frames;
}

bool PacketPort::send(const Frame& frame) {
  return ::send(fd_, frame.data(), frame.size(), MSG_DONTWAIT) == static_cast<ssize_t>(frame.size());
}

uint64_t PacketPort::socketDrops() {
  tpacket_stats stats{};
  socklen_t size = sizeof(stats);
  if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &stats, &size) == 0) socket_drops_ += stats.tp_drops;  // reading resets it
  return socket_drops_;
}

}  // namespace megascale::testbed
