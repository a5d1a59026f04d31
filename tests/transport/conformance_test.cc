// The conformance suite every transport passes: connect/accept, ordering, many requests in flight, sizes
// from 0 B to 1 GiB, receive larger than send, truncation, tags, authentication, peer death.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <vector>

#include "common/backoff.h"
#include "common/crypto.h"
#include "common/socket.h"
#include "transport/net_transport.h"
#include "transport/registry.h"
#include "transport/transport_pair.h"
#include "transport/transport.h"

namespace megascale::transport {
namespace {

using namespace std::chrono_literals;

using testing::Pair;

// The knobs' values (MEGASCALE_IB_QPS_PER_CONNECTION, ...), so one suite runs under several settings.
TransportOptions optionsWithSecret(const std::string& secret) {
  TransportOptions o = transportOptionsFromConfig();
  o.secret = secret;
  o.handshake_timeout_ms = 5000;
  return o;
}

class TransportSuite : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      transport_ = createTransport(GetParam(), optionsWithSecret("job-secret"));
    } catch (const Error& e) {
      // Built, but nothing to run on here (ibverbs without an RDMA device): its own ctest entries run it on
      // the emulated device.
      if (e.code() == ErrorCode::kUnavailable) GTEST_SKIP() << e.what();
      throw;
    }
    listener_ = transport_->listen();
  }

  Status connectPair(Transport& connecting, Pair* pair, uint64_t id = 7) {
    return testing::connectPair(connecting, *listener_, pair, id);
  }
  Status complete(Pair& p, Request* sreq, Request* rreq, size_t* sent, size_t* received) {
    return testing::completeBoth(p, sreq, rreq, sent, received);
  }

  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Listener> listener_;
};

// The test's own bytes are made before any transport touches them, by this thread alone: ThreadSanitizer has
// nothing to watch there, and watching each of 256 MiB of stores cost the suite seconds per transport.
__attribute__((no_sanitize("thread"))) void fillPattern(uint8_t* data, size_t size, uint8_t seed) {
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 12));
}

std::vector<uint8_t> pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> v(size);
  fillPattern(v.data(), size, seed);
  return v;
}

// memcmp: the sanitizers check its ranges at once instead of every byte of an instrumented loop. (An empty
// vector's data() may be null, which memcmp must not get even for no bytes.)
bool sameBytes(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& got) {
  if (expected.empty()) return true;
  return got.size() >= expected.size() && std::memcmp(expected.data(), got.data(), expected.size()) == 0;
}

TEST_P(TransportSuite, ReportsProperties) {
  const Properties& p = transport_->properties();
  EXPECT_EQ(p.name, GetParam());
  EXPECT_GE(p.max_requests, 1);
  EXPECT_TRUE(p.pointer_kinds & kHostPointer);
  EXPECT_LE(listener_->address().size, kMaxAddressBytes);
}

TEST_P(TransportSuite, AcceptedCommKnowsTheConnectorsId) {
  Pair p;
  Status connected = connectPair(*transport_, &p, 12345);
  ASSERT_TRUE(connected.isOk()) << connected.message();
  EXPECT_EQ(p.recv->remoteId(), 12345u);
}

// Sanitized builds move and compare every byte 5-20x slower, and ThreadSanitizer maps fresh shadow for every large
// buffer (a 256 MiB message cost 6 s a transport, most of it page faults): they stop at 64 MiB, still twice the
// largest buffer a transport keeps (the udp window, 32 MiB). So does the dying peer's message.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr size_t kLargestMessage = size_t{64} << 20;
constexpr size_t kDyingPeerMessage = size_t{64} << 20;
#else
constexpr size_t kLargestMessage = size_t{1} << 30;
constexpr size_t kDyingPeerMessage = size_t{256} << 20;
#endif

TEST_P(TransportSuite, SizesFromZeroToOneGiB) {
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  std::vector<size_t> sizes = {0, 1, 7, 4096, 65537, size_t{1} << 20, (size_t{3} << 20) + 5, size_t{64} << 20};
  if (kLargestMessage > sizes.back()) sizes.push_back(kLargestMessage);
  for (size_t size : sizes) {
    std::vector<uint8_t> src = pattern(size, static_cast<uint8_t>(size));
    std::vector<uint8_t> dst(size + 1, 0xEE);
    Request *sreq = nullptr, *rreq = nullptr;
    void* buf = dst.data();
    size_t cap = dst.size();
    uint32_t tag = 3;
    ASSERT_TRUE(p.recv->irecv(1, &buf, &cap, &tag, nullptr, &rreq).isOk());
    ASSERT_TRUE(p.send->isend(src.data(), size, 3, nullptr, &sreq).isOk());
    ASSERT_NE(sreq, nullptr);
    ASSERT_NE(rreq, nullptr);
    size_t sent = 99, received = 99;
    Status s = complete(p, sreq, rreq, &sent, &received);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(sent, size);
    EXPECT_EQ(received, size);  // the receive was one byte larger: the exact size is reported
    EXPECT_TRUE(sameBytes(src, dst)) << "data differs at size " << size;
    EXPECT_EQ(dst[size], 0xEE) << "wrote past the message";
  }
}

