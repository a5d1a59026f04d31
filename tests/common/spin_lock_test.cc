#include "common/spin_lock.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace megascale {
namespace {

// Two threads (and on 2 cores, a preempted holder now and then) must never lose an increment.
TEST(SpinLock, SerializesThreadsWithoutLosingUpdates) {
  SpinLock lock;
  long counter = 0;
  constexpr int kPerThread = 200000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        std::lock_guard<SpinLock> guard(lock);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, 3L * kPerThread);
}

TEST(SpinLock, TryLockFailsWhileHeld) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

}  // namespace
}  // namespace megascale
