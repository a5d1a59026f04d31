// No congestion control: send at the line rate with no window. The baseline that PFC alone must keep lossless,
// and the "ideal" sender of the simulator's single-flow checks.
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

class LineRate : public RateControl {
 public:
  explicit LineRate(double line_rate_bps) : rate_(line_rate_bps) {}
  const char* name() const override { return "none"; }
  double rateBps() const override { return rate_; }

 private:
  double rate_;
};

}  // namespace megascale::congestion
