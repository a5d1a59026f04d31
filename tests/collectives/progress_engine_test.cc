// The progress engine: communicators that only use the network share one thread per process, a rank with no
// operation still answers peers' handshakes, and MEGASCALE_PROGRESS_THREADS=0 brings back a thread each.
#include "collectives/progress_engine.h"

#include <gtest/gtest.h>
#include <dirent.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "local_job.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

int threadsInProcess() {
  DIR* dir = opendir("/proc/self/task");
  int n = 0;
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

CommunicatorOptions tcpRingOptions() {
  CommunicatorOptions o;
  o.transport = "tcp";
  o.timeout = 20s;
  o.transport_options.handshake_timeout_ms = 20000;
  return o;
}

// `n` ranks as threads make their communicators and pass a value around a ring; the communicators stay alive
// (returned) after their threads have ended.
std::vector<std::shared_ptr<Communicator>> ringOfThreads(const UniqueId& id, int n, CommunicatorOptions options) {
  std::vector<std::shared_ptr<Communicator>> comms(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      comms[static_cast<size_t>(r)] = Communicator::create(id, r, n, options);
      int64_t out = r, in = -1;
      const int next = (r + 1) % n, previous = (r + n - 1) % n;
      Status s = comms[static_cast<size_t>(r)]
                     ->pointToPoint({{true, &out, 1, mscInt64, next}, {false, &in, 1, mscInt64, previous}})
                     ->wait(20s);
      EXPECT_TRUE(s.isOk()) << s.message();
      EXPECT_EQ(in, previous);
    });
  }
  for (std::thread& t : threads) t.join();
  return comms;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ProgressEngine, ManyNetworkCommunicatorsShareOneThread) {
  test_support::LocalJob job;
  flight::Recorder::process();  // its SIGUSR1 dumper: one thread per process, not per communicator
  const int before = threadsInProcess();
  auto comms = ringOfThreads(job.id, 32, tcpRingOptions());
  // Worker threads would be 32 more; the engine (and the listener watches it runs) adds at most its own thread,
  // none if another test of this process made it already.
  EXPECT_LE(threadsInProcess() - before, 1);
}

TEST(ProgressEngine, WithProgressThreadsZeroEachCommunicatorHasAWorker) {
  ScopedEnv env("MEGASCALE_PROGRESS_THREADS", "0");
  test_support::LocalJob job;
  const int before = threadsInProcess();
  auto comms = ringOfThreads(job.id, 6, tcpRingOptions());
  EXPECT_GE(threadsInProcess() - before, 6);
}

// Rank 1 runs nothing for a second while rank 0 connects to it with a 300 ms handshake limit: the engine's watch
// on rank 1's listeners answers for it, and rank 0's send completes before rank 1 even posts its receive.
TEST(ProgressEngine, ARankWithNoOperationAnswersHandshakes) {
  test_support::LocalJob job;
  CommunicatorOptions options = tcpRingOptions();
  options.transport_options.handshake_timeout_ms = 300;
  std::atomic<bool> rank0_sent{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto comm = Communicator::create(job.id, r, 3, options);
      int64_t value = 7, got = 0;
      if (r >= 1) {  // ranks 1 and 2 exchange once: rank 1 has run an operation, so its listeners are watched
        const int other = 3 - r;
        ASSERT_TRUE(comm->pointToPoint({{true, &value, 1, mscInt64, other}, {false, &got, 1, mscInt64, other}})->wait(20s).isOk());
      }
      if (r == 0) {
        std::this_thread::sleep_for(100ms);
        const auto start = Clock::now();
        Status s = comm->pointToPoint({{true, &value, 1, mscInt64, 1}})->wait(20s);
        EXPECT_TRUE(s.isOk()) << s.message();
        EXPECT_LT(Clock::now() - start, 900ms) << "the send waited for rank 1's next operation";
        rank0_sent = true;
      }
      if (r == 1) {
        std::this_thread::sleep_for(1s);
        EXPECT_TRUE(rank0_sent.load());
        ASSERT_TRUE(comm->pointToPoint({{false, &got, 1, mscInt64, 0}})->wait(20s).isOk());
        EXPECT_EQ(got, 7);
      }
      ASSERT_TRUE(comm->synchronize().isOk());
      if (r != 1) std::this_thread::sleep_for(1200ms);  // stay up while rank 1 receives
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace
}  // namespace megascale
