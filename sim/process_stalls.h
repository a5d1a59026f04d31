// The stalls of a node that is a process (the test bed's switch): now and then it is descheduled or busy, and
// what it should have sent meanwhile leaves when it runs again, all at once. The test bed's switch measures its
// own (testbed/ecn_switch: how many, how long); the simulator's switch stands in for it with stalls that start
// at random (a Poisson process while running) and last an exponentially distributed time of the same mean.
// Every flow through that switch shares them: their round trips rise together, and window-based laws back off
// together, which is what lets a standing queue drain now and then on the test bed.
#pragma once

#include <cstdint>
#include <random>

#include "common/picoseconds.h"

namespace megascale::sim {

class ProcessStalls {
 public:
  /// `per_second` stalls a second of running on average, each `mean_length` long on average; both > 0.
  ProcessStalls(double per_second, Picoseconds mean_length, uint64_t seed);

  /// When the process, asked to act at `t`, acts: `t`, or the end of the stall `t` falls in. Calls must come with
  /// `t` not decreasing (the simulator's clock).
  Picoseconds actsAt(Picoseconds t);

 private:
  void drawNext();

  std::mt19937_64 random_;
  std::exponential_distribution<double> running_seconds_, stall_seconds_;
  Picoseconds start_ = 0, end_ = 0;  // the stall now or next: [start_, end_)
};

}  // namespace megascale::sim
