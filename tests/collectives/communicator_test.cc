// Communicators with ranks as threads of one process (Gloo's test style): bad input, ranks that disagree,
// peers that hang or leave, abort, split. Every failure must be an error naming the rank, never a hang.
#include "collectives/communicator.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.h"
#include "local_job.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

class CommunicatorTest : public ::testing::TestWithParam<std::string> {
 protected:

  CommunicatorOptions options(std::chrono::milliseconds timeout = 20s) {
    CommunicatorOptions o;
    o.timeout = timeout;
    o.transport = GetParam();
    o.transport_options.handshake_timeout_ms = static_cast<int>(timeout.count());
    return o;
  }

  // Runs body(rank, comm) on n threads, one communicator each.
  void runRanks(int n, const std::function<void(int, Communicator&)>& body, std::chrono::milliseconds timeout = 20s) {
    job_.runRanks(n, options(timeout), [&](int r, const std::shared_ptr<Communicator>& comm) { body(r, *comm); });
  }

  test_support::LocalJob job_;
  UniqueId& id_ = job_.id;  // stays valid when job_ is replaced by a fresh job
};

TEST_P(CommunicatorTest, AllReduceAcrossThreads) {
  runRanks(3, [](int rank, Communicator& comm) {
    std::vector<float> in(1000, static_cast<float>(rank + 1)), out(1000);
    ASSERT_TRUE(comm.allReduce(in.data(), out.data(), in.size(), mscFloat32, mscSum)->wait(20s).isOk());
    EXPECT_EQ(out[0], 6.0f);
    EXPECT_EQ(out[999], 6.0f);
  });
}

