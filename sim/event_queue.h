// The simulator's clock and event list: single-threaded, picosecond time, events ordered by (time, order of
// scheduling) so that a run is deterministic. An event is a target, a kind and one integer argument - no
// allocation per event - because the 12,288-GPU run processes billions of them.
//
// The list is a timing wheel: almost every event (a packet finishing on a wire, arriving at the next hop) lands
// within a few microseconds, so those go into ~1 ns buckets covering the next 4 us, and only the bucket being
// run is a heap (hundreds of events, in cache, instead of a heap of every pending event). Later events (timers)
// wait in a heap until the wheel reaches them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include "congestion/sender_control.h"

namespace megascale::sim {

class EventHandler {
 public:
  virtual void onEvent(int kind, uint64_t arg) = 0;

 protected:
  ~EventHandler() = default;
};

class EventQueue {
 public:
  EventQueue() : buckets_(kBuckets) {}
  /// Runs target->onEvent(kind, arg) at `time` (>= now()).
  void schedule(Picoseconds time, EventHandler* target, int kind, uint64_t arg = 0) {
    place(Event{time < now_ ? now_ : time, next_order_++, target, kind, arg});
  }
  /// Runs the next event if there is one no later than `end`; false otherwise.
  bool step(Picoseconds end = kNever) {
    if (current_.empty() && !refill()) return false;
    if (current_.front().time > end) return false;
    std::pop_heap(current_.begin(), current_.end(), Later{});
    const Event e = current_.back();
    current_.pop_back();
    now_ = e.time;
    ++processed_;
    e.target->onEvent(e.kind, e.arg);
    return true;
  }
  Picoseconds now() const { return now_; }
  uint64_t processed() const { return processed_; }
  bool empty() const { return current_.empty() && in_wheel_ == 0 && far_.empty(); }

 private:
  static constexpr int kBucketShift = 10;  // 1.024 ns per bucket
  static constexpr Picoseconds kBucketWidth = Picoseconds{1} << kBucketShift;
  static constexpr size_t kBuckets = 4096;  // 4.2 us ahead
  static constexpr Picoseconds kHorizon = kBucketWidth * static_cast<Picoseconds>(kBuckets);

  struct Event {
    Picoseconds time;
    uint64_t order;
    EventHandler* target;
    int kind;
    uint64_t arg;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.order > b.order;
    }
  };

  void place(const Event& e) {
    if (e.time < current_end_) {
      current_.push_back(e);
      std::push_heap(current_.begin(), current_.end(), Later{});
    } else if (e.time < current_start_ + kHorizon) {
      buckets_[static_cast<size_t>(e.time >> kBucketShift) % kBuckets].push_back(e);
      ++in_wheel_;
    } else {
      far_.push(e);
    }
  }

  // Makes the next non-empty bucket current; false when nothing is left.
  bool refill() {
    while (current_.empty()) {
      if (in_wheel_ == 0) {
        if (far_.empty()) return false;
        current_start_ = far_.top().time & ~(kBucketWidth - 1);  // nothing nearer: jump to the next timer
      } else {
        current_start_ += kBucketWidth;
      }
      current_end_ = current_start_ + kBucketWidth;
      while (!far_.empty() && far_.top().time < current_start_ + kHorizon) {  // now within reach of the wheel
        const Event e = far_.top();
        far_.pop();
        place(e);
      }
      std::vector<Event>& bucket = buckets_[static_cast<size_t>(current_start_ >> kBucketShift) % kBuckets];
      in_wheel_ -= bucket.size();
      for (const Event& e : bucket) current_.push_back(e);
      bucket.clear();
      std::make_heap(current_.begin(), current_.end(), Later{});
    }
    return true;
  }

  std::vector<Event> current_;               // heap of the events in [current_start_, current_end_)
  std::vector<std::vector<Event>> buckets_;  // the wheel: events in [current_end_, current_start_ + kHorizon)
  size_t in_wheel_ = 0;
  std::priority_queue<Event, std::vector<Event>, Later> far_;  // everything later
  Picoseconds current_start_ = 0, current_end_ = kBucketWidth;
  Picoseconds now_ = 0;
  uint64_t next_order_ = 0;
  uint64_t processed_ = 0;
};

}  // namespace megascale::sim
