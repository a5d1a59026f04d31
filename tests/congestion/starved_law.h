// A control law for tests of the pacing rule (congestion/software_pacing.h): starved until its `opening_ack`-th
// acknowledgement - a window of 0.01 packets, one packet a `starved_gap` (Swift's pacing below one packet) -
// then 16 packets at the line rate.
#pragma once

#include "congestion/line_rate.h"

namespace megascale::testing {

class StarvedLaw : public congestion::LineRate {
 public:
  StarvedLaw(double line_bps, Picoseconds starved_gap, int opening_ack)
      : LineRate(line_bps), starved_gap_(starved_gap), acks_to_open_(opening_ack) {}
  void onAck(const congestion::AckEvent&) override { --acks_to_open_; }
  double windowPackets() const override { return open() ? 16 : 0.01; }
  Picoseconds pacingGap(uint32_t packet_bytes) const override {
    return open() ? LineRate::pacingGap(packet_bytes) : starved_gap_;
  }

 private:
  bool open() const { return acks_to_open_ <= 0; }

  Picoseconds starved_gap_;
  int acks_to_open_;
};

}  // namespace megascale::testing
