#include "congestion/selective_repeat.h"

#include <algorithm>

namespace megascale::congestion {

void SelectiveRepeat::onSend(uint64_t seq, Picoseconds now, uint16_t lane) {
  next_expected_ = std::max(next_expected_, seq + 1);
  if (window_.empty()) base_ = seq;
  for (; seq < base_; --base_) window_.emplace_front();
  while (seq - base_ >= window_.size()) window_.emplace_back();
  Packet& p = window_[seq - base_];
  if (!p.outstanding) {
    p.outstanding = true;
    p.transmissions = 0;
    ++outstanding_;
  }
  p.sent_at = now;
  ++p.transmissions;
  p.fast_retransmitted = false;
  if (lane >= lanes_.size()) lanes_.resize(lane + 1u);
  p.lane = lane;
  p.lane_order = ++lanes_[lane].sent;
}

AckOutcome SelectiveRepeat::onAck(uint64_t seq, Picoseconds now) {
  AckOutcome out;
  Packet* p = find(seq);
  if (p == nullptr || !p->outstanding) return out;  // a duplicate, or an ACK of something never sent
  out.new_data = true;
  out.rtt_valid = p->transmissions == 1;
  if (out.rtt_valid) {
    out.rtt = now - p->sent_at;
    lanes_[p->lane].overtaking = std::max(lanes_[p->lane].overtaking, p->lane_order);
    overtaking_end_ = std::max(overtaking_end_, seq + 1);
  }
  p->outstanding = false;
  --outstanding_;
  while (!window_.empty() && !window_.front().outstanding) {
    window_.pop_front();
    ++base_;
  }
  return out;
}

std::vector<uint64_t> SelectiveRepeat::overtaken(uint64_t judge_below) {
  std::vector<uint64_t> resend;
  const auto threshold = static_cast<uint64_t>(reorder_threshold_);
  // Packets sent once overtake on their lane only what was sent before them there, which has a lower sequence
  // (a first transmission's) or was resent earlier (a lower one too): nothing at or past overtaking_end_ can be
  // overtaken yet.
  const uint64_t end = std::min(judge_below, overtaking_end_);
  for (size_t i = 0; i < window_.size() && base_ + i < end; ++i) {
    Packet& p = window_[i];
    if (p.outstanding && !p.fast_retransmitted && lanes_[p.lane].overtaking >= p.lane_order + threshold) {
      p.fast_retransmitted = true;
      resend.push_back(base_ + i);
    }
  }
  return resend;
}

std::vector<uint64_t> SelectiveRepeat::timedOut(Picoseconds now, Picoseconds rto) const {
  std::vector<uint64_t> resend;
  for (size_t i = 0; i < window_.size(); ++i) {
    if (window_[i].outstanding && now - window_[i].sent_at >= rto) resend.push_back(base_ + i);
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
  for (const Packet& p : window_) {
    if (p.outstanding) next = std::min(next, p.sent_at + rto);
  }
  return next;
}

}  // namespace megascale::congestion
