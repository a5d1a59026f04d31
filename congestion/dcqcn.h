// DCQCN's reaction point (the sending NIC's rate limiter; Zhu et al., SIGCOMM 2015) in two profiles: the
// paper's, and the NIC-firmware style of ConnectX-4 and later. docs/congestion.md has the equations.
#pragma once

#include "congestion/sender_control.h"

namespace megascale::congestion {

struct DcqcnParams {
  double line_rate_bps = 100e9;
  double min_rate_bps = 1e9;
  double g = 1.0 / 256;                        // alpha's EWMA gain
  Picoseconds alpha_period = 55 * kMicrosecond;
  /// Paper: the alpha timer restarts at every CNP and alpha decays only when a whole period passed without one.
  /// Firmware: alpha is updated every period, rising if a CNP arrived in it and decaying otherwise.
  bool alpha_period_restarts_on_cnp = true;
  /// 0: cut at every CNP (paper). Else: at most one cut per period, when CNPs arrived since the last (firmware).
  Picoseconds rate_reduce_period = 0;
  Picoseconds increase_period = 55 * kMicrosecond;  // the rate-increase timer T
  uint64_t byte_counter = 10'000'000;               // B: an increase event every B bytes sent
  int fast_recovery_steps = 5;                      // F
  double additive_increase_bps = 40e6;              // R_AI
  double hyper_increase_bps = 200e6;                // R_HAI
  double initial_alpha = 1.0;

  /// The paper's values (g 1/256, alpha timer 55 us, CNP-driven cuts, T 55 us, B 10 MB, F 5, R_AI 40 Mb/s,
  /// R_HAI 200 Mb/s).
  static DcqcnParams paper(double line_rate_bps);
  /// NIC firmware style (alpha every 1 us, a cut at most every 4 us, T 300 us, B 2 MiB, F 1, R_AI 5 Mb/s,
  /// R_HAI 50 Mb/s), the defaults MLNX_OFED documents.
  static DcqcnParams firmware(double line_rate_bps);
};

class Dcqcn : public RateControl {
 public:
  explicit Dcqcn(const DcqcnParams& params);
  const char* name() const override { return "dcqcn"; }

  // DCQCN hears congestion through CNPs only: ACKs, losses and timeouts leave the rate alone.
  void onCnp(Picoseconds now) override;
  void onSent(Picoseconds now, uint64_t bytes) override;
  Picoseconds nextTimer() const override;
  void onTimer(Picoseconds now) override;

  double rateBps() const override { return current_; }

  double targetRateBps() const { return target_; }
  /// alpha as of `now` (its decay is applied lazily, so no per-microsecond event is needed).
  double alpha(Picoseconds now);
  int timerStage() const { return timer_stage_; }
  int byteStage() const { return byte_stage_; }

 private:
  void advanceAlpha(Picoseconds now);
  void cut(Picoseconds now);
  void increase();

  DcqcnParams p_;
  double current_, target_;
  double alpha_;
  bool seen_cnp_ = false;
  Picoseconds alpha_next_ = kNever;  // end of the running alpha period
  bool cnp_in_alpha_period_ = false;
  Picoseconds reduce_next_ = kNever;  // firmware: the next cut check, armed while CNPs are pending
  bool cnp_pending_ = false;
  Picoseconds increase_next_ = kNever;
  uint64_t bytes_since_event_ = 0;
  int timer_stage_ = 0, byte_stage_ = 0;
};

}  // namespace megascale::congestion
