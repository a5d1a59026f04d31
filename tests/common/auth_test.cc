#include "common/auth.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

namespace megascale {
namespace {

struct Outcome {
  Status server;
  Status client;
  Hello seen;
};

Outcome handshake(const std::string& server_secret, const std::string& client_secret, Hello hello) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Fd server_fd(fds[0]), client_fd(fds[1]);
  setNonBlocking(server_fd.get());
  setNonBlocking(client_fd.get());
  Outcome out;
  AuthSession server(AuthSession::Role::kServer, server_secret);
  std::thread t([&] {
    out.server = AuthSession::runBlocking(server, server_fd.get(), deadlineAfter(std::chrono::seconds(5)), "server");
    if (!out.server.isOk()) server_fd.reset();  // a refusing server hangs up
  });
  AuthSession client(AuthSession::Role::kClient, client_secret, hello);
  out.client = AuthSession::runBlocking(client, client_fd.get(), deadlineAfter(std::chrono::seconds(5)), "client");
  t.join();
  out.seen = server.peerHello();
  return out;
}

TEST(AuthSession, SameSecretSucceedsAndDeliversHello) {
  Hello hello{};
  hello[0] = 42;
  hello[31] = 7;
  Outcome out = handshake("secret-of-job-1", "secret-of-job-1", hello);
  EXPECT_TRUE(out.server.isOk()) << out.server.message();
  EXPECT_TRUE(out.client.isOk()) << out.client.message();
  EXPECT_EQ(out.seen, hello);
}

TEST(AuthSession, WrongSecretIsRefusedOnBothSides) {
  Outcome out = handshake("secret-of-job-1", "secret-of-job-2", {});
  EXPECT_EQ(out.server.code(), ErrorCode::kAuthFailed);
  EXPECT_EQ(out.client.code(), ErrorCode::kAuthFailed);
  EXPECT_NE(out.client.message().find("wrong job secret"), std::string::npos) << out.client.message();
}

// Runs one side of the handshake against a peer that sends `bytes` of junk (as long as the real message).
Status handshakeWithJunk(AuthSession::Role role, size_t bytes) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Fd peer(fds[0]), mine(fds[1]);
  setNonBlocking(mine.get());
  const std::string junk(bytes, 'J');
  EXPECT_EQ(::write(peer.get(), junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  AuthSession session(role, "s");
  return AuthSession::runBlocking(session, mine.get(), deadlineAfter(std::chrono::seconds(2)), "junk");
}

TEST(AuthSession, GarbageFromServerIsRejected) {
  Status s = handshakeWithJunk(AuthSession::Role::kClient, 4 + kNonceBytes + sizeof(Digest));  // the server's proof
  EXPECT_EQ(s.code(), ErrorCode::kAuthFailed);
}

TEST(AuthSession, GarbageFromClientIsRejected) {
  Status s = handshakeWithJunk(AuthSession::Role::kServer, 4 + kNonceBytes + sizeof(Hello));  // the client's hello
  EXPECT_EQ(s.code(), ErrorCode::kAuthFailed);
  EXPECT_NE(s.message().find("not a megascale endpoint"), std::string::npos) << s.message();
}

// The client speaks first and is done once its proof is out: its first data can follow at once, and the
// server reads both in one go.
TEST(AuthSession, ClientIsDoneAfterOneRoundTripAndItsDataFollowsTheProof) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Fd server_fd(fds[0]), client_fd(fds[1]);
  setNonBlocking(server_fd.get());
  setNonBlocking(client_fd.get());
  AuthSession server(AuthSession::Role::kServer, "s");
  AuthSession client(AuthSession::Role::kClient, "s");
  bool client_done = false, server_done = false;
  ASSERT_TRUE(client.progress(client_fd.get(), &client_done).isOk());  // its hello leaves without waiting
  EXPECT_FALSE(client_done);
  ASSERT_TRUE(server.progress(server_fd.get(), &server_done).isOk());  // reads it, answers with its proof
  EXPECT_FALSE(server_done);
  ASSERT_TRUE(client.progress(client_fd.get(), &client_done).isOk());  // checks it, sends its own
  EXPECT_TRUE(client_done);
  ASSERT_EQ(::write(client_fd.get(), "data", 4), 4);
  ASSERT_TRUE(server.progress(server_fd.get(), &server_done).isOk());
  EXPECT_TRUE(server_done);
  char data[4];
  ASSERT_EQ(::read(server_fd.get(), data, 4), 4);
  EXPECT_EQ(std::string(data, 4), "data");
}

TEST(AuthSession, SilentPeerTimesOut) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Fd a(fds[0]), b(fds[1]);
  setNonBlocking(b.get());
  AuthSession client(AuthSession::Role::kClient, "s");
  auto start = Clock::now();
  Status s = AuthSession::runBlocking(client, b.get(), deadlineAfter(std::chrono::milliseconds(200)), "client");
  EXPECT_EQ(s.code(), ErrorCode::kTimeout);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace megascale
