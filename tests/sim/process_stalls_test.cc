// A stalling process's schedule (sim/process_stalls.h): stalls as often and as long as asked, on average; work due
// inside one waits for its end, work outside it does not; the same seed gives the same stalls.
#include "sim/process_stalls.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace megascale::sim {
namespace {

struct Observed {
  int stalls = 0;
  Picoseconds stalled = 0;
};

// Asks at every step over `span` and tells the stalls apart by their ends.
Observed observe(ProcessStalls& stalls, Picoseconds span, Picoseconds step) {
  Observed o;
  Picoseconds current_end = -1, first_seen = 0;
  for (Picoseconds t = 0; t < span; t += step) {
    const Picoseconds at = stalls.actsAt(t);
    EXPECT_GE(at, t);
    if (at == t) continue;
    if (at != current_end) {
      if (current_end >= 0) o.stalled += current_end - first_seen;
      ++o.stalls;
      current_end = at;
      first_seen = t;
    }
  }
  if (current_end >= 0) o.stalled += current_end - first_seen;
  return o;
}

TEST(ProcessStalls, StallAsOftenAndAsLongAsAskedOnAverage) {
  constexpr double kPerSecond = 30;
  constexpr Picoseconds kMean = 1 * kMillisecond;
  ProcessStalls stalls(kPerSecond, kMean, 7);
  const Picoseconds span = 200 * kSecond;
  const Observed o = observe(stalls, span, 5 * kMicrosecond);
  const double running_seconds = static_cast<double>(span - o.stalled) / kSecond;
  EXPECT_NEAR(o.stalls / running_seconds, kPerSecond, kPerSecond * 0.05);
  EXPECT_NEAR(static_cast<double>(o.stalled) / o.stalls, static_cast<double>(kMean), 0.05 * kMean);
}

TEST(ProcessStalls, WorkDueInAStallWaitsForItsEndAndWorkOutsideDoesNot) {
  ProcessStalls stalls(100, 2 * kMillisecond, 3);
  Picoseconds t = 0;
  while (stalls.actsAt(t) == t) t += kMicrosecond;  // the first stall's start
  const Picoseconds end = stalls.actsAt(t);
  EXPECT_GT(end, t);
  EXPECT_EQ(stalls.actsAt(t + (end - t) / 2), end);
  EXPECT_EQ(stalls.actsAt(end - 1), end);
  EXPECT_EQ(stalls.actsAt(end), end);  // the process runs again
}

TEST(ProcessStalls, TheSameSeedGivesTheSameStalls) {
  ProcessStalls a(50, 500 * kMicrosecond, 11), b(50, 500 * kMicrosecond, 11), c(50, 500 * kMicrosecond, 12);
  bool differs = false;
  for (Picoseconds t = 0; t < 2 * kSecond; t += 10 * kMicrosecond) {
    const Picoseconds at = a.actsAt(t);
    EXPECT_EQ(at, b.actsAt(t));
    differs |= at != c.actsAt(t);
  }
  EXPECT_TRUE(differs);
}

TEST(ProcessStalls, ARateOrLengthOfZeroIsRefused) {
  EXPECT_THROW(ProcessStalls(0, kMillisecond, 1), std::invalid_argument);
  EXPECT_THROW(ProcessStalls(10, 0, 1), std::invalid_argument);
  EXPECT_THROW(ProcessStalls(-1, kMillisecond, 1), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::sim
