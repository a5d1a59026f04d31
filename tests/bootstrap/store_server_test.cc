// Properties of the embedded server itself: scale without a thread per client, and hostile input.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <thread>
#include <vector>

#include "bootstrap/store_fixture.h"
#include "bootstrap/store_protocol.h"
#include "common/auth.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

Fd authenticatedSocket(const UniqueId& id, int port) {
  Fd fd = connectTcp(makeAddress("127.0.0.1", port), deadlineAfter(5s), "test");
  setNonBlocking(fd.get());
  AuthSession auth(AuthSession::Role::kClient, id.secret);
  AuthSession::runBlocking(auth, fd.get(), deadlineAfter(5s), "test").throwIfError();
  return fd;
}

TEST(TcpStoreServer, ServesThousandsOfConcurrentClients) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  const int clients = static_cast<int>(std::min<rlim_t>(2000, lim.rlim_cur / 2 - 64));
  ASSERT_GT(clients, 500) << "file descriptor limit too low for this test";
  testing::TcpBackend backend;
  UniqueId id = backend.id();
  std::vector<std::unique_ptr<Store>> stores;
  // All connections are open at once, each parked on a key nobody has set yet.
  std::vector<std::thread> waiters;
  std::atomic<int> woken{0};
  for (int i = 0; i < clients; ++i) stores.push_back(connectStore(id, "client " + std::to_string(i), 30s));
  EXPECT_EQ(backend.server()->connectionCount(), static_cast<size_t>(clients));
  for (int t = 0; t < 4; ++t) {
    waiters.emplace_back([&, t] {
      // Each thread waits on a quarter of the connections in turn; the server parks them all at once.
      for (int i = t; i < clients; i += 4) {
        if (stores[i]->get("go", 30s) == "now") ++woken;
      }
    });
  }
  std::this_thread::sleep_for(50ms);
  auto setter = connectStore(id, "setter", 5s);
  setter->set("go", "now");
  for (auto& w : waiters) w.join();
  EXPECT_EQ(woken.load(), clients);
  for (int i = 0; i < clients; ++i) stores[i]->add("sum", 1);
  EXPECT_EQ(setter->add("sum", 0), clients);
}

TEST(TcpStoreServer, SeveralLoopsWakeEachOthersWaiters) {
  testing::TcpBackend backend;
  UniqueId id = backend.id();
  ASSERT_GE(backend.server()->loops(), 1);
  // Connections land on whichever loop accepts them; 64 waiters and one setter spread over them.
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < 64; ++i) stores.push_back(connectStore(id, "client " + std::to_string(i), 5s));
  std::vector<std::thread> waiters;
  std::atomic<int> woken{0};
  for (int i = 0; i < 64; ++i) {
    waiters.emplace_back([&, i] { woken += stores[i]->multiGet({"a", "b"}, 10s) == std::vector<std::string>{"1", "2"}; });
  }
  std::this_thread::sleep_for(50ms);
  auto setter = connectStore(id, "setter", 5s);
  setter->set("a", "1");
  setter->set("b", "2");
  for (auto& w : waiters) w.join();
  EXPECT_EQ(woken.load(), 64);
  EXPECT_EQ(backend.server()->peakConnectionCount(), 65u);
}

TEST(TcpStoreServer, RestartedStoreIsReportedNotWaitedOn) {
  testing::TcpBackend backend;
  auto store = connectStore(backend.id(), "rank 3", 5s);
  store->set("world/addr/3", "here");
  backend.restart();  // same port, empty, another incarnation
  // The first call sees the old connection die; the next reconnects and finds a different store.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      store->get("world/addr/3", 5s);
      FAIL() << "get returned from a restarted store";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      if (std::string(e.what()).find("restarted") != std::string::npos) {
        EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
        return;
      }
    }
  }
  FAIL() << "the restart was never reported";
}

TEST(TcpStoreServer, OversizedFrameDropsOnlyThatClient) {
  testing::TcpBackend backend;
  UniqueId id = backend.id();
  auto good = connectStore(id, "good", 5s);
  Fd evil = authenticatedSocket(id, parseStoreUrl(id.store_url).port);
  uint8_t huge[5] = {0xff, 0xff, 0xff, 0x7f, 1};
  ASSERT_TRUE(sendAll(evil.get(), huge, sizeof(huge), deadlineAfter(1s), "evil").isOk());
  char c;
  Status s = recvAll(evil.get(), &c, 1, deadlineAfter(2s), "evil");
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost);  // the server hung up on it
  good->set("still", "works");
  EXPECT_EQ(good->get("still", 1s), "works");
}

TEST(TcpStoreServer, MalformedRequestGetsAnErrorReply) {
  testing::TcpBackend backend;
  UniqueId id = backend.id();
  Fd fd = authenticatedSocket(id, parseStoreUrl(id.store_url).port);
  // A SET (request id 7) whose key length points past the end of the frame.
  std::string frame = store_protocol::Writer(uint8_t(store_protocol::Op::kSet)).u32(7).u32(1000).finish();
  ASSERT_TRUE(sendAll(fd.get(), frame.data(), frame.size(), deadlineAfter(1s), "t").isOk());
  uint8_t reply[9];
  ASSERT_TRUE(recvAll(fd.get(), reply, sizeof(reply), deadlineAfter(2s), "t").isOk());
  EXPECT_EQ(reply[4], uint8_t(store_protocol::Reply::kBadRequest));
  EXPECT_EQ(reply[5], 7);  // the reply names the request it answers
  // Too short to carry a request id: answered as request 0, and the connection still serves.
  frame = store_protocol::Writer(uint8_t(store_protocol::Op::kPing)).finish();
  ASSERT_TRUE(sendAll(fd.get(), frame.data(), frame.size(), deadlineAfter(1s), "t").isOk());
  ASSERT_TRUE(recvAll(fd.get(), reply, sizeof(reply), deadlineAfter(2s), "t").isOk());
  EXPECT_EQ(reply[4], uint8_t(store_protocol::Reply::kBadRequest));
  EXPECT_EQ(reply[5], 0);
  auto good = connectStore(id, "good", 5s);
  good->set("k", "v");
}

TEST(TcpStoreServer, UnauthenticatedClientIsDroppedAfterHandshakeTimeout) {
  testing::TcpBackend backend;
  UniqueId id = backend.id();
  Fd silent = connectTcp(makeAddress("127.0.0.1", parseStoreUrl(id.store_url).port), deadlineAfter(2s), "t");
  char buf[64];
  // The server sends its challenge, then hangs up when no answer comes within its handshake timeout (500 ms).
  Status s = recvAll(silent.get(), buf, sizeof(buf), deadlineAfter(5s), "t");
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost) << s.message();
}

}  // namespace
}  // namespace megascale
