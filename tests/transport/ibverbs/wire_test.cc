// What the ibverbs transport puts on the wire, captured on the emulated device's interface (AF_PACKET on
// loopback; root): each queue pair of a connection leaves from a UDP source port of its own - its flow label's,
// consecutive across the connection, as a RoCE v2 NIC derives the port - so a fabric's ECMP can spread them;
// and the IP header carries the traffic class the transport was given.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "transport/ibverbs/ib_transport_or_skip.h"
#include "transport/ibverbs/ib_transport.h"
#include "transport/net_transport.h"
#include "transport/transport_pair.h"

namespace megascale::transport {
namespace {

struct Datagram {
  uint16_t sport, dport;
  uint8_t tos;
  size_t bytes;
};

// Every UDP datagram over loopback until stopped.
class Capture {
 public:
  Capture() {
    fd_ = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
    if (fd_ < 0) return;
    const int buffer_bytes = 256 << 20;  // the message arrives in a burst of 64 KiB datagrams; keep them all
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(buffer_bytes));
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_IP);
    at.sll_ifindex = static_cast<int>(if_nametoindex("lo"));
    if (bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) {
      close(fd_);
      fd_ = -1;
      return;
    }
    thread_ = std::thread([this] { run(); });
  }
  ~Capture() {
    stop();
    if (fd_ >= 0) close(fd_);
  }
  bool open() const { return fd_ >= 0; }
  std::vector<Datagram> stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    return seen_;
  }

 private:
  void run() {
    uint8_t packet[65536];
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      sockaddr_ll from{};
      socklen_t len = sizeof(from);
      const ssize_t n = recvfrom(fd_, packet, sizeof(packet), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < static_cast<ssize_t>(sizeof(iphdr)) || from.sll_pkttype == PACKET_OUTGOING) continue;  // once each
      const auto* ip = reinterpret_cast<const iphdr*>(packet);
      const size_t header = ip->ihl * 4u;
      if (ip->protocol != IPPROTO_UDP || static_cast<size_t>(n) < header + sizeof(udphdr)) continue;
      const auto* udp = reinterpret_cast<const udphdr*>(packet + header);
      seen_.push_back(Datagram{ntohs(udp->source), ntohs(udp->dest), ip->tos, static_cast<size_t>(n)});
    }
  }
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::vector<Datagram> seen_;
};

TEST(IbWire, QueuePairsLeaveFromConsecutiveFlowLabelPortsInTheirTrafficClass) {
  constexpr int kQps = 4;
  constexpr int kTrafficClass = 0x68;  // DSCP 26
  TransportOptions options = transportOptionsFromConfig();
  options.secret = "secret";
  options.ib.qps_per_connection = kQps;
  options.ib.traffic_class = kTrafficClass;
  std::string why;
  std::unique_ptr<IbTransport> transport = testing::ibTransportOrWhy(options, &why);
  if (!transport) GTEST_SKIP() << why;
  Capture capture;
  if (!capture.open()) GTEST_SKIP() << "capturing packets needs root (AF_PACKET)";
  auto listener = transport->listen();
  testing::Pair pair;
  ASSERT_TRUE(testing::connectPair(*transport, *listener, &pair).isOk());
  std::vector<uint8_t> sent(4 << 20), received;
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 31 + 7);
  const Status moved = testing::sendOneMessage(pair, sent, 9, &received);
  ASSERT_TRUE(moved.isOk()) << moved.message();
  ASSERT_EQ(received, sent);
  const std::vector<Datagram> datagrams = capture.stop();

  // The data: full-size datagrams (the 4 MiB message striped over the queue pairs), by source port.
  std::map<uint16_t, size_t> data_by_port;
  for (const Datagram& d : datagrams) {
    if (d.bytes < 1000) continue;
    ++data_by_port[d.sport];
    EXPECT_EQ(d.tos & 0xfc, kTrafficClass) << "from port " << d.sport;
  }
  ASSERT_EQ(data_by_port.size(), static_cast<size_t>(kQps)) << "one source port per queue pair";
  const uint16_t first = data_by_port.begin()->first;
  EXPECT_GE(first, 0xc000) << "a flow label's port (RoCE v2: 0xc000 | label)";
  uint16_t expected = first;
  for (const auto& [port, count] : data_by_port) {
    EXPECT_EQ(port, expected++) << "consecutive labels";
    EXPECT_GE(count, 4u) << "port " << port << " carried a share of the message";
  }
}

}  // namespace
}  // namespace megascale::transport
