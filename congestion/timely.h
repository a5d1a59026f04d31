// TIMELY (Mittal et al., SIGCOMM 2015), for comparison: rate control from the RTT's gradient, with additive
// increase below T_low, a proportional cut above T_high, and hyperactive increase after 5 falling gradients.
// Values follow the authors' reference snippet, the additive step scaled to the line rate (10 Mb/s per 10G).
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

struct TimelyParams {
  double line_rate_bps = 100e9;
  double min_rate_bps = 100e6;
  double ewma = 0.02;               // alpha: weight of a new RTT difference
  double beta = 0.8;
  Picoseconds t_low = 50 * kMicrosecond;
  Picoseconds t_high = 1 * kMillisecond;
  Picoseconds min_rtt = 20 * kMicrosecond;  // normalizes the gradient
  double additive_step_bps = 100e6;         // delta
  int hai_threshold = 5;                    // falling gradients in a row before N = 5
};

class Timely : public RateControl {
 public:
  explicit Timely(const TimelyParams& params) : p_(params), rate_(params.line_rate_bps) {}
  const char* name() const override { return "timely"; }

  /// One completion event (an ACK carrying an RTT sample).
  void onAck(const AckEvent& ack) override;
  double rateBps() const override { return rate_; }
  double normalizedGradient() const { return avg_diff_ / static_cast<double>(p_.min_rtt); }

 private:
  TimelyParams p_;
  double rate_;
  Picoseconds prev_rtt_ = 0, last_update_ = 0;
  double avg_diff_ = 0;
  int falling_ = 0;
};

}  // namespace megascale::congestion
