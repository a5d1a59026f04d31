// The receiver side of DCQCN (the notification point): a CNP back to the sender for ECN-marked arrivals, at most
// one per flow per interval (50 us in the paper).
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

class CnpGenerator {
 public:
  explicit CnpGenerator(Picoseconds interval = 50 * kMicrosecond) : interval_(interval) {}

  /// A packet of this flow arrived; true when a CNP must be sent now.
  bool onArrival(Picoseconds now, bool ecn_marked) {
    if (!ecn_marked) return false;
    if (last_ != kNever && now - last_ < interval_) return false;
    last_ = now;
    return true;
  }

 private:
  Picoseconds interval_;
  Picoseconds last_ = kNever;
};

}  // namespace megascale::congestion
