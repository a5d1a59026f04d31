#include "congestion/swift.h"

#include <algorithm>
#include <cmath>

namespace megascale::congestion {

Swift::Swift(const SwiftParams& params)
    : p_(params), cwnd_(params.initial_cwnd), last_decrease_(std::numeric_limits<Picoseconds>::min() / 2) {
  const double range = static_cast<double>(p_.flow_scaling_range);
  fs_alpha_ = range / (1 / std::sqrt(p_.flow_scaling_min_cwnd) - 1 / std::sqrt(p_.flow_scaling_max_cwnd));
  fs_beta_ = -fs_alpha_ / std::sqrt(p_.flow_scaling_max_cwnd);
}

Picoseconds Swift::targetDelay(double cwnd) const {
  const double fs = std::clamp(fs_alpha_ / std::sqrt(cwnd) + fs_beta_, 0.0, static_cast<double>(p_.flow_scaling_range));
  return p_.base_target + (p_.target_above_floor ? floor_rtt_ : 0) + p_.hops * p_.per_hop + static_cast<Picoseconds>(fs);
}

void Swift::setWindow(Picoseconds now, double cwnd) {
  cwnd = std::clamp(cwnd, p_.min_cwnd, p_.max_cwnd);
  if (cwnd < cwnd_) last_decrease_ = now;
  cwnd_ = cwnd;
}

bool Swift::decrease(Picoseconds now, double factor) {
  if (!canDecrease(now)) return false;
  setWindow(now, cwnd_ * factor);
  return true;
}

void Swift::observe(const AckEvent& ack) {
  timeouts_in_a_row_ = 0;
  if (ack.rtt <= 0) return;
  rtt_ = ack.rtt;
  lowest_rtt_ = lowest_rtt_ == 0 ? ack.rtt : std::min(lowest_rtt_, ack.rtt);
  decayRelearnedFloor(ack.now);
  floor_rtt_ = floor_rtt_ == 0 ? ack.rtt : std::min(floor_rtt_, ack.rtt);
}

void Swift::decayRelearnedFloor(Picoseconds now) {
  if (floor_rtt_ > lowest_rtt_ && p_.floor_decay_rtts > 0) {
    const double half_lives = static_cast<double>(now - last_sample_at_) / (p_.floor_decay_rtts * static_cast<double>(rtt_));
    floor_rtt_ = lowest_rtt_ + static_cast<Picoseconds>(static_cast<double>(floor_rtt_ - lowest_rtt_) * std::exp2(-half_lives));
  }
  last_sample_at_ = now;
}

void Swift::noteAboveTarget(const AckEvent& ack) {
  if (!p_.target_above_floor || p_.relearn_floor_after_rtts <= 0) return;
  if (above_target_since_ < 0) {
    above_target_since_ = ack.now;
    above_target_lowest_ = ack.rtt;
    return;
  }
  above_target_lowest_ = std::min(above_target_lowest_, ack.rtt);
  if (ack.now - above_target_since_ >= p_.relearn_floor_after_rtts * rtt_) {
    floor_rtt_ = std::max(floor_rtt_, above_target_lowest_);
    above_target_since_ = -1;
  }
}

void Swift::onAck(const AckEvent& ack) {
  observe(ack);
  if (ack.rtt <= 0) return;
  const double delay = static_cast<double>(ack.rtt), target = static_cast<double>(targetDelay(cwnd_));
  if (delay < target) {
    above_target_since_ = -1;
    const double step = cwnd_ >= 1 ? p_.additive_increase * ack.acked_packets / cwnd_
                                   : p_.additive_increase * ack.acked_packets;
    setWindow(ack.now, cwnd_ + step);
  } else {
    noteAboveTarget(ack);
    decrease(ack.now, std::max(1 - p_.beta * (delay - target) / delay, 1 - p_.max_mdf));
  }
}

void Swift::onLoss(Picoseconds now) { decrease(now, 1 - p_.max_mdf); }

void Swift::onTimeout(Picoseconds now) {
  if (++timeouts_in_a_row_ >= p_.retransmit_reset) {
    setWindow(now, p_.min_cwnd);
  } else {
    decrease(now, 1 - p_.max_mdf);
  }
}

Picoseconds Swift::pacingGap(uint32_t packet_bytes) const {
  const Picoseconds wire = serializationTime(packet_bytes, p_.line_rate_bps);
  if (cwnd_ >= 1 || rtt_ <= 0) return wire;
  return std::max(wire, static_cast<Picoseconds>(static_cast<double>(rtt_) / cwnd_));
}

}  // namespace megascale::congestion
