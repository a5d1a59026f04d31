#include "common/socket.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace megascale {
namespace {

TEST(Socket, ParsesAndRejectsAddresses) {
  EXPECT_EQ(formatAddress(parseHostPort("127.0.0.1:80")), "127.0.0.1:80");
  EXPECT_EQ(formatAddress(parseHostPort("localhost:5")), "127.0.0.1:5");
  EXPECT_THROW(parseHostPort("127.0.0.1"), Error);
  EXPECT_THROW(parseHostPort("127.0.0.1:99999"), Error);
  EXPECT_THROW(parseHostPort("127.0.0.1:x"), Error);
}

TEST(Socket, ConnectToNothingTimesOutWithTheAddress) {
  sockaddr_in bound{};
  Fd probe = listenTcp("127.0.0.1", 0, 1, &bound);
  probe.reset();  // the port is now (very likely) closed: connections are refused
  try {
    connectTcp(bound, deadlineAfter(std::chrono::milliseconds(200)), "test");
    FAIL() << "connect succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find(formatAddress(bound)), std::string::npos) << e.what();
  }
}

// The TCP transport sets its options once on the listening socket and relies on accepted ones inheriting them.
TEST(Socket, AnAcceptedSocketInheritsTheListenersOptions) {
  sockaddr_in bound{};
  Fd listener = listenTcp("127.0.0.1", 0, 4, &bound);
  setNoDelay(listener.get());
  setTrafficClass(listener.get(), 46 << 2);
  setDeadPeerTimeout(listener.get(), 6000);
  Fd client = connectTcp(bound, deadlineAfter(std::chrono::seconds(5)), "test");
  Fd accepted(::accept(listener.get(), nullptr, nullptr));
  ASSERT_TRUE(accepted.valid());
  const auto get = [&](int level, int name) {
    int value = -1;
    socklen_t len = sizeof(value);
    EXPECT_EQ(getsockopt(accepted.get(), level, name, &value, &len), 0);
    return value;
  };
  EXPECT_NE(get(IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_EQ(get(IPPROTO_IP, IP_TOS) & 0xfc, 46 << 2);
  EXPECT_NE(get(SOL_SOCKET, SO_KEEPALIVE), 0);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_USER_TIMEOUT), 6000);
  EXPECT_GT(get(IPPROTO_TCP, TCP_KEEPIDLE), 0);
}

TEST(Socket, RecvAllReportsPeerClose) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Fd a(fds[0]), b(fds[1]);
  ASSERT_EQ(::write(a.get(), "ab", 2), 2);
  a.reset();
  char buf[4];
  Status s = recvAll(b.get(), buf, sizeof(buf), deadlineAfter(std::chrono::seconds(1)), "read");
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost);
}

}  // namespace
}  // namespace megascale
