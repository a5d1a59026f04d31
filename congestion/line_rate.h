// No congestion control: send at the line rate with no window. The baseline that PFC alone must keep lossless,
// and the "ideal" sender of the simulator's single-flow checks.
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

class LineRate : public SenderControl {
 public:
  explicit LineRate(double line_rate_bps) : rate_(line_rate_bps) {}
  const char* name() const override { return "none"; }
  void onAck(const AckEvent&) override {}
  void onCnp(Picoseconds) override {}
  void onSent(Picoseconds, uint64_t) override {}
  void onLoss(Picoseconds) override {}
  void onTimeout(Picoseconds) override {}
  Picoseconds nextTimer() const override { return kNever; }
  void onTimer(Picoseconds) override {}
  double rateBps() const override { return rate_; }
  double windowPackets() const override { return std::numeric_limits<double>::infinity(); }
  Picoseconds pacingGap(uint32_t packet_bytes) const override { return serializationTime(packet_bytes, rate_); }

 private:
  double rate_;
};

}  // namespace megascale::congestion
