// How a sender whose pacing runs in software keeps its pace: the udp transport's rule, and the simulator's when
// it stands in for that transport (NetworkParams::wake_lateness). A NIC paces to the nanosecond; a process waits
// on a timer that fires late, so it sends what is due a little early, and makes up for a late wake-up with a
// short burst instead of losing the time.
#pragma once

#include <algorithm>

#include "common/picoseconds.h"

namespace megascale::congestion {

struct SoftwarePacing {
  /// Timers wake a sleeping engine late by tens of microseconds: packets due this soon leave now, in one burst.
  static constexpr Picoseconds kSlack = 50 * kMicrosecond;
  /// A wake-up later than the slack keeps up to this many packets of the time it lost as credit: on a busy host
  /// the timers fire hundreds of microseconds late, and forgetting that cost a paced flow 5-30% of a 500 Mbit/s
  /// link on the test bed. The burst it allows is what a software sender adds to a switch queue.
  static constexpr int kCatchUpPackets = 4;

  /// True when a packet due at `next_send` may leave at `now`.
  static bool due(Picoseconds next_send, Picoseconds now) { return next_send <= now + kSlack; }
  /// Where the gap after a packet that left at `now` counts from, the packet having been due at `next_send`:
  /// that time, or now less the credit a late wake-up keeps.
  static Picoseconds from(Picoseconds next_send, Picoseconds now, Picoseconds gap) {
    return std::max(next_send, now - std::max(kSlack, kCatchUpPackets * gap));
  }
  /// When the packet after one that left at `now` is due, its predecessor having been due at `next_send` and
  /// the two `gap` apart.
  static Picoseconds after(Picoseconds next_send, Picoseconds now, Picoseconds gap) {
    return from(next_send, now, gap) + gap;
  }
  /// The next packet is due one gap after the last as the law sets the gap now, not as it set it when the last
  /// left: a law that allows more since (a Swift window back above one packet, a DCQCN rate raised) moves it up.
  /// (The simulator's NICs keep the gap of the moment, as its validation against published figures did.)
  /// Held to the gap of the moment it left, a window of 0.01 packets kept a flow's next packet 300 ms (its round
  /// trip over the window) after the path had emptied: a 4-to-1 incast's last flow took 0.95-0.99 s, not 0.55.
  static Picoseconds reconsidered(Picoseconds next_send, Picoseconds gap_from, Picoseconds gap_now) {
    return std::min(next_send, gap_from + gap_now);
  }
};

}  // namespace megascale::congestion
