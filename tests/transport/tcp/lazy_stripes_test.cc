// Lazy stripes: a TCP comm connects with one socket and adds the others at its first large message, on both
// sides, with every byte in place across the switch; without a polled listener it keeps working on one.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>
#include <vector>

#include "common/socket.h"
#include "transport/tcp/tcp_comm.h"
#include "transport/tcp/tcp_dial.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/tcp_wire.h"

namespace megascale::transport {
namespace {

using namespace std::chrono_literals;

TransportOptions lazyOptions(int sockets) {
  TransportOptions o;
  o.secret = "job-secret";
  o.tcp.sockets_per_comm = sockets;
  o.tcp.stripe_min_bytes = 64 << 10;
  o.tcp.lazy_stripes = true;
  o.handshake_timeout_ms = 5000;
  return o;
}

std::vector<uint8_t> stripedBytes(size_t size, uint8_t seed) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed + (i >> 11));
  return v;
}

struct Connected {
  std::unique_ptr<Listener> listener;
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
  TcpSendComm* tcpSend() const { return dynamic_cast<TcpSendComm*>(send.get()); }
  TcpRecvComm* tcpRecv() const { return dynamic_cast<TcpRecvComm*>(recv.get()); }
};

Connected connect(TcpTransport& transport) {
  Connected c;
  c.listener = transport.listen();
  auto connector = transport.connect(c.listener->address(), 9);
  const Deadline deadline = deadlineAfter(10s);
  while ((!c.send || !c.recv) && Clock::now() < deadline) {
    if (!c.send) {
      EXPECT_TRUE(connector->poll(&c.send).isOk());
    }
    if (!c.recv) {
      EXPECT_TRUE(c.listener->accept(&c.recv).isOk());
    }
  }
  return c;
}

// Sends `sizes` back to back (all in flight at once), receives them, and checks every byte. Polls the
// listener between steps when `poll_listener`, as a communicator's wait loop does.
void exchange(Connected& c, const std::vector<size_t>& sizes, bool poll_listener) {
  std::vector<std::vector<uint8_t>> src, dst;
  std::vector<Request*> sends, recvs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    src.push_back(stripedBytes(sizes[i], static_cast<uint8_t>(i)));
    dst.emplace_back(sizes[i], 0);
    Request* r = nullptr;
    void* buffer = dst.back().data();
    size_t capacity = sizes[i];
    uint32_t tag = static_cast<uint32_t>(i);
    ASSERT_TRUE(c.recv->irecv(1, &buffer, &capacity, &tag, nullptr, &r).isOk());
    ASSERT_NE(r, nullptr);
    recvs.push_back(r);
    ASSERT_TRUE(c.send->isend(src.back().data(), sizes[i], tag, nullptr, &r).isOk());
    ASSERT_NE(r, nullptr);
    sends.push_back(r);
  }
  std::vector<bool> sent(sizes.size(), false), received(sizes.size(), false);
  const Deadline deadline = deadlineAfter(30s);
  size_t left = 2 * sizes.size();
  while (left > 0) {
    ASSERT_LT(Clock::now(), deadline) << "transfers did not finish";
    for (size_t i = 0; i < sizes.size(); ++i) {
      bool done = false;
      size_t size = 0;
      if (!sent[i]) {
        ASSERT_TRUE(c.send->test(sends[i], &done, &size).isOk());
        if (done) {
          sent[i] = true;
          --left;
        }
      }
      if (!received[i]) {
        Status s = c.recv->test(recvs[i], &done, &size);
        ASSERT_TRUE(s.isOk()) << s.message();
        if (done) {
          received[i] = true;
          --left;
          EXPECT_EQ(size, sizes[i]);
        }
      }
    }
    if (poll_listener) {
      std::unique_ptr<RecvComm> none;
      ASSERT_TRUE(c.listener->accept(&none).isOk());
      EXPECT_EQ(none, nullptr) << "a stripe must join its comm, not arrive as a new one";
    }
  }
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_TRUE(src[i] == dst[i]) << "message " << i;
}

