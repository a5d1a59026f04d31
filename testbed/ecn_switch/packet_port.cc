#include "testbed/ecn_switch/packet_port.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

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

}  // namespace

PacketPort::PacketPort(std::string interface) : name_(std::move(interface)), buffer_(kLargestFrame) {
  const unsigned index = if_nametoindex(name_.c_str());
  if (index == 0) fail(name_, "no such interface");
  fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
  if (fd_ < 0) fail(name_, "socket(AF_PACKET)");
  const int one = 1;
  // Our own sends would come back as PACKET_OUTGOING frames; receive() also skips them where this is missing.
  setsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
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

std::vector<Frame> PacketPort::receive(int max) {
  std::vector<Frame> frames;
  while (static_cast<int>(frames.size()) < max) {
    sockaddr_ll from{};
    socklen_t from_size = sizeof(from);
    const ssize_t got = recvfrom(fd_, buffer_.data(), buffer_.size(), MSG_TRUNC, reinterpret_cast<sockaddr*>(&from), &from_size);
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      fail(name_, "receive");  // ENETDOWN once the interface is deleted
    }
    if (from.sll_pkttype == PACKET_OUTGOING || static_cast<size_t>(got) > buffer_.size()) continue;
    frames.emplace_back(buffer_.begin(), buffer_.begin() + got);
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