// A waiter sleeps in poll() on the descriptors a transport offers (collectives/executor.cc): they must stay
// quiet while nothing can move and wake it whenever something can, until the transfer is done.
TEST_P(TransportSuite, ReadinessDescriptorsWakeAPollerExactlyWhenDataCanMove) {
  // ucx offers descriptors only where the host has more ranks than cores (elsewhere its waiters nap).
  const bool was_crowded = oversubscribedHost().exchange(true);
  struct Restore {
    bool crowded;
    ~Restore() { oversubscribedHost().store(crowded); }
  } restore{was_crowded};
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  const size_t size = size_t(64) << 20;  // far beyond the socket buffers: the sender stalls many times
  std::vector<uint8_t> src = pattern(size, 5), dst(size, 0);
  Request *sreq = nullptr, *rreq = nullptr;
  void* buf = dst.data();
  uint32_t tag = 1;
  ASSERT_TRUE(p.recv->irecv(1, &buf, &size, &tag, nullptr, &rreq).isOk());
  bool rdone = false;
  size_t received = 0;
  std::vector<pollfd> fds;
  // A waiter looks before it sleeps. A transport may wake it a few times to finish its own connection set-up;
  // then, with nothing sent, its descriptors stay quiet.
  constexpr int kSetupWakeups = 4;
  int wakeups = 0;
  for (; wakeups < kSetupWakeups; ++wakeups) {
    ASSERT_TRUE(p.recv->test(rreq, &rdone, &received).isOk());
    ASSERT_FALSE(rdone);
    fds.clear();
    if (!p.recv->appendReadiness(fds)) GTEST_SKIP() << GetParam() << " offers no descriptors; its waiters nap";
    ASSERT_FALSE(fds.empty()) << "a posted receive offers its socket";
    if (::poll(fds.data(), fds.size(), 50) == 0) break;
  }
  EXPECT_LT(wakeups, kSetupWakeups) << "nothing was sent: the receive's descriptors stay quiet";

  ASSERT_TRUE(p.send->isend(src.data(), size, 1, nullptr, &sreq).isOk());
  bool sdone = false;
  size_t sent = 0;
  int sleeps = 0;
  Deadline deadline = deadlineAfter(60s);
  while (!sdone || !rdone) {
    if (!sdone) {
      ASSERT_TRUE(p.send->test(sreq, &sdone, &sent).isOk());
    }
    if (!rdone) {
      ASSERT_TRUE(p.recv->test(rreq, &rdone, &received).isOk());
    }
    if (sdone && rdone) break;
    fds.clear();
    if (!sdone) {
      ASSERT_TRUE(p.send->appendReadiness(fds));
    }
    if (!rdone) {
      ASSERT_TRUE(p.recv->appendReadiness(fds));
    }
    ASSERT_FALSE(fds.empty()) << "a pending transfer offers a descriptor";
    // Sleeps until the deadline if need be: on a loaded host a transfer may stall for seconds (a loss waits out
    // its retransmission timeout), so only a wake-up that never comes while data moves fails.
    ASSERT_GT(::poll(fds.data(), fds.size(), std::max(msUntil(deadline), 1)), 0)
        << "data could move but no descriptor woke the poller within 60 s";
    ++sleeps;
    ASSERT_LT(Clock::now(), deadline);
  }
  EXPECT_GT(sleeps, 0);
  EXPECT_EQ(received, size);
  EXPECT_TRUE(src == dst);
  fds.clear();
  EXPECT_TRUE(p.send->appendReadiness(fds) && p.recv->appendReadiness(fds));
  EXPECT_TRUE(fds.empty()) << "nothing pending: nothing to wait on";
}

