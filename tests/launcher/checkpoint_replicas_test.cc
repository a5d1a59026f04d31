// The replica server on loopback: files pushed come back whole by fetch; a client without the job secret, a path
// that climbs out of the directory and a malformed request are refused, and the server keeps serving.
#include "launcher/checkpoint_replicas.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/auth.h"
#include "common/socket.h"
#include "common/status.h"

namespace megascale::launcher {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

const std::string kSecret = "0123456789abcdef0123456789abcdef";

struct ReplicaTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("replica_test_" + std::to_string(getpid()));
  std::FILE* log = std::tmpfile();
  void TearDown() override {
    fs::remove_all(dir);
    std::fclose(log);
  }
  std::string logged() {
    std::fflush(log);
    std::rewind(log);
    std::string text;
    char buffer[512];
    while (std::fgets(buffer, sizeof(buffer), log) != nullptr) text += buffer;
    return text;
  }
};

TEST_F(ReplicaTest, PushedFilesComeBackWhole) {
  ReplicaServer server((dir / "replicas").string(), "127.0.0.1", kSecret, milliseconds(5000), log);
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  {
    ReplicaClient client(server.address(), "host a", kSecret, milliseconds(5000));
    client.put("rank_00002/slot_0.ckpt", big);
    client.put("rank_00002/slot_1.ckpt", "small");
    client.put("rank_00003/slot_0.ckpt", "other rank");
    client.put("rank_00002/slot_1.ckpt", "overwritten");
  }
  ReplicaClient client(server.address(), "host a", kSecret, milliseconds(5000));
  const auto files = client.fetch("rank_00002");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files.at("rank_00002/slot_0.ckpt"), big);
  EXPECT_EQ(files.at("rank_00002/slot_1.ckpt"), "overwritten");
  EXPECT_TRUE(client.fetch("rank_00009").empty());
}

TEST_F(ReplicaTest, AWrongSecretIsRefused) {
  ReplicaServer server((dir / "replicas").string(), "127.0.0.1", kSecret, milliseconds(2000), log);
  EXPECT_THROW(ReplicaClient(server.address(), "host a", "another secret of 32 bytes......", milliseconds(2000)),
               Error);
  ReplicaClient good(server.address(), "host a", kSecret, milliseconds(2000));
  good.put("rank_00000/x", "still serving");
  EXPECT_EQ(good.fetch("rank_00000").at("rank_00000/x"), "still serving");
}

TEST_F(ReplicaTest, PathsOutsideTheDirectoryAreRefused) {
  for (const char* path : {"../escape", "/etc/passwd", "a/../../b", "", "a b", "./x", "rank_0/..", "x;rm"}) {
    EXPECT_FALSE(safeReplicaPath(path)) << path;
  }
  EXPECT_TRUE(safeReplicaPath("rank_00001/slot_0.ckpt"));
  ReplicaServer server((dir / "replicas").string(), "127.0.0.1", kSecret, milliseconds(2000), log);
  ReplicaClient client(server.address(), "host a", kSecret, milliseconds(2000));
  EXPECT_THROW(client.put("../escape", "x"), Error);
  EXPECT_FALSE(fs::exists(dir / "escape"));
}

// A client that authenticates and then sends a header with a path climbing out, and one with a huge length:
// the server drops it with a log line and serves the next client.
TEST_F(ReplicaTest, HostileRequestsAreDroppedAndLogged) {
  ReplicaServer server((dir / "replicas").string(), "127.0.0.1", kSecret, milliseconds(2000), log);
  struct Header {
    uint32_t magic, op, path_length, pad;
    uint64_t body_length;
  };
  const auto hostile = [&](Header h, const std::string& path) {
    Fd fd = connectTcp(parseHostPort(server.address()), deadlineAfter(milliseconds(2000)), "test");
    setNonBlocking(fd.get());
    AuthSession auth(AuthSession::Role::kClient, kSecret);
    ASSERT_TRUE(AuthSession::runBlocking(auth, fd.get(), deadlineAfter(milliseconds(2000)), "test").isOk());
    ASSERT_TRUE(sendAll(fd.get(), &h, sizeof(h), deadlineAfter(milliseconds(2000)), "test").isOk());
    ASSERT_TRUE(sendAll(fd.get(), path.data(), path.size(), deadlineAfter(milliseconds(2000)), "test").isOk());
    char byte;
    // The server closes the connection instead of answering.
    size_t got = 0;
    const Status s = recvAll(fd.get(), &byte, 1, deadlineAfter(milliseconds(2000)), "test");
    EXPECT_EQ(s.code(), ErrorCode::kPeerLost) << s.message() << got;
  };
  hostile({0x5052534d, 1, 9, 0, 1}, "../escape");
  hostile({0x5052534d, 1, 4, 0, uint64_t{1} << 50}, "abcd");
  hostile({0x12345678, 1, 4, 0, 1}, "abcd");
  hostile({0x5052534d, 3, 0, 0, uint64_t{2} << 30}, "");  // a probe over 1 GiB
  hostile({0x5052534d, 3, 4, 0, 16}, "abcd");             // a probe with a path
  EXPECT_FALSE(fs::exists(dir / "escape"));
  ReplicaClient client(server.address(), "host a", kSecret, milliseconds(2000));
  client.put("rank_00000/ok", "fine");
  EXPECT_EQ(client.fetch("rank_00000").size(), 1u);
  const std::string text = logged();
  EXPECT_NE(text.find("a path outside the replica directory: ../escape"), std::string::npos) << text;
  EXPECT_NE(text.find("malformed request header"), std::string::npos) << text;
}

