// The one interface of a sender's congestion control, so that the packet-level simulator (sim) and a
// real transport run the same code: events in (ACKs with RTT and ECN echo, CNPs, bytes sent, losses, timeouts,
// timers), outputs out (a rate and/or a window, and the gap to leave between packets).
#pragma once

#include <cstdint>
#include <limits>

#include "common/picoseconds.h"

namespace megascale::congestion {

struct AckEvent {
  Picoseconds now = 0;
  Picoseconds rtt = 0;        // round trip of the acknowledged packet; 0 when this ACK gives no sample
  uint64_t acked_bytes = 0;
  uint32_t acked_packets = 1;
  bool ecn_echo = false;      // the acknowledged data arrived ECN-marked (CE)
};

class SenderControl {
 public:
  virtual ~SenderControl() = default;
  virtual const char* name() const = 0;

  // Events; an algorithm overrides those it listens to.
  virtual void onAck(const AckEvent&) {}
  /// A congestion notification packet from the receiver (RoCE's CNP).
  virtual void onCnp(Picoseconds) {}
  virtual void onSent(Picoseconds, uint64_t) {}
  /// Loss seen before a timeout: a NACK or a fast retransmit.
  virtual void onLoss(Picoseconds) {}
  /// The retransmission timer fired.
  virtual void onTimeout(Picoseconds) {}

  /// When onTimer must next be called; kNever when no timer is armed.
  virtual Picoseconds nextTimer() const { return kNever; }
  virtual void onTimer(Picoseconds) {}

  /// Sending rate in bits per second (the line rate for a window-only control).
  virtual double rateBps() const = 0;
  /// Congestion window in packets (infinity for a rate-only control); may be below 1 (then the sender paces).
  virtual double windowPackets() const = 0;
  /// The gap to leave between the starts of two packets of `packet_bytes`.
  virtual Picoseconds pacingGap(uint32_t packet_bytes) const = 0;
};

/// A control that sets a rate and no window: packets leave one serialization time at that rate apart.
class RateControl : public SenderControl {
 public:
  double windowPackets() const override { return std::numeric_limits<double>::infinity(); }
  Picoseconds pacingGap(uint32_t packet_bytes) const override { return serializationTime(packet_bytes, rateBps()); }
};

}  // namespace megascale::congestion