TEST_P(CommunicatorTest, InvalidArgumentsAreErrorsNamingRankAndOperation) {
  auto comm = Communicator::create(id_, 0, 1, options());
  float buf[4] = {};
  auto expectInvalid = [](const std::function<void()>& call, const char* fragment) {
    try {
      call();
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expectInvalid([&] { comm->allReduce(nullptr, buf, 4, mscFloat32, mscSum); }, "null buffer");
  expectInvalid([&] { comm->allReduce(buf, buf, 4, static_cast<mscDataType_t>(42), mscSum); }, "datatype");
  expectInvalid([&] { comm->allReduce(buf, buf, 4, mscFloat32, static_cast<mscRedOp_t>(-1)); }, "op");
  expectInvalid([&] { comm->broadcast(buf, buf, 4, mscFloat32, 1); }, "root 1");
  expectInvalid([&] { comm->allGather(buf, buf, SIZE_MAX / 2, mscFloat32); }, "overflows");
  expectInvalid([&] { comm->pointToPoint({{true, buf, 4, mscFloat32, 0}}); }, "peer is this rank");
  EXPECT_TRUE(comm->allReduce(buf, buf, 4, mscFloat32, mscSum)->wait(5s).isOk());  // still usable
}

// Init publishes this rank's address and returns: it neither waits for the other ranks nor reads their
// addresses (that happens when a schedule first needs a peer).
TEST_P(CommunicatorTest, InitHasNoBarrier) {
  auto start = Clock::now();
  auto lonely = Communicator::create(id_, 2, 64, options());
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(lonely->rank(), 2);
  EXPECT_EQ(lonely->size(), 64);
  auto store = connectStore(id_, "observer", 5s);
  EXPECT_FALSE(store->get("world/addr/2", 1s).empty());
  EXPECT_THROW(store->get("world/addr/0", 50ms), Error);  // nobody else has joined, and nobody waited for them
}

TEST_P(CommunicatorTest, InitRejectsBadRankAndSize) {
  EXPECT_THROW(Communicator::create(id_, 2, 2, options()), Error);
  EXPECT_THROW(Communicator::create(id_, -1, 2, options()), Error);
  EXPECT_THROW(Communicator::create(id_, 0, 0, options()), Error);
}

TEST_P(CommunicatorTest, WrongSecretCannotJoin) {
  UniqueId forged = id_;
  forged.secret[3] ^= 0x10;
  try {
    Communicator::create(forged, 0, 2, options(2s));
    FAIL() << "joined with a wrong secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuthFailed) << e.what();
  }
}

// The rank that detects the disagreement reports kMismatch; its peer then loses the connection.
TEST_P(CommunicatorTest, CountsThatDifferAcrossRanksAreDetected) {
  for (size_t other : {2000, 1001, 1000000}) {
    std::atomic<int> mismatches{0};
    job_ = test_support::LocalJob();  // a fresh job: its store holds no keys from the last round
    runRanks(2, [&](int rank, Communicator& comm) {
      std::vector<float> in(1000000, 1.0f), out(1000000);
      size_t count = rank == 0 ? 1000 : other;
      Status s = comm.allReduce(in.data(), out.data(), count, mscFloat32, mscSum)->wait(20s);
      EXPECT_FALSE(s.isOk()) << "rank " << rank << " accepted counts 1000 vs " << other;
      EXPECT_NE(s.message().find("rank " + std::to_string(rank)), std::string::npos) << s.message();
      if (s.code() == ErrorCode::kMismatch) ++mismatches;
    }, 3s);
    EXPECT_GE(mismatches.load(), 1) << "counts 1000 vs " << other;
  }
}

TEST_P(CommunicatorTest, DifferentCollectivesAcrossRanksAreDetected) {
  runRanks(2, [](int rank, Communicator& comm) {
    std::vector<float> in(64, 1.0f), out(128);
    auto work = rank == 0 ? comm.allReduce(in.data(), out.data(), 64, mscFloat32, mscSum)
                          : comm.broadcast(in.data(), out.data(), 64, mscFloat32, 0);
    Status s = work->wait(20s);
    EXPECT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("rank " + std::to_string(rank)), std::string::npos) << s.message();
  }, 2s);
}

TEST_P(CommunicatorTest, HungPeerTimesOutNamingIt) {
  std::atomic<bool> done{false};
  runRanks(2, [&](int rank, Communicator& comm) {
    if (rank == 1) {  // alive, connected, but never joins the collective
      while (!done) std::this_thread::sleep_for(10ms);
      return;
    }
    std::vector<float> buf(16, 1.0f);
    auto start = Clock::now();
    Status s = comm.allReduce(buf.data(), buf.data(), 16, mscFloat32, mscSum)->wait(20s);
    done = true;
    EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.message();
    EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
    EXPECT_LT(Clock::now() - start, 5s);
  }, 500ms);
}

TEST_P(CommunicatorTest, DepartedPeerIsAnErrorNotAHang) {
  std::vector<std::thread> threads;
  auto comm0 = Communicator::create(id_, 0, 2, options(3s));
  { auto comm1 = Communicator::create(id_, 1, 2, options(3s)); }  // joins, then leaves for good
  std::vector<float> buf(1 << 16, 1.0f);
  auto start = Clock::now();
  Status s = comm0->allReduce(buf.data(), buf.data(), buf.size(), mscFloat32, mscSum)->wait(30s);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
  EXPECT_LT(Clock::now() - start, 10s);
}

TEST_P(CommunicatorTest, AbortFailsRunningAndQueuedWorkAtOnce) {
  auto comm0 = Communicator::create(id_, 0, 2, options(60s));
  auto comm1 = Communicator::create(id_, 1, 2, options(60s));  // never calls anything
  float buf[4] = {};
  auto running = comm0->allReduce(buf, buf, 4, mscFloat32, mscSum);
  auto queued = comm0->barrier();
  std::this_thread::sleep_for(100ms);
  auto start = Clock::now();
  comm0->abort();
  EXPECT_EQ(running->wait(5s).code(), ErrorCode::kAborted);
  EXPECT_EQ(queued->wait(5s).code(), ErrorCode::kAborted);
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(comm0->asyncError().code(), ErrorCode::kAborted);
  auto later = comm0->barrier();  // a broken communicator fails new work fast
  EXPECT_TRUE(later->test());
  EXPECT_EQ(later->status().code(), ErrorCode::kAborted);
}

TEST_P(CommunicatorTest, WorkWaitTimesOutWhileRunning) {
  auto comm0 = Communicator::create(id_, 0, 2, options(60s));
  auto comm1 = Communicator::create(id_, 1, 2, options(60s));
  float buf0[4] = {}, buf1[4] = {};  // each rank its own buffer: they run concurrently
  auto work = comm0->allReduce(buf0, buf0, 4, mscFloat32, mscSum);
  EXPECT_EQ(work->wait(20ms).code(), ErrorCode::kTimeout);
  EXPECT_FALSE(work->test());
  EXPECT_TRUE(comm1->allReduce(buf1, buf1, 4, mscFloat32, mscSum)->wait(20s).isOk());
  EXPECT_TRUE(work->wait(20s).isOk());
}

TEST_P(CommunicatorTest, SplitGroupsByColorAndOrdersByKey) {
  runRanks(5, [](int rank, Communicator& comm) {
    int color = rank == 4 ? MSC_SPLIT_NOCOLOR : rank % 2;
    auto sub = comm.split(color, -rank);  // descending key: the highest old rank becomes rank 0
    if (rank == 4) {
      EXPECT_EQ(sub, nullptr);
      return;
    }
    ASSERT_NE(sub, nullptr);
    EXPECT_EQ(sub->size(), 2);
    EXPECT_EQ(sub->rank(), rank >= 2 ? 0 : 1);
    int32_t mine = rank, sum = 0;
    ASSERT_TRUE(sub->allReduce(&mine, &sum, 1, mscInt32, mscSum)->wait(20s).isOk());
    EXPECT_EQ(sum, rank % 2 == 0 ? 0 + 2 : 1 + 3);
  });
}

// How many of this process's connected IPv4 stream sockets carry each TOS byte (what a switch sees).
std::map<int, int> connectedSocketsByTos() {
  std::map<int, int> count;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return count;
  while (dirent* entry = readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    struct stat st {};
    if (fd <= 2 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int domain = 0, type = 0, listening = 0, tos = 0;
    socklen_t len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_INET) continue;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) continue;
    len = sizeof(int);
    if (getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &len) == 0) ++count[tos & 0xff];
  }
  closedir(dir);
  return count;
}

