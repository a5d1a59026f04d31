// The MegaScale-style control: Swift's delay target and window AIMD, plus DCQCN's immediate multiplicative
// reaction to ECN. MegaScale (NSDI'24, section 3.6) published the idea but no equations; this is our explicit
// law (docs/congestion.md):
//   alpha <- (1 - g) alpha + g * [ACK carries ECN echo]           (per ACK; alpha starts at 1)
//   ECN echo or CNP, and ecn_interval since the last ECN cut:
//       cwnd <- cwnd * max(1 - alpha / 2, 1 - max_mdf)            (at once: no wait for an RTT)
//   an ECN-echoed ACK never grows the window; an unmarked one follows Swift: below target, cwnd += ai * acked / cwnd; above, cwnd *= max(1 - beta (d - t) / d,
//   1 - max_mdf) at most once per RTT.
#pragma once

#include "congestion/swift.h"

namespace megascale::congestion {

struct HybridParams {
  SwiftParams swift;
  double ecn_gain = 1.0 / 16;                     // g
  Picoseconds ecn_interval = 4 * kMicrosecond;    // shortest time between two ECN cuts
  /// At most one ECN cut per RTT as well (the latest sample): where the round trip is hundreds of microseconds
  /// (a software transport), a mark echoed on every acknowledgement would otherwise cut the window many times
  /// for one queue (on the test bed, a 4-to-1 incast took 3.3x its ideal time).
  bool ecn_once_per_rtt = false;
};

class Hybrid : public Swift {
 public:
  explicit Hybrid(const HybridParams& params) : Swift(params.swift), h_(params) {}
  const char* name() const override { return "hybrid"; }
  void onAck(const AckEvent& ack) override;
  void onCnp(Picoseconds now) override { reactToEcn(now); }
  double ecnAlpha() const { return alpha_; }

 private:
  bool reactToEcn(Picoseconds now);

  HybridParams h_;
  double alpha_ = 1.0;
  Picoseconds last_ecn_cut_ = std::numeric_limits<Picoseconds>::min() / 2;
};

}  // namespace megascale::congestion
