#include "common/socket.h"

#include <gtest/gtest.h>
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
