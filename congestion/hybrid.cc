#include "congestion/hybrid.h"

#include <algorithm>

namespace megascale::congestion {

bool Hybrid::reactToEcn(Picoseconds now) {
  const Picoseconds interval = h_.ecn_once_per_rtt ? std::max(h_.ecn_interval, smoothedRtt()) : h_.ecn_interval;
  if (now - last_ecn_cut_ < interval) return false;
  last_ecn_cut_ = now;
  setWindow(now, window() * std::max(1 - alpha_ / 2, 1 - params().max_mdf));
  return true;
}

void Hybrid::onAck(const AckEvent& ack) {
  alpha_ = (1 - h_.ecn_gain) * alpha_ + (ack.ecn_echo ? h_.ecn_gain : 0.0);
  if (ack.ecn_echo) {  // the RTT sample still counts; the window moves by the ECN rule only, never up
    observe(ack);
    reactToEcn(ack.now);
    return;
  }
  Swift::onAck(ack);
}

}  // namespace megascale::congestion
