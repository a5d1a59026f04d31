// The simulator's clock and event list: single-threaded, picosecond time, events ordered by (time, order of
// scheduling) so that a run is deterministic. An event is a target, a kind and one integer argument - no
// allocation per event - because the 12,288-GPU run processes billions of them.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "congestion/sender_control.h"

namespace megascale::congestion::sim {

class EventHandler {
 public:
  virtual void onEvent(int kind, uint64_t arg) = 0;

 protected:
  ~EventHandler() = default;
};

class EventQueue {
 public:
  /// Runs target->onEvent(kind, arg) at `time` (>= now()).
  void schedule(Picoseconds time, EventHandler* target, int kind, uint64_t arg = 0) {
    heap_.push(Event{time < now_ ? now_ : time, next_order_++, target, kind, arg});
  }
  /// Runs the next event if there is one no later than `end`; false otherwise.
  bool step(Picoseconds end = kNever) {
    if (heap_.empty() || heap_.top().time > end) return false;
    const Event e = heap_.top();
    heap_.pop();
    now_ = e.time;
    ++processed_;
    e.target->onEvent(e.kind, e.arg);
    return true;
  }
  Picoseconds now() const { return now_; }
  uint64_t processed() const { return processed_; }
  bool empty() const { return heap_.empty(); }

 private:
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
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  Picoseconds now_ = 0;
  uint64_t next_order_ = 0;
  uint64_t processed_ = 0;
};

}  // namespace megascale::congestion::sim