TEST_P(TransportSuite, ManyRequestsInFlightStayOrdered) {
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  constexpr int kRounds = 4;
  int n = transport_->properties().max_requests;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::vector<uint8_t>> src(n), dst(n);
    std::vector<Request*> sreqs(n), rreqs(n);
    for (int i = 0; i < n; ++i) {
      src[i] = pattern(1000 + i * 3001, static_cast<uint8_t>(i + round));
      dst[i].assign(src[i].size(), 0);
      void* buf = dst[i].data();
      size_t cap = dst[i].size();
      uint32_t tag = 1;
      ASSERT_TRUE(p.recv->irecv(1, &buf, &cap, &tag, nullptr, &rreqs[i]).isOk());
      ASSERT_NE(rreqs[i], nullptr);
    }
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(p.send->isend(src[i].data(), src[i].size(), 1, nullptr, &sreqs[i]).isOk());
      ASSERT_NE(sreqs[i], nullptr);
    }
    // One more than the limit gets no slot, and says so by a null request, not an error.
    Request* extra = nullptr;
    uint8_t byte = 0;
    ASSERT_TRUE(p.send->isend(&byte, 1, 1, nullptr, &extra).isOk());
    if (extra != nullptr) {  // a transport may have finished some already; drain it with a receive
      void* buf = &byte;
      size_t cap = 1;
      uint32_t tag = 1;
      Request* r = nullptr;
      for (int i = 0; i < n; ++i) {
        size_t sz;
        ASSERT_TRUE(complete(p, sreqs[i], rreqs[i], &sz, &sz).isOk());
        sreqs[i] = rreqs[i] = nullptr;
      }
      ASSERT_TRUE(p.recv->irecv(1, &buf, &cap, &tag, nullptr, &r).isOk());
      size_t sz;
      ASSERT_TRUE(complete(p, extra, r, &sz, &sz).isOk());
    }
    for (int i = 0; i < n; ++i) {
      if (sreqs[i] == nullptr) continue;
      size_t sent, received;
      ASSERT_TRUE(complete(p, sreqs[i], rreqs[i], &sent, &received).isOk());
      EXPECT_EQ(received, src[i].size());
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(src[i], dst[i]) << "message " << i << " round " << round;
  }
}

