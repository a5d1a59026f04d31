// Swift (Kumar et al., SIGCOMM 2020): a window AIMD towards a target delay that grows with the path's hop count
// and as the window shrinks (flow scaling), multiplicative decreases at most once per RTT and bounded by max_mdf,
// pacing below one packet per RTT, and escalation on repeated timeouts. Defaults are Google's Pony Express
// values as published with the isekai simulator. docs/congestion.md has the equations.
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

struct SwiftParams {
  double line_rate_bps = 100e9;
  double additive_increase = 1.0;     // ai: packets per RTT
  double beta = 0.8;                  // decrease per unit of relative excess delay
  double max_mdf = 0.5;               // a decrease never cuts more than this fraction
  Picoseconds base_target = 25 * kMicrosecond;
  /// The base target counts from the lowest RTT seen (the path's floor) instead of from zero: for a sender whose
  /// own endpoint delay (a software stack's, tens to hundreds of microseconds and machine-dependent) cannot be
  /// told apart from the fabric's, as Swift's NIC timestamps tell them apart.
  bool target_above_floor = false;
  /// With target_above_floor: a flow none of whose samples for this many of its RTTs came in under its target
  /// raises its floor to the lowest of them (0: never). A flow that started into a standing queue took that
  /// queue for the floor and aims above it; the flows that saw the path empty aim below the queue it keeps,
  /// and starve until it ends (docs/congestion.md). The floor still falls to any lower sample.
  int relearn_floor_after_rtts = 0;
  /// What a raise added halves every this many RTTs, back towards the lowest sample ever (0: it stays). A
  /// raise that stayed would ratchet: a host's delay noise raises floors too, each raised target keeps more
  /// queue, and the next starving flow raises past it.
  double floor_decay_rtts = 0;
  Picoseconds per_hop = 1 * kMicrosecond;  // topology scaling
  int hops = 6;
  Picoseconds flow_scaling_range = 100 * kMicrosecond;  // fs_range
  double flow_scaling_min_cwnd = 0.1;                    // fs_min_cwnd
  double flow_scaling_max_cwnd = 256;                    // fs_max_cwnd
  double min_cwnd = 0.01, max_cwnd = 256;
  double initial_cwnd = 256;
  int retransmit_reset = 3;  // this many timeouts in a row drop the window to min_cwnd
};

class Swift : public SenderControl {
 public:
  explicit Swift(const SwiftParams& params);
  const char* name() const override { return "swift"; }

  void onAck(const AckEvent& ack) override;  // ECN and CNPs are not Swift's signals
  void onLoss(Picoseconds now) override;
  void onTimeout(Picoseconds now) override;

  double rateBps() const override { return p_.line_rate_bps; }
  double windowPackets() const override { return cwnd_; }
  /// Below one packet per RTT the sender paces at RTT / cwnd; otherwise the window alone limits it.
  Picoseconds pacingGap(uint32_t packet_bytes) const override;

  /// The delay target for window `cwnd`: base + hops * per_hop + fs(cwnd) (+ the floor RTT with
  /// target_above_floor).
  Picoseconds targetDelay(double cwnd) const;
  Picoseconds smoothedRtt() const { return rtt_; }

 protected:
  /// What every ACK tells: the RTT sample, and that the path works (timeouts in a row restart).
  void observe(const AckEvent& ack);
  /// A multiplicative decrease to cwnd * factor, if one RTT has passed since the last; true if applied.
  bool decrease(Picoseconds now, double factor);
  void setWindow(Picoseconds now, double cwnd);
  const SwiftParams& params() const { return p_; }
  double window() const { return cwnd_; }

 private:
  bool canDecrease(Picoseconds now) const { return now - last_decrease_ >= rtt_; }
  /// A sample above the target: relearns the floor once the run of them is relearn_floor_after_rtts RTTs long.
  void noteAboveTarget(const AckEvent& ack);
  /// Decays what relearning added to the floor for the time since the last sample.
  void decayRelearnedFloor(Picoseconds now);

  SwiftParams p_;
  double cwnd_;
  Picoseconds rtt_ = 0;  // the latest RTT sample: how long "one RTT" is for the decrease guard and pacing
  Picoseconds floor_rtt_ = 0;   // what the target counts from: the lowest sample, or a relearned one (0: none yet)
  Picoseconds lowest_rtt_ = 0;  // the lowest sample ever, where a relearned floor decays back to
  Picoseconds last_sample_at_ = 0;
  Picoseconds above_target_since_ = -1;  // when the current run of samples above the target began (-1: none)
  Picoseconds above_target_lowest_ = 0;  // the lowest sample of that run
  Picoseconds last_decrease_;
  int timeouts_in_a_row_ = 0;
  double fs_alpha_, fs_beta_;  // flow scaling: fs(w) = clamp(alpha / sqrt(w) + beta, 0, range)
};

}  // namespace megascale::congestion
