#include "congestion/timely.h"

#include <algorithm>

namespace megascale::congestion {

void Timely::onAck(const AckEvent& ack) {
  if (ack.rtt <= 0) return;
  if (prev_rtt_ == 0) {  // the first sample only sets the reference
    prev_rtt_ = ack.rtt;
    last_update_ = ack.now;
    return;
  }
  const double rtt = static_cast<double>(ack.rtt);
  avg_diff_ = (1 - p_.ewma) * avg_diff_ + p_.ewma * static_cast<double>(ack.rtt - prev_rtt_);
  prev_rtt_ = ack.rtt;
  const double gradient = normalizedGradient();
  // Updates closer together than min_rtt act in proportion (the snippet's delta factor).
  const double weight = std::min(static_cast<double>(ack.now - last_update_) / static_cast<double>(p_.min_rtt), 1.0);
  last_update_ = ack.now;
  if (ack.rtt < p_.t_low) {
    rate_ += p_.additive_step_bps * weight;
    falling_ = 0;
  } else if (ack.rtt > p_.t_high) {
    rate_ *= 1 - weight * p_.beta * (1 - static_cast<double>(p_.t_high) / rtt);
    falling_ = 0;
  } else if (gradient <= 0) {
    const int n = ++falling_ >= p_.hai_threshold ? 5 : 1;
    rate_ += n * p_.additive_step_bps * weight;
  } else {
    rate_ *= 1 - weight * p_.beta * gradient;
    falling_ = 0;
  }
  rate_ = std::clamp(rate_, p_.min_rate_bps, p_.line_rate_bps);
}

}  // namespace megascale::congestion