TEST_F(ReplicaTest, ALinkProbeArrivesExactWithItsRateAndWrongBytesAreCaught) {
  ReplicaServer server((dir / "replicas").string(), "127.0.0.1", kSecret, milliseconds(5000), log);
  {
    ReplicaClient client(server.address(), "host b", kSecret, milliseconds(5000));
    const double gbps = client.probe(uint64_t{8} << 20);
    EXPECT_GT(gbps, 0.01) << "8 MiB over loopback";
    EXPECT_GT(client.probe(3), 0);  // less than one chunk, on the same connection
    EXPECT_THROW(client.probe(0), Error);
    EXPECT_THROW(client.probe(uint64_t{2} << 30), Error);
  }
  // Bytes that are not the pattern (the server serves one connection at a time): the server says so.
  Fd fd = connectTcp(parseHostPort(server.address()), deadlineAfter(milliseconds(2000)), "test");
  setNonBlocking(fd.get());
  AuthSession auth(AuthSession::Role::kClient, kSecret);
  ASSERT_TRUE(AuthSession::runBlocking(auth, fd.get(), deadlineAfter(milliseconds(2000)), "test").isOk());
  const struct {
    uint32_t magic, op, path_length, pad;
    uint64_t body_length;
  } header{0x5052534d, 3, 0, 0, 4096};
  const std::string zeros(4096, '\0');
  ASSERT_TRUE(sendAll(fd.get(), &header, sizeof(header), deadlineAfter(milliseconds(2000)), "test").isOk());
  ASSERT_TRUE(sendAll(fd.get(), zeros.data(), zeros.size(), deadlineAfter(milliseconds(2000)), "test").isOk());
  uint32_t wrong = 0;
  ASSERT_TRUE(recvAll(fd.get(), &wrong, sizeof(wrong), deadlineAfter(milliseconds(2000)), "test").isOk());
  EXPECT_EQ(wrong, 1u);
  EXPECT_TRUE(fs::is_empty(dir / "replicas")) << "a probe leaves nothing behind";
}

TEST_F(ReplicaTest, ChangedFilesOffersEachNewVersionOnce) {
  fs::create_directories(dir / "rank_00001");
  fs::create_directories(dir / "rank_00002");
  std::ofstream(dir / "rank_00001" / "slot_0.ckpt") << "a";
  std::ofstream(dir / "rank_00002" / "slot_0.ckpt") << "b";
  ChangedFiles changed(dir.string());
  EXPECT_EQ(changed.scan({"rank_00001"}), (std::vector<std::string>{"rank_00001/slot_0.ckpt"}));
  EXPECT_TRUE(changed.scan({"rank_00001"}).empty());
  std::ofstream(dir / "rank_00001" / "slot_0.ckpt") << "longer";
  EXPECT_EQ(changed.scan({"rank_00001"}).size(), 1u);
  changed.forget("rank_00001/slot_0.ckpt");
  EXPECT_EQ(changed.scan({"rank_00001"}).size(), 1u);
}

// A peer that takes the connection and never answers (a host gone mid-handshake) is given up after the connect
// timeout, not the request timeout; a transfer under way stops at once when another thread interrupts it (a
// pusher whose replica holder was replaced).
TEST_F(ReplicaTest, ASilentPeerIsGivenUpAtTheConnectTimeoutAndATransferStopsWhenInterrupted) {
  sockaddr_in bound{};
  const Fd silent = listenTcp("127.0.0.1", 0, 4, &bound);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(ReplicaClient(formatAddress(bound), "host gone", kSecret, milliseconds(20000), milliseconds(300)),
               Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));

  // A holder that completes the handshake and then reads nothing more: a put of 64 MiB fills the socket
  // buffers and blocks until the interrupt, which must end it long before the 20 s request timeout.
  const Fd stalled = listenTcp("127.0.0.1", 0, 4, &bound);
  std::thread holder([&] {
    pollfd ready{stalled.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&ready, 1, 20000), 1);
    const Fd fd(::accept(stalled.get(), nullptr, nullptr));
    AuthSession auth(AuthSession::Role::kServer, kSecret);
    (void)AuthSession::runBlocking(auth, fd.get(), deadlineAfter(milliseconds(20000)), "the stalled holder");
    std::this_thread::sleep_for(milliseconds(3000));  // reads nothing while the put waits
  });
  ReplicaClient client(formatAddress(bound), "host b", kSecret, milliseconds(20000));
  const std::string body(64 << 20, 'x');
  std::thread cut([&] {
    std::this_thread::sleep_for(milliseconds(200));
    client.interrupt();
  });
  const auto sending = std::chrono::steady_clock::now();
  EXPECT_THROW(client.put("rank_00001/slot_0.ckpt", body), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - sending, milliseconds(2500));  // the holder would answer at 3 s
  cut.join();
  holder.join();
  EXPECT_THROW(client.put("rank_00001/slot_0.ckpt", "x"), Error);  // and every later call
}

}  // namespace
}  // namespace megascale::launcher
