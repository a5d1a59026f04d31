// The timing wheel against the order it promises: (time, order of scheduling), whatever the distance of an
// event - same bucket, later in the wheel, beyond its horizon - and whether it is scheduled before the run or by
// an event being run.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "sim/event_queue.h"

namespace megascale::sim {
namespace {

template <typename Queue>
struct Recorder : EventHandler {
  explicit Recorder(Queue* q) : queue(q) {}
  void onEvent(int kind, uint64_t arg) override {
    ran.push_back({queue->now(), arg});
    if (kind > 0) queue->schedule(queue->now() + static_cast<Picoseconds>(arg % 7919) * kind, this, 0, arg + 1);
  }
  struct Run {
    Picoseconds time;
    uint64_t arg;
    bool operator==(const Run&) const = default;
  };
  Queue* queue;
  std::vector<Run> ran;
};

TEST(EventQueue, EqualTimesRunInTheOrderTheyWereScheduled) {
  EventQueue q;
  Recorder<EventQueue> r(&q);
  for (uint64_t i = 0; i < 5; ++i) q.schedule(3 * kMicrosecond, &r, 0, i);
  q.schedule(1, &r, 0, 100);
  q.schedule(50 * kMillisecond, &r, 0, 200);  // far beyond the wheel
  q.schedule(50 * kMillisecond, &r, 0, 201);
  while (q.step()) {
  }
  const std::vector<Recorder<EventQueue>::Run> expected{{1, 100},
                                                        {3 * kMicrosecond, 0},
                                                        {3 * kMicrosecond, 1},
                                                        {3 * kMicrosecond, 2},
                                                        {3 * kMicrosecond, 3},
                                                        {3 * kMicrosecond, 4},
                                                        {50 * kMillisecond, 200},
                                                        {50 * kMillisecond, 201}};
  EXPECT_EQ(r.ran, expected);
  EXPECT_EQ(q.processed(), 8u);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, StepStopsAtTheEndTimeAndAcceptsEarlierEventsAfterwards) {
  EventQueue q;
  Recorder<EventQueue> r(&q);
  q.schedule(10 * kMillisecond, &r, 0, 1);
  EXPECT_FALSE(q.step(kMillisecond));  // the only event is later: nothing runs, the clock stays
  EXPECT_EQ(q.now(), 0);
  q.schedule(2 * kMicrosecond, &r, 0, 2);  // nearer than the timer the wheel already looked ahead to
  ASSERT_TRUE(q.step(kMillisecond));
  EXPECT_EQ(q.now(), 2 * kMicrosecond);
  EXPECT_FALSE(q.step(kMillisecond));
  ASSERT_TRUE(q.step());
  EXPECT_EQ(q.now(), 10 * kMillisecond);
  q.schedule(kMicrosecond, &r, 0, 3);  // in the past: runs now, never before the clock
  ASSERT_TRUE(q.step());
  EXPECT_EQ(r.ran.back(), (Recorder<EventQueue>::Run{10 * kMillisecond, 3}));
}

// The order the wheel promises, kept the plain way: every pending event in one map keyed by (time, order).
class SortedList {
 public:
  void schedule(Picoseconds time, EventHandler* target, int kind, uint64_t arg = 0) {
    pending_.emplace(std::pair{std::max(time, now_), pending_order_++}, Target{target, kind, arg});
  }
  bool step(Picoseconds end = kNever) {
    auto first = pending_.begin();
    if (first == pending_.end() || first->first.first > end) return false;
    auto [key, target] = *first;
    pending_.erase(first);
    now_ = key.first;
    target.handler->onEvent(target.kind, target.arg);
    return true;
  }
  Picoseconds now() const { return now_; }
  uint64_t processed() const { return pending_order_ - pending_.size(); }

 private:
  struct Target {
    EventHandler* handler;
    int kind;
    uint64_t arg;
  };
  std::map<std::pair<Picoseconds, uint64_t>, Target> pending_;
  Picoseconds now_ = 0;
  uint64_t pending_order_ = 0;
};

// Random times from the same bucket to far past the horizon, some events scheduling another when they run,
// running interleaved with scheduling as a simulation does.
template <typename Queue>
std::vector<typename Recorder<Queue>::Run> runRandomEvents() {
  std::mt19937_64 rng(7);
  const Picoseconds spans[] = {500, 5 * kNanosecond, 3 * kMicrosecond, 9 * kMicrosecond, 2 * kMillisecond};
  Queue q;
  Recorder<Queue> r(&q);
  for (uint64_t i = 0; i < 20000; ++i) {
    const Picoseconds span = spans[rng() % std::size(spans)];
    const Picoseconds at = q.now() + static_cast<Picoseconds>(rng() % static_cast<uint64_t>(span));
    const int follow_up_scale = rng() % 3 == 0 ? static_cast<int>(1 + rng() % 2000) : 0;
    q.schedule(at, &r, follow_up_scale, i * 16);
    if (i % 1000 == 999) {
      while (q.step(q.now() + kMicrosecond)) {
      }
    }
  }
  while (q.step()) {
  }
  EXPECT_EQ(r.ran.size(), q.processed());
  return r.ran;
}

TEST(EventQueue, MatchesASortedListOnRandomNearAndFarEvents) {
  const auto wheel = runRandomEvents<EventQueue>();
  const auto sorted = runRandomEvents<SortedList>();
  ASSERT_GT(sorted.size(), 25000u);  // the follow-ups ran too
  ASSERT_EQ(wheel.size(), sorted.size());
  for (size_t i = 0; i < wheel.size(); ++i) {
    ASSERT_EQ(wheel[i].time, sorted[i].time) << "event " << i;
    ASSERT_EQ(wheel[i].arg, sorted[i].arg) << "event " << i;
  }
}

}  // namespace
}  // namespace megascale::sim
