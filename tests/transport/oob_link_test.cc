// The setup socket of the ucx (and ibverbs) transports: authenticated blobs each way, hostile clients dropped
// without harm to the listener, and the link's close seen as the peer's death.
#include "transport/oob_link.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <any>
#include <thread>

#include "transport/tcp/tcp_wire.h"

namespace megascale::transport {
namespace {

using namespace std::chrono_literals;

TransportOptions options(const std::string& secret) {
  TransportOptions o;
  o.secret = secret;
  o.handshake_timeout_ms = 2000;
  return o;
}

// Answers every client with "answer:" + its blob, and remembers the client's id as the link's state.
OobServer::Answer echo = [](const OobRequest& request, std::string* reply, std::any* state) {
  *reply = "answer:" + request.blob;
  *state = request.remote_id;
  return Status::ok();
};

// Polls both sides until the dial finishes (or fails) and returns its status; accepted links are appended.
Status run(OobServer& server, OobDial& dial, std::vector<OobAccepted>* accepted,
           const OobServer::Answer& answer = echo) {
  Deadline deadline = deadlineAfter(5s);
  while (Clock::now() < deadline) {
    bool done = false;
    Status s = dial.poll(&done);
    server.poll(answer, accepted);
    if (!s.isOk() || done) {
      for (int i = 0; i < 50 && accepted->empty() && s.isOk(); ++i) {  // the answer's last bytes may still be going
        server.poll(answer, accepted);
        std::this_thread::sleep_for(1ms);
      }
      return s;
    }
  }
  return Status(ErrorCode::kTimeout, "test: the dial did not finish");
}

TEST(OobLink, ExchangesBlobsAndSeesThePeerGo) {
  OobServer server(options("s"), "test");
  OobDial dial(options("s"), server.bound(), 42, std::string(3000, 'x'));
  std::vector<OobAccepted> accepted;
  ASSERT_TRUE(run(server, dial, &accepted).isOk());
  EXPECT_EQ(dial.answer(), "answer:" + std::string(3000, 'x'));
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].link.remoteId(), 42u);
  EXPECT_EQ(std::any_cast<uint64_t>(accepted[0].state), 42u);
  EXPECT_NE(accepted[0].link.peer().find("peer 42"), std::string::npos) << accepted[0].link.peer();
  OobLink client = dial.release();
  EXPECT_FALSE(accepted[0].link.peerGone());
  EXPECT_FALSE(client.peerGone());
  client = OobLink();  // the client's process ends its side
  Deadline deadline = deadlineAfter(2s);
  while (!accepted[0].link.peerGone() && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(accepted[0].link.peerGone());
}

TEST(OobLink, WrongSecretFailsTheDialAndLeavesTheListenerServing) {
  OobServer server(options("s"), "test");
  OobDial intruder(options("other"), server.bound(), 1, "x");
  std::vector<OobAccepted> accepted;
  EXPECT_EQ(run(server, intruder, &accepted).code(), ErrorCode::kAuthFailed);
  EXPECT_TRUE(accepted.empty());
  OobDial friendly(options("s"), server.bound(), 2, "y");
  ASSERT_TRUE(run(server, friendly, &accepted).isOk());
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].link.remoteId(), 2u);
}

// The client learns the listener's reason (code and text), not just a closed socket; the listener drops it.
TEST(OobLink, AnAnswerThatFailsRefusesThatClientWithItsReason) {
  OobServer server(options("s"), "test");
  OobDial dial(options("s"), server.bound(), 3, "x");
  std::vector<OobAccepted> accepted;
  auto refuse = [](const OobRequest&, std::string*, std::any*) {
    return Status(ErrorCode::kUnavailable, "no queue pairs left");
  };
  Status s = run(server, dial, &accepted, refuse);
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("the listener refused the connection: no queue pairs left"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("connecting to 127.0.0.1:"), std::string::npos) << s.message();
  EXPECT_TRUE(accepted.empty());
  OobDial next(options("s"), server.bound(), 4, "y");
  ASSERT_TRUE(run(server, next, &accepted).isOk()) << "the listener serves the next client";
  EXPECT_EQ(accepted.size(), 1u);
}

// A client that proves the secret and then sends `frame` raw, while the server polls for 300 ms; returns its
// socket, with what the server accepted in *accepted.
Fd authenticatedClientSends(OobServer& server, const std::string& frame, std::vector<OobAccepted>* accepted) {
  Fd fd = connectTcp(server.bound(), deadlineAfter(2s), "test");
  AuthSession auth(AuthSession::Role::kClient, "s", tcp_wire::encodeHello({9, 0, 0, 1}));
  std::thread serve([&] {
    for (int i = 0; i < 300; ++i) {
      server.poll(echo, accepted);
      std::this_thread::sleep_for(1ms);
    }
  });
  const bool authenticated = AuthSession::runBlocking(auth, fd.get(), deadlineAfter(2s), "client").isOk();
  const bool sent = authenticated && ::send(fd.get(), frame.data(), frame.size(), MSG_NOSIGNAL) ==
                                         static_cast<ssize_t>(frame.size());
  serve.join();
  EXPECT_TRUE(authenticated && sent) << "the client could not authenticate or send";
  return fd;
}

std::string frameOf(uint32_t length_word, const std::string& body) {
  return std::string(reinterpret_cast<const char*>(&length_word), sizeof(length_word)) + body;
}

// A refusal's flag from a client (only listeners refuse) is a hostile frame: that client is dropped.
TEST(OobLink, AClientFrameFlaggedAsRefusalIsDropped) {
  OobServer server(options("s"), "test");
  std::vector<OobAccepted> accepted;
  Fd fd = authenticatedClientSends(server, frameOf((1u << 31) | 1, "x"), &accepted);
  EXPECT_TRUE(accepted.empty());
  OobLink link(std::move(fd), 9, "test");
  EXPECT_TRUE(link.peerGone()) << "the server hung up";
}

// A client that proves the secret and then claims a 1 GiB blob is dropped, not served (no allocation of it).
TEST(OobLink, AHugeBlobIsRefused) {
  OobServer server(options("s"), "test");
  std::vector<OobAccepted> accepted;
  Fd fd = authenticatedClientSends(server, frameOf(1u << 30, ""), &accepted);
  EXPECT_TRUE(accepted.empty());
  char byte;
  EXPECT_LE(::recv(fd.get(), &byte, 1, MSG_DONTWAIT), 0) << "no answer to a refused client";
  OobLink link(std::move(fd), 9, "test");
  EXPECT_TRUE(link.peerGone()) << "the server hung up";
}

TEST(OobLink, ASilentClientTimesOutOnTheServer) {
  TransportOptions o = options("s");
  o.handshake_timeout_ms = 100;
  OobServer server(o, "test");
  Fd fd = connectTcp(server.bound(), deadlineAfter(2s), "test");  // connects, never speaks
  std::vector<OobAccepted> accepted;
  for (int i = 0; i < 300; ++i) {
    server.poll(echo, &accepted);
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(accepted.empty());
  OobLink link(std::move(fd), 0, "test");
  EXPECT_TRUE(link.peerGone()) << "the server dropped the silent client";
}

}  // namespace
}  // namespace megascale::transport
