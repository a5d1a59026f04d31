// Retransmission timeout from RTT samples: RFC 6298's smoothing (alpha 1/8, beta 1/4, K 4) with a floor in
// microseconds instead of TCP's second (a datacenter RTT is ~10 us), and exponential backoff on expiry.
// Callers follow Karn's rule: no samples from retransmitted packets.
#pragma once

#include <algorithm>

#include "congestion/sender_control.h"

namespace megascale::congestion {

struct RtoParams {
  Picoseconds initial = 1 * kMillisecond;  // before the first sample
  Picoseconds min = 100 * kMicrosecond;
  Picoseconds max = 1 * kSecond;
  Picoseconds granularity = 1 * kMicrosecond;  // G: the timer's resolution
};

class RtoEstimator {
 public:
  explicit RtoEstimator(const RtoParams& params = {}) : p_(params) {}

  void onSample(Picoseconds rtt);
  /// The timer fired: the next timeout is twice as long (up to max).
  void onTimeout() { backoff_ = std::min(backoff_ + 1, 40); }
  /// New data was acknowledged: backoff ends.
  void onProgress() { backoff_ = 0; }

  Picoseconds rto() const;
  Picoseconds srtt() const { return srtt_; }
  Picoseconds rttvar() const { return rttvar_; }
  bool hasSample() const { return srtt_ > 0; }

 private:
  RtoParams p_;
  Picoseconds srtt_ = 0, rttvar_ = 0;
  int backoff_ = 0;
};

}  // namespace megascale::congestion
