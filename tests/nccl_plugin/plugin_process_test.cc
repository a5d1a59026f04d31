// The plugin between processes, as NCCL's ranks use it: a ring of 4 processes passing data around (ring
// all-gather), and a peer killed in the middle of a transfer, which must surface as ncclSystemError from
// test() on the survivor instead of a hang.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "plugin_fixture.h"
#include "transport/transport.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;
using std::chrono::milliseconds;

constexpr int kRanks = 4;

// Shared between the forked processes: each rank's listen handle and flags, like NCCL's bootstrap.
struct Board {
  char handles[kRanks][kHandleMaxBytes];
  std::atomic<int> ready[kRanks];
  std::atomic<int> started;
};

class SharedBoard {
 public:
  SharedBoard() {
    void* p = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    board_ = p == MAP_FAILED ? nullptr : new (p) Board{};
  }
  ~SharedBoard() {
    if (board_ != nullptr) munmap(board_, sizeof(Board));
  }
  Board* operator->() { return board_; }
  bool ok() const { return board_ != nullptr; }

 private:
  Board* board_;
};

bool waitFor(const std::atomic<int>& flag, Deadline deadline) {
  while (flag.load() == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

uint8_t byteOf(int chunk, size_t i) { return static_cast<uint8_t>(chunk * 37 + i * 13 + (i >> 9)); }

// One rank of the ring; returns the process exit code (0 = every chunk arrived intact).
int ringRank(const PluginApi& api, Board* board, int rank, size_t chunk) {
  const Deadline deadline = deadlineIn(kTestTimeout);
  const int next = (rank + 1) % kRanks;
  void *listen = nullptr, *send = nullptr, *recv = nullptr;
  if (api.init() != kSuccess || api.listen(0, board->handles[rank], &listen) != kSuccess) return 10;
  board->ready[rank].store(1);
  if (!waitFor(board->ready[next], deadline)) return 11;
  char handle[kHandleMaxBytes];
  std::memcpy(handle, board->handles[next], sizeof(handle));
  // One thread, both directions: neither call may block.
  if (connectBothWays(api, 0, handle, listen, ConnectOrder::kConnectFirst, deadline, &send, &recv) != kSuccess) return 12;
  std::vector<uint8_t> all(chunk * kRanks);
  for (size_t i = 0; i < chunk; ++i) all[rank * chunk + i] = byteOf(rank, i);
  for (int step = 0; step < kRanks - 1; ++step) {
    const int out = (rank - step + kRanks) % kRanks, in = (rank - step - 1 + kRanks) % kRanks;
    void* data = all.data() + in * chunk;
    size_t capacity = chunk;
    int tag = step, received = -1;
    void *r = nullptr, *s = nullptr, *mr = nullptr;
    if (postUntilTaken([&](void** q) { return api.irecv(recv, 1, &data, &capacity, &tag, &mr, q); }, deadline, &r) !=
            kSuccess ||
        postUntilTaken([&](void** q) { return api.isend(send, all.data() + out * chunk, chunk, step, nullptr, q); },
                       deadline, &s) != kSuccess) {
      return 15;
    }
    if (waitBothDone(api, s, r, &received, deadline) != kSuccess) return 16;
    if (received != static_cast<int>(chunk)) return 19;
  }
  for (int c = 0; c < kRanks; ++c) {
    for (size_t i = 0; i < chunk; ++i) {
      if (all[c * chunk + i] != byteOf(c, i)) return 20 + c;
    }
  }
  api.closeSend(send);
  api.closeRecv(recv);
  api.closeListen(listen);
  return 0;
}

/// fork() whose child never outlives the test: it dies with its parent, and after the test timeout at the latest.
pid_t forkChild() {
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(static_cast<unsigned>(std::chrono::duration_cast<std::chrono::seconds>(kTestTimeout).count()) + 10);
  }
  return pid;
}

/// Waits for a child with a deadline (killing it then); returns its exit status, or -signal.
int reap(pid_t pid, Deadline deadline) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1000;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

class PluginProcesses : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    api_ = versionNamed(GetParam());
    ASSERT_TRUE(board_.ok());
    ASSERT_EQ(api_.init(), kSuccess);
  }
  void TearDown() override { EXPECT_EQ(api_.finalize(), kSuccess); }
  PluginApi api_;
  SharedBoard board_;
};

TEST_P(PluginProcesses, ARingOfFourProcessesGathersEveryChunk) {
  constexpr size_t kChunk = (size_t{3} << 20) + 5;  // striped over the sockets, not a multiple of anything
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kRanks; ++rank) {
    pid_t pid = forkChild();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(ringRank(api_, board_.operator->(), rank, kChunk));
    pids.push_back(pid);
  }
  const Deadline deadline = deadlineIn(kTestTimeout + std::chrono::seconds(5));
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(reap(pids[rank], deadline), 0) << "rank " << rank;
}

// The largest buffer the kernel may grow a TCP socket's to (the third field of tcp_rmem or tcp_wmem).
size_t socketBufferMax(const char* sysctl_path) {
  FILE* f = std::fopen(sysctl_path, "r");
  unsigned long low = 0, initial = 0, max = 0;
  const bool read = f != nullptr && std::fscanf(f, "%lu %lu %lu", &low, &initial, &max) == 3;
  if (f != nullptr) std::fclose(f);
  return read ? max : size_t{64} << 20;
}