// Collectives post a receive after its message may have arrived: it lands in full, with its own size.
// A sender that has sent everything may never drive its comm again (it went on to other work): receives of
// messages already sent must still be posted and complete on the receiver's calls alone. (The contract behind
// an ibverbs fix: its receives once waited for an idle sender to take their clear-to-sends. 60 messages stay
// within its 64 bounce buffers, which the sender's completions need while the receiver does not run yet.)
TEST_P(TransportSuite, ReceivesCompleteWhileTheSenderNoLongerDrivesItsComm) {
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  constexpr int kMessages = 60;
  std::atomic<bool> sent{false}, release{false};
  Status send_status;
  std::thread sender([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (int i = 0; i < kMessages && send_status.isOk(); ++i) {
      const uint32_t value = static_cast<uint32_t>(i);
      Request* r = nullptr;
      while (r == nullptr && send_status.isOk()) {
        send_status = p.send->isend(&value, sizeof(value), 3, nullptr, &r);
        if (std::chrono::steady_clock::now() > deadline) send_status = Status(ErrorCode::kTimeout, "isend slot");
      }
      bool done = false;
      while (!done && send_status.isOk()) {  // the value lives on this stack: wait until it has left
        send_status = p.send->test(r, &done, nullptr);
        if (std::chrono::steady_clock::now() > deadline) send_status = Status(ErrorCode::kTimeout, "send");
      }
    }
    sent = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // idle, comm still open
  });
  // Receive only once the sender is idle: everything after this runs on this thread's calls.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!sent && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Status s = send_status;
  for (int i = 0; i < kMessages && s.isOk() && sent; ++i) {
    uint32_t value = ~0u;
    void* buf = &value;
    size_t cap = sizeof(value);
    uint32_t tag = 3;
    Request* r = nullptr;
    while (r == nullptr && s.isOk()) {
      s = p.recv->irecv(1, &buf, &cap, &tag, nullptr, &r);
      if (std::chrono::steady_clock::now() > deadline) s = Status(ErrorCode::kTimeout, "no receive slot");
    }
    size_t size = 0;
    if (s.isOk()) s = complete(p, nullptr, r, nullptr, &size);
    if (s.isOk() && (size != sizeof(value) || value != static_cast<uint32_t>(i))) {
      s = Status(ErrorCode::kMismatch, "message " + std::to_string(i) + " arrived as " + std::to_string(value));
    }
  }
  release = true;
  sender.join();
  EXPECT_TRUE(sent) << send_status.message();
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST_P(TransportSuite, MessagesSentBeforeTheReceiveIsPostedKeepTheirSizes) {
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  std::vector<std::vector<uint8_t>> src = {pattern(8, 1), pattern(0, 2), pattern(3000, 3), pattern(1 << 20, 4)};
  std::vector<Request*> sends;
  for (auto& m : src) {
    Request* s = nullptr;
    ASSERT_TRUE(p.send->isend(m.data(), m.size(), 5, nullptr, &s).isOk());
    ASSERT_NE(s, nullptr);
    sends.push_back(s);
  }
  // Let them arrive (or start to) before any receive exists.
  for (int i = 0; i < 100; ++i) {
    bool done;
    size_t sz;
    if (sends[0] != nullptr) {
      ASSERT_TRUE(p.send->test(sends[0], &done, &sz).isOk());
      if (done) sends[0] = nullptr;
    }
    std::this_thread::sleep_for(1ms);
  }
  for (size_t i = 0; i < src.size(); ++i) {
    std::vector<uint8_t> dst(src[i].size() + 16, 0xEE);
    void* buf = dst.data();
    size_t cap = dst.size();
    uint32_t tag = 5;
    Request* r = nullptr;
    ASSERT_TRUE(p.recv->irecv(1, &buf, &cap, &tag, nullptr, &r).isOk());
    size_t sent = 0, received = 99;
    ASSERT_TRUE(complete(p, sends[i], r, &sent, &received).isOk());
    EXPECT_EQ(received, src[i].size()) << "message " << i;
    EXPECT_TRUE(std::equal(src[i].begin(), src[i].end(), dst.begin())) << "message " << i;
  }
}

TEST_P(TransportSuite, GroupedReceiveMatchesTags) {
  if (transport_->properties().max_recvs < 3) GTEST_SKIP() << "transport takes one buffer per receive";
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  std::vector<uint8_t> a = pattern(100, 1), b = pattern(2000, 2), c = pattern(0, 3);
  std::vector<uint8_t> ra(4000), rb(4000), rc(4000);
  void* bufs[3] = {ra.data(), rb.data(), rc.data()};
  size_t caps[3] = {4000, 4000, 4000};
  uint32_t tags[3] = {10, 20, 30};
  Request* rreq = nullptr;
  ASSERT_TRUE(p.recv->irecv(3, bufs, caps, tags, nullptr, &rreq).isOk());
  Request *s1, *s2, *s3;
  ASSERT_TRUE(p.send->isend(b.data(), b.size(), 20, nullptr, &s1).isOk());  // out of tag order
  ASSERT_TRUE(p.send->isend(c.data(), c.size(), 30, nullptr, &s2).isOk());
  ASSERT_TRUE(p.send->isend(a.data(), a.size(), 10, nullptr, &s3).isOk());
  size_t sizes[3] = {}, sz;
  ASSERT_TRUE(complete(p, s1, nullptr, &sz, nullptr).isOk());
  ASSERT_TRUE(complete(p, s2, nullptr, &sz, nullptr).isOk());
  ASSERT_TRUE(complete(p, s3, rreq, &sz, sizes).isOk());
  EXPECT_EQ(sizes[0], 100u);
  EXPECT_EQ(sizes[1], 2000u);
  EXPECT_EQ(sizes[2], 0u);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), ra.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), rb.begin()));
}

TEST_P(TransportSuite, SendLargerThanReceiveIsAnErrorNotCorruption) {
  Pair p;
  ASSERT_TRUE(connectPair(*transport_, &p).isOk());
  std::vector<uint8_t> src = pattern(5000, 9), dst(4000, 0);
  void* buf = dst.data();
  size_t cap = dst.size();
  uint32_t tag = 0;
  Request *sreq, *rreq;
  ASSERT_TRUE(p.recv->irecv(1, &buf, &cap, &tag, nullptr, &rreq).isOk());
  ASSERT_TRUE(p.send->isend(src.data(), src.size(), 0, nullptr, &sreq).isOk());
  size_t sz;
  Status s = complete(p, nullptr, rreq, nullptr, &sz);
  EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.message();
  EXPECT_NE(s.message().find("5000"), std::string::npos) << s.message();
  // The send may still be in flight (udp resends until acknowledged): the comms go before their buffers.
  p.send.reset();
  p.recv.reset();
}

TEST_P(TransportSuite, WrongSecretCannotConnect) {
  auto intruder = createTransport(GetParam(), optionsWithSecret("another-secret"));
  Pair p;
  auto connector = intruder->connect(listener_->address(), 1);
  Deadline deadline = deadlineAfter(5s);
  Status s;
  while (s.isOk() && !p.send && Clock::now() < deadline) {
    s = connector->poll(&p.send);
    Status a = listener_->accept(&p.recv);
    EXPECT_TRUE(a.isOk());
  }
  EXPECT_EQ(s.code(), ErrorCode::kAuthFailed) << s.message();
  EXPECT_FALSE(p.send);
  EXPECT_FALSE(p.recv);
}

