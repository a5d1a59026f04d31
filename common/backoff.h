// How a polling loop waits when nothing moved: spin briefly (lowest latency when the peer is running),
// then yield (lets an oversubscribed peer on the same core run), then sleep in short naps (a rank that
// waits long does not burn a core that others need).
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
  static constexpr uint32_t kSpins = 256;
  static constexpr uint32_t kYields = 2000;
  uint32_t idle_ = 0;
};

}  // namespace megascale