TEST(LazyStripes, ConnectsWithOneSocketAndStripesFromTheFirstLargeMessage) {
  TcpTransport transport(lazyOptions(3));
  EXPECT_EQ(transport.properties().lanes, "3 socket(s) per comm");  // what reports print for its lanes
  Connected c = connect(transport);
  ASSERT_TRUE(c.send && c.recv);
  EXPECT_EQ(c.tcpSend()->liveSockets(), 1);
  EXPECT_EQ(c.tcpRecv()->liveSockets(), 1);

  exchange(c, {100, 7, 0, 4096}, true);  // small messages never dial
  EXPECT_EQ(c.tcpSend()->liveSockets(), 1);

  // The first large message starts the dial; it and those behind it go on the sockets live when each is
  // posted, so the switch happens with messages in flight.
  exchange(c, {1 << 20, 100, 3 << 20, 5, 1 << 20}, true);
  const Deadline deadline = deadlineAfter(10s);
  while (c.tcpSend()->liveSockets() < 3 && Clock::now() < deadline) exchange(c, {1 << 20, 9}, true);
  EXPECT_EQ(c.tcpSend()->liveSockets(), 3);
  exchange(c, {2 << 20, 3, (1 << 20) + 17, 0}, true);  // striped from here on
  EXPECT_EQ(c.tcpRecv()->liveSockets(), 3);
}

TEST(LazyStripes, WithoutAPolledListenerTheCommCarriesOnWithOneSocket) {
  TransportOptions o = lazyOptions(2);
  o.handshake_timeout_ms = 300;  // the stripe's dial gives up soon
  TcpTransport transport(o);
  Connected c = connect(transport);
  ASSERT_TRUE(c.send && c.recv);
  const Deadline until = deadlineAfter(1500ms);  // past the dial's timeout: it fails, and is retried later
  while (Clock::now() < until) exchange(c, {1 << 20, 33}, false);
  EXPECT_EQ(c.tcpSend()->liveSockets(), 1);
  EXPECT_EQ(c.tcpRecv()->liveSockets(), 1);
}

TEST(LazyStripes, EagerConnectionsStillOpenEverySocketAtOnce) {
  TransportOptions o = lazyOptions(2);
  o.tcp.lazy_stripes = false;
  TcpTransport transport(o);
  Connected c = connect(transport);
  ASSERT_TRUE(c.send && c.recv);
  EXPECT_EQ(c.tcpSend()->liveSockets(), 2);
  EXPECT_EQ(c.tcpRecv()->liveSockets(), 2);
  exchange(c, {3 << 20, 1, 1 << 20}, false);
}

TEST(LazyStripes, AHeaderClaimingMorePartsThanSocketsIsAnError) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair), 0);
  Fd writer(pair[1]);
  std::vector<Fd> sockets(2);
  sockets[0] = Fd(pair[0]);
  TcpRecvComm recv(std::move(sockets), 1, "test peer");
  std::vector<uint8_t> buffer(1 << 20);
  void* data = buffer.data();
  size_t capacity = buffer.size();
  uint32_t tag = 4;
  Request* r = nullptr;
  ASSERT_TRUE(recv.irecv(1, &data, &capacity, &tag, nullptr, &r).isOk());
  uint8_t header[tcp_wire::kHeaderBytes];
  tcp_wire::encodeHeader(4, 9, 1 << 20, header);  // 9 parts on a connection of 2 sockets
  ASSERT_EQ(::send(writer.get(), header, sizeof(header), 0), static_cast<ssize_t>(sizeof(header)));
  bool done = false;
  Status s = recv.test(r, &done, nullptr);
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost);
  EXPECT_NE(s.message().find("malformed"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("test peer"), std::string::npos) << s.message();
}

TEST(LazyStripes, AStripeOfAnUnknownConnectionIsDropped) {
  TransportOptions o = lazyOptions(2);
  TcpTransport transport(o);
  auto listener = transport.listen();
  const sockaddr_in addr = parseHostPort(listener->address().asString().substr(4));
  TcpDial stray(o, addr, tcp_wire::HelloInfo{5, 12345, 1, 2, -1, tcp_wire::kJoin});
  bool done = false;
  const Deadline deadline = deadlineAfter(10s);
  std::unique_ptr<RecvComm> comm;
  while (!done && Clock::now() < deadline) {
    ASSERT_TRUE(stray.poll(&done).isOk());
    ASSERT_TRUE(listener->accept(&comm).isOk());
  }
  ASSERT_TRUE(done);
  ASSERT_TRUE(listener->accept(&comm).isOk());
  EXPECT_EQ(comm, nullptr);
  Fd socket = stray.release();
  char byte;
  pollfd p{socket.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_EQ(::recv(socket.get(), &byte, 1, 0), 0) << "the listener closes a stripe it has no connection for";
}

}  // namespace
}  // namespace megascale::transport
