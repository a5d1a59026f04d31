// Two budgets for a stalled connection, kept apart as MegaScale learned (NSDI'24, section 6): the retransmit
// timer resends quickly (the RTO, microseconds to milliseconds), while giving up waits far longer, so that a
// link that flaps for a few seconds costs a few seconds, not the job.
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

class RetransmitBudget {
 public:
  explicit RetransmitBudget(Picoseconds give_up_after = 30 * kSecond) : give_up_after_(give_up_after) {}

  /// The retransmit timer fired without progress; the first such time starts the give-up clock.
  void onTimeout(Picoseconds now) {
    if (stalled_since_ == kNever) stalled_since_ = now;
  }
  /// New data was acknowledged: the connection works again.
  void onProgress() { stalled_since_ = kNever; }
  /// True once the connection has made no progress for give_up_after since its first timeout.
  bool exhausted(Picoseconds now) const { return stalled_since_ != kNever && now - stalled_since_ >= give_up_after_; }
  Picoseconds stalledSince() const { return stalled_since_; }

 private:
  Picoseconds give_up_after_;
  Picoseconds stalled_since_ = kNever;
};

}  // namespace megascale::congestion
