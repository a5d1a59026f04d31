// How a polling loop waits when nothing moved: spin a few pauses (lowest latency when the peer is running on
// another core), then yield (lets an oversubscribed peer on the same core run), and only after a long idle
// stretch nap (a rank that waits long does not burn a core that others need). Measured on 2 cores: 256
// spins before yielding cost 4 ranks 30 us per small all-reduce (a pause is ~50 ns on recent Intel, so the
// waiter held the core its peer needed); 8 spins cost 6 us.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

namespace megascale {

class IdleBackoff {
 public:
  void reset() { idle_ = 0; }
  void idle() {
    ++idle_;
    if (idle_ < kSpins) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      return;
    }
    if (idle_ < kSpins + kYields) {
      sched_yield();
      return;
    }
    timespec nap{0, 50'000};  // 50 us
    nanosleep(&nap, nullptr);
  }

 private:
  static constexpr uint32_t kSpins = 8;        // ~0.5 us
  static constexpr uint32_t kYields = 20000;    // ~10-20 ms of yielding before the first nap
  uint32_t idle_ = 0;
};

}  // namespace megascale