// Far more than the socket buffers of a comm can hold once the kernel has grown them (2 x 32 MiB receive buffers
// on Debian's defaults): a send of it cannot finish while its receiver is stalled.
const size_t kBigMessage = 2 * transport::TransportOptions{}.tcp.sockets_per_comm *
                               (socketBufferMax("/proc/sys/net/ipv4/tcp_rmem") +
                                socketBufferMax("/proc/sys/net/ipv4/tcp_wmem")) +
                           (size_t{64} << 20);

// The child takes part in one transfer, lets it start, then stalls until it is killed mid-message. Only one side
// tests at a time, so no more than the socket buffers hold moves before the kill.
TEST_P(PluginProcesses, AReceiverKilledMidTransferFailsTheSend) {
  pid_t pid = forkChild();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    void *listen = nullptr, *recv = nullptr, *r = nullptr, *mr = nullptr;
    std::vector<uint8_t> in(kBigMessage);
    void* data = in.data();
    size_t capacity = in.size();
    int tag = 0, done = 0;
    if (api_.listen(0, board_->handles[0], &listen) != kSuccess) _exit(10);
    board_->ready[0].store(1);
    if (acceptUntilDone(api_, listen, deadlineIn(kTestTimeout), &recv) != kSuccess) _exit(11);
    if (postUntilTaken([&](void** q) { return api_.irecv(recv, 1, &data, &capacity, &tag, &mr, q); },
                       deadlineIn(kTestTimeout), &r) != kSuccess) {
      _exit(12);
    }
    for (int i = 0; i < 1000 && !done; ++i) api_.test(r, &done, nullptr);  // take in what the buffers hold
    board_->started.store(1);
    pause();
    _exit(13);
  }
  ASSERT_TRUE(waitFor(board_->ready[0], deadlineIn(kTestTimeout)));
  void *send = nullptr, *s = nullptr;
  std::vector<uint8_t> out(kBigMessage, 0xab);
  ASSERT_EQ(connectUntilDone(api_, 0, board_->handles[0], deadlineIn(kTestTimeout), &send), kSuccess);
  ASSERT_EQ(postUntilTaken([&](void** q) { return api_.isend(send, out.data(), out.size(), 0, nullptr, q); },
                           deadlineIn(kTestTimeout), &s),
            kSuccess);
  // Not testing while the child reads: only what fits in the socket buffers moves, so the send cannot finish.
  ASSERT_TRUE(waitFor(board_->started, deadlineIn(kTestTimeout)));
  int done = 0, size = 0;
  ASSERT_EQ(api_.test(s, &done, &size), kSuccess);
  ASSERT_EQ(done, 0);
  kill(pid, SIGKILL);
  EXPECT_EQ(reap(pid, deadlineIn(kTestTimeout)), -SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(waitUntilDone(api_, s, &size, deadlineIn(kTestTimeout)), kSystemError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the error must come promptly";
  EXPECT_EQ(api_.closeSend(send), kSuccess);
}

TEST_P(PluginProcesses, ASenderKilledMidTransferFailsTheReceive) {
  void *listen = nullptr, *recv = nullptr, *r = nullptr, *mr = nullptr;
  ASSERT_EQ(api_.listen(0, board_->handles[0], &listen), kSuccess);
  pid_t pid = forkChild();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    void *send = nullptr, *s = nullptr;
    std::vector<uint8_t> out(kBigMessage, 0xcd);
    int done = 0, size = 0;
    if (connectUntilDone(api_, 0, board_->handles[0], deadlineIn(kTestTimeout), &send) != kSuccess) _exit(10);
    if (postUntilTaken([&](void** q) { return api_.isend(send, out.data(), out.size(), 0, nullptr, q); },
                       deadlineIn(kTestTimeout), &s) != kSuccess) {
      _exit(11);
    }
    for (int i = 0; i < 1000 && !done; ++i) api_.test(s, &done, &size);  // fill the socket buffers
    board_->started.store(1);
    pause();
    _exit(12);
  }
  std::vector<uint8_t> in(kBigMessage);
  void* data = in.data();
  size_t capacity = in.size();
  int tag = 0, done = 0, size = 0;
  ASSERT_EQ(acceptUntilDone(api_, listen, deadlineIn(kTestTimeout), &recv), kSuccess);
  ASSERT_EQ(postUntilTaken([&](void** q) { return api_.irecv(recv, 1, &data, &capacity, &tag, &mr, q); },
                           deadlineIn(kTestTimeout), &r),
            kSuccess);
  // The child has filled the socket buffers and stalls; take that part in, then kill it mid-message.
  ASSERT_TRUE(waitFor(board_->started, deadlineIn(kTestTimeout)));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(api_.test(r, &done, &size), kSuccess);
  ASSERT_EQ(done, 0);
  kill(pid, SIGKILL);
  EXPECT_EQ(reap(pid, deadlineIn(kTestTimeout)), -SIGKILL);
  EXPECT_EQ(waitUntilDone(api_, r, &size, deadlineIn(kTestTimeout)), kSystemError);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(api_.closeRecv(recv), kSuccess);
  EXPECT_EQ(api_.closeListen(listen), kSuccess);
}

INSTANTIATE_TEST_SUITE_P(Versions, PluginProcesses, ::testing::ValuesIn(versionNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace megascale::nccl_plugin