TEST_P(CommunicatorTest, SplitWithTrafficClassMarksTheChildsConnectionsAndItsSplits) {
  if (GetParam() != "tcp") GTEST_SKIP() << "traffic classes are an IP socket option";
  constexpr int kExpedited = 46 << 2;  // DSCP EF
  std::atomic<int> ready{0};
  std::map<int, int> before, after;
  runRanks(2, [&](int rank, Communicator& comm) {
    int32_t one = 1, sum = 0;
    ASSERT_TRUE(comm.allReduce(&one, &sum, 1, mscInt32, mscSum)->wait(20s).isOk());
    if (rank == 0) before = connectedSocketsByTos();
    ASSERT_TRUE(comm.barrier()->wait(20s).isOk());
    auto child = comm.split(0, rank, Communicator::SplitOptions{kExpedited});
    ASSERT_NE(child, nullptr);
    ASSERT_TRUE(child->allReduce(&one, &sum, 1, mscInt32, mscSum)->wait(20s).isOk());
    auto grandchild = child->split(0, rank);  // inherits the class
    ASSERT_TRUE(grandchild->allReduce(&one, &sum, 1, mscInt32, mscSum)->wait(20s).isOk());
    EXPECT_EQ(sum, 2);
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
    if (rank == 0) after = connectedSocketsByTos();
    ASSERT_TRUE(comm.barrier()->wait(20s).isOk());
  });
  EXPECT_EQ(before.count(kExpedited), 0u);
  EXPECT_GT(before[0], 0);
  // Both ranks' ends of the child's and the grandchild's connections, the parent's untouched.
  EXPECT_GE(after[kExpedited], 4);
  EXPECT_EQ(after[0], before[0]);

}

