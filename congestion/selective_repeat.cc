#include "congestion/selective_repeat.h"

#include <algorithm>

namespace megascale::congestion {

void SelectiveRepeat::onSend(uint64_t seq, Picoseconds now) {
  next_expected_ = std::max(next_expected_, seq + 1);
  Packet& p = outstanding_[seq];
  p.sent_at = now;
  ++p.transmissions;
  p.fast_retransmitted = false;
  p.last_sent_before = next_expected_ - 1;
}

AckOutcome SelectiveRepeat::onAck(uint64_t seq, Picoseconds now) {
  AckOutcome out;
  auto it = outstanding_.find(seq);
  if (it == outstanding_.end()) return out;  // a duplicate, or an ACK of something never sent
  out.new_data = true;
  out.rtt_valid = it->second.transmissions == 1;
  if (out.rtt_valid) out.rtt = now - it->second.sent_at;
  outstanding_.erase(it);
  if (!any_acked_ || seq > highest_acked_) highest_acked_ = seq;
  any_acked_ = true;
  return out;
}

std::vector<uint64_t> SelectiveRepeat::overtaken() {
  std::vector<uint64_t> resend;
  if (!any_acked_) return resend;
  const auto threshold = static_cast<uint64_t>(reorder_threshold_);
  for (auto it = outstanding_.begin(); it != outstanding_.end() && it->first + threshold <= highest_acked_; ++it) {
    Packet& p = it->second;
    if (!p.fast_retransmitted && highest_acked_ >= p.last_sent_before + threshold) {
      p.fast_retransmitted = true;
      resend.push_back(it->first);
    }
  }
  return resend;
}

std::vector<uint64_t> SelectiveRepeat::timedOut(Picoseconds now, Picoseconds rto) const {
  std::vector<uint64_t> resend;
  for (const auto& [seq, p] : outstanding_) {
    if (now - p.sent_at >= rto) resend.push_back(seq);
  }
  return resend;
}

std::vector<uint64_t> SelectiveRepeat::lost(Picoseconds now, Picoseconds rto) {
  std::vector<uint64_t> resend = overtaken();
  for (uint64_t seq : timedOut(now, rto)) resend.push_back(seq);
  std::sort(resend.begin(), resend.end());
  resend.erase(std::unique(resend.begin(), resend.end()), resend.end());
  return resend;
}

Picoseconds SelectiveRepeat::nextTimeout(Picoseconds rto) const {
  Picoseconds next = kNever;
  for (const auto& [seq, p] : outstanding_) next = std::min(next, p.sent_at + rto);
  return next;
}

}  // namespace megascale::congestion