// The peer that dies runs in a fresh process, this binary again running DyingPeer: UCX, like most RDMA stacks,
// does not work in a child forked after it started.
constexpr char kDyingPeerAddress[] = "MEGASCALE_CONFORMANCE_DYING_PEER_ADDRESS";
constexpr char kDyingPeerReadyFd[] = "MEGASCALE_CONFORMANCE_DYING_PEER_READY_FD";

TEST_P(TransportSuite, DyingPeer) {
  const char* address = getenv(kDyingPeerAddress);
  const char* ready_fd = getenv(kDyingPeerReadyFd);
  if (address == nullptr || ready_fd == nullptr) GTEST_SKIP() << "the peer of PeerDeathMidTransfer, in its own process";
  auto connector = transport_->connect(Address::fromString(address), 99);
  std::unique_ptr<SendComm> send;
  while (!send) {
    if (!connector->poll(&send).isOk()) _exit(2);
  }
  std::vector<uint8_t> big(kDyingPeerMessage, 1);
  Request* r = nullptr;
  if (!send->isend(big.data(), big.size(), 0, nullptr, &r).isOk()) _exit(3);
  bool done = false;
  size_t sz;
  for (int i = 0; i < 64 && !done; ++i) (void)send->test(r, &done, &sz);  // part of it leaves
  (void)!write(std::atoi(ready_fd), "x", 1);
  pause();
  _exit(0);
}

// The peer connects, starts a large send and dies (SIGKILL) before its second message. The receiver must get
// kPeerLost promptly, whether the first message was cut off (tcp: most of it is still in the peer) or completed
// (shm: pulled in one process_vm_readv) - never a hang.
TEST_P(TransportSuite, PeerDeathMidTransferIsAnErrorWithinTheTimeout) {
  int ready_pipe[2];
  ASSERT_EQ(pipe(ready_pipe), 0);
  // Everything the child needs is made before fork(): it only calls execve.
  std::vector<std::string> env_text = {std::string(kDyingPeerAddress) + "=" + listener_->address().asString(),
                                       std::string(kDyingPeerReadyFd) + "=" + std::to_string(ready_pipe[1])};
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=Transports/TransportSuite.DyingPeer/" + GetParam();
  char* argv[] = {const_cast<char*>("conformance"), filter.data(), nullptr};
  pid_t child = fork();
  if (child == 0) {
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  close(ready_pipe[1]);
  std::unique_ptr<RecvComm> recv;
  Deadline connect_deadline = deadlineAfter(10s);
  while (!recv && Clock::now() < connect_deadline) ASSERT_TRUE(listener_->accept(&recv).isOk());
  ASSERT_TRUE(recv);
  std::vector<uint8_t> first(kDyingPeerMessage), second(1024);
  Request* requests[2];
  void* bufs[2] = {first.data(), second.data()};
  size_t caps[2] = {first.size(), second.size()};
  uint32_t tag = 0;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(recv->irecv(1, &bufs[i], &caps[i], &tag, nullptr, &requests[i]).isOk());
  char c;
  ASSERT_EQ(read(ready_pipe[0], &c, 1), 1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  auto start = Clock::now();
  Status s;
  bool done[2] = {false, false};
  while (s.isOk() && !done[1] && Clock::now() - start < 20s) {
    size_t sz;
    for (int i = 0; i < 2 && s.isOk(); ++i) {
      if (!done[i]) s = recv->test(requests[i], &done[i], &sz);
    }
  }
  EXPECT_FALSE(done[1]) << "a message the dead peer never sent was reported received";
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost) << s.message();
  EXPECT_LT(Clock::now() - start, 10s);
  // Once the error is reported the buffers are the user's again: nothing that was still in flight lands in them.
  std::memset(first.data(), 0xab, first.size());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(std::count(first.begin(), first.end(), uint8_t{0xab}), static_cast<ptrdiff_t>(first.size()))
      << "the transport wrote into a receive buffer after it reported the receive failed";
  close(ready_pipe[0]);
}

std::vector<std::string> builtTransports() {
  std::vector<std::string> names;
  for (const TransportInfo& t : transportRegistry()) {
    if (t.missing == nullptr) names.emplace_back(t.name);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportSuite, ::testing::ValuesIn(builtTransports()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace megascale::transport
