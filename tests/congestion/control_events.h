// Hand-built control events for the unit tests of congestion controls.
#pragma once

#include "congestion/swift.h"

namespace megascale::congestion::test_events {

inline constexpr Picoseconds kUs = kMicrosecond;

inline SwiftParams smallWindow() {
  SwiftParams p;
  p.initial_cwnd = 10;
  return p;
}

inline AckEvent ack(Picoseconds now, Picoseconds rtt, bool ecn = false) {
  AckEvent a;
  a.now = now;
  a.rtt = rtt;
  a.acked_bytes = 4096;
  a.acked_packets = 1;
  a.ecn_echo = ecn;
  return a;
}
}  // namespace megascale::congestion::test_events
