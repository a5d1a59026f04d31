// How a polling loop waits when nothing moved: spin a few pauses (lowest latency when the peer is running on
// another core), then yield (lets an oversubscribed peer on the same core run), and only after a long idle
// stretch nap (a rank that waits long does not burn a core that others need). Measured on 2 cores: 256
// spins before yielding cost 4 ranks 30 us per small all-reduce (a pause is ~50 ns on recent Intel, so the
// waiter held the core its peer needed); 8 spins cost 6 us.
#pragma once

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace megascale {

/// Set by a communicator whose host runs more ranks than this process may use cores. Waiters then yield only
/// briefly and nap with growing naps: on 2 cores, 7 ranks yielding 20,000 times each while one rank computed
/// took three quarters of its GEMM rate (94 of 398 GFLOP/s measured under megascale-train with 8 ranks).
inline std::atomic<bool>& oversubscribedHost() {
  static std::atomic<bool> flag{false};
  return flag;
}

/// Raises oversubscribedHost() when `ranks_on_host` exceeds the cores this process may run on.
inline void noteRanksOnHost(int ranks_on_host) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  if (ranks_on_host > cores) oversubscribedHost().store(true, std::memory_order_relaxed);
}

class IdleBackoff {
 public:
  void reset() { idle_ = 0; }
  /// Past the spins and yields: the next idle round would nap. A waiter that can sleep on descriptors instead
  /// (poll) does so from here: it wakes when the data moves, not on a timer.
  bool resting() const {
    return idle_ >= kSpins + (oversubscribedHost().load(std::memory_order_relaxed) ? kCrowdedYields : kYields);
  }
  /// Where a waiter can sleep on descriptors: past the yields, or on a crowded host already past the spins.
  /// There a yield hands the core to a computing thread until the scheduler's next turn (milliseconds) while
  /// the data waits in the socket; poll wakes the waiter as it lands (a 164 KB reduce-scatter beside a
  /// training step on a shared core took 6.7 ms, 1.7 ms alone; two ranks on two cores, 4 runs each at
  /// 800 Mbit/s: a median step of 178.5 against 187.5 ms).
  bool socketsFirst() const {
    return resting() || (pastSpins() && oversubscribedHost().load(std::memory_order_relaxed));
  }
  /// Past the few spins.
  bool pastSpins() const { return idle_ >= kSpins; }
  /// Counts one idle round spent elsewhere (in poll), so that resting() stays true.
  void rested() { ++idle_; }
  /// How an idle round is spent: a pause, a yield of the core, or a nap of some nanoseconds.
  struct Pause {
    enum Kind : uint8_t { kSpin, kYield, kNap } kind;
    long nap_ns = 0;
  };
  /// Counts one idle round and says how to spend it (a driver that runs several waiters spends it its own way).
  Pause next() {
    ++idle_;
    if (idle_ < kSpins) return {Pause::kSpin};
    const bool crowded = oversubscribedHost().load(std::memory_order_relaxed);
    if (idle_ < kSpins + (crowded ? kCrowdedYields : kYields)) return {Pause::kYield};
    long nap_ns = 50'000;  // 50 us
    if (crowded) {  // 20 us doubling to 500 us: a long wait stops taking turns on the cores
      const uint32_t doublings = std::min<uint32_t>(idle_ - kSpins - kCrowdedYields, 5);
      nap_ns = 20'000L << doublings;
    }
    return {Pause::kNap, nap_ns};
  }
  /// Spends an idle round on this thread.
  static void spend(Pause pause) {
    switch (pause.kind) {
      case Pause::kSpin:
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
        return;
      case Pause::kYield:
        sched_yield();
        return;
      case Pause::kNap: {
        timespec nap{0, pause.nap_ns};
        nanosleep(&nap, nullptr);
        return;
      }
    }
  }

 private:
  static constexpr uint32_t kSpins = 8;          // ~0.5 us
  static constexpr uint32_t kYields = 20000;     // ~10-20 ms of yielding before the first nap
  static constexpr uint32_t kCrowdedYields = 64;
  uint32_t idle_ = 0;
};

}  // namespace megascale
