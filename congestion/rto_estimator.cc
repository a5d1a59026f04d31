#include "congestion/rto_estimator.h"

#include <algorithm>

namespace megascale::congestion {

void RtoEstimator::onSample(Picoseconds rtt) {
  if (rtt <= 0) return;
  if (srtt_ == 0) {
    srtt_ = rtt;
    rttvar_ = rtt / 2;
    return;
  }
  const Picoseconds error = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
  rttvar_ = (3 * rttvar_ + error) / 4;  // with the old srtt, as RFC 6298 orders it
  srtt_ = (7 * srtt_ + rtt) / 8;
}

Picoseconds RtoEstimator::rto() const {
  Picoseconds base = srtt_ == 0 ? p_.initial : srtt_ + std::max(p_.granularity, 4 * rttvar_);
  base = std::clamp(base, p_.min, p_.max);
  for (int i = 0; i < backoff_ && base < p_.max; ++i) base *= 2;
  return std::min(base, p_.max);
}

}  // namespace megascale::congestion
