// A lock for very short critical sections taken millions of times a second by one thread and rarely by a
// second (a UCX worker's calls: the progress thread and, now and then, a thread connecting). Uncontended it
// costs one atomic exchange and a store, half of a pthread mutex; contended it spins briefly, then yields so
// a holder that was preempted (2 cores, busy pollers) gets the CPU back.
#pragma once

#include <sched.h>

#include <atomic>

namespace megascale {

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield) {
          relax();
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  static constexpr int kSpinsBeforeYield = 128;
  std::atomic<bool> locked_{false};
};

}  // namespace megascale