// A connection opens one socket; its second (MEGASCALE_TCP_SOCKETS=2) joins at the first large message, which a
// rank waiting in a collective accepts from its listener.
TEST_P(CommunicatorTest, ConnectionsStartWithOneSocketAndStripeAtTheFirstLargeMessage) {
  if (GetParam() != "tcp") GTEST_SKIP() << "stripes are the TCP transport's";
  // This process's established TCP connections with both ends here and neither the store's: the ranks'
  // connections, counted as sockets. Found by the descriptors' links and the kernel's table, without touching the
  // descriptors (other threads open and close theirs). One end alone is not ours to count: another test's process
  // that dials a port it once knew (now a listener of ours) holds the other end until our handshake drops it.
  const int store_port = parseHostPort(id_.store_url.substr(id_.store_url.find("://") + 3)).sin_port;
  const auto sockets = [&] {
    std::set<std::string> mine;
    DIR* dir = opendir("/proc/self/fd");
    while (dirent* entry = readdir(dir)) {
      char target[64];
      const std::string path = std::string("/proc/self/fd/") + entry->d_name;
      const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
      if (n > 8 && std::string(target, 8) == "socket:[") mine.insert(std::string(target + 8, static_cast<size_t>(n) - 9));
    }
    closedir(dir);
    std::ifstream table("/proc/self/net/tcp");
    std::string line;
    std::getline(table, line);  // header
    std::set<std::pair<std::string, std::string>> ends;  // (local, remote) of each established socket of ours
    while (std::getline(table, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, skip, inode;
      fields >> slot >> local >> remote >> state >> skip >> skip >> skip >> skip >> skip >> inode;
      const int local_port = std::stoi(local.substr(local.find(':') + 1), nullptr, 16);
      const int remote_port = std::stoi(remote.substr(remote.find(':') + 1), nullptr, 16);
      const int store = ntohs(static_cast<uint16_t>(store_port));
      if (state == "01" && mine.count(inode) && local_port != store && remote_port != store) ends.emplace(local, remote);
    }
    return static_cast<int>(std::count_if(ends.begin(), ends.end(), [&](const auto& end) {
      return ends.count({end.second, end.first}) > 0;
    }));
  };
  int unconnected = 0, small = 0, large = 0;
  std::atomic<int> created{0};
  std::atomic<bool> counted{false};
  runRanks(2, [&](int rank, Communicator& comm) {
    created.fetch_add(1);
    while (created.load() < 2) std::this_thread::yield();
    if (rank == 0) {
      unconnected = sockets();  // none yet
      counted = true;
    }
    while (!counted.load()) std::this_thread::yield();
    ASSERT_TRUE(comm.barrier()->wait(20s).isOk());
    int32_t one = 1, sum = 0;
    ASSERT_TRUE(comm.allReduce(&one, &sum, 1, mscInt32, mscSum)->wait(20s).isOk());
    ASSERT_TRUE(comm.barrier()->wait(20s).isOk());
    if (rank == 0) small = sockets();
    ASSERT_TRUE(comm.barrier()->wait(20s).isOk());
    std::vector<float> in(size_t(1) << 20, static_cast<float>(rank + 1)), out(in.size());  // 4 MiB
    const Deadline deadline = deadlineAfter(10s);
    int stop = 0;
    while (!stop) {
      ASSERT_TRUE(comm.allReduce(in.data(), out.data(), in.size(), mscFloat32, mscSum)->wait(20s).isOk());
      EXPECT_EQ(out[12345], 3.0f);
      int done = rank == 0 && (sockets() - unconnected >= 2 * (small - unconnected) || Clock::now() > deadline);
      ASSERT_TRUE(comm.broadcast(&done, &stop, 1, mscInt32, 0)->wait(20s).isOk());
    }
    if (rank == 0) large = sockets();
    ASSERT_TRUE(comm.barrier()->wait(20s).isOk());  // rank 1 keeps its connections until rank 0 has counted
  });
  EXPECT_EQ(small - unconnected, 4) << "0 -> 1 and 1 -> 0, both ends, one socket each";
  EXPECT_EQ(large - unconnected, 8) << "two sockets each once a large message has gone";
}

TEST_P(CommunicatorTest, SplitRejectsATrafficClassOutsideATosByte) {
  auto comm = Communicator::create(id_, 0, 1, options());
  try {
    (void)comm->split(0, 0, Communicator::SplitOptions{256});
    FAIL() << "traffic class 256 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("traffic class 256"), std::string::npos) << e.what();
  }
}

TEST_P(CommunicatorTest, GroupedSendRecvRingDoesNotDeadlock) {
  runRanks(4, [](int rank, Communicator& comm) {
    std::vector<int64_t> out(300000, rank), in(300000, -1);  // larger than socket buffers
    int next = (rank + 1) % 4, prev = (rank + 3) % 4;
    Status s = comm.pointToPoint({{true, out.data(), out.size(), mscInt64, next},
                                  {false, in.data(), in.size(), mscInt64, prev}})->wait(20s);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(in.front(), prev);
    EXPECT_EQ(in.back(), prev);
  });
}

// auto with the launcher silent about local ranks: every rank listens on shm and tcp, and picks per peer.
TEST_P(CommunicatorTest, EachPeerGetsTheBestTransportThatReachesIt) {
  runRanks(3, [](int rank, Communicator& comm) {
    const std::string expected = GetParam() == "auto" ? "shm" : GetParam();
    EXPECT_EQ(comm.transportName(), GetParam() == "auto" ? "shm+tcp" : GetParam());
    EXPECT_EQ(comm.peerTransport((rank + 1) % 3), "");  // connections are made on first use
    std::vector<int> in(3, rank), out(9, -1);
    ASSERT_TRUE(comm.allGather(in.data(), out.data(), 3, mscInt32)->wait(20s).isOk());
    for (int r = 0; r < 3; ++r) EXPECT_EQ(out[static_cast<size_t>(3 * r)], r);
    EXPECT_EQ(comm.peerTransport((rank + 1) % 3), expected) << "rank " << rank;
    auto child = comm.split(0, -rank);  // the child listens on the same transports
    ASSERT_NE(child, nullptr);
    EXPECT_EQ(child->transportName(), comm.transportName());
    int value = 1, sum = 0;
    ASSERT_TRUE(child->allReduce(&value, &sum, 1, mscInt32, mscSum)->wait(20s).isOk());
    EXPECT_EQ(sum, 3);
    // The child's ranks share this host, so with shared memory its all-reduce ran on the node engine; a ring of
    // sends connects the transports.
    const bool engine = GetParam() != "tcp";
    EXPECT_NE(child->description().find(engine ? "node-engine: on" : "node-engine: off"), std::string::npos)
        << child->description();
    const int next = (child->rank() + 1) % 3, prev = (child->rank() + 2) % 3;
    int got = -1;
    ASSERT_TRUE(child->pointToPoint({{true, &value, 1, mscInt32, next}, {false, &got, 1, mscInt32, prev}})->wait(20s).isOk());
    EXPECT_EQ(got, 1);
    EXPECT_EQ(child->peerTransport(next), expected);
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, CommunicatorTest, ::testing::Values("tcp", "shm", "auto"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace megascale
