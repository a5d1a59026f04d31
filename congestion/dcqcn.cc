#include "congestion/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace megascale::congestion {

DcqcnParams DcqcnParams::paper(double line_rate_bps) {
  DcqcnParams p;
  p.line_rate_bps = line_rate_bps;
  return p;
}

DcqcnParams DcqcnParams::firmware(double line_rate_bps) {
  DcqcnParams p;
  p.line_rate_bps = line_rate_bps;
  p.alpha_period = kMicrosecond;
  p.alpha_period_restarts_on_cnp = false;
  p.rate_reduce_period = 4 * kMicrosecond;
  p.increase_period = 300 * kMicrosecond;
  p.byte_counter = 32767 * 64;  // rpg_byte_reset is in 64-byte units
  p.fast_recovery_steps = 1;
  p.additive_increase_bps = 5e6;
  p.hyper_increase_bps = 50e6;
  return p;
}

Dcqcn::Dcqcn(const DcqcnParams& params)
    : p_(params), current_(params.line_rate_bps), target_(params.line_rate_bps), alpha_(params.initial_alpha) {}

// Brings alpha to `now`: every alpha period that ended since the last call applies its update.
void Dcqcn::advanceAlpha(Picoseconds now) {
  if (alpha_next_ == kNever || now < alpha_next_) return;
  if (p_.alpha_period_restarts_on_cnp) {  // paper: each full period without a CNP decays alpha once
    const int64_t periods = 1 + (now - alpha_next_) / p_.alpha_period;
    alpha_ *= std::pow(1 - p_.g, static_cast<double>(periods));
    alpha_next_ += periods * p_.alpha_period;
    return;
  }
  // firmware: the period that held a CNP raises alpha, the rest decay it
  alpha_ = cnp_in_alpha_period_ ? (1 - p_.g) * alpha_ + p_.g : (1 - p_.g) * alpha_;
  cnp_in_alpha_period_ = false;
  const int64_t more = (now - alpha_next_) / p_.alpha_period;
  alpha_ *= std::pow(1 - p_.g, static_cast<double>(more));
  alpha_next_ += (1 + more) * p_.alpha_period;
}

double Dcqcn::alpha(Picoseconds now) {
  advanceAlpha(now);
  return alpha_;
}

void Dcqcn::cut(Picoseconds now) {
  target_ = current_;
  current_ = std::max(p_.min_rate_bps, current_ * (1 - alpha_ / 2));
  timer_stage_ = byte_stage_ = 0;
  bytes_since_event_ = 0;
  increase_next_ = now + p_.increase_period;
}

void Dcqcn::onCnp(Picoseconds now) {
  advanceAlpha(now);
  if (!seen_cnp_) {  // the first CNP of a flow starts alpha at its initial value
    seen_cnp_ = true;
    alpha_ = p_.initial_alpha;
  }
  if (p_.alpha_period_restarts_on_cnp) {
    alpha_ = (1 - p_.g) * alpha_ + p_.g;
    alpha_next_ = now + p_.alpha_period;
  } else {
    cnp_in_alpha_period_ = true;
    if (alpha_next_ == kNever) alpha_next_ = now + p_.alpha_period;
  }
  if (p_.rate_reduce_period == 0) {
    cut(now);
  } else if (!cnp_pending_) {
    cnp_pending_ = true;
    if (reduce_next_ == kNever || reduce_next_ < now) reduce_next_ = now;  // no cut in the last period: cut now
    if (reduce_next_ == now) onTimer(now);
  }
}

void Dcqcn::increase() {
  const int most = std::max(timer_stage_, byte_stage_), least = std::min(timer_stage_, byte_stage_);
  const int f = p_.fast_recovery_steps;
  if (most < f) {
    // fast recovery: halfway back to the rate before the cut
  } else if (least < f) {
    target_ += p_.additive_increase_bps;
  } else {
    target_ += (least - f + 1) * p_.hyper_increase_bps;
  }
  target_ = std::min(target_, p_.line_rate_bps);
  current_ = std::min((target_ + current_) / 2, p_.line_rate_bps);
}

void Dcqcn::onSent(Picoseconds, uint64_t bytes) {
  if (current_ >= p_.line_rate_bps) return;  // nothing to recover
  bytes_since_event_ += bytes;
  while (bytes_since_event_ >= p_.byte_counter) {
    bytes_since_event_ -= p_.byte_counter;
    ++byte_stage_;
    increase();
  }
}

Picoseconds Dcqcn::nextTimer() const {
  Picoseconds next = current_ < p_.line_rate_bps ? increase_next_ : kNever;
  if (cnp_pending_) next = std::min(next, reduce_next_);
  return next;
}

void Dcqcn::onTimer(Picoseconds now) {
  advanceAlpha(now);
  if (cnp_pending_ && now >= reduce_next_) {  // firmware: one cut for all CNPs since the last one
    cnp_pending_ = false;
    cut(now);
    reduce_next_ = now + p_.rate_reduce_period;
  }
  while (current_ < p_.line_rate_bps && now >= increase_next_) {
    ++timer_stage_;
    increase();
    increase_next_ += p_.increase_period;
  }
}

}  // namespace megascale::congestion
